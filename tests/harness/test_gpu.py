"""The CUDA path: events with a device-wide synchronize, CUDA graphs, kernels from the profiler,
and faults a GPU adds. Skipped where there is no CUDA device (CI); run on a GPU host."""

import json
import math
import os

import pytest

from evaluation.harness import measurement, sandbox
from tests.harness.conftest import SMALL_LIMITS, candidate, failed_check, problem

pytestmark = pytest.mark.gpu

try:
    import torch

    HAS_CUDA = torch.cuda.is_available()
except ImportError:  # the harness's parent side needs no torch
    HAS_CUDA = False

needs_cuda = pytest.mark.skipif(not HAS_CUDA, reason="needs a CUDA device")


def cuda_verify(verifier, problem_name, candidate_name, **kwargs):
    return verifier(problem_name, candidate_name, device="cuda", **kwargs)


@needs_cuda
def test_honest_triton_matmul_verifies_with_all_baselines_and_kernels(verifier):
    verdict = cuda_verify(
        verifier,
        "matmul",
        "gpu_honest_triton_matmul",
        baselines=("eager", "compile", "compile-ro", "cudagraph"),
        plan={"profile": True, "speed_of_light": True},
    )

    assert verdict["status"] == "verified", verdict["reason"]
    assert set(verdict["timing"]["speedups"]) == {"eager", "compile", "compile-ro", "cudagraph"}
    assert "CUDA events" in verdict["timing"]["method"]
    assert any("matmul_kernel" in k["name"] for k in verdict["kernels"]["candidate"])
    # A 32x48x24 product: microseconds of GPU work, tens of microseconds of launching it from Python.
    assert {"candidate", "eager"} <= set(verdict["timing"]["host_ms"])
    assert "host_bound" in verdict["flags"]
    assert verdict["env"]["gpu"] and verdict["env"]["compute_capability"]
    if sandbox.confinement().confined and os.environ.get("KERNEL_COURT_FORK_SERVER", "1") != "0":
        assert "forked from the harness's fork server" in verdict["sandbox"]["process"]


@needs_cuda
def test_work_left_on_a_side_stream_gains_nothing(verifier):
    verdict = cuda_verify(verifier, "matmul", "gpu_side_stream", plan={"timed_check_probability": 1.0})

    assert verdict["status"] != "verified" or verdict["timing"]["speedups"]["eager"] < 1.5, verdict["reason"]


@needs_cuda
def test_work_hidden_on_another_stream_is_rejected(verifier):
    # The steady state (the headline) times each call on the calling stream; a burst's closing
    # synchronize finds the side stream's work still running.
    verdict = cuda_verify(verifier, "matmul", "gpu_hidden_stream_work", plan={"steady_min_rounds": 6, "steady_max_rounds": 6})

    assert (verdict["status"], failed_check(verdict)) == ("rejected", "no_hidden_work"), verdict["reason"]


@needs_cuda
def test_three_measures_with_intervals_and_gpu_state(verifier):
    verdict = cuda_verify(verifier, "matmul", "honest_matmul", plan={"steady_min_rounds": 4, "steady_max_rounds": 6})

    assert verdict["status"] == "verified", verdict["reason"]
    timing = verdict["timing"]
    assert timing["headline"] == "steady_state"
    measures = timing["measures"]
    steady, device, latency = measures["steady_state"], measures["device_time"], measures["latency"]
    low, high = steady["speedup_intervals"]["eager"]
    assert low <= steady["speedups"]["eager"] <= high
    assert steady["candidate"]["median_ms"] <= latency["candidate"]["median_ms"]
    assert steady["ungated"] == [] and not steady["gate_forced_calls"]
    # The harness's own write's gap behind each side's drains (callsite.c, `floor`): a wake-up, positive.
    assert set(steady["floor_us"]) >= {"candidate", "eager"} and all(0 < us < 1000 for us in steady["floor_us"].values())
    # Replays of the captured call, each on fresh inputs, some compared: the device's own time.
    assert device["unavailable"] == {} and device["speedups"]["eager"] > 0
    assert device["candidate"]["median_ms"] <= steady["candidate"]["median_ms"] * 1.5
    assert timing["gpu"]["before"].get("sm_clock_mhz") or timing["gpu"]["before"].get("unavailable")


@needs_cuda
def test_a_call_that_synchronizes_inside_is_measured_without_the_gate(verifier):
    # torch.cuda.synchronize inside forward would wait for the gate forever: the watchdog opens it,
    # and the side's later bursts run ungated, the host's waiting inside the interval.
    verdict = cuda_verify(
        verifier,
        "matmul",
        "gpu_synchronizing_matmul",
        plan={"steady_min_rounds": 4, "steady_max_rounds": 4, "device_time": False},
    )

    assert verdict["status"] == "verified", verdict["reason"]
    steady = verdict["timing"]["measures"]["steady_state"]
    assert steady["ungated"] == ["candidate"] and steady["gate_forced_calls"]["candidate"] >= 1


@needs_cuda
def test_illegal_address_is_crashed(verifier):
    verdict = cuda_verify(verifier, "matmul", "gpu_illegal_address")

    assert (verdict["status"], failed_check(verdict)) == ("crashed", "candidate_runs")


