"""The builtin optimizer's analysis of a problem: op mix, FLOPs, bytes and a fusable epilogue.

The problem is someone's code, so it runs only in a child process (`inference.analysis.probe`)
under a time limit, on PyTorch's meta device: shapes propagate, nothing is allocated or
computed. The web process never calls this; the inference worker does, through the builtin
backend. Plain Python + torch, no Django, so the GPU benchmark can use it too.
"""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from inference.analysis.profile import ProblemProfile

REPO_ROOT = Path(__file__).resolve().parents[2]
POLL_S = 0.1


def analyse_problem(source: str, *, timeout_s: float = 60.0, cancel=lambda: False) -> ProblemProfile:
    """Run the probe on `source` in a child process; a failure is a profile with `ok=False`."""
    process = subprocess.Popen(
        [sys.executable, "-m", "inference.analysis.probe", "--cpu-seconds", str(int(timeout_s) + 5)],
        cwd=REPO_ROOT,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    deadline = time.monotonic() + timeout_s
    try:
        stdout, stderr = process.communicate(source, timeout=POLL_S)
    except subprocess.TimeoutExpired:
        stdout = stderr = None
        while stdout is None:
            if cancel():
                return ProblemProfile.failed("the analysis was cancelled")
            if time.monotonic() > deadline:
                return ProblemProfile.failed(f"the analysis took longer than {timeout_s:g} s and was stopped")
            try:
                stdout, stderr = process.communicate(timeout=POLL_S)
            except subprocess.TimeoutExpired:
                continue
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    try:
        return ProblemProfile.from_dict(json.loads(stdout))
    except (ValueError, TypeError):
        return ProblemProfile.failed(f"the analysis process died (exit {process.returncode}): {stderr.strip()[-500:]}")
