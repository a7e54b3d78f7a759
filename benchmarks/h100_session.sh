#!/usr/bin/env bash
# One lent-GPU session for the GPU batches, run from the repository root on the GPU host:
#
#   benchmarks/h100_session.sh build STATE   # the load_inline builds alone, in the background (CPU only,
#                                            # so they may run beside `measure`)
#   benchmarks/h100_session.sh measure STATE # alone on the GPU, in the foreground: where a call's
#                                            # time goes, the cost of one verification, repeatability
#   benchmarks/h100_session.sh start STATE   # the batches below, in the background (setsid); builds
#                                            # only where `build` is not already running
#   benchmarks/h100_session.sh pack STATE    # STATE and the logs, packed into $OUT/state.tgz
#   benchmarks/h100_session.sh follow STATE SECONDS  # wait, then pack: the call that keeps the machine
#   benchmarks/h100_session.sh stop STATE    # end the background batches
#
# A lent machine goes back about 30 s after the call that started the batches returns, and the
# batches with it: follow `start` at once with back-to-back `follow` calls (up to 580 s each)
# until the budget is nearly spent, then `pack` and `stop`. Carry STATE (and the builtin folder)
# on the `start` call only: carrying replaces the machine's copy, and the batches write to it.
#
# `start` runs, at once and sharing one device lock (checks overlap, timing never does):
#   - harness_cuda_l1.py build: the load_inline candidates, compiled on cores 6-15;
#   - harness_cuda_l1.py verify: CUDA-L1's H100 candidates through the CLI (built ones as their
#     builds land), the actor-path keys first;
#   - actor_path_gpu.py run: the same kind of candidates through the platform's job path (embedded
#     mode), when the wheels it needs (Django...) are carried in .whl/;
#   - builtin_optimizer_gpu.py --verify: the builtin optimizer's candidates in $BUILTIN (default
#     var/builtin-candidates).
# Verifiers share cores $VERIFY_CORES (default 0-5), builds $BUILD_CORES (default 6-15); $FIRST (keys,
# or @FILE with one per line; default the actor-path keys) are built and verified before the rest,
# in that order. Carried wheels in .whl/ (Django and the platform's other requirements for the GPU
# host's Python) are installed first when present. `measure` runs the GPU tests first.
set -u
command=$1
state=$(realpath -m "$2")
mkdir -p "$state"
if [ -d .whl ] && [ ! -d /tmp/site ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
fi
export PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1
builtin=${BUILTIN:-var/builtin-candidates}
verify_cores=${VERIFY_CORES:-0-5}
build_cores=${BUILD_CORES:-6-15}
first=${FIRST:-$(python3 -c 'import sys; sys.path.insert(0, "benchmarks"); from actor_path_gpu import DEFAULT_KEYS; print(",".join(DEFAULT_KEYS))')}

case $command in
measure)
  python3 -m pytest tests/harness/test_gpu.py -q -p no:cacheprovider > "$state/test_gpu.txt" 2>&1
  tail -n 1 "$state/test_gpu.txt"
  python3 benchmarks/harness_cuda_l1.py cost --state "$state" > "$state/cost.log" 2>&1
  python3 benchmarks/harness_cuda_l1.py repeat --state "$state" > "$state/repeat.log" 2>&1
  tail -n 3 "$state/cost.log"; cat "$state/repeat.log"
  ;;
build)
  touch "$state/building"  # before returning, so a `verify` started next waits for the builds
  setsid bash -c "taskset -c $build_cores python3 benchmarks/harness_cuda_l1.py build --state '$state' \
    --workers ${BUILD_WORKERS:-10} --first '$first' > '$state/build.log' 2>&1" > /dev/null 2>&1 < /dev/null &
  echo $! > "$state/build.pid"
  echo "building in the background"
  ;;
start)
  if ! kill -0 "$(cat "$state/build.pid" 2>/dev/null)" 2>/dev/null; then bash "$0" build "$state"; fi
  setsid bash -c "
    if [ -d .whl ]; then taskset -c $verify_cores python3 benchmarks/actor_path_gpu.py run --state '$state' > '$state/actor.log' 2>&1 & fi
    taskset -c $verify_cores python3 benchmarks/builtin_optimizer_gpu.py --out '$builtin' --verify --parallel ${BUILTIN_VERIFIERS:-1} \
      --device-lock '$state/gpu.lock' --budget-s 3000 > '$state/builtin.log' 2>&1 &
    taskset -c $verify_cores python3 benchmarks/harness_cuda_l1.py verify --state '$state' --parallel ${VERIFIERS:-2} --budget-s 3000 \
      --first '$first' > '$state/verify.log' 2>&1 &
    wait
  " > "$state/session.log" 2>&1 < /dev/null &
  echo $! > "$state/session.pid"  # setsid made it a session (and process group) leader
  echo "started in the background; state in $state"
  ;;
pack)
  cp "$builtin/verdicts.jsonl" "$state/builtin-verdicts.jsonl" 2>/dev/null
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv > "$state/gpu.csv" 2>&1
  tar czf "$OUT/state.tgz" -C "$(dirname "$state")" --exclude=baselines --exclude=actor-var "$(basename "$state")"
  for log in verify actor builtin build; do echo "== $log"; tail -n 4 "$state/$log.log" 2>/dev/null; done
  wc -l "$state"/*.jsonl 2>/dev/null
  ;;
follow)
  sleep "${3:-540}"
  exec bash "$0" pack "$state"
  ;;
stop)
  # By process group, not by a pattern: a pattern would also match the command that calls this.
  kill -- "-$(cat "$state/session.pid")" 2>/dev/null; kill -- "-$(cat "$state/build.pid")" 2>/dev/null; sleep 3
  # The sandboxed processes run in sessions of their own; the bracket keeps this line from matching itself.
  pkill -9 -f "evaluation[.]harness[.](candidate|reference)_process"; true
  ;;
esac
