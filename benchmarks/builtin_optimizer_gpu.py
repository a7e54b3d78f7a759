"""Run the builtin optimizer over a sample of KernelBench problems and write its candidates out,
for the harness to verify on a GPU host.

Plain Python + torch (no Django): on an H100 box with the repository checked out,

    python benchmarks/builtin_optimizer_gpu.py --out var/builtin-candidates --per-level 5
    bash var/builtin-candidates/verify.sh        # the harness CLI on each candidate, on CUDA

or, for a batch on a lent GPU, verify them in parallel (one device lock: checks overlap, timing
never does) against eager and torch.compile, then print the tables for RESULTS.md:

    python benchmarks/builtin_optimizer_gpu.py --out var/builtin-candidates --verify --budget-s 500
    python benchmarks/builtin_optimizer_gpu.py --out var/builtin-candidates --report

writes, per problem, `problem.py`, one `NN-<transformation>.py` per round (the order a run with
no verdicts would propose them; `--all` writes every applicable transformation), the builtin's
answer text, and a `manifest.json` with the analysis (speed-of-light floor, eager estimate) and
each candidate's estimated saving. `verify.sh` writes each verdict next to its candidate.
"""

import argparse
import gzip
import json
import math
import random
import shlex
import statistics
import sys
import threading
import time
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from inference.backends.builtin import BuiltinBackend  # noqa: E402
from inference.backends.builtin.analysis import analyse_problem  # noqa: E402  (after the path is set)
from inference.backends.builtin.transformations import candidate_code, plan  # noqa: E402
from inference.prompts import PriorCandidate  # noqa: E402

BASELINES = "eager,compile,compile-ro,cudagraph"
# The batch compares with eager and torch.compile (default), the two figures the report gives.
BATCH_BASELINES = "eager,compile"


def load_release(path: Path) -> list[dict]:
    with gzip.open(path, "rt") as rows:
        return [json.loads(row) for row in rows]


def sample(rows: list[dict], levels: list[int], per_level: int, seed: int) -> list[dict]:
    chosen = []
    for level in levels:
        of_level = sorted((r for r in rows if r["level_id"] == level), key=lambda r: r["task_id"])
        chosen += random.Random(seed + level).sample(of_level, min(per_level, len(of_level)))
    return chosen


def write_problem(row: dict, out: Path, *, rounds: int, everything: bool, timeout_s: float) -> dict:
    folder = out / f"level{row['level_id']}_task{row['task_id']:03d}"
    folder.mkdir(parents=True, exist_ok=True)
    source = row["ref_code"]
    (folder / "problem.py").write_text(source)
    profile = analyse_problem(source, timeout_s=timeout_s)
    entry = {
        "level": row["level_id"],
        "task": row["task_id"],
        "folder": folder.name,
        "analysis_ok": profile.ok,
        "analysis_error": profile.error,
        "candidates": [],
    }
    history: list[PriorCandidate] = []
    first = plan(profile, history)
    if first.roof is not None:
        entry.update(
            speed_of_light_us=first.roof.speed_of_light_s * 1e6,
            eager_estimate_us=first.roof.eager_estimate_s * 1e6,
            launches=first.roof.launches,
        )
    if everything:
        chosen = [a for a in first.ranked if a.applicable]
    else:
        chosen = []
        for round_number in range(1, rounds + 1):
            step = plan(profile, history)
            if step.choice is None:
                break
            chosen.append(step.choice)
            history.append(PriorCandidate(candidate_code(step.choice.transformation, source, profile), round_number))
    for index, assessment in enumerate(chosen, start=1):
        key = assessment.transformation.key
        name = f"{index:02d}-{key}.py"
        (folder / name).write_text(candidate_code(assessment.transformation, source, profile))
        entry["candidates"].append(
            {"file": name, "transformation": key, "estimated_saving_us": assessment.saving_s * 1e6, "why": assessment.why}
        )
    (folder / "answer.md").write_text(BuiltinBackend.answer(source, profile, first))
    return entry


def verify_script(manifest: list[dict], out: Path, device: str) -> str:
    lines = ["#!/usr/bin/env bash", "# Verify every candidate with the harness CLI; run from the repository root.", "set -u"]
    for entry in manifest:
        folder = out / entry["folder"]
        for candidate in entry["candidates"]:
            verdict = folder / candidate["file"].replace(".py", ".verdict.json")
            lines.append(
                f"python -m evaluation.harness verify --problem {shlex.quote(str(folder / 'problem.py'))} "
                f"--candidate {shlex.quote(str(folder / candidate['file']))} --device {device} "
                f"--baselines {BASELINES} --json > {shlex.quote(str(verdict))}"
            )
    return "\n".join(lines) + "\n"


