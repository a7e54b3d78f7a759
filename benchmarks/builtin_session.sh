#!/usr/bin/env bash
# The builtin optimizer over every KernelBench problem of CUDA-L1's release on one lent GPU, run from
# the repository root on the GPU host:
#
#   benchmarks/builtin_session.sh start STATE    # GPU tests in the foreground; in the background the
#                                                # candidates are written, then verified
#   benchmarks/builtin_session.sh resume STATE   # on a fresh machine: verify what is left (carry $BUILTIN)
#   benchmarks/builtin_session.sh follow STATE SECONDS  # wait, then pack: the call that keeps the machine
#   benchmarks/builtin_session.sh pack STATE     # the verdicts, manifest, logs and GPU facts in $OUT/state.tgz
#
# A lent machine goes back about 30 s after the call that started the batch returns, and the batch with
# it: follow `start` (or `resume`) at once with back-to-back `follow` calls (up to 580 s each).
#
# The candidates are written one level per process, three at once (`builtin_optimizer_gpu.py --levels N
# --per-level 100 --rounds 1`): each level's sample is drawn with its own seed, so this writes what one
# `--levels 1,2,3` process would, in a third of the time. The manifest is then interleaved by level
# (L1, L2, L3, L1, ...) so that a batch stopped short by the budget still holds every level; the written
# order is kept in manifest-levelN.json. Verification starts once the GPU tests are done (they time
# candidates, and host_bound is read from those times), $VERIFIERS at a time on one device lock.
set -u
command=$1
state=$(realpath -m "$2")
mkdir -p "$state"
export PYTHONUNBUFFERED=1
builtin=${BUILTIN:-var/builtin250}
verifiers=${VERIFIERS:-4}

verify_in_background() {
  setsid bash -c "
    while [ ! -e '$state/tests.done' ] || [ ! -e '$state/written' ]; do sleep 2; done
    python3 benchmarks/builtin_optimizer_gpu.py --out '$builtin' --verify --parallel $verifiers \
      --device-lock '$state/gpu.lock' --budget-s 3000 > '$state/verify.log' 2>&1
  " > "$state/session.log" 2>&1 < /dev/null &
}

case $command in
start)
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv > "$state/gpu.csv" 2>&1
  python3 -c 'import sys, torch, triton; print(f"python {sys.version.split()[0]}, torch {torch.__version__}, triton {triton.__version__}, cuda {torch.version.cuda}")' > "$state/versions.txt" 2>&1
  setsid bash -c "
    for level in 1 2 3; do
      taskset -c 8-15 python3 benchmarks/builtin_optimizer_gpu.py --out '$builtin-level'\$level --levels \$level \
        --per-level 100 --rounds 1 > '$state/write-level'\$level.log 2>&1 &
    done
    wait
    python3 - '$builtin' <<'EOF'
import json, shutil, sys
from itertools import zip_longest
from pathlib import Path
out = Path(sys.argv[1])
out.mkdir(parents=True, exist_ok=True)
levels = []
for level in (1, 2, 3):
    written = Path(f'{out}-level{level}')
    manifest = json.loads((written / 'manifest.json').read_text())
    (out / f'manifest-level{level}.json').write_text(json.dumps(manifest, indent=2))
    for entry in manifest:
        shutil.move(str(written / entry['folder']), str(out / entry['folder']))
    levels.append(manifest)
interleaved = [e for row in zip_longest(*levels) for e in row if e is not None]
(out / 'manifest.json').write_text(json.dumps(interleaved, indent=2))
print(len(interleaved), 'problems,', sum(len(e['candidates']) for e in interleaved), 'candidates')
EOF
    touch '$state/written'
  " > "$state/write.log" 2>&1 < /dev/null &
  verify_in_background
  taskset -c 0-7 python3 -m pytest tests/harness/test_gpu.py -q -p no:cacheprovider > "$state/test_gpu.txt" 2>&1
  touch "$state/tests.done"
  tail -n 3 "$state/test_gpu.txt"
  ;;
resume)
  touch "$state/tests.done" "$state/written"
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv > "$state/gpu-machine2.csv" 2>&1
  verify_in_background
  echo "verifying in the background"
  ;;
pack)
  cp "$builtin/verdicts.jsonl" "$builtin/manifest.json" "$builtin"/manifest-level*.json "$state/" 2>/dev/null
  tar czf "$OUT/state.tgz" -C "$(dirname "$state")" "$(basename "$state")"
  tar czf "$OUT/builtin.tgz" --exclude=baselines "$builtin"
  tail -n 2 "$state"/write-level*.log "$state/write.log" 2>/dev/null; tail -n 5 "$state/verify.log" 2>/dev/null
  wc -l "$builtin/verdicts.jsonl" 2>/dev/null
  ;;
follow)
  sleep "${3:-570}"
  exec bash "$0" pack "$2"
  ;;
esac
