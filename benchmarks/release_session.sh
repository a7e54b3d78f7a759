#!/usr/bin/env bash
# A measured release on a lent GPU host, one GPU or several, from the repository root there
# (bubblewrap's .deb files carried in .deb/: bwrap_env.sh):
#
#   benchmarks/release_session.sh start STATE ARCH [cuda-l1|builtin]  # the batch in the background
#        (setsid) on every GPU, builds ahead on the CPU cores; returns at once
#   benchmarks/release_session.sh follow STATE SECONDS NAME  # wait (up to SECONDS), then pack
#   benchmarks/release_session.sh pack STATE [NAME]          # what is there so far, under $OUT
#
# `pack` leaves in $OUT: state.tgz (STATE: the batch's settings, verdicts, builds, runs and logs, the
# baseline timings it kept, the builtin candidates), NAME.jsonl.gz (the release, packed --partial
# while entries are left) and report.txt (`python -m evaluation.harness release report`).
# Carry STATE back (tar xzf state.tgz) and `start` it again on a fresh machine to resume: the batch
# reads its verdicts first and measures nothing twice.
#
# The batch first probes the device (A/A, no user code) until it keeps the controls its intervals need.
# BUDGET_S (default 1500): no verification starts after this many seconds, so the batch stops
# cleanly inside a lease (one still running then ends within its wall limit); BUILD_CPUS (default:
# the cores less 2 per GPU) builds ahead at a time; PARALLEL (default 2) verifications at a time
# per GPU; GPUS (default all) the GPUs to use; ONLY (L1T1,L2T3 or @FILE) some entries; DEVICE=cpu
# (with ARCH cpu) the same on the CPU, to try the script anywhere. A lent machine goes back about 30 s
# after a call returns, and the batch with it: follow `start` at once with back-to-back `follow` calls.
set -u
command=$1
state=$(realpath -m "$2")
mkdir -p "$state"
export PYTHONUNBUFFERED=1
. "$(dirname "$0")/bwrap_env.sh"

case $command in
start)
  arch=$3
  source=${4:-cuda-l1}
  gpus=$(nvidia-smi --query-gpu=index --format=csv,noheader 2>/dev/null | wc -l)
  build_cpus=${BUILD_CPUS:-$(($(nproc) - 2 * (gpus > 0 ? gpus : 1)))}
  [ "$build_cpus" -lt 1 ] && build_cpus=1
  batch="python3 benchmarks/release_batch.py run --state '$state' --arch '$arch' --budget-s ${BUDGET_S:-1500}"
  batch="$batch --parallel ${PARALLEL:-2} --build-cpus $build_cpus --gpus ${GPUS:-all} --device ${DEVICE:-cuda}"
  [ -n "${ONLY:-}" ] && batch="$batch --only '$ONLY'"
  if [ "$source" = builtin ]; then
    # The builtin optimizer's best candidate for every problem, written once into STATE (it travels with it).
    write="[ -f '$state/candidates/manifest.json' ] || python3 benchmarks/builtin_optimizer_gpu.py \
      --out '$state/candidates' --levels 1,2,3 --per-level 100 --rounds 1 > '$state/write.log' 2>&1"
    batch="$batch --source builtin --candidates '$state/candidates'"
  else
    write=true
  fi
  {
    date -u; nvidia-smi --query-gpu=index,name,compute_cap,driver_version,memory.total --format=csv; nproc
    python3 -c 'import torch, triton; print("torch", torch.__version__, torch.version.cuda, "triton", triton.__version__)'
    git rev-parse HEAD 2>/dev/null; bwrap --version
    python3 -c 'from evaluation.harness import sandbox; print(sandbox.confinement())'
  } >> "$state/host.txt" 2>&1
  setsid bash -c "
    rm -f '$state/done'
    $write
    $batch >> '$state/batch.log' 2>&1
    python3 -m evaluation.harness release report '$state' > '$state/report.txt' 2>&1
    touch '$state/done'
  " > "$state/session.log" 2>&1 < /dev/null &
  echo "started $source on $arch in the background ($gpus GPUs, $build_cpus builds ahead at a time); state in $state"
  ;;
follow)
  waited=0
  while [ ! -f "$state/done" ] && [ "$waited" -lt "${3:-540}" ]; do sleep 10; waited=$((waited + 10)); done
  exec bash "$0" pack "$2" "${4:-}"
  ;;
pack)
  name=${3:-}
  tar czf "$OUT/state.tgz" -C "$(dirname "$state")" --exclude='*.lock' "$(basename "$state")"
  if [ -n "$name" ] && [ -f "$state/verdicts.jsonl" ]; then
    pack="python3 benchmarks/release_batch.py pack --state $state --name $name --out $OUT/$name.jsonl.gz"
    $pack 2>/dev/null || $pack --partial  # partial while entries are left
    python3 -m evaluation.harness release report "$state" > "$OUT/report.txt" 2>&1  # with the builds and runs
  fi
  tail -n 5 "$state/batch.log" 2>/dev/null
  wc -l "$state"/verdicts.jsonl "$state"/builds.jsonl 2>/dev/null
  [ -f "$state/done" ] && echo DONE
  ;;
*)
  echo "usage: $0 start STATE ARCH [cuda-l1|builtin] | follow STATE SECONDS NAME | pack STATE [NAME]" >&2
  exit 2
  ;;
esac
