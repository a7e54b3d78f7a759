"""The builtin optimizer's analysis of a problem: op mix, FLOPs, bytes and a fusable epilogue.

The problem is someone's code, so it runs only in the harness's OS sandbox (bubblewrap: no
network, no host files, its own user; `evaluation.harness.sandbox`) as `inference.backends.builtin.analysis.probe`,
under time and memory limits, on PyTorch's meta device: shapes propagate, nothing is allocated or
computed. Never in the web or inference worker's own process. What the probe prints is read as
data for the builtin optimizer's choices only; no verdict depends on it. Plain Python + torch, no
Django, so the GPU benchmark can use it too.
"""

import json
import os
import signal
import subprocess
import time
from pathlib import Path

from evaluation.harness import sandbox
from inference.backends.builtin.analysis.profile import ProblemProfile

PACKAGE = Path(__file__).resolve().parent
POLL_S = 0.1
MEMORY_BYTES = 4 * 2**30


def analyse_problem(
    source: str, *, timeout_s: float = 60.0, cancel=lambda: False, allow_unconfined: bool = False
) -> ProblemProfile:
    """Run the probe on `source` in a sandboxed process; a failure is a profile with `ok=False`."""
    view = sandbox.View(
        "cpu", readable=[(str(PACKAGE), sandbox.INSIDE + "/inference/backends/builtin/analysis")], home_bytes=256 * 2**20
    )
    try:
        started = sandbox.launch(
            view,
            module="inference.backends.builtin.analysis.probe",
            memory_bytes=MEMORY_BYTES,
            fds=[],
            extra_env={"KERNEL_COURT_CPU_SECONDS": str(int(timeout_s) + 5)},
            allow_unconfined=allow_unconfined,
            processes=256,
        )
    except sandbox.NotConfined as exc:
        return ProblemProfile.failed(f"the analysis was not run: {exc}")
    process = subprocess.Popen(
        started.command,
        cwd=started.cwd,
        env=started.env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        pass_fds=started.pass_fds,
        umask=started.umask,
    )
    deadline = time.monotonic() + timeout_s
    stdout: str | None
    stderr: str | None
    try:
        stdout, stderr = process.communicate(source, timeout=POLL_S)
    except subprocess.TimeoutExpired:
        stdout = stderr = None
        while stdout is None:
            if cancel():
                return ProblemProfile.failed("the analysis was cancelled")
            if time.monotonic() > deadline:
                return ProblemProfile(
                    ok=False,
                    error=f"the problem did not finish running within the analysis's limit of {timeout_s:g} s",
                    timed_out=True,
                )
            try:
                stdout, stderr = process.communicate(timeout=POLL_S)
            except subprocess.TimeoutExpired:
                continue
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
        started.cleanup()
    try:
        return ProblemProfile.from_dict(json.loads(stdout))
    except (ValueError, TypeError):
        return ProblemProfile.failed(f"the analysis process died (exit {process.returncode}): {(stderr or '').strip()[-500:]}")
