"""Fixtures for the inference tests: shrunk KernelBench problems, analysed once per session."""

from concurrent.futures import ThreadPoolExecutor

import pytest

from inference.backends.builtin.analysis import analyse_problem
from inference.backends.builtin.analysis.profile import ProblemProfile
from tests.conftest import shared_value
from tests.inference.kernelbench import problem

# (level, task): a matmul, elementwise ops, a pooling, convolutions with epilogues, a GEMM with
# reductions, and small networks (an MLP, LeNet, an Inception-style block).
KERNELBENCH = [(1, 1), (1, 20), (1, 41), (2, 2), (2, 5), (2, 16), (2, 29), (2, 100), (3, 1), (3, 4), (3, 6)]


def analysed(thread_start=None) -> dict[tuple[int, int], tuple[str, ProblemProfile]]:
    """Each problem's profile, two analyses at a time (`thread_start` runs first in each thread)."""
    sources = {key: problem(*key) for key in KERNELBENCH}
    with ThreadPoolExecutor(max_workers=2, initializer=thread_start) as pool:
        profiles = dict(zip(sources, pool.map(analyse_problem, sources.values()), strict=True))
    return {key: (sources[key], profiles[key]) for key in KERNELBENCH}


@pytest.fixture(scope="session")
def kernelbench_profiles(sandboxed_harness, tmp_path_factory) -> dict[tuple[int, int], tuple[str, ProblemProfile]]:
    """Analysed once per test run (a minute of sandboxed analyses)."""
    return shared_value(tmp_path_factory, "kernelbench_profiles")  # tests/conftest.py SHARED: `analysed`
