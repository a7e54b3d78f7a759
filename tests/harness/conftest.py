"""Helpers for the harness's tests: test problems and candidates on disk, and a small plan.

Every test here runs on the CPU with tiny shapes; the sandboxed processes are real.
"""

import os
from pathlib import Path

import pytest

from evaluation import harness
from evaluation.harness import pipeline, sandbox

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
PROBLEMS = HERE / "problems"
CANDIDATES = HERE / "candidates"

# Small enough for CI's two cores, large enough that every step runs.
SMALL_PLAN = {
    "trials": 2,
    "inputs_per_trial": 2,
    "warmup_rounds": 1,
    "min_samples": 4,
    "max_samples": 6,
    "timed_checks": 1,
    "flush_bytes": 64 * 1024,
    "profile": False,
    "shape_check": False,
    "speed_of_light": False,
    "burst_calls": 4,
    "steady_min_rounds": 2,
    "steady_max_rounds": 3,
    "steady_budget_s": 2.0,
    "bootstrap_resamples": 200,
    # The A/A control adds a fourth process to every CPU verification: its own tests ask for it.
    "control": False,
}
# In CI the OS sandbox must be there; elsewhere a machine without bubblewrap runs the suite unconfined.
SMALL_LIMITS = {
    "wall_time_s": 240,
    "build_time_s": 180,
    "call_time_s": 60,
    "memory_bytes": 4 * 2**30,
    "require_sandbox": sandbox.confinement().confined or os.environ.get("CI") == "true",
}


def problem(name: str) -> str:
    return (PROBLEMS / f"{name}.py").read_text()


def candidate(name: str) -> str:
    return (CANDIDATES / f"{name}.py").read_text()


def verify(problem_name: str, candidate_name: str, *, plan=None, limits=None, device="cpu", **kwargs):
    return harness.verify(
        problem(problem_name),
        candidate(candidate_name),
        device=device,
        plan={**SMALL_PLAN, **(plan or {})},
        limits={**SMALL_LIMITS, **(limits or {})},
        **kwargs,
    )


class Verifier:
    """Real verifications: sandboxed processes, seconds each. Tests reach them only through the
    `verifier` fixture, which is how the fast tier (`make test-fast`) knows to leave a test out;
    anywhere else a sandboxed launch fails the test (tests/conftest.py)."""

    def __call__(self, problem_name: str, candidate_name: str, **kwargs):
        return verify(problem_name, candidate_name, **kwargs)

    verify_sources = staticmethod(harness.verify)
    inspect_problem = staticmethod(harness.inspect_problem)
    probe = staticmethod(harness.probe)
    build = staticmethod(pipeline.build)


def failed_check(verdict) -> str | None:
    return next((c["name"] for c in verdict["checks"] if not c["passed"]), None)


@pytest.fixture(scope="session")
def build_cache(tmp_path_factory):
    return str(tmp_path_factory.mktemp("build-cache"))
