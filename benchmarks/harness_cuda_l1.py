"""Run CUDA-L1's H100 candidates through the harness CLI on a GPU, and report what held up.

Plain Python (no Django). Every candidate goes through `python -m evaluation.harness verify` in its
own process, exactly as anyone can re-run it; results accumulate in --state as JSON lines, so a
batch cut short by a time limit resumes where it stopped.

    python benchmarks/harness_cuda_l1.py smoke  --state var/harness-h100   # the CUDA path on a few entries
    python benchmarks/harness_cuda_l1.py build  --state var/harness-h100   # load_inline builds, in parallel
    python benchmarks/harness_cuda_l1.py verify --state var/harness-h100 --budget-s 520
    python benchmarks/harness_cuda_l1.py repeat --state var/harness-h100   # 5 honest candidates x 3 runs
    python benchmarks/harness_cuda_l1.py cost   --state var/harness-h100   # one level-1 candidate, cold and cached
    python benchmarks/harness_cuda_l1.py report --state var/harness-h100   # markdown tables for RESULTS.md

`verify` runs several CLI processes at a time that share one device lock (the harness's
`device_lock_path`): since harness 11 only their sandboxes' start and torch's import overlap, each
verification holding the device from CUDA's context to its processes' end. Run beside `build`, it
takes candidates without a `load_inline` build first and each built one as soon as its build is
recorded. A verdict that ran out of memory while others shared the GPU is measured again alone at the end.
"""

import argparse
import concurrent.futures
import gzip
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter, defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
RELEASE = REPO / "data" / "cuda-l1" / "h100.jsonl.gz"
BUILD_CACHE = "/tmp/kernel-court-build-cache"
BUILDING = "building"  # a file in the state folder while `build` runs
ALL_BASELINES = "eager,compile,compile-ro,cudagraph"
# Sized for 227 candidates inside a few device hours' minutes; the defaults are for the platform.
BATCH_PLAN = {
    "trials": 2,
    "inputs_per_trial": 2,
    "warmup_rounds": 2,
    "min_samples": 15,
    "max_samples": 40,
    "target_ci": 0.01,
    "timing_budget_s": 2.0,
    "timed_checks": 2,
}
BATCH_LIMITS = {"call_time_s": 120, "build_time_s": 300, "wall_time_s": 420}
SAMPLE_PER_LEVEL = {1: 10, 2: 10, 3: 10}


def entries(path: Path = RELEASE) -> list[dict]:
    """The published entries of a CUDA-L1 file: every row with a candidate, the string "None" included."""
    with gzip.open(path, "rt") as handle:
        rows = [json.loads(line) for line in handle]
    return [r for r in rows if r.get("custom_code") is not None]


def key(row: dict) -> str:
    return f"L{row['level_id']}T{row['task_id']}"


def all_baseline_sample(rows: list[dict]) -> set[str]:
    """30 tasks across the levels, fixed by seed, for which all four baselines are timed."""
    rng = random.Random(0)
    chosen = set()
    for level, count in SAMPLE_PER_LEVEL.items():
        pool = sorted((r for r in rows if r["level_id"] == level and r["custom_code"] != "None"), key=lambda r: r["task_id"])
        chosen |= {key(r) for r in rng.sample(pool, min(count, len(pool)))}
    return chosen


def load_results(path: Path) -> dict[str, dict]:
    if not path.exists():
        return {}
    return {r["key"]: r for r in map(json.loads, path.read_text().splitlines()) if r.get("key")}


_append_lock = threading.Lock()


def append(path: Path, record: dict) -> None:
    with _append_lock, path.open("a") as handle:
        handle.write(json.dumps(record) + "\n")


