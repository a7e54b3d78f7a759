"""The CUDA path: events with a device-wide synchronize, CUDA graphs, kernels from the profiler,
and faults a GPU adds. Skipped where there is no CUDA device (CI); run on a GPU host."""

import pytest

from tests.harness.conftest import failed_check, verify

pytestmark = pytest.mark.gpu

try:
    import torch

    HAS_CUDA = torch.cuda.is_available()
except ImportError:  # the harness's parent side needs no torch
    HAS_CUDA = False

needs_cuda = pytest.mark.skipif(not HAS_CUDA, reason="needs a CUDA device")


def cuda_verify(problem_name, candidate_name, **kwargs):
    return verify(problem_name, candidate_name, device="cuda", **kwargs)


@needs_cuda
def test_honest_triton_matmul_verifies_with_all_baselines_and_kernels():
    verdict = cuda_verify("matmul", "gpu_honest_triton_matmul", baselines=("eager", "compile", "compile-ro", "cudagraph"),
                          plan={"profile": True, "speed_of_light": True})

    assert verdict["status"] == "verified", verdict["reason"]
    assert set(verdict["timing"]["speedups"]) == {"eager", "compile", "compile-ro", "cudagraph"}
    assert "CUDA events" in verdict["timing"]["method"]
    assert any("matmul_kernel" in k["name"] for k in verdict["kernels"]["candidate"])
    # A 32x48x24 product: microseconds of GPU work, tens of microseconds of launching it from Python.
    assert {"candidate", "eager"} <= set(verdict["timing"]["host_ms"])
    assert "host_bound" in verdict["flags"]
    assert verdict["env"]["gpu"] and verdict["env"]["compute_capability"]


@needs_cuda
def test_work_left_on_a_side_stream_gains_nothing():
    verdict = cuda_verify("matmul", "gpu_side_stream", plan={"timed_check_probability": 1.0})

    assert verdict["status"] != "verified" or verdict["timing"]["speedups"]["eager"] < 1.5, verdict["reason"]


@needs_cuda
def test_work_hidden_on_another_stream_is_flagged_and_timed():
    # The headline (latency) closes each call with a device-wide synchronize, so the hidden work is
    # inside it; a burst's closing synchronize finds it running (flag hidden_work).
    verdict = cuda_verify("matmul", "gpu_hidden_stream_work", plan={"steady_min_rounds": 6, "steady_max_rounds": 6})

    assert "hidden_work" in verdict["flags"] or verdict["status"] != "verified", verdict["reason"]
    if verdict["status"] == "verified":
        assert verdict["timing"]["speedups"]["eager"] < 1.0


@needs_cuda
def test_steady_state_and_latency_are_both_measured_with_intervals_and_gpu_state():
    verdict = cuda_verify("matmul", "honest_matmul", plan={"steady_min_rounds": 4, "steady_max_rounds": 6})

    assert verdict["status"] == "verified", verdict["reason"]
    timing = verdict["timing"]
    assert timing["headline"] == "latency"
    steady, latency = timing["measures"]["steady_state"], timing["measures"]["latency"]
    low, high = steady["speedup_intervals"]["eager"]
    assert low <= steady["speedups"]["eager"] <= high
    assert steady["candidate"]["median_ms"] <= latency["candidate"]["median_ms"]
    assert timing["gpu"]["before"].get("sm_clock_mhz") or timing["gpu"]["before"].get("unavailable")


@needs_cuda
def test_illegal_address_is_crashed():
    verdict = cuda_verify("matmul", "gpu_illegal_address")

    assert (verdict["status"], failed_check(verdict)) == ("crashed", "candidate_runs")


@needs_cuda
def test_same_kernels_as_reference_on_the_gpu():
    verdict = cuda_verify("matmul", "same_kernels_matmul", plan={"profile": True})

    assert "same_kernels_as_reference" in verdict["flags"]


@needs_cuda
def test_candidate_using_torch_compile_verifies_on_the_gpu():
    # Inductor's Triton backend here (the CPU suite covers its C++ one): no compile worker, and no
    # change to torch after the snapshot, may count against the candidate.
    verdict = cuda_verify("linear_relu", "honest_compiled_linear_relu", baselines=("eager", "compile"))

    assert verdict["status"] == "verified", verdict["reason"]


@needs_cuda
def test_compiled_graph_output_overwritten_by_the_next_call_is_rejected():
    verdict = cuda_verify("matmul", "gpu_compiled_graph_output")

    assert (verdict["status"], failed_check(verdict)) == ("rejected", "output_owns_storage")
    assert "overwritten by its next call" in verdict["reason"]
