"""A build ahead (`python -m evaluation.harness build --ahead`): the candidate's load_inline builds
on the CPU cores, sandboxed, with no device, into the build cache its verification then reads."""

import pytest

from evaluation.harness import sandbox, sandbox_host
from tests.harness.conftest import SMALL_LIMITS, candidate, problem


def extensions(cache) -> dict:
    """Every built extension in a build cache, with the time it was written."""
    return {path: path.stat().st_mtime_ns for path in cache.glob("candidates/*/torch_extensions/**/*.so")}


# A compiler on a loaded two-core host took over three minutes for this extension: room for it.
ROOM = {"build_time_s": 900, "wall_time_s": 1200}


@pytest.mark.slow
def test_the_verifications_load_what_the_build_ahead_built(verifier, tmp_path):
    # One compile (a minute of a loaded two-core host) for both: what a build ahead leaves, and a load_inline
    # candidate built once and reused by every later verification of the same source.
    limits = {"build_cache_dir": str(tmp_path), **ROOM}

    ahead = verifier.build(problem("relu"), candidate("honest_cpp_relu"), limits={**SMALL_LIMITS, **limits}, ahead=True)
    built = extensions(tmp_path)
    first = verifier("relu", "honest_cpp_relu", limits=limits)
    second = verifier("relu", "honest_cpp_relu", limits=limits)

    assert [c["name"] for c in ahead["checks"] if not c["passed"]] == [], ahead["reason"]
    assert len(built) == 1  # one folder per source hash: the verification's key is the build's
    assert first["status"] == second["status"] == "verified", first["reason"]
    assert first["static"]["language"] == "cuda"
    assert extensions(tmp_path) == built  # nothing rebuilt, nothing relinked
    assert "Building extension" not in first["log_excerpt"] + second["log_excerpt"]
    assert first["cost"]["steps_s"]["load"] < ahead["cost"]["steps_s"]["load"]


def test_a_build_ahead_runs_the_candidate_with_no_device_node(monkeypatch):
    # Candidate code runs in a build ahead beside a verification that holds the GPU: it must not
    # reach the device even by ignoring CUDA_VISIBLE_DEVICES.
    monkeypatch.setattr(sandbox_host, "cuda_binds", lambda: (["/opt/cuda"], ["/dev/nvidia0", "/dev/nvidiactl"]))

    verifying = sandbox.bwrap_command(sandbox.View("cuda"))
    ahead = sandbox.bwrap_command(sandbox.View("cuda", device_nodes=False))

    assert "/dev/nvidia0" in verifying
    assert "/dev/nvidia0" not in ahead and "/dev/nvidiactl" not in ahead
    assert "/opt/cuda" in ahead  # the toolkit, for nvcc