def verify_args(
    problem: Path,
    candidate: Path,
    *,
    device: str = "cuda",
    baselines: str = "eager",
    plan: dict | None = None,
    limits: dict | None = None,
    baseline_cache: Path | str | None = None,
) -> list[str]:
    """The CLI's `verify` arguments for one pair, plan and limits as the JSON it reads."""
    args = ["verify", "--problem", str(problem), "--candidate", str(candidate), "--device", device]
    args += ["--baselines", baselines, "--json"]
    if plan is not None:
        args += ["--plan", json.dumps(plan)]
    if limits is not None:
        args += ["--limits", json.dumps(limits)]
    if baseline_cache is not None:
        args += ["--baseline-cache", str(baseline_cache)]
    return args


def run_cli(args: list[str], timeout: float, env: dict | None = None) -> tuple[dict | None, float, str]:
    """The harness CLI in a process of its own (`env`: variables set over this process's, such as the
    GPU it may see); its JSON reply, wall time and the end of its log."""
    began = time.monotonic()
    try:
        done = subprocess.run(
            [sys.executable, "-m", "evaluation.harness", *args],
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=timeout,
            env={**os.environ, **env} if env else None,
        )
    except subprocess.TimeoutExpired:
        return None, time.monotonic() - began, "the CLI itself exceeded its timeout"
    wall = time.monotonic() - began
    try:
        return json.loads(done.stdout.strip().splitlines()[-1]), wall, done.stderr[-2000:]
    except (ValueError, IndexError):
        return None, wall, f"exit {done.returncode}: {done.stderr[-2000:]}"


def write_sources(folder: Path, row: dict) -> tuple[Path, Path]:
    problem, candidate = folder / f"{key(row)}_problem.py", folder / f"{key(row)}_candidate.py"
    problem.write_text(row["ref_code"])
    candidate.write_text(row["custom_code"])
    return problem, candidate


def verify_files(
    problem: Path,
    candidate: Path,
    *,
    baselines: str,
    device_lock: Path,
    baseline_cache: Path,
    plan: dict | None = None,
    timeout: float = 480,
) -> tuple[dict | None, float, str]:
    """One CUDA verification through the CLI with the batch's plan and limits, on the shared device lock."""
    limits = {**BATCH_LIMITS, "build_cache_dir": BUILD_CACHE, "device_lock_path": str(device_lock)}
    args = verify_args(
        problem,
        candidate,
        baselines=baselines,
        plan=BATCH_PLAN if plan is None else plan,
        limits=limits,
        baseline_cache=baseline_cache,
    )
    return run_cli(args, timeout)


def verify_row(row: dict, folder: Path, state: Path, *, baselines: str, plan: dict | None = None, timeout: float = 480):
    problem, candidate = write_sources(folder, row)
    verdict, wall, log = verify_files(
        problem,
        candidate,
        baselines=baselines,
        device_lock=state / "gpu.lock",
        baseline_cache=state / "baselines",
        plan=plan,
        timeout=timeout,
    )
    return summarize(row, verdict, wall, log, baselines)


def failed_check(verdict: dict) -> str | None:
    """The check that decided a verdict's status, if one failed."""
    return next((c["name"] for c in verdict.get("checks", []) if not c["passed"]), None)


def summarize(row: dict, verdict: dict | None, wall: float, log: str, baselines: str) -> dict:
    record = {
        "key": key(row),
        "level": row["level_id"],
        "task": row["task_id"],
        "score_default": row["score_default"],
        "baselines": baselines,
        "wall_s": round(wall, 2),
        "placeholder_code": row["custom_code"] == "None",
    }
    if verdict is None:
        record.update(status="harness-failure", reason=log[-600:])
        return record
    failed = failed_check(verdict)
    timing = verdict.get("timing") or {}
    correctness = verdict.get("correctness") or {}
    record.update(
        status=verdict["status"],
        reason=verdict["reason"][:600],
        failed_check=failed,
        flags=verdict.get("flags", []),
        speedups=timing.get("speedups"),
        candidate=timing.get("candidate"),
        baselines_measured=timing.get("baselines"),
        host_ms=timing.get("host_ms"),
        sol=(timing.get("speed_of_light") or {}).get("floor_ms"),
        tier=correctness.get("precision_tier"),
        max_rel_error=correctness.get("max_rel_error"),
        checked_calls=correctness.get("checked_calls"),
        shape_check=(correctness.get("shape_check") or {}).get("status"),
        language=(verdict.get("static") or {}).get("language"),
        kernels=[k["name"][:80] for k in (verdict.get("kernels") or {}).get("candidate", [])[:5]],
        env={k: (verdict.get("env") or {}).get(k) for k in ("gpu", "driver", "cuda", "torch", "triton", "compute_capability")},
        cost=verdict.get("cost"),
    )
    return record


