"""Does a verdict's 95% interval cover a second verification? (issue 32)

    python benchmarks/interval_coverage.py run    --state var/coverage [--passes 2] [--budget-s 1500] [--tasks L1T25,...]
    python benchmarks/interval_coverage.py report --state var/coverage

`run` verifies each of 30 CUDA-L1 H100 entries across the levels (`harness_cuda_l1.all_baseline_sample`)
once per pass, every verification in fresh processes through the CLI, with the A/A control on and
kept (`--keep-control`: the operator vouches for CUDA-L1's entries), so the device's kept controls (in
STATE/baselines) give the spread between processes that widens each stated interval (DEVELOPERS.md,
"Statistics"). One JSON line per (task, pass) in STATE/coverage.jsonl; a run cut short resumes.
`report` counts, over the pairs verified in two passes, how often the second reading lies inside the
first's stated interval (the criterion: at least 90%), inside the first's rounds-only interval (what
harness 11 stated), and inside the first interval recomputed with the device's spread at the end of
the run (the first verdicts of a fresh device stated theirs with fewer controls); and the A/A
controls' ratios. Plain Python (no Django).
"""

import argparse
import json
import math
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

import harness_cuda_l1 as cuda_l1  # noqa: E402  (after the path is set)
import steady_state  # noqa: E402

from evaluation.harness import measurement  # noqa: E402

# The timing comparison's trimmed plan, with the A/A control on every verification and no device time
# (the stated interval is the steady state's).
PLAN = {**steady_state.PLAN, "device_time": False, "control": True}
LIMITS = steady_state.LIMITS


def _record(task: str, number: int, verdict: dict | None, wall: float, log: str) -> dict:
    record = {"task": task, "pass": number, "wall_s": round(wall, 1)}
    if verdict is None:
        return {**record, "status": "harness-failure", "log": log[-800:]}
    timing = verdict.get("timing") or {}
    return {
        **record,
        "status": verdict["status"],
        "reason": verdict["reason"][:300],
        "speedup": (timing.get("speedups") or {}).get("eager"),
        "interval": (timing.get("speedup_intervals") or {}).get("eager"),
        "within": (timing.get("within_process_intervals") or {}).get("eager"),
        "between_process": timing.get("between_process"),
        "control": {k: (timing.get("control") or {}).get(k) for k in ("speedup", "interval", "off")},
        "null_result": bool(timing.get("null_result")),
    }


def run(state: Path, passes: int, budget_s: float, tasks: list[str] | None) -> None:
    state.mkdir(parents=True, exist_ok=True)
    out, sources = state / "coverage.jsonl", state / "sources"
    sources.mkdir(exist_ok=True)
    rows = {cuda_l1.key(r): r for r in cuda_l1.entries()}
    chosen = sorted(tasks or cuda_l1.all_baseline_sample(list(rows.values())))
    done = {(r["task"], r["pass"]) for r in map(json.loads, out.read_text().splitlines())} if out.exists() else set()
    began = time.monotonic()
    for number in range(1, passes + 1):
        for task in chosen:
            if (task, number) in done:
                continue
            if time.monotonic() - began > budget_s:
                print(f"budget of {budget_s:.0f} s spent; run again to resume", flush=True)
                return
            problem, candidate = cuda_l1.write_sources(sources, rows[task])
            limits = {**LIMITS, "device_lock_path": str(state / "gpu.lock")}
            args = cuda_l1.verify_args(problem, candidate, plan=PLAN, limits=limits, baseline_cache=state / "baselines")
            verdict, wall, log = cuda_l1.run_cli([*args, "--keep-control"], timeout=600)
            record = _record(task, number, verdict, wall, log)
            cuda_l1.append(out, record)
            print(
                f"pass {number} {task:7} {record['status']:10} {record.get('speedup') or 0:7.3f} {record['interval']}", flush=True
            )


def _inside(value: float, interval) -> bool:
    return bool(interval) and interval[0] <= value <= interval[1]


def report(state: Path) -> None:
    records = [json.loads(line) for line in (state / "coverage.jsonl").read_text().splitlines()]
    by_task: dict[str, dict[int, dict]] = {}
    for r in records:
        by_task.setdefault(r["task"], {})[r["pass"]] = r
    controls = [r["control"] for r in records if (r.get("control") or {}).get("speedup")]
    last_spread = next(
        (r["between_process"]["spread"] for r in reversed(records) if (r.get("between_process") or {}).get("spread") is not None),
        None,
    )
    counts = {"stated": 0, "rounds only": 0, "the device's final spread": 0}
    pairs = 0
    for task, passes in sorted(by_task.items()):
        first, second = passes.get(1), passes.get(2)
        if not first or not second or first["status"] != "verified" or second["status"] != "verified":
            continue
        if first["null_result"] or not first.get("within"):
            continue
        pairs += 1
        later = second["speedup"]
        final = measurement.reproduction_interval(first["speedup"], first["within"], last_spread)
        for name, interval in (
            ("stated", first["interval"]),
            ("rounds only", first["within"]),
            ("the device's final spread", final),
        ):
            counts[name] += _inside(later, interval)
        print(
            f"{task:7} {first['speedup']:7.3f} [{first['interval'][0]:.3f}, {first['interval'][1]:.3f}] "
            f"rounds [{first['within'][0]:.3f}, {first['within'][1]:.3f}]  second {later:7.3f}"
        )
    print(f"\n{pairs} pairs verified in both passes; the second reading inside the first's interval:")
    for name, count in counts.items():
        share = count / pairs if pairs else math.nan
        print(f"  {name:28} {count:3} of {pairs} ({share:.0%}){'  (criterion: 90%)' if name == 'stated' else ''}")
    print(f"\nspread between processes at the end: {last_spread}")
    if controls:
        ratios = [c["speedup"] for c in controls]
        print(
            f"A/A controls: {len(ratios)}, median {statistics.median(ratios):.4f}, range {min(ratios):.4f}-{max(ratios):.4f}, "
            f"off 1.0: {sum(bool(c['off']) for c in controls)}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    run_parser = commands.add_parser("run")
    run_parser.add_argument("--state", type=Path, required=True)
    run_parser.add_argument("--passes", type=int, default=2)
    run_parser.add_argument("--budget-s", type=float, default=1500)
    run_parser.add_argument("--tasks", help="comma-separated keys such as L1T25 (default: the 30-task sample)")
    report_parser = commands.add_parser("report")
    report_parser.add_argument("--state", type=Path, required=True)
    args = parser.parse_args()
    if args.command == "run":
        run(args.state.resolve(), args.passes, args.budget_s, args.tasks.split(",") if args.tasks else None)
    else:
        report(args.state.resolve())


if __name__ == "__main__":
    main()
