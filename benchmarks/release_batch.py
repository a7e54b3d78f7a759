"""Measure a release: every candidate of a source through the harness CLI, then packed as one file
the platform imports (evaluation/harness/release.py; `manage.py import_release`).

Plain Python (no Django, no torch in this process). Each candidate goes through
`python -m evaluation.harness verify ... --json` in its own process, as harness_cuda_l1.py does,
several at a time on one device lock (only their sandboxes' start and torch's import overlap:
one verification holds the device at a time, harness 11). Verdicts
accumulate in --state as JSON lines, so a batch cut short resumes where it stopped; a candidate
whose CLI run gave no verdict is tried again on the next run.

    # all CUDA-L1 H100 entries (the 17 whose code is the string "None" included), four baselines
    python benchmarks/release_batch.py run  --state var/release-h100 --arch h100 --budget-s 3000
    python benchmarks/release_batch.py pack --state var/release-h100 --name h100-2026-11-26-cuda-l1 \\
        --out data/releases/h100-2026-11-26-cuda-l1.jsonl.gz
    # the builtin optimizer's candidates, written by benchmarks/builtin_optimizer_gpu.py --out DIR
    python benchmarks/release_batch.py run  --source builtin --candidates DIR --state var/release-h100-builtin --arch h100
    # on the CPU, a few entries (arch cpu; eager only unless --baselines says otherwise)
    python benchmarks/release_batch.py run  --device cpu --arch cpu --only L1T1,L1T2 --state var/release-cpu

`pack` is `python -m evaluation.harness release pack`; it refuses a batch with entries still to
measure unless --partial.
"""

import argparse
import concurrent.futures
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.harness_cuda_l1 import (
    ALL_BASELINES,
    BUILD_CACHE,
    RELEASE,
    append,
    entries,
    first_keys,
    key,
    load_results,
    run_cli,
    verify_args,
)
from evaluation.harness import release
from evaluation.harness.verdict import BASELINES

REPO = Path(__file__).resolve().parents[1]
FAILURES = "failures.jsonl"  # CLI runs that gave no verdict: tried again on the next run


def shown_path(path: Path) -> str:
    """A source file as the header names it: relative to the repository where it lies inside it."""
    path = path.resolve()
    return str(path.relative_to(REPO)) if path.is_relative_to(REPO) else path.name


def cuda_l1_candidates(path: Path) -> list[dict]:
    """Every published entry of a CUDA-L1 file, its scores kept as claims of the GPU the file is named for."""
    arch = path.name.split(".")[0]
    found = []
    for row in entries(path):
        found.append(
            {
                "key": f"cuda-l1:{key(row)}",
                "level": row["level_id"],
                "task": row["task_id"],
                "origin": "cuda-l1",
                "problem": row["ref_code"],
                "source": row["custom_code"],
                "claims": {"by": "cuda-l1", "arch": arch, "scores": {k: v for k, v in row.items() if k.startswith("score_")}},
            }
        )
    return found


def builtin_candidates(folder: Path) -> list[dict]:
    """The candidates benchmarks/builtin_optimizer_gpu.py wrote to `folder` (its manifest.json)."""
    found = []
    for problem in json.loads((folder / "manifest.json").read_text()):
        source = (folder / problem["folder"] / "problem.py").read_text()
        for candidate in problem["candidates"]:
            found.append(
                {
                    "key": f"builtin:L{problem['level']}T{problem['task']}:{candidate['file']}",
                    "level": problem["level"],
                    "task": problem["task"],
                    "origin": "builtin",
                    "problem": source,
                    "source": (folder / problem["folder"] / candidate["file"]).read_text(),
                    "claims": None,
                }
            )
    return found


# What a resumed batch must keep, as its refusal names each.
SETTINGS = {
    "arch": "--arch",
    "device": "--device",
    "baselines": "--baselines",
    "plan": "--plan",
    "limits": "--limits",
    "sources": "source file",
    "planned": "set of entries (--only, --source)",
}


def start(state: Path, settings: dict) -> None:
    """Write the batch's settings, or check that a resumed batch measures as it began."""
    path = state / release.STATE_BATCH
    if not path.exists():
        path.write_text(json.dumps(settings, indent=2) + "\n")
        return
    began = json.loads(path.read_text())
    differs = [label for name, label in SETTINGS.items() if began[name] != settings[name]]
    if began["harness"]["version"] != settings["harness"]["version"]:
        differs.append("harness version")
    elif began["harness"]["commit"] != settings["harness"]["commit"] and not harness_unchanged(began, settings):
        differs.append("the harness's code")
    if differs:
        raise SystemExit(
            f"{state} was started with another {', '.join(differs)}: resume it with the options it began with "
            f"({path}), or measure into a new --state."
        )


def harness_unchanged(began: dict, now: dict) -> bool:
    """Whether evaluation/harness is the same at both commits (a resumed batch may follow other commits)."""
    if began["harness"]["dirty"] or now["harness"]["dirty"]:
        return False
    done = subprocess.run(
        ["git", "diff", "--quiet", began["harness"]["commit"], now["harness"]["commit"], "--", "evaluation/harness"], cwd=REPO
    )
    return done.returncode == 0