def command_smoke(state: Path) -> None:
    """The CUDA path on test candidates and on CUDA-L1 entries named in the data's README."""
    results = state / "smoke.jsonl"
    tests = REPO / "tests" / "harness"
    cases = [
        ("matmul", "gpu_honest_triton_matmul", ALL_BASELINES),
        ("matmul", "gpu_side_stream", "eager"),
        ("matmul", "gpu_illegal_address", "eager"),
        ("matmul", "hack_lazy_tensor", "eager"),
        ("matmul", "hack_background_thread", "eager"),
        ("matmul", "hack_timing_aware", "eager"),
    ]
    for problem, candidate, baselines in cases:
        limits = {"build_cache_dir": BUILD_CACHE, "call_time_s": 60}
        plan = {**BATCH_PLAN, "trials": 2, "min_samples": 10}
        args = verify_args(
            tests / "problems" / f"{problem}.py",
            tests / "candidates" / f"{candidate}.py",
            baselines=baselines,
            plan=plan,
            limits=limits,
            baseline_cache=state / "baselines",
        )
        verdict, wall, log = run_cli(args, 300)
        record = summarize({"level_id": 0, "task_id": 0, "score_default": None, "custom_code": ""}, verdict, wall, log, baselines)
        record["key"] = candidate
        append(results, record)
        print(
            f"smoke {candidate:28s} {record['status']:9s} {wall:6.1f}s {record.get('speedups')} {record['reason'][:150]}",
            flush=True,
        )
    rows = {key(r): r for r in entries()}
    with tempfile.TemporaryDirectory() as folder:
        for name in ("L1T9", "L2T83", "L1T13", "L2T23", "L1T1"):
            record = verify_row(rows[name], Path(folder), state, baselines="eager")
            append(results, {**record, "key": f"smoke-{name}"})
            print(
                f"smoke {name:28s} {record['status']:9s} {record['wall_s']:6.1f}s {record.get('speedups')} "
                f"{record['reason'][:150]}",
                flush=True,
            )


def command_build(state: Path, workers: int, first: tuple = (), only: tuple = ()) -> None:
    """Compile every load_inline candidate (or those in `only`) in parallel into the shared build
    cache, `first` first."""
    results = state / "build.jsonl"
    done = {**load_results(results), **load_results(state / "verify.jsonl")}
    todo = sorted(
        (r for r in entries() if needs_build(r) and key(r) not in done and (not only or key(r) in only)),
        key=first_in_order(first),
    )
    print(f"building {len(todo)} candidates with {workers} workers", flush=True)
    folder = Path(tempfile.mkdtemp())

    def build(row):
        problem, candidate = write_sources(folder, row)
        limits = {"build_time_s": 420, "build_cache_dir": BUILD_CACHE}
        reply, wall, log = run_cli(
            [
                "build",
                "--problem",
                str(problem),
                "--candidate",
                str(candidate),
                "--device",
                "cuda",
                "--limits",
                json.dumps(limits),
            ],
            480,
        )
        record = {"key": key(row), "wall_s": round(wall, 1), **(reply or {"built": False, "reason": log[-400:]})}
        append(results, record)
        print(f"built {record['key']:7s} {record.get('built')} {wall:5.1f}s {str(record.get('reason'))[:100]}", flush=True)

    (state / BUILDING).touch()
    try:
        with concurrent.futures.ThreadPoolExecutor(workers) as pool:
            list(pool.map(build, todo))
    finally:
        (state / BUILDING).unlink(missing_ok=True)


