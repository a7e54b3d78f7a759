#!/usr/bin/env bash
# The honest corpus on a lent GPU, from the repository root there, bubblewrap's .deb files carried in
# .deb/ (bwrap_env.sh):
#
#   benchmarks/honest_session.sh start STATE [PARALLEL...]  # in the background (setsid): host facts, the
#                                                          # GPU tests, builds, then the corpus at each
#                                                          # PARALLEL (default: 1 then 3), then the report
#   benchmarks/honest_session.sh follow STATE SECONDS      # wait, then pack: the call that keeps the machine
#   benchmarks/honest_session.sh pack STATE                # STATE packed into $OUT/state.tgz
#
# A lent machine goes back about 30 s after a call returns, and a background batch with it: follow
# `start` at once with back-to-back `follow` calls (up to 580 s each) until it is done. Keep STATE
# outside $OUT (/tmp/honest, say): each call's $OUT starts empty, which removed the build and baseline
# caches under running verifications when the state lived there (RESULTS.md, harness 16 on an H200);
# `follow` packs the state into $OUT.
set -u
command=$1
state=$(realpath -m "$2")
mkdir -p "$state"
export PYTHONUNBUFFERED=1
. "$(dirname "$0")/bwrap_env.sh"

case $command in
start)
  shift 2
  runs=${*:-1 3}
  setsid bash -c "
    {
      bwrap --version; python3 --version; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
      python3 -c 'import torch, triton; print(\"torch\", torch.__version__, torch.version.cuda, \"triton\", triton.__version__)'
      git rev-parse HEAD 2>/dev/null; ls -l /dev/nvidia*; cat /proc/self/cgroup; mount | grep cgroup
      python3 -c 'from evaluation.harness import sandbox, cgroups; print(sandbox.confinement()); print(\"cgroups\", cgroups.create(\"probe\", memory_bytes=2**30, processes=64))'
    } > '$state/host.txt' 2>&1
    python3 -m pytest tests/harness/test_gpu.py -q -p no:cacheprovider > '$state/test_gpu.txt' 2>&1
    python3 benchmarks/honest_corpus.py build --state '$state' --workers 12 > '$state/build.log' 2>&1
    for parallel in $runs; do
      label=\$([ \"\$parallel\" = 1 ] && echo alone || echo shared-\$parallel)
      python3 benchmarks/honest_corpus.py run --state '$state' --label \"\$label\" --parallel \"\$parallel\" > \"$state/\$label.log\" 2>&1
    done
    python3 benchmarks/honest_corpus.py report --state '$state' > '$state/report.md' 2>&1
    touch '$state/done'
  " > "$state/session.log" 2>&1 < /dev/null &
  echo "started in the background; state in $state"
  ;;
follow)
  waited=0
  while [ ! -f "$state/done" ] && [ "$waited" -lt "${3:-540}" ]; do sleep 10; waited=$((waited + 10)); done
  exec bash "$0" pack "$state"
  ;;
pack)
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv > "$state/gpu.csv" 2>&1
  tar czf "$OUT/state.tgz" -C "$(dirname "$state")" --exclude=builds --exclude=baselines "$(basename "$state")"
  tail -n 3 "$state/test_gpu.txt" 2>/dev/null
  for log in "$state"/*.log; do echo "== $log"; tail -n 4 "$log"; done
  [ -f "$state/done" ] && echo DONE
  ;;
esac
