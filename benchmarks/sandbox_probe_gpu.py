"""What a CUDA process sees inside the harness's sandbox on this host: for setting a GPU host up.

    python benchmarks/sandbox_probe_gpu.py

Starts Python confined as a CUDA verification's processes are, initialises CUDA there and prints
what it found (or the error), beside the host's own view of the GPU's device nodes and libraries.
"""

import os
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from evaluation.harness import sandbox  # noqa: E402  (after the path is set)

PROBE = r"""
import os, sys
print("uid", os.getuid(), "ld", os.environ.get("LD_LIBRARY_PATH"))
print("dev", sorted(p for p in os.listdir("/dev") if p.startswith("nvidia")))
import ctypes
try:
    ctypes.CDLL("libcuda.so.1"); print("libcuda loads")
except OSError as exc:
    print("libcuda fails:", exc)
import torch
print("torch", torch.__version__, "available", torch.cuda.is_available())
torch.cuda.init()
print("device", torch.cuda.get_device_name(0))
x = torch.ones(1024, device="cuda"); print("sum", float(x.sum()))
import subprocess
print(subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True).stdout.strip())
"""


def main() -> None:
    print("host: ld", os.environ.get("LD_LIBRARY_PATH"), "nvidia-smi", shutil.which("nvidia-smi"), "nvcc", shutil.which("nvcc"))
    print("host: dev", sorted(p.name for p in Path("/dev").glob("nvidia*")))
    print("confinement", sandbox.confinement())
    command = [
        *sandbox.bwrap_command(sandbox.View("cuda"), tool="bwrap"),
        "--setenv",
        "LD_LIBRARY_PATH",
        os.environ.get("LD_LIBRARY_PATH", ""),
        "--setenv",
        "PATH",
        os.environ.get("PATH", ""),
        sys.executable,
        "-I",
        "-c",
        PROBE,
    ]
    done = subprocess.run(command, capture_output=True, text=True)
    print("exit", done.returncode)
    print(done.stdout[-4000:])
    print(done.stderr[-4000:])


if __name__ == "__main__":
    main()