def first_in_order(first: tuple):
    """A sort key: the rows named in `first` in that order, then the rest as they were (sorts are stable)."""
    rank = {name: index for index, name in enumerate(first)}
    return lambda row: rank.get(key(row), len(rank))


def needs_build(row: dict) -> bool:
    return "load_inline" in row["custom_code"] or "cpp_extension" in row["custom_code"]


def ran_out_of_memory(record: dict) -> bool:
    return record.get("status") in ("error", "crashed") and "out of memory" in (record.get("reason") or "").lower()


def command_verify(
    state: Path, budget_s: float, parallel: int, skip_builds: bool = False, first: tuple = (), only: tuple = ()
) -> None:
    results = state / "verify.jsonl"
    built = state / "build.jsonl"
    done = load_results(results)
    # The four-letter placeholder "None" is no candidate: its verdict (no ModelNew) needs no GPU,
    # and `placeholders` records it without one.
    rows = [r for r in entries() if r["custom_code"] != "None" and not (skip_builds and needs_build(r))]
    sample = all_baseline_sample(rows)
    if only:
        rows = [r for r in rows if key(r) in only]
    # Levels interleaved, so a batch cut short still covers every level; `first` before the rest.
    by_level = defaultdict(list)
    for row in sorted(rows, key=lambda r: (r["level_id"], r["task_id"])):
        by_level[row["level_id"]].append(row)
    order = [row for group in zip(*(by_level[lv] + [None] * 100 for lv in sorted(by_level))) for row in group if row]
    order.sort(key=first_in_order(first))
    todo = [r for r in order if key(r) not in done]
    print(f"{len(done)} done, {len(todo)} to go; all four baselines on {len(sample)} sampled tasks", flush=True)
    began = time.monotonic()
    folder = Path(tempfile.mkdtemp())
    queue_lock = threading.Lock()

    def next_row():
        """The first candidate that is ready: needs no build, or its build is recorded."""
        with queue_lock:
            building = (state / BUILDING).exists()
            ready = load_results(built) if building else {}
            for index, row in enumerate(todo):
                if not building or not needs_build(row) or key(row) in ready:
                    return todo.pop(index)
            return "wait" if todo else None

    def run(row, **extra):
        record = {**verify_row(row, folder, state, baselines=ALL_BASELINES if key(row) in sample else "eager"), **extra}
        append(results, record)
        speed = (record.get("speedups") or {}).get("eager")
        print(
            f"{record['key']:7s} {record['status']:9s} {record['wall_s']:6.1f}s "
            f"eager {speed if speed is None else round(speed, 2)} published {record['score_default']} "
            f"{(record.get('failed_check') or '')} {','.join(record.get('flags') or [])}",
            flush=True,
        )
        return record

    out_of_memory = []

    def worker():
        while time.monotonic() - began < budget_s:
            row = next_row()
            if row is None:
                return
            if row == "wait":
                time.sleep(2)
                continue
            record = run(row)
            if ran_out_of_memory(record):
                out_of_memory.append(row)

    threads = [threading.Thread(target=worker) for _ in range(parallel)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for row in out_of_memory:  # alone on the GPU now
        if time.monotonic() - began < budget_s:
            run(row, rerun_alone=True)


# Five that verified in the first H100 batch, from 0.08 to 0.28 ms per call.
REPEAT_TASKS = ("L1T1", "L2T12", "L3T1", "L2T14", "L2T17")


def command_repeat(state: Path, plan: dict, only: tuple = ()) -> None:
    """Five honest candidates, each verified three times with the platform's own plan (the
    defaults, or these fields changed), alone on the GPU: the spread of the speedup over eager."""
    results = state / "repeat.jsonl"
    rows = {key(r): r for r in entries()}
    label = json.dumps(plan, sort_keys=True) if plan else "defaults"
    with tempfile.TemporaryDirectory() as folder:
        for name in only or REPEAT_TASKS:
            for attempt in range(3):
                record = verify_row(rows[name], Path(folder), state, baselines="eager", plan=plan)
                append(results, {**record, "key": f"{name}#{attempt}#{label}", "task_key": name, "plan": label})
                print(
                    f"repeat {name} #{attempt} {record['status']} {record.get('speedups')} {record.get('candidate')}", flush=True
                )


def command_cost(state: Path) -> None:
    """Wall time of one level-1 verification: all four baselines cold, then with them cached."""
    rows = {key(r): r for r in entries()}
    results = state / "cost.jsonl"
    with tempfile.TemporaryDirectory() as folder, tempfile.TemporaryDirectory() as cache:
        problem, candidate = write_sources(Path(folder), rows["L1T1"])
        for label in ("cold", "cached", "cached-again"):
            args = verify_args(
                problem, candidate, baselines=ALL_BASELINES, limits={"build_cache_dir": BUILD_CACHE}, baseline_cache=cache
            )
            verdict, wall, log = run_cli(args, 600)
            record = summarize(rows["L1T1"], verdict, wall, log, ALL_BASELINES)
            append(results, {**record, "key": f"L1T1-{label}", "plan": "defaults"})
            print(f"cost {label}: {wall:.1f}s {record['status']} {record.get('speedups')}", flush=True)


def _median(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def command_placeholders(state: Path) -> None:
    """The rows whose code is the string "None", through the CLI on the CPU: the static check decides."""
    results = state / "verify.jsonl"
    done = load_results(results)
    with tempfile.TemporaryDirectory() as folder:
        for row in entries():
            if row["custom_code"] == "None" and key(row) not in done:
                problem, candidate = write_sources(Path(folder), row)
                verdict, wall, log = run_cli(verify_args(problem, candidate, device="cpu"), 300)
                append(results, summarize(row, verdict, wall, log, "eager"))


def command_report(state: Path) -> None:
    results = load_results(state / "verify.jsonl")
    rows = entries()
    print(f"{len(results)} of {len(rows)} candidates verified through the CLI\n")
    print(
        "| level | candidates | run | verified | rejected | incorrect | error | timeout | crashed "
        "| median ours/published (verified) |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for level in (1, 2, 3):
        level_rows = [r for r in rows if r["level_id"] == level]
        ran = [results[key(r)] for r in level_rows if key(r) in results]
        counts = Counter(r["status"] for r in ran)
        ratios = [
            r["speedups"]["eager"] / r["score_default"]
            for r in ran
            if r["status"] == "verified" and r.get("speedups") and r.get("score_default")
        ]
        ratio = _median(ratios)
        print(
            f"| {level} | {len(level_rows)} | {len(ran)} | {counts['verified']} | {counts['rejected']} | {counts['incorrect']} | "
            f"{counts['error']} | {counts['timeout']} | {counts['crashed']} | {ratio if ratio is None else f'{ratio:.2f}'} |"
        )
    print("\nRejected:\n")
    for r in sorted(results.values(), key=lambda r: (r["level"], r["task"])):
        if r["status"] == "rejected":
            print(f"- L{r['level']} T{r['task']} (published {r['score_default']}x): {r['reason']}")
    print("\nIncorrect:\n")
    for r in sorted(results.values(), key=lambda r: (r["level"], r["task"])):
        if r["status"] == "incorrect":
            print(f"- L{r['level']} T{r['task']} (published {r['score_default']}x): {r['reason'][:240]}")
    print("\nErrors, timeouts and crashes:\n")
    for r in sorted(results.values(), key=lambda r: (r["level"], r["task"])):
        if r["status"] in ("error", "timeout", "crashed", "harness-failure"):
            what = "code is the string None" if r.get("placeholder_code") else r["reason"][:200]
            print(f"- L{r['level']} T{r['task']} {r['status']}: {what}")
    print("\nVerified, ours against published (over eager):\n")
    print("| task | ours | published | ratio | tier | flags |")
    print("| --- | --- | --- | --- | --- | --- |")
    for r in sorted(results.values(), key=lambda r: (r["level"], r["task"])):
        if r["status"] == "verified" and r.get("speedups"):
            ours = r["speedups"]["eager"]
            ratio = ours / r["score_default"] if r.get("score_default") else None
            mark = " (not reproduced)" if ratio is not None and r["score_default"] > 1.05 and ratio < 0.8 else ""
            print(
                f"| L{r['level']} T{r['task']} | {ours:.2f} | {r['score_default']} | "
                f"{ratio if ratio is None else f'{ratio:.2f}'}{mark} | {r.get('tier')} | {', '.join(r.get('flags') or [])} |"
            )
    sampled = [r for r in results.values() if r["baselines"] == ALL_BASELINES and r["status"] == "verified" and r.get("speedups")]
    if sampled:
        print("\nAll four baselines (verified tasks of the 30-task sample): median speedup of the candidate over each\n")
        for name in ("eager", "compile", "compile-ro", "cudagraph"):
            print(f"- {name}: {_median([r['speedups'].get(name) for r in sampled]):.2f} over {len(sampled)} tasks")
    flags = Counter(f for r in results.values() for f in r.get("flags") or [])
    print("\nFlags:", dict(flags))
    repeats = defaultdict(list)
    for r in load_results(state / "repeat.jsonl").values():
        if r.get("speedups"):
            repeats[r["task_key"], r.get("plan", "defaults")].append(r["speedups"]["eager"])
    if repeats:
        print("\nRepeatability (three runs each, speedup over eager):\n")
        for (name, plan), values in repeats.items():
            spread = (max(values) - min(values)) / statistics.median(values)
            print(f"- {name} ({plan}): {', '.join(f'{v:.3f}' for v in values)}; spread {100 * spread:.1f}%")
    for r in load_results(state / "cost.jsonl").values():
        print(f"\ncost {r['key']}: {r['wall_s']} s, {r['status']}")


def first_keys(option: str) -> tuple[str, ...]:
    text = Path(option[1:]).read_text() if option.startswith("@") else option
    return tuple(filter(None, (k.strip() for k in text.replace(",", "\n").splitlines())))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("command", choices=("smoke", "build", "verify", "placeholders", "repeat", "cost", "report"))
    parser.add_argument("--state", default="var/harness-h100")
    parser.add_argument("--budget-s", type=float, default=520)
    parser.add_argument("--workers", type=int, default=14)
    parser.add_argument("--parallel", type=int, default=3)
    parser.add_argument(
        "--first", default="", help="keys to verify before the rest: comma-separated (L1T9,...), or @FILE with one key per line"
    )
    parser.add_argument("--skip-builds", action="store_true", help="verify only candidates with no load_inline build")
    parser.add_argument("--only", default="", help="verify or repeat only these keys (comma-separated, or @FILE)")
    parser.add_argument("--plan", default="{}", help="repeat: plan fields (JSON) to change from the defaults")
    args = parser.parse_args()
    state = Path(args.state)
    state.mkdir(parents=True, exist_ok=True)
    if args.command == "smoke":
        command_smoke(state)
    elif args.command == "build":
        command_build(state, args.workers, first_keys(args.first), first_keys(args.only))
    elif args.command == "verify":
        command_verify(state, args.budget_s, args.parallel, args.skip_builds, first_keys(args.first), first_keys(args.only))
    elif args.command == "placeholders":
        command_placeholders(state)
    elif args.command == "repeat":
        command_repeat(state, json.loads(args.plan), first_keys(args.only))
    elif args.command == "cost":
        command_cost(state)
    else:
        command_report(state)


if __name__ == "__main__":
    main()
