"""The same CUDA-L1 candidates through two or more copies of the harness, alternated on one machine:
which speedups a harness change moves, and which it leaves alone.

    python benchmarks/harness_ab.py --roots .,/tmp/h6 --tasks L2T82,L1T71 --rounds 2 --out var/ab.jsonl

Each root is a checkout (its `evaluation.harness`); each verification runs that root's CLI with the
same plan, eager baseline only. Plain Python (no Django).
"""

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "benchmarks"))

import harness_cuda_l1 as cuda_l1  # noqa: E402  (after the path is set)

PLAN = {
    "trials": 1,
    "inputs_per_trial": 2,
    "warmup_rounds": 3,
    "min_samples": 40,
    "max_samples": 60,
    "target_ci": 0.005,
    "timing_budget_s": 4.0,
    "timed_checks": 1,
    "profile": False,
    "shape_check": False,
    "speed_of_light": False,
}


def verify(root: Path, problem: Path, candidate: Path, device: str) -> dict:
    began = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "evaluation.harness", *cuda_l1.verify_args(problem, candidate, device=device, plan=PLAN)],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=600,
    )
    try:
        verdict = json.loads(done.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return {"status": "harness-failure", "reason": done.stderr[-500:], "wall_s": time.monotonic() - began}
    timing = verdict.get("timing") or {}
    return {
        "status": verdict["status"],
        "reason": verdict["reason"][:200],
        "wall_s": round(time.monotonic() - began, 1),
        "speedup": (timing.get("speedups") or {}).get("eager"),
        "candidate_ms": (timing.get("candidate") or {}).get("median_ms"),
        "eager_ms": ((timing.get("baselines") or {}).get("eager") or {}).get("median_ms"),
        "host_ms": timing.get("host_ms"),
        "harness_version": verdict.get("harness_version"),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--roots", required=True, help="comma-separated checkouts")
    parser.add_argument("--tasks", required=True, help="comma-separated CUDA-L1 keys (L2T82,...)")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--out", default="var/harness-ab.jsonl")
    args = parser.parse_args()
    rows = {cuda_l1.key(r): r for r in cuda_l1.entries()}
    roots = [Path(r).resolve() for r in args.roots.split(",")]
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as folder:
        for round_number in range(args.rounds):
            for task in args.tasks.split(","):
                problem, candidate = cuda_l1.write_sources(Path(folder), rows[task])
                order = roots if round_number % 2 == 0 else list(reversed(roots))
                for root in order:
                    record = {
                        "task": task,
                        "root": str(root),
                        "round": round_number,
                        **verify(root, problem, candidate, args.device),
                    }
                    print(json.dumps(record), flush=True)
                    with out.open("a") as handle:
                        handle.write(json.dumps(record) + "\n")


if __name__ == "__main__":
    main()
