"""The harness's steady-state speedups against `triton.testing.do_bench` and a CUDA-graph replay, on
the same (reference, candidate) pairs of CUDA-L1's H100 release, in one run on one GPU.

    python benchmarks/steady_state.py compare --state var/steady --tasks L1T25,L2T14 --budget-s 500
    python benchmarks/steady_state.py repeat  --state var/steady --tasks L1T25,... --runs 3
    python benchmarks/steady_state.py report  --state var/steady

`compare` verifies each candidate through the CLI (eager baseline), then times both sides with
do_bench (back-to-back calls, L2 cleared before each, median) and as a CUDA-graph replay, in one
process, the reference before the candidate is loaded (as the harness keeps the candidate's global
state, TF32 say, out of the reference's measurement). Results accumulate as JSON lines in --state, so a run cut short resumes.
Plain Python (no Django).
"""

import argparse
import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "benchmarks"))

import harness_cuda_l1 as cuda_l1  # noqa: E402  (after the path is set)

# Trimmed for a batch: the platform's defaults sample longer.
PLAN = {
    "trials": 1,
    "inputs_per_trial": 2,
    "warmup_rounds": 2,
    "min_samples": 10,
    "max_samples": 30,
    "timing_budget_s": 2.0,
    "timed_checks": 1,
    "steady_budget_s": 8.0,
    "profile": False,
    "shape_check": False,
    "speed_of_light": False,
}
LIMITS = {"call_time_s": 120, "build_time_s": 300, "wall_time_s": 420, "build_cache_dir": cuda_l1.BUILD_CACHE}


def harness(problem: Path, candidate: Path, state: Path) -> dict:
    verdict, wall, log = cuda_l1.run_cli(cuda_l1.verify_args(problem, candidate, plan=PLAN, limits=LIMITS), 600)
    if verdict is None:
        return {"status": "harness-failure", "log": log[-800:], "wall_s": wall}
    timing = verdict.get("timing") or {}
    measures = timing.get("measures") or {}
    steady, latency = measures.get("steady_state") or {}, measures.get("latency") or {}
    device = measures.get("device_time") or {}
    return {
        "status": verdict["status"],
        "reason": verdict["reason"][:200],
        "wall_s": round(wall, 2),
        "steady": (steady.get("speedups") or {}).get("eager"),
        "steady_interval": (steady.get("speedup_intervals") or {}).get("eager"),
        "steady_candidate_ms": (steady.get("candidate") or {}).get("median_ms"),
        "steady_eager_ms": ((steady.get("baselines") or {}).get("eager") or {}).get("median_ms"),
        "rounds": steady.get("rounds"),
        "stopped_by": steady.get("stopped_by"),
        "leftover_us": steady.get("leftover_us"),
        "ungated": steady.get("ungated"),
        "headline": timing.get("headline"),
        "settle_us": steady.get("settle_us"),
        "device_settle_us": device.get("settle_us"),
        "device": (device.get("speedups") or {}).get("eager"),
        "device_interval": (device.get("speedup_intervals") or {}).get("eager"),
        "device_candidate_ms": (device.get("candidate") or {}).get("median_ms"),
        "device_eager_ms": ((device.get("baselines") or {}).get("eager") or {}).get("median_ms"),
        "device_unavailable": device.get("unavailable"),
        "device_stopped_by": device.get("stopped_by"),
        "latency": (latency.get("speedups") or {}).get("eager"),
        "latency_candidate_ms": (latency.get("candidate") or {}).get("median_ms"),
        "gpu": timing.get("gpu"),
        "cost": verdict.get("cost"),
        "flags": verdict.get("flags"),
    }


