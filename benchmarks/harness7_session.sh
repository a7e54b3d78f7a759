#!/usr/bin/env bash
# Harness 7 on a lent GPU, from the repository root there, with bubblewrap's .deb files carried in
# .deb/ (`apt-get download bubblewrap libcap2 libselinux1 libpcre2-8-0` on a Debian host):
#
#   benchmarks/harness7_session.sh check STATE   # foreground: the sandbox works, tests/harness/test_gpu.py
#                                               # inside it, and what it costs a verification
#   benchmarks/harness7_session.sh start STATE   # background: CUDA-L1's 30-task sample (all four baselines)
#                                               # and L3 T31 through the CLI, builds first
#   benchmarks/harness7_session.sh follow STATE SECONDS   # wait, then say how far it got
#   benchmarks/harness7_session.sh pack STATE    # STATE into $OUT/state.tgz
#
# The sample's statuses are compared with earlier harnesses' in benchmarks/RESULTS.md.
set -u
command=$1
state=$(realpath -m "$2")
mkdir -p "$state"
export PYTHONUNBUFFERED=1
. "$(dirname "$0")/bwrap_env.sh"
sample=$(python3 -c 'import sys; sys.path.insert(0, "benchmarks"); import harness_cuda_l1 as h; print(",".join(sorted(h.all_baseline_sample(h.entries()))))')

case $command in
check)
  {
    bwrap --version; python3 --version; python3 -c 'import torch; print("torch", torch.__version__, torch.version.cuda)'
    nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
    python3 -c 'from evaluation.harness import sandbox, callsite; print(sandbox.confinement()); print(callsite.build())'
  } > "$state/versions.txt" 2>&1
  cat "$state/versions.txt"
  python3 -m pytest tests/harness/test_gpu.py -q -p no:cacheprovider > "$state/test_gpu.txt" 2>&1
  tail -n 15 "$state/test_gpu.txt"
  python3 benchmarks/sandbox_cost.py --device cuda --rounds 4 --out "$state/sandbox-cost.json" > "$state/sandbox-cost.log" 2>&1
  tail -n 20 "$state/sandbox-cost.log"
  ;;
start)
  touch "$state/building"  # before the verifier starts, so it waits for the builds it needs
  setsid bash -c "
    taskset -c 8-15 python3 benchmarks/harness_cuda_l1.py build --state '$state' --workers 8 --only '$sample,L3T31' > '$state/build.log' 2>&1 &
    taskset -c 0-7 python3 benchmarks/harness_cuda_l1.py verify --state '$state' --parallel 2 --budget-s 1500 \
      --only '$sample,L3T31' --first "\${FIRST:-L3T31}" > '$state/verify.log' 2>&1
    wait
  " > "$state/session.log" 2>&1 < /dev/null &
  echo "started in the background; state in $state"
  ;;
follow)  # a machine goes back 30 s after a call returns: every call brings the state back
  sleep "${3:-500}"
  wc -l "$state"/*.jsonl 2>/dev/null
  tail -n 5 "$state/verify.log" "$state/build.log" 2>/dev/null
  tar czf "$OUT/state.tgz" -C "$(dirname "$state")" --exclude=baselines "$(basename "$state")"
  ;;
pack)
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv > "$state/gpu.csv" 2>&1
  tar czf "$OUT/state.tgz" -C "$(dirname "$state")" --exclude=baselines "$(basename "$state")"
  wc -l "$state"/*.jsonl 2>/dev/null
  ;;
esac
