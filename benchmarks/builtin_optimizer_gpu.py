"""Run the builtin optimizer over a sample of KernelBench problems and write its candidates out,
for the harness to verify on a GPU host.

Plain Python + torch (no Django): on an H100 box with the repository checked out,

    python benchmarks/builtin_optimizer_gpu.py --out var/builtin-candidates --per-level 5
    bash var/builtin-candidates/verify.sh        # the harness CLI on each candidate, on CUDA

writes, per problem, `problem.py`, one `NN-<transformation>.py` per round (the order a run with
no verdicts would propose them; `--all` writes every applicable transformation), the builtin's
answer text, and a `manifest.json` with the analysis (speed-of-light floor, eager estimate) and
each candidate's estimated saving. `verify.sh` writes each verdict next to its candidate.
"""

import argparse
import gzip
import json
import random
import shlex
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from inference.analysis import analyse_problem  # noqa: E402  (after the path is set)
from inference.backends.builtin import BuiltinBackend  # noqa: E402
from inference.backends.builtin.transformations import candidate_code, plan  # noqa: E402
from inference.prompts import PriorCandidate  # noqa: E402

BASELINES = "eager,compile,compile-ro,cudagraph"


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
    entry = {"level": row["level_id"], "task": row["task_id"], "folder": folder.name, "analysis_ok": profile.ok,
             "analysis_error": profile.error, "candidates": []}
    history: list[PriorCandidate] = []
    first = plan(profile, history)
    if first.roof is not None:
        entry.update(speed_of_light_us=first.roof.speed_of_light_s * 1e6, eager_estimate_us=first.roof.eager_estimate_s * 1e6,
                     launches=first.roof.launches)
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
        entry["candidates"].append({"file": name, "transformation": key, "estimated_saving_us": assessment.saving_s * 1e6,
                                    "why": assessment.why})
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
    args = parser.parse_args(argv)

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
