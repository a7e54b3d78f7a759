#!/usr/bin/env bash
# Issue 15's timing on a lent GPU, from the repository root there, with bubblewrap's .deb files carried
# in .deb/ (see harness7_session.sh):
#
#   benchmarks/timing_session.sh check STATE     # tests/harness/test_gpu.py in the sandbox
#   benchmarks/timing_session.sh all STATE TASKS SECONDS      # builds, check, then compare until SECONDS, pack
#   benchmarks/timing_session.sh repeat STATE TASKS SECONDS   # builds, then 3 runs of each task, pack
#   benchmarks/timing_session.sh coverage STATE TASKS SECONDS # builds, then interval_coverage.py's two passes, pack
#                                                               (TASKS "" for its 30-task sample; carry STATE back to resume)
#   benchmarks/timing_session.sh pack STATE
#
# Everything runs in the foreground: a lent machine goes back soon after a call returns, and what ran
# in the background goes with it.
set -u
command=$1
state=$(realpath -m "$2")
tasks=${3:-}
mkdir -p "$state"
export PYTHONUNBUFFERED=1
. "$(dirname "$0")/bwrap_env.sh"

case $command in
check)
  {
    bwrap --version; python3 --version; python3 -c 'import torch, triton; print("torch", torch.__version__, torch.version.cuda, "triton", triton.__version__)'
    nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
    git rev-parse HEAD 2>/dev/null
    python3 -c 'from evaluation.harness import sandbox, callsite, gpu_state; print(sandbox.confinement()); print(callsite.build()); print(gpu_state.Gpu().read())'
    # Where a verification's start-up goes: each sandboxed process imports torch and opens a CUDA context.
    python3 - <<'PY'
import subprocess, sys, time
steps = ["import torch", "import torch; torch.zeros(1, device='cuda')",
         "import torch; torch.zeros(1, device='cuda'); from evaluation.harness import timing; "
         "timing.start('cuda', flush_bytes=None, timing_fd=-1)"]
for step in steps:
    began = time.monotonic()
    subprocess.run([sys.executable, "-c", step], check=False)
    print(f"start-up: {time.monotonic() - began:.2f} s: {step}")
began = time.monotonic()
subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"], capture_output=True, check=False)
print(f"start-up: {time.monotonic() - began:.2f} s: nvidia-smi")
PY
  } > "$state/versions.txt" 2>&1
  cat "$state/versions.txt"
  python3 -m pytest tests/harness/test_gpu.py -q -p no:cacheprovider > "$state/test_gpu.txt" 2>&1
  tail -n 25 "$state/test_gpu.txt"
  ;;
all|repeat)
  began=$(date +%s)
  # The builds finish before anything is timed: a dozen compilers beside a measurement slow its host.
  python3 benchmarks/harness_cuda_l1.py build --state "$state" --workers 12 --only "$tasks" > "$state/build.log" 2>&1 < /dev/null
  if [ "$command" = all ]; then
    [ -f "$state/test_gpu.txt" ] || "$0" check "$state"
    left=$(( ${4:-500} - ($(date +%s) - began) ))
    python3 benchmarks/steady_state.py compare --state "$state" --tasks "$tasks" --budget-s "$left" > "$state/compare.log" 2>&1
    tail -n 40 "$state/compare.log"
  else
    timeout $(( ${4:-500} - ($(date +%s) - began) )) python3 benchmarks/steady_state.py repeat --state "$state" --tasks "$tasks" \
      --runs 3 > "$state/repeat.log" 2>&1
    tail -n 20 "$state/repeat.log"
  fi
  "$0" pack "$state"
  ;;
coverage)
  began=$(date +%s)
  only=$tasks
  [ -n "$only" ] || only=$(python3 -c 'import sys; sys.path.insert(0, "benchmarks"); import harness_cuda_l1 as c; print(",".join(sorted(c.all_baseline_sample(c.entries()))))')
  python3 benchmarks/harness_cuda_l1.py build --state "$state" --workers 12 --only "$only" > "$state/build.log" 2>&1 < /dev/null
  left=$(( ${4:-500} - ($(date +%s) - began) ))
  python3 benchmarks/interval_coverage.py run --state "$state" --tasks "$only" --budget-s "$left" > "$state/coverage.log" 2>&1
  python3 benchmarks/interval_coverage.py report --state "$state" > "$state/coverage-report.txt" 2>&1
  tail -n 12 "$state/coverage-report.txt"
  "$0" pack "$state"
  ;;
pack)
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv > "$state/gpu.csv" 2>&1
  tar czf "$OUT/state.tgz" -C "$(dirname "$state")" "$(basename "$state")"
  wc -l "$state"/*.jsonl 2>/dev/null
  ;;
esac
