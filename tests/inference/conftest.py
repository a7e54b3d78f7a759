"""Fixtures for the inference tests: shrunk KernelBench problems, analysed once per session."""

import pickle
from concurrent.futures import ThreadPoolExecutor

import pytest
from filelock import FileLock

from inference.backends.builtin.analysis import analyse_problem
from inference.backends.builtin.analysis.profile import ProblemProfile
from tests.inference.kernelbench import problem

# (level, task): a matmul, elementwise ops, a pooling, convolutions with epilogues, a GEMM with
# reductions, and small networks (an MLP, LeNet, an Inception-style block).
KERNELBENCH = [(1, 1), (1, 20), (1, 41), (2, 2), (2, 5), (2, 16), (2, 29), (2, 100), (3, 1), (3, 4), (3, 6)]


def _analysed() -> dict[tuple[int, int], tuple[str, ProblemProfile]]:
    sources = {key: problem(*key) for key in KERNELBENCH}
    with ThreadPoolExecutor(max_workers=2) as pool:
        analysed = dict(zip(sources, pool.map(analyse_problem, sources.values()), strict=True))
    return {key: (sources[key], analysed[key]) for key in KERNELBENCH}


@pytest.fixture(scope="session")
def kernelbench_profiles(sandboxed_harness, tmp_path_factory, worker_id) -> dict[tuple[int, int], tuple[str, ProblemProfile]]:
    """Analysed once per test run: under pytest-xdist the first worker to need them writes them where
    the others read them (a minute of sandboxed analyses each otherwise)."""
    if worker_id == "master":
        return _analysed()
    shared = tmp_path_factory.getbasetemp().parent / "kernelbench_profiles.pickle"
    with FileLock(f"{shared}.lock"):
        if shared.is_file():
            return pickle.loads(shared.read_bytes())  # written by this test run's own worker
        profiles = _analysed()
        shared.write_bytes(pickle.dumps(profiles))
        return profiles
