"""The honest corpus on a GPU: every legitimate technique, verified alone and several at a time on one
device, counting false rejections (an honest kernel called wrong, rejected or failed).

Plain Python (no Django). The corpus is `benchmarks/honest/corpus.json` (problem, candidate, kind); every
pair goes through `python -m evaluation.harness verify` in its own process, as anyone can re-run it,
the CLI runs of one batch sharing one device lock as the release batch's do.

    python benchmarks/honest_corpus.py build --state var/honest           # load_inline builds, in parallel
    python benchmarks/honest_corpus.py run --state var/honest --label alone --parallel 1
    python benchmarks/honest_corpus.py run --state var/honest --label shared --parallel 3
    python benchmarks/honest_corpus.py report --state var/honest          # the tables for RESULTS.md

Each run appends one JSON line per pair to STATE/<label>.jsonl (a pair already there is skipped, so a
run cut short resumes).
"""

import argparse
import concurrent.futures
import json
import sys
import time
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "benchmarks"))

import harness_cuda_l1 as cuda_l1  # noqa: E402  (after the path is set)
import release_batch  # noqa: E402

CORPUS = REPO / "benchmarks" / "honest" / "corpus.json"
# Every check and measure of the default plan, with shorter timing budgets: the question is the
# verdict, not the last percent of a speedup.
PLAN = {
    "trials": 2,
    "inputs_per_trial": 2,
    "warmup_rounds": 2,
    "min_samples": 15,
    "max_samples": 40,
    "target_ci": 0.01,
    "timing_budget_s": 2.0,
    "steady_budget_s": 4.0,
    "device_time_budget_s": 2.0,
    "timed_checks": 2,
}
LIMITS = {"call_time_s": 120, "build_time_s": 400, "wall_time_s": 500}
VERIFIED = "verified"


def corpus(only: set[str] | None = None) -> list[dict]:
    rows = json.loads(CORPUS.read_text())
    return [r for r in rows if not only or r["name"] in only]


def _limits(state: Path) -> dict:
    return {**LIMITS, "build_cache_dir": str(state / "builds"), "device_lock_path": str(state / "device.lock")}


def compiled_for() -> dict:
    """The builds' and the verifications' TORCH_CUDA_ARCH_LIST, from the host's GPUs: the same on both, so
    a build ahead with no GPU is what a verification loads."""
    found = release_batch.arch_list([capability for _, capability in release_batch.host_gpus()])
    return {"TORCH_CUDA_ARCH_LIST": found} if found else {}


def build(state: Path, workers: int, only: set[str] | None) -> None:
    """Fill the build cache ahead (the CLI's `build --ahead`: no GPU, so no device lock), several at a
    time on the CPU cores: a load_inline build is minutes of CPU. Builds that held the device lock
    waited up to 494 s for one another (RESULTS.md, harness 11)."""
    rows = [r for r in corpus(only) if r["kind"].startswith("cuda")]
    env = {**compiled_for(), "CUDA_VISIBLE_DEVICES": ""}
    limits = {k: v for k, v in _limits(state).items() if k != "device_lock_path"}

    def one(row: dict) -> str:
        args = ["build", "--ahead", "--problem", str(CORPUS.parent / row["problem"])]
        args += ["--candidate", str(CORPUS.parent / row["candidate"]), "--device", "cuda", "--limits", json.dumps(limits)]
        verdict, wall, log = cuda_l1.run_cli(args, timeout=900, env=env)
        outcome = "built" if (verdict or {}).get("built") else (verdict or {}).get("reason", log[-300:])
        return f"{row['name']}: {outcome} in {wall:.0f} s"

    with concurrent.futures.ThreadPoolExecutor(workers) as pool:
        for line in pool.map(one, rows):
            print(line, flush=True)