def verify_batch(out: Path, budget_s: float, parallel: int, device_lock: Path) -> None:
    """Every candidate of the manifest through the harness CLI on CUDA, several at a time."""
    from harness_cuda_l1 import append, load_results, verify_files

    results = out / "verdicts.jsonl"
    done = load_results(results)
    manifest = json.loads((out / "manifest.json").read_text())
    todo = [(entry, c) for entry in manifest for c in entry["candidates"] if f"{entry['folder']}/{c['file']}" not in done]
    print(f"{len(done)} done, {len(todo)} to verify against {BATCH_BASELINES}", flush=True)
    began, lock = time.monotonic(), threading.Lock()

    def worker():
        while time.monotonic() - began < budget_s:
            with lock:
                if not todo:
                    return
                entry, candidate = todo.pop(0)
            folder = out / entry["folder"]
            verdict, wall, log = verify_files(
                folder / "problem.py",
                folder / candidate["file"],
                baselines=BATCH_BASELINES,
                device_lock=device_lock,
                baseline_cache=out / "baselines",
                timeout=900,
            )
            verdict = verdict or {"status": "harness-failure", "reason": log[-600:]}
            record = {
                "key": f"{entry['folder']}/{candidate['file']}",
                "level": entry["level"],
                "task": entry["task"],
                "transformation": candidate["transformation"],
                "wall_s": round(wall, 1),
                "status": verdict["status"],
                "reason": verdict.get("reason", "")[:600],
                "speedups": (verdict.get("timing") or {}).get("speedups"),
                "flags": verdict.get("flags", []),
                "tier": (verdict.get("correctness") or {}).get("precision_tier"),
                "cost": verdict.get("cost"),
                "env": verdict.get("env"),
            }
            append(results, record)
            print(f"builtin {record['key']:48s} {record['status']:9s} {wall:6.1f}s {record['speedups']}", flush=True)

    threads = [threading.Thread(target=worker) for _ in range(parallel)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


def _stats(values: list[float]) -> str:
    if not values:
        return "- / - / -"
    geomean = math.exp(sum(math.log(v) for v in values) / len(values))
    return f"{statistics.mean(values):.2f} / {statistics.median(values):.2f} / {geomean:.2f}"


def report(out: Path, release: Path) -> None:
    """Per level: share verified, speedups over eager and torch.compile, beside CUDA-L1's H100 claims."""
    from harness_cuda_l1 import load_results

    results = load_results(out / "verdicts.jsonl")
    published = {(r["level_id"], r["task_id"]): r for r in load_release(release)}
    by_level = defaultdict(list)
    for record in results.values():
        by_level[record["level"]].append(record)
    print(
        "| level | problems | verified | over eager: mean / median / geomean | over torch.compile: mean / median / "
        "geomean | CUDA-L1 published over eager, same tasks | CUDA-L1 published over torch.compile, same tasks |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for level in sorted(by_level):
        records = by_level[level]
        verified = [r for r in records if r["status"] == "verified" and r.get("speedups")]
        eager = [r["speedups"]["eager"] for r in verified if r["speedups"].get("eager")]
        compiled = [r["speedups"]["compile"] for r in verified if r["speedups"].get("compile")]
        claims = [published.get((level, r["task"]), {}) for r in records]
        print(
            f"| {level} | {len(records)} | {len(verified)} ({100 * len(verified) / len(records):.0f}%) | {_stats(eager)} | "
            f"{_stats(compiled)} | {_stats([c['score_default'] for c in claims if c.get('score_default')])} | "
            f"{_stats([c['score_torch_compile_default'] for c in claims if c.get('score_torch_compile_default')])} |"
        )
    print("\nNot verified:\n")
    for record in sorted(results.values(), key=lambda r: r["key"]):
        if record["status"] != "verified":
            print(f"- {record['key']} ({record['transformation']}): {record['status']}: {record['reason'][:200]}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--release", type=Path, default=REPO / "data" / "cuda-l1" / "h100.jsonl.gz")
    parser.add_argument("--out", type=Path, default=REPO / "var" / "builtin-candidates")
    parser.add_argument("--levels", default="1,2,3")
    parser.add_argument("--per-level", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--rounds", type=int, default=2, help="candidates per problem, in the builtin's order")
    parser.add_argument("--all", action="store_true", help="every applicable transformation instead")
    parser.add_argument("--device", default="cuda", choices=("cuda", "cpu"))
    parser.add_argument("--analysis-timeout", type=float, default=120.0)
    parser.add_argument("--verify", action="store_true", help="verify the candidates already written to --out")
    parser.add_argument("--report", action="store_true", help="print the tables of the verdicts in --out")
    parser.add_argument("--budget-s", type=float, default=1800)
    parser.add_argument("--parallel", type=int, default=2)
    parser.add_argument(
        "--device-lock", type=Path, help="the lock file shared with other batches on this GPU (default: gpu.lock in --out)"
    )
    args = parser.parse_args(argv)
    if args.verify:
        verify_batch(args.out.resolve(), args.budget_s, args.parallel, (args.device_lock or args.out / "gpu.lock").resolve())
        return 0
    if args.report:
        report(args.out, args.release)
        return 0

    rows = sample(load_release(args.release), [int(v) for v in args.levels.split(",")], args.per_level, args.seed)
    args.out.mkdir(parents=True, exist_ok=True)
    manifest = []
    for row in rows:
        entry = write_problem(row, args.out, rounds=args.rounds, everything=args.all, timeout_s=args.analysis_timeout)
        manifest.append(entry)
        keys = ", ".join(c["transformation"] for c in entry["candidates"]) or f"none ({entry['analysis_error']})"
        floor = f"{entry['speed_of_light_us']:.1f} µs floor" if "speed_of_light_us" in entry else "no analysis"
        print(f"level {entry['level']} task {entry['task']:3d}: {floor}; {keys}", flush=True)
    (args.out / "manifest.json").write_text(json.dumps(manifest, indent=2))
    script = args.out / "verify.sh"
    script.write_text(verify_script(manifest, args.out, args.device))
    print(f"Wrote {sum(len(e['candidates']) for e in manifest)} candidates to {args.out}; verify them with: bash {script}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
