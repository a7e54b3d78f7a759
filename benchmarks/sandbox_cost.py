"""What the OS sandbox costs one verification: the same verification, confined by bubblewrap and
not (the harness's fallback, forced), alternated in one process, and a bare process start both ways.

    python benchmarks/sandbox_cost.py --device cuda --rounds 5 --out var/sandbox-cost.json

Plain Python (no Django). Prints the medians and their differences; writes every run to --out.
"""

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from evaluation import harness  # noqa: E402  (after the path is set)
from evaluation.harness import sandbox, sandbox_command  # noqa: E402

PROBLEM = """
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, A, B):
        return torch.matmul(A, B)


M, K, N = 1024, 1024, 1024


def get_inputs():
    return [torch.randn(M, K), torch.randn(K, N)]


def get_init_inputs():
    return []
"""
CANDIDATE = """
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, A, B):
        return torch.mm(A, B)
"""
PLAN = {
    "trials": 1,
    "inputs_per_trial": 1,
    "warmup_rounds": 1,
    "min_samples": 10,
    "max_samples": 10,
    "timed_checks": 1,
    "profile": False,
    "shape_check": False,
    "speed_of_light": False,
}


def verify(device: str, confined: bool) -> dict:
    real = sandbox.confinement()
    if not confined:
        sandbox_command._confinement = sandbox.Confinement(False, "", "forced off for the comparison")
    try:
        began = time.monotonic()
        verdict = harness.verify(PROBLEM, CANDIDATE, device=device, plan=PLAN, limits={"require_sandbox": confined})
        wall = time.monotonic() - began
    finally:
        sandbox_command._confinement = real
    return {
        "confined": confined,
        "status": verdict["status"],
        "wall_s": wall,
        "total_s": verdict["cost"].get("total_s"),
        "sandbox_start_s": verdict["cost"].get("sandbox_start_s"),
        "steps_s": verdict["cost"].get("steps_s"),
        "sandbox_confined": verdict.get("sandbox", {}).get("confined"),
        "reason": verdict["reason"][:300],
    }


def process_start(confined: bool, rounds: int = 5) -> float:
    """Median seconds to start Python and import torch, in the sandbox or not."""
    command = [sys.executable, "-I", "-c", "import torch"]
    if confined:
        command = [*sandbox.bwrap_command(sandbox.View("cpu"), tool="bwrap"), *command]
    times = []
    for _ in range(rounds):
        began = time.monotonic()
        subprocess.run(command, check=True, capture_output=True)
        times.append(time.monotonic() - began)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--out", default="var/sandbox-cost.json")
    args = parser.parse_args()
    state = sandbox.confinement()
    print(f"sandbox: {state}", flush=True)
    if not state.confined:
        sys.exit("bubblewrap does not work here: nothing to compare")
    verify(args.device, True)  # warm the page cache and the call site's build
    runs = []
    for round_number in range(args.rounds):
        for confined in (True, False) if round_number % 2 == 0 else (False, True):
            runs.append(verify(args.device, confined))
            print(json.dumps(runs[-1]), flush=True)
    summary = {}
    for confined in (True, False):
        mine = [r for r in runs if r["confined"] == confined]
        summary["confined" if confined else "unconfined"] = {
            "total_s": statistics.median(r["total_s"] for r in mine),
            "start_up_s": statistics.median(r["steps_s"]["start_up"] for r in mine),
            "sandbox_start_s": statistics.median(r["sandbox_start_s"] for r in mine),
        }
    summary["cost_per_verification_s"] = summary["confined"]["total_s"] - summary["unconfined"]["total_s"]
    summary["python_and_torch_start_s"] = {"confined": process_start(True), "unconfined": process_start(False)}
    print(json.dumps(summary, indent=1))
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps({"summary": summary, "runs": runs}, indent=1))


if __name__ == "__main__":
    main()