def verify_one(row: dict, state: Path, baselines: str) -> dict:
    problem, candidate = CORPUS.parent / row["problem"], CORPUS.parent / row["candidate"]
    args = cuda_l1.verify_args(problem, candidate, baselines=baselines, plan=PLAN, limits=_limits(state))
    args += ["--baseline-cache", str(state / "baselines")]
    began = time.monotonic()
    verdict, wall, log = cuda_l1.run_cli(args, timeout=900, env=compiled_for())
    record = {"name": row["name"], "kind": row["kind"], "wall_s": round(time.monotonic() - began, 1)}
    if verdict is None:
        return {**record, "status": "harness-failure", "reason": log[-800:]}
    timing = verdict.get("timing") or {}
    steady = (timing.get("measures") or {}).get("steady_state") or {}
    return {
        **record,
        "status": verdict["status"],
        "failed_check": cuda_l1.failed_check(verdict),
        "reason": verdict["reason"][:800],
        "flags": verdict.get("flags", []),
        "speedup": (timing.get("speedups") or {}).get("eager"),
        "interval": (timing.get("speedup_intervals") or {}).get("eager"),
        "candidate_ms": (timing.get("candidate") or {}).get("median_ms"),
        "settle_us": steady.get("settle_us"),
        # The harness's own write's gap beside each side's drain (callsite.c): to calibrate a floor check.
        "floor_us": steady.get("floor_us"),
        # The A/A control where it ran: its reading, and the candidate's against it (same kind of process).
        "control": {k: (timing.get("control") or {}).get(k) for k in ("speedup", "interval", "off", "candidate_interval")}
        if timing.get("control")
        else None,
        "no_difference": timing.get("no_difference"),
        "leftover_us": steady.get("leftover_us"),
        "device_time_unavailable": ((timing.get("measures") or {}).get("device_time") or {}).get("unavailable"),
        "stream_safety": (verdict.get("static") or {}).get("stream_safety"),
        "device_wait_s": (verdict.get("cost") or {}).get("device_wait_s"),
        "total_s": (verdict.get("cost") or {}).get("total_s"),
        "harness_version": verdict.get("harness_version"),
        # Whether the candidate was frozen around every other request (cgroup freezer) on this host.
        "frozen_between_requests": (verdict.get("sandbox") or {}).get("frozen_between_requests"),
        "log_tail": verdict.get("log_excerpt", "")[-600:] if verdict["status"] != VERIFIED else "",
    }


def run(state: Path, label: str, parallel: int, baselines: str, only: set[str] | None) -> None:
    out = state / f"{label}.jsonl"
    done = {r["name"] for r in map(json.loads, out.read_text().splitlines())} if out.exists() else set()
    rows = [r for r in corpus(only) if r["name"] not in done]
    began = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(parallel) as pool:
        for record in pool.map(lambda row: verify_one(row, state, baselines), rows):
            record["parallel"] = parallel
            cuda_l1.append(out, record)
            print(
                f"{record['name']:40} {record['status']:10} {record.get('failed_check') or '':24} "
                f"{record.get('speedup') or 0:7.3f} {record['wall_s']:6.1f} s",
                flush=True,
            )
    print(f"{len(rows)} verdicts in {time.monotonic() - began:.0f} s ({label}, {parallel} at a time)")


def report(state: Path) -> None:
    for path in sorted(state.glob("*.jsonl")):
        records = [json.loads(line) for line in path.read_text().splitlines()]
        statuses = Counter(r["status"] for r in records)
        false = [r for r in records if r["status"] != VERIFIED]
        print(f"\n### {path.stem}: {len(records)} honest pairs, {statuses[VERIFIED]} verified, {len(false)} not\n")
        print("| pair | kind | status | check | speedup over eager | 95% interval | wall s |")
        print("| --- | --- | --- | --- | --- | --- | --- |")
        for r in sorted(records, key=lambda r: (r["kind"], r["name"])):
            interval = r.get("interval")
            shown = f"{interval[0]:.3f}-{interval[1]:.3f}" if interval else "-"
            speedup = f"{r['speedup']:.3f}" if r.get("speedup") else "-"
            check = r.get("failed_check") or ""
            print(f"| {r['name']} | {r['kind']} | {r['status']} | {check} | {speedup} | {shown} | {r['wall_s']} |")
        for r in false:
            print(f"\n{r['name']}: {r.get('reason', '')[:400]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("command", choices=("build", "run", "report"))
    parser.add_argument("--state", type=Path, required=True)
    parser.add_argument("--label", default="alone")
    parser.add_argument("--parallel", type=int, default=1)
    parser.add_argument("--workers", type=int, default=8)
    parser.add_argument("--baselines", default="eager")
    parser.add_argument("--only", default="", help="names, comma-separated")
    args = parser.parse_args()
    args.state.mkdir(parents=True, exist_ok=True)
    only = {n for n in args.only.split(",") if n} or None
    if args.command == "build":
        build(args.state, args.workers, only)
    elif args.command == "run":
        run(args.state, args.label, args.parallel, args.baselines, only)
    else:
        report(args.state)


if __name__ == "__main__":
    main()