def measure(candidate: dict, folder: Path, state: Path, *, device: str, baselines: str, plan, limits, timeout: float) -> dict:
    """One candidate through the CLI: its entry line (release.ENTRY_KEYS), or a failure without a verdict."""
    name = candidate["key"].replace(":", "_").replace("/", "_")
    problem, source = folder / f"{name}_problem.py", folder / f"{name}_candidate.py"
    problem.write_text(candidate["problem"])
    source.write_text(candidate["source"])
    limits = {**(limits or {}), "build_cache_dir": BUILD_CACHE, "device_lock_path": str((state / "device.lock").resolve())}
    args = verify_args(
        problem, source, device=device, baselines=baselines, plan=plan, limits=limits, baseline_cache=state / "baselines"
    )
    verdict, wall, log = run_cli(args, timeout)
    record = {
        "key": candidate["key"],
        "level": candidate["level"],
        "task": candidate["task"],
        "problem_sha256": release.sha256_text(candidate["problem"]),
        "origin": candidate["origin"],
        "source": candidate["source"],
        "source_sha256": release.sha256_text(candidate["source"]),
        "claims": candidate["claims"],
        "measured_at": release.now(),
        "verdict": verdict,
        "wall_s": round(wall, 1),
    }
    if verdict is None:
        record["log"] = log[-2000:]
    return record


def command_run(args, candidates: list[dict], sources: list[dict]) -> None:
    state = args.state
    state.mkdir(parents=True, exist_ok=True)
    baselines = args.baselines or (ALL_BASELINES if args.device == "cuda" else "eager")
    plan = json.loads(args.plan) if args.plan else None
    limits = json.loads(args.limits) if args.limits else None
    only = set(first_keys(args.only))
    chosen = [c for c in candidates if not only or c["key"].split(":", 1)[1].split(":")[0] in only or c["key"] in only]
    settings = release.batch_settings(
        arch=args.arch,
        device=args.device,
        baselines=baselines.split(","),
        plan=plan,
        limits=limits,
        sources=sources,
        planned=[c["key"] for c in chosen],
    )
    start(state, settings)
    done = load_results(state / release.STATE_RECORDS)
    # Levels interleaved (L1 T1, L2 T1, L3 T1, L1 T2 ...), so a batch cut short still covers each level.
    todo = sorted((c for c in chosen if c["key"] not in done), key=lambda c: (c["task"], c["level"], c["key"]))
    print(f"{len(done)} measured, {len(todo)} to go on {args.device} against {baselines}", flush=True)
    began = time.monotonic()
    timeout = (release.public_limits(limits)["wall_time_s"]) + 300

    def one(candidate):
        if time.monotonic() - began > args.budget_s:
            return None
        record = measure(
            candidate, folder, state, device=args.device, baselines=baselines, plan=plan, limits=limits, timeout=timeout
        )
        verdict = record["verdict"]
        if verdict is None:
            append(state / FAILURES, record)
            print(f"{candidate['key']:40s} no verdict ({record['wall_s']} s): {record['log'][-300:]}", flush=True)
            return record
        append(state / release.STATE_RECORDS, {key: record[key] for key in release.ENTRY_KEYS})
        speedup = (verdict.get("timing") or {}).get("speedups", {}).get("eager")
        print(f"{candidate['key']:40s} {verdict['status']:9s} {record['wall_s']:6.1f}s eager {speedup}", flush=True)
        return record

    with tempfile.TemporaryDirectory() as scratch, concurrent.futures.ThreadPoolExecutor(args.parallel) as pool:
        folder = Path(scratch)
        list(pool.map(one, todo))
    left = len(chosen) - len(load_results(state / release.STATE_RECORDS))
    if left:
        print(f"{left} entries still to measure: run the same command again.", flush=True)
    else:
        print(f"All {len(chosen)} measured: pack them with `python {Path(__file__).name} pack --state {state} ...`.", flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("command", choices=("run", "pack"))
    parser.add_argument("--state", type=Path, required=True, help="the batch's folder: its settings and verdicts")
    parser.add_argument("--source", choices=("cuda-l1", "builtin"), default="cuda-l1")
    parser.add_argument("--release", type=Path, default=RELEASE, help="cuda-l1: the published file (default: H100's)")
    parser.add_argument("--candidates", type=Path, help="builtin: the folder builtin_optimizer_gpu.py wrote")
    parser.add_argument("--arch", help="the architecture measured on, e.g. h100 (cpu with --device cpu)")
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cuda")
    parser.add_argument(
        "--baselines", help=f"comma-separated, from {','.join(BASELINES)} (default: all four on cuda, eager on cpu)"
    )
    parser.add_argument("--plan", help="JSON object of Plan fields to change (default: the platform's)")
    parser.add_argument("--limits", help="JSON object of Limits fields to change")
    parser.add_argument("--only", default="", help="only these entries: L1T1,L2T3 or @FILE (one per line)")
    parser.add_argument("--parallel", type=int, default=3)
    parser.add_argument("--budget-s", type=float, default=3000, help="start no verification after this long")
    parser.add_argument("--name", help="pack: the release's name")
    parser.add_argument("--out", type=Path, help="pack: the file to write")
    parser.add_argument("--partial", action="store_true", help="pack: what is measured, the rest listed as missing")
    args = parser.parse_args(argv)
    if args.command == "pack":
        if not (args.name and args.out):
            parser.error("pack needs --name and --out")
        try:
            print(release.describe(release.pack(args.state, name=args.name, out=args.out, partial=args.partial)))
        except release.ReleaseError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 1
        return 0
    if not args.arch:
        parser.error("run needs --arch (h100, h200, ... or cpu)")
    if args.source == "builtin":
        if not args.candidates:
            parser.error("--source builtin needs --candidates DIR")
        manifest = args.candidates / "manifest.json"
        candidates = builtin_candidates(args.candidates)
        sources = [{"origin": "builtin", "path": shown_path(manifest), "sha256": release.sha256_file(manifest)}]
    else:
        candidates = cuda_l1_candidates(args.release)
        sources = [{"origin": "cuda-l1", "path": shown_path(args.release), "sha256": release.sha256_file(args.release)}]
    command_run(args, candidates, sources)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
