"""The A/A control on a call of a few microseconds: the reference timed as a candidate against eager, under
the GPU test's small plan and under the platform's default plan, each repeated, every verdict kept.

    python3 benchmarks/aa_small_calls.py --out $OUT/aa --repeats 2 --budget-s 400

tests/harness/test_gpu.py's A/A test (a 32x48x24 product, the small plan) read 1.099 on an H100 under
harness 13 while probes of larger problems read 1.0 (RESULTS.md): this separates the plan from the size
of the call. Plain Python (no Django), on the lent GPU.
"""

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests" / "harness"))

from conftest import SMALL_LIMITS, SMALL_PLAN, candidate, problem  # noqa: E402  (after the path is set)

from evaluation import harness  # noqa: E402

CASES = {
    # name: (problem, candidate, plan)
    "small-plan": ("matmul", "honest_matmul", {**SMALL_PLAN, "steady_min_rounds": 8, "profile": True}),
    "default-plan": ("matmul", "honest_matmul", {"profile": True}),
}
MM = "import torch\n\n\nclass ModelNew(torch.nn.Module):\n    def forward(self, A, B):\n        return torch.mm(A, B)\n"
# The same product at 2048x2048x2048: device-bound, where the probes read 1.0.
LARGE = problem("matmul").replace("M = 32", "M = 2048").replace("K = 48", "K = 2048").replace("N = 24", "N = 2048")


def summary(verdict: dict) -> dict:
    timing = verdict.get("timing") or {}
    steady = (timing.get("measures") or {}).get("steady_state") or {}
    return {
        "status": verdict.get("status"),
        "control": timing.get("control"),
        "speedup": (timing.get("speedups") or {}).get("eager"),
        "steady": steady.get("speedups"),
        "host_ms": timing.get("host_ms"),
        "flags": sorted(verdict.get("flags") or {}),
        "kernels": {side: [k.get("name", "")[:60] for k in ks] for side, ks in (verdict.get("kernels") or {}).items()},
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--budget-s", type=float, default=400)
    parser.add_argument("--large", action="store_true", help="the product at 2048 on a side")
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    began = time.monotonic()
    for repeat in range(args.repeats):
        for name, (problem_name, candidate_name, plan) in CASES.items():
            if time.monotonic() - began > args.budget_s:
                return
            with tempfile.TemporaryDirectory() as cache:
                started = time.monotonic()
                verdict = harness.verify(
                    LARGE if args.large else problem(problem_name),
                    MM if args.large else candidate(candidate_name),
                    device="cuda",
                    plan=plan,
                    limits=SMALL_LIMITS,
                    baseline_cache_dir=cache,
                    keep_control=True,
                )
            verdict = verdict if isinstance(verdict, dict) else dict(verdict)
            (out / f"{name}{'-large' if args.large else ''}-{repeat}.json").write_text(json.dumps(verdict, default=str))
            print(name, repeat, f"{time.monotonic() - started:.0f} s", json.dumps(summary(verdict), default=str), flush=True)


if __name__ == "__main__":
    main()
