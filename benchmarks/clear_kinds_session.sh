#!/usr/bin/env bash
# clear_kinds.py on a lent GPU, from the repository root there (bubblewrap's .deb files carried in .deb/):
#
#   benchmarks/clear_kinds_session.sh STATE TASKS     # the harness's builds, then the factors on each task
#
# Resumable: a second call with the same STATE goes on where the first stopped.
set -u
state=$(realpath -m "$1")
tasks=$2
mkdir -p "$state"
export PYTHONUNBUFFERED=1
. "$(dirname "$0")/bwrap_env.sh"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,temperature.gpu --format=csv,noheader > "$state/gpu.txt" 2>&1
python3 -c 'import torch, triton; print("torch", torch.__version__, "triton", triton.__version__)' >> "$state/gpu.txt" 2>&1
python3 benchmarks/harness_cuda_l1.py build --state "$state" --workers 12 --only "$tasks" > "$state/build.log" 2>&1 < /dev/null
python3 benchmarks/clear_kinds.py run --tasks "$tasks" --out "$state" >> "$state/run.log" 2>&1
cat "$state/gpu.txt" "$state/run.log"
mkdir -p "$OUT" && tar czf "$OUT/clear_kinds.tgz" -C "$(dirname "$state")" "$(basename "$state")"
