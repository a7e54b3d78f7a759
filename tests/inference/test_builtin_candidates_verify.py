"""The builtin optimizer's candidates pass the verification harness on CPU.

Each shrunk KernelBench problem's first candidate is verified for correctness (no timing). A
torch.compile candidate is replaced by the next one in the builtin's order, for time alone:
compiling on two CPU cores takes half a minute each, and the harness's own test of a torch.compile
candidate (tests/harness/test_honest.py) covers that path.
The Triton epilogue runs in Triton's interpreter, which the harness turns on for CPU.
"""

import pytest

from inference.backends.builtin.transformations import candidate_code, plan
from tests.inference.conftest import KERNELBENCH

CORRECTNESS_ONLY = {"trials": 1, "inputs_per_trial": 1, "profile": False}


@pytest.mark.slow
@pytest.mark.parametrize("key", KERNELBENCH, ids=lambda key: f"level{key[0]}-task{key[1]}")
def test_the_first_candidate_passes_the_harness_on_cpu(verifier, kernelbench_profiles, key):
    source, profile = kernelbench_profiles[key]
    choice = next(
        a.transformation for a in plan(profile, []).ranked if a.applicable and a.transformation.family != "torch-compile"
    )

    verdict = verifier.verify_sources(
        source, candidate_code(choice, source, profile), device="cpu", baselines=(), plan=CORRECTNESS_ONLY
    )

    assert verdict["status"] == "verified", (choice.key, verdict.get("reason"))