def peer(problem: Path, candidate: Path) -> dict:
    """Both sides timed by do_bench and by a CUDA-graph replay in one process of their own: the
    reference first, then the candidate is loaded (so what it changes in torch's global state, TF32
    say, never reaches the reference's measurement)."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run(
        [sys.executable, __file__, "peer", "--problem", str(problem), "--candidate", str(candidate)],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
        cwd=REPO,
    )
    try:
        return json.loads(done.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return {"error": done.stderr[-800:]}


LONG_CLEAR_BYTES = 4 << 30  # about 1.4 ms of writing on an H100: longer than any call's issuing seen (RESULTS)


@contextlib.contextmanager
def _long_clear():
    """do_bench's L2 clear, LONG_CLEAR_BYTES long instead of its 256 MiB, for as long as the block runs."""
    import torch
    import triton

    driver = triton.runtime.driver.active
    made = []

    def empty_cache():
        made.append(torch.empty(LONG_CLEAR_BYTES // 4, dtype=torch.int, device="cuda"))
        return made[-1]

    driver.get_empty_cache_for_benchmark = empty_cache
    try:
        yield
    finally:
        del driver.get_empty_cache_for_benchmark
    if not made:
        raise RuntimeError("do_bench did not ask for its cache through the driver: the long clear was not used")


SLEEP_CYCLES = 2_000_000  # about 1 ms at the H100's 1.98 GHz


@contextlib.contextmanager
def _sleep_before_clear():
    import torch
    import triton

    driver = triton.runtime.driver.active
    used = []

    def clear_cache(cache):
        used.append(True)
        torch.cuda._sleep(SLEEP_CYCLES)
        cache.zero_()

    driver.clear_cache = clear_cache
    try:
        yield
    finally:
        del driver.clear_cache
    if not used:
        raise RuntimeError("do_bench did not clear its cache through the driver: the sleep was not used")


def _time_side(model, inputs) -> dict:
    import torch
    import triton.testing

    from evaluation.harness.sandboxed import baselines

    result = {}
    with torch.no_grad():
        for _ in range(3):
            model(*inputs)
        torch.cuda.synchronize()
        # Three times in the process: on host-bound calls do_bench does not agree with itself (RESULTS, harness 10).
        runs = [triton.testing.do_bench(lambda: model(*inputs), warmup=100, rep=300, return_mode="median") for _ in range(3)]
        result["do_bench_runs"] = runs
        result["do_bench_ms"] = statistics.median(runs)
        result["do_bench_spread"] = (max(runs) - min(runs)) / statistics.median(runs)
        # do_bench again with a clear long enough to hide the host's issuing of the call behind it (the
        # device still writing the clear when the host has queued the whole call): the gate's measure.
        with _long_clear():
            runs = [triton.testing.do_bench(lambda: model(*inputs), warmup=100, rep=300, return_mode="median") for _ in range(3)]
        result["long_clear_runs"] = runs
        result["long_clear_ms"] = statistics.median(runs)
        result["long_clear_spread"] = (max(runs) - min(runs)) / statistics.median(runs)
        # And with do_bench's own 256 MiB clear behind a device-side sleep of about 1 ms: the host's issuing
        # hidden the same way, without the 4 GiB write's cost to the TLB.
        with _sleep_before_clear():
            runs = [triton.testing.do_bench(lambda: model(*inputs), warmup=100, rep=300, return_mode="median") for _ in range(3)]
        result["sleep_clear_runs"] = runs
        result["sleep_clear_ms"] = statistics.median(runs)
        try:
            graph = baselines.CudaGraphCall(model, inputs)  # captured as the harness's cudagraph baseline is
            result["graph_ms"] = triton.testing.do_bench(graph.replay, warmup=100, rep=500, return_mode="median")
        except Exception as exc:  # noqa: BLE001  (capture does not work for every kernel)
            result["graph_error"] = f"{type(exc).__name__}: {str(exc)[:200]}"
    return result


def command_peer(problem: Path, candidate: Path, time_side=_time_side) -> None:
    """Prints both sides' timings as `time_side(model, inputs)` measures them, as one JSON line."""
    import torch

    from evaluation.harness.sandboxed import loading

    module, _ = loading.load_problem(str(problem), None)
    init = loading.init_inputs(module)
    torch.manual_seed(0)
    inputs = [x.cuda() if isinstance(x, torch.Tensor) else x for x in module.get_inputs()]
    result = {"reference": time_side(loading.build_model(module.Model, list(init), 1, "cuda"), inputs)}
    try:
        cls = loading.load_module(loading.CANDIDATE_MODULE, candidate.read_text(), str(candidate)).ModelNew
        result["candidate"] = time_side(loading.build_model(cls, list(init), 1, "cuda"), inputs)
    except Exception as exc:  # noqa: BLE001
        result["candidate"] = {"error": f"{type(exc).__name__}: {str(exc)[:300]}"}
    print(json.dumps(result))


def command_compare(state: Path, tasks: list[str], budget_s: float, runs_file: str = "compare.jsonl") -> None:
    rows = {cuda_l1.key(r): r for r in cuda_l1.entries()}
    out = state / runs_file
    done = set(cuda_l1.load_results(out))
    began = time.monotonic()
    folder = Path(tempfile.mkdtemp(prefix="steady-"))
    for key in tasks:
        if key in done:
            continue
        if time.monotonic() - began > budget_s:
            print(f"budget spent before {key}", flush=True)
            break
        problem, candidate = cuda_l1.write_sources(folder, rows[key])
        record = {"key": key, **harness(problem, candidate, state)}
        timed = peer(problem, candidate)
        reference, ours = timed.get("reference") or {}, timed.get("candidate") or {}
        record["do_bench"] = timed
        if reference.get("do_bench_ms") and ours.get("do_bench_ms"):
            record["do_bench_speedup"] = reference["do_bench_ms"] / ours["do_bench_ms"]
        if reference.get("long_clear_ms") and ours.get("long_clear_ms"):
            record["long_clear_speedup"] = reference["long_clear_ms"] / ours["long_clear_ms"]
            if record.get("steady"):
                record["steady_over_long_clear"] = record["steady"] / record["long_clear_speedup"]
        if reference.get("sleep_clear_ms") and ours.get("sleep_clear_ms"):
            record["sleep_clear_speedup"] = reference["sleep_clear_ms"] / ours["sleep_clear_ms"]
            if record.get("steady"):
                record["steady_over_sleep_clear"] = record["steady"] / record["sleep_clear_speedup"]
        if reference.get("graph_ms") and ours.get("graph_ms"):
            record["graph_speedup"] = reference["graph_ms"] / ours["graph_ms"]
        if record.get("steady") and record.get("do_bench_speedup"):
            record["steady_over_do_bench"] = record["steady"] / record["do_bench_speedup"]
        if record.get("device") and record.get("graph_speedup"):
            record["device_over_graph"] = record["device"] / record["graph_speedup"]
        for spread in ("do_bench_spread", "long_clear_spread"):
            spreads = [side.get(spread) for side in (reference, ours)]
            if all(s is not None for s in spreads):
                record[spread] = max(spreads)
        cuda_l1.append(out, record)
        print(
            key,
            record["status"],
            record.get("steady"),
            record.get("do_bench_speedup"),
            record.get("steady_over_do_bench"),
            record.get("long_clear_speedup"),
            record.get("steady_over_long_clear"),
            record.get("steady_over_sleep_clear"),
            record.get("device"),
            record.get("graph_speedup"),
            record.get("device_over_graph"),
            record.get("wall_s"),
            flush=True,
        )


def command_repeat(state: Path, tasks: list[str], runs: int) -> None:
    rows = {cuda_l1.key(r): r for r in cuda_l1.entries()}
    folder = Path(tempfile.mkdtemp(prefix="steady-repeat-"))
    for run in range(runs):
        for key in tasks:
            problem, candidate = cuda_l1.write_sources(folder, rows[key])
            record = {"key": f"{key}#{run}", "task": key, "run": run, **harness(problem, candidate, state)}
            cuda_l1.append(state / "repeat.jsonl", record)
            print(record["key"], record["status"], record.get("steady"), record.get("steady_candidate_ms"), flush=True)


def command_report(state: Path) -> None:
    compared = list(cuda_l1.load_results(state / "compare.jsonl").values())
    print(
        "| task | status | steady | 95% interval | do_bench | steady/do_bench | do_bench, long clear | steady/long clear "
        "| device | graph | device/graph | latency | candidate ms (steady) | eager ms steady / do_bench / long clear | wall s |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    ratios, long_ratios, device_ratios = [], [], []
    fmt = lambda v: f"{v:.3f}" if isinstance(v, (int, float)) else "-"  # noqa: E731
    for r in compared:
        interval = r.get("steady_interval")
        ratio, device_ratio = r.get("steady_over_do_bench"), r.get("device_over_graph")
        if ratio:
            ratios.append(ratio)
        if device_ratio:
            device_ratios.append(device_ratio)
        if r.get("steady_over_long_clear"):
            long_ratios.append(r["steady_over_long_clear"])
        eager_peer = (r.get("do_bench") or {}).get("reference") or {}
        eager_do_bench, eager_long = eager_peer.get("do_bench_ms"), eager_peer.get("long_clear_ms")
        print(
            f"| {r['key']} | {r['status']} | {fmt(r.get('steady'))} | "
            f"{'-' if not interval else f'{interval[0]:.3f}-{interval[1]:.3f}'} | {fmt(r.get('do_bench_speedup'))} | "
            f"{fmt(ratio)} | {fmt(r.get('long_clear_speedup'))} | {fmt(r.get('steady_over_long_clear'))} | "
            f"{fmt(r.get('device'))} | {fmt(r.get('graph_speedup'))} | {fmt(device_ratio)} | "
            f"{fmt(r.get('latency'))} | {r.get('steady_candidate_ms') or 0:.4f} | "
            f"{r.get('steady_eager_ms') or 0:.4f} / {eager_do_bench or 0:.4f} / {eager_long or 0:.4f} | {fmt(r.get('wall_s'))} |"
        )
    # Entries where do_bench's three runs of one side, in one process, spread by more than 5%: no figure
    # can be within 5% of all of them.
    unsteady = [r for r in compared if (r.get("do_bench_spread") or 0) > 0.05]
    if unsteady:
        print(
            "\ndo_bench against itself (three runs a side, one process), spread over 5%: "
            + ", ".join(f"{r['key']} {r['do_bench_spread']:.0%}" for r in unsteady)
        )
        settled = [r["steady_over_do_bench"] for r in compared if r.get("steady_over_do_bench") and r not in unsteady]
        print(
            f"steady/do_bench where do_bench repeats itself within 5%: "
            f"{sum(1 for x in settled if abs(x - 1) <= 0.05)} of {len(settled)} within 5%"
        )
    unsteady_long = [r for r in compared if (r.get("long_clear_spread") or 0) > 0.05]
    if unsteady_long:
        print(
            "\ndo_bench with the long clear against itself, spread over 5%: "
            + ", ".join(f"{r['key']} {r['long_clear_spread']:.0%}" for r in unsteady_long)
        )
    for name, values in (("steady/do_bench", ratios), ("steady/long clear", long_ratios), ("device/graph", device_ratios)):
        if values:
            within = sum(1 for x in values if abs(x - 1) <= 0.05)
            print(
                f"\n{name}: {within} of {len(values)} within 5%; median {statistics.median(values):.3f}, "
                f"min {min(values):.3f}, max {max(values):.3f}"
            )
    walls = [r["wall_s"] for r in compared if r.get("wall_s") and r["key"].startswith(("L1", "L2"))]
    if walls:
        print(f"wall time of a level-1/2 verification: median {statistics.median(walls):.1f} s over {len(walls)}")
    repeats = list(cuda_l1.load_results(state / "repeat.jsonl").values())
    by_task: dict = {}
    for r in repeats:
        if r.get("steady"):
            by_task.setdefault(r["task"], []).append(r["steady"])
    for task, values in by_task.items():
        spread = (max(values) - min(values)) / statistics.median(values)
        print(f"repeat {task}: {', '.join(f'{v:.3f}' for v in values)}; spread {spread:.1%}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("command", choices=("compare", "repeat", "report", "peer"))
    parser.add_argument("--state", default="var/steady")
    parser.add_argument("--tasks", default="")
    parser.add_argument("--budget-s", type=float, default=500)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--problem")
    parser.add_argument("--candidate")
    args = parser.parse_args()
    if args.command == "peer":
        command_peer(Path(args.problem), Path(args.candidate))
        return
    state = Path(args.state)
    state.mkdir(parents=True, exist_ok=True)
    tasks = [t for t in args.tasks.split(",") if t]
    if args.command == "compare":
        command_compare(state, tasks, args.budget_s)
    elif args.command == "repeat":
        command_repeat(state, tasks, args.runs)
    else:
        command_report(state)


if __name__ == "__main__":
    main()
