"""What a worker process finds itself to be, before it registers."""

import json
import os
import subprocess
import sys

import pytest

from tests.conftest import REPO
from verification.devices import _nvidia_gpus, arch_for

DETECT = (
    "import json, sys; from verification.devices import detect_device; device = detect_device({arch!r}); "
    "print(json.dumps({{'arch': device.arch, 'torch_device': device.torch_device, "
    "'capabilities': device.capabilities, 'torch_loaded': 'torch' in sys.modules}}))"
)


def detect(arch: str = "", **env) -> dict:
    answer = subprocess.run(
        [sys.executable, "-c", DETECT.format(arch=arch)], cwd=REPO, capture_output=True, text=True, check=True, env=env or None
    )
    return json.loads(answer.stdout)


@pytest.mark.skipif(_nvidia_gpus() > 0, reason="this host has an NVIDIA GPU")
def test_a_host_without_a_gpu_is_a_cpu_found_without_loading_torch():
    found = detect()
    assert found["arch"] == "cpu" and found["torch_device"] == "cpu"
    assert found["torch_loaded"] is False
    assert found["capabilities"]["torch"].startswith("2.") and found["capabilities"]["usable_cpus"] >= 1


def test_gpus_hidden_from_the_process_make_it_a_cpu_of_the_architecture_asked_for():
    found = detect("cpu-pinned", **{**os.environ, "CUDA_VISIBLE_DEVICES": ""})
    assert found["arch"] == "cpu-pinned" and found["torch_device"] == "cpu" and found["torch_loaded"] is False


@pytest.mark.parametrize(
    ("name", "capability", "arch"),
    [
        ("NVIDIA H100 80GB HBM3", (9, 0), "h100"),
        ("NVIDIA H200", (9, 0), "h200"),
        ("NVIDIA L40S", (8, 9), "l40s"),
        ("NVIDIA L40", (8, 9), "l40"),
        ("Some Future GPU", (12, 1), "sm121"),
    ],
)
def test_the_architecture_key_is_the_product_family_else_the_compute_capability(name, capability, arch):
    assert arch_for(name, capability) == arch