@needs_cuda
def test_a_kernel_launched_on_the_legacy_default_stream_verifies(verifier):
    # Harness 10 called such kernels wrong (every output NaN, the harness's poison): KernelBench's own
    # example launches this way, after a torch operator on the current stream.
    verdict = cuda_verify(
        verifier, "matmul_relu", "gpu_legacy_stream_relu", plan={"steady_min_rounds": 4, "steady_max_rounds": 6}
    )

    assert verdict["status"] == "verified", verdict["reason"]
    assert verdict["static"]["stream_safety"]["legacy_default_stream"] == 1


@needs_cuda
def test_same_kernels_as_reference_on_the_gpu(verifier):
    verdict = cuda_verify(verifier, "matmul", "same_kernels_matmul", plan={"profile": True})

    assert "same_kernels_as_reference" in verdict["flags"]


@needs_cuda
def test_candidate_using_torch_compile_verifies_on_the_gpu(verifier):
    # Inductor's Triton backend here (the CPU suite covers its C++ one): no compile worker, and no
    # change to torch after the snapshot, may count against the candidate.
    verdict = cuda_verify(verifier, "linear_relu", "honest_compiled_linear_relu", baselines=("eager", "compile"))

    assert verdict["status"] == "verified", verdict["reason"]


@needs_cuda
def test_compiled_graph_output_overwritten_by_the_next_call_is_rejected(verifier):
    verdict = cuda_verify(verifier, "matmul", "gpu_compiled_graph_output")

    assert (verdict["status"], failed_check(verdict)) == ("rejected", "output_owns_storage")
    assert "overwritten by its next call" in verdict["reason"]


@needs_cuda
def test_a_build_ahead_on_the_cpu_is_reused_by_the_verification_on_the_gpu(verifier, tmp_path, monkeypatch):
    # As the release batch runs them: the build with no GPU visible, for the device's own architecture.
    major, minor = torch.cuda.get_device_capability()
    monkeypatch.setenv("TORCH_CUDA_ARCH_LIST", f"{major}.{minor}+PTX")
    limits = {"build_cache_dir": str(tmp_path)}

    ahead = verifier.build(
        problem("matmul_relu"), candidate("gpu_legacy_stream_relu"), device="cuda", limits={**SMALL_LIMITS, **limits}, ahead=True
    )
    built = {p: p.stat().st_mtime_ns for p in tmp_path.glob("candidates/*/torch_extensions/**/*.so")}
    verdict = cuda_verify(verifier, "matmul_relu", "gpu_legacy_stream_relu", limits=limits)

    assert [c["name"] for c in ahead["checks"] if not c["passed"]] == [], ahead["reason"]
    assert len(built) == 1
    assert verdict["status"] == "verified", verdict["reason"]
    assert {p: p.stat().st_mtime_ns for p in tmp_path.glob("candidates/*/torch_extensions/**/*.so")} == built


def _verify_keeping_the_control(verifier, tmp_path, problem_name, candidate_name):
    """Verified as a probe is, its A/A control kept in `tmp_path`, with rounds enough for the control's
    interval (three at least)."""
    return cuda_verify(
        verifier,
        problem_name,
        candidate_name,
        plan={"steady_min_rounds": 8, "steady_max_rounds": 12},
        baseline_cache_dir=str(tmp_path),
        keep_control=True,
    )


def _kept_controls(root) -> list[dict]:
    return [json.loads(line) for path in root.glob("controls-*.jsonl") for line in path.read_text().splitlines()]


@needs_cuda
def test_the_a_a_control_reads_one_on_a_device_bound_call_and_is_kept_as_the_devices(verifier, tmp_path):
    # A 2048^3 product (0.34 ms a call on an H100): the reference against itself in two processes read
    # 0.999-1.002 in four pairs of processes (RESULTS.md, harness 13).
    verdict = _verify_keeping_the_control(verifier, tmp_path, "matmul_large", "gpu_plain_mm")

    assert verdict["status"] == "verified", verdict["reason"]
    control = verdict["timing"]["control"]
    assert control["off"] is False and 0.99 < control["speedup"] < 1.01, control
    kept = _kept_controls(tmp_path)
    assert verdict["timing"]["between_process"]["controls"] == 1, (control, kept)
    assert len(kept) == 1 and kept[0]["call_ms"] >= measurement.SHORT_CALL_MS, kept


@needs_cuda
def test_a_short_calls_control_is_kept_as_a_short_calls_and_off_states_no_win(verifier, tmp_path):
    # A 32x48x24 product (11 us a call): its A/A read 0.93-1.10 in five pairs of processes on an H100,
    # each to about 1% in its rounds. Whatever it reads, it measures short calls' spread; read off 1.0,
    # the verdict states no win.
    verdict = _verify_keeping_the_control(verifier, tmp_path, "matmul", "honest_matmul")

    assert verdict["status"] == "verified", verdict["reason"]
    control = verdict["timing"]["control"]
    [kept] = _kept_controls(tmp_path)
    assert kept["call_ms"] < measurement.SHORT_CALL_MS and math.isclose(math.exp(kept["log_ratio"]), control["speedup"])
    if control["off"]:
        assert "control_off" in verdict["flags"] and not any(verdict["timing"]["beats"].values())
