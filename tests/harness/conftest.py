"""Helpers for the harness's tests: test problems and candidates on disk, and a small plan.

Every test here runs on the CPU with tiny shapes; the sandboxed processes are real.
"""

import copy
import hashlib
import json
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
    "steady_min_rounds": 3,
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


# Verdicts of `Verifier.shared`, by their arguments: this process's copy of each.
_SHARED_VERDICTS: dict[str, dict] = {}


class Verifier:
    """Real verifications: sandboxed processes, seconds each. Tests reach them only through the
    `verifier` fixture, which is how the fast tier (`make test-fast`) knows to leave a test out;
    anywhere else a sandboxed launch fails the test (tests/conftest.py)."""

    def __init__(self, tmp_path_factory=None):
        self._tmp_path_factory = tmp_path_factory

    def __call__(self, problem_name: str, candidate_name: str, **kwargs):
        return verify(problem_name, candidate_name, **kwargs)

    def shared(self, problem_name: str, candidate_name: str, *, environment=None, plan=None, limits=None, **kwargs):
        """The verdict of a verification that several tests only read, run once a test run (the
        other workers read the first one's) and keyed by everything it is given: the problem's and
        candidate's sources, the whole plan and limits, the other arguments and `environment`
        (variables set in the parent while it runs). Only for verifications without per-test state:
        arguments that are not JSON (a callback) are refused, and a test that patches the harness or
        uses its own folders calls the verifier instead. Each test gets its own copy."""
        arguments = {
            "problem": problem(problem_name),
            "candidate": candidate(candidate_name),
            "environment": environment or {},
            "plan": {**SMALL_PLAN, **(plan or {})},
            "limits": {**SMALL_LIMITS, **(limits or {})},
            **kwargs,
        }
        key = hashlib.sha256(json.dumps(arguments, sort_keys=True).encode()).hexdigest()[:20]
        if key not in _SHARED_VERDICTS:
            from tests.conftest import once_per_run

            def run():
                with pytest.MonkeyPatch.context() as patch:
                    for name, value in (environment or {}).items():
                        patch.setenv(name, value)
                    return verify(problem_name, candidate_name, plan=plan, limits=limits, **kwargs)

            _SHARED_VERDICTS[key] = once_per_run(self._tmp_path_factory, f"verdict-{key}", run)
        return copy.deepcopy(_SHARED_VERDICTS[key])

    verify_sources = staticmethod(harness.verify)
    inspect_problem = staticmethod(harness.inspect_problem)
    probe = staticmethod(harness.probe)
    build = staticmethod(pipeline.build)


def failed_check(verdict) -> str | None:
    return next((c["name"] for c in verdict["checks"] if not c["passed"]), None)


@pytest.fixture(scope="session")
def build_cache(tmp_path_factory):
    return str(tmp_path_factory.mktemp("build-cache"))
