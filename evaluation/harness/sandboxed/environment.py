"""What this verdict was measured on: device, driver, CUDA, torch, triton, Python, harness version."""

import platform
import subprocess
import sys
from typing import Any

import torch

from evaluation.harness.verdict import HARNESS_VERSION


def _driver_version() -> str:
    try:
        done = subprocess.run(
            ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"], capture_output=True, text=True, timeout=20
        )
        return done.stdout.strip().splitlines()[0] if done.returncode == 0 and done.stdout.strip() else ""
    except (OSError, subprocess.TimeoutExpired):
        return ""


def _triton_version() -> str:
    try:
        from importlib.metadata import version

        return version("triton")
    except Exception:  # noqa: BLE001  (no triton, or a broken one: the environment says none)
        return ""


def describe(device: str, *, driver: bool = True) -> dict[str, Any]:
    """`driver`: ask nvidia-smi for the driver's version (a second of start-up): the verdict's environment is
    the baseline process's, so the other processes skip it."""
    env = {
        "device": device,
        "torch": torch.__version__,
        "triton": _triton_version(),
        "python": platform.python_version(),
        "harness_version": HARNESS_VERSION,
        "platform": platform.platform(),
    }
    if device == "cuda":
        props = torch.cuda.get_device_properties(0)
        env.update(
            gpu=props.name,
            compute_capability=f"{props.major}.{props.minor}",
            multiprocessors=props.multi_processor_count,
            memory_bytes=props.total_memory,
            l2_cache_bytes=getattr(props, "L2_cache_size", None),
            cuda=torch.version.cuda,
            driver=_driver_version() if driver else None,
        )
    else:
        env.update(cpu=platform.processor() or platform.machine(), threads=torch.get_num_threads(), cuda=None)
    env["python_executable"] = sys.executable
    return env
