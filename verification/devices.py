"""What device this worker process has, and the architecture key its queue is named for."""

import os
import platform
import socket
from dataclasses import dataclass, field
from importlib import metadata

# Checked in order, so that "H200" is not taken for "H20" nor "L40S" for "L40".
_ARCH_BY_NAME = (
    ("GH200", "gh200"),
    ("H200", "h200"),
    ("H100", "h100"),
    ("H800", "h800"),
    ("H20", "h20"),
    ("B200", "b200"),
    ("A100", "a100"),
    ("A800", "a800"),
    ("A10G", "a10g"),
    ("L40S", "l40s"),
    ("L40", "l40"),
    ("L4", "l4"),
    ("RTX 4090", "4090"),
    ("RTX 3090", "3090"),
    ("V100", "v100"),
    ("T4", "t4"),
)


def arch_for(device_name: str, capability: tuple[int, int]) -> str:
    """The architecture key for a CUDA device: its product family, else its compute capability."""
    upper = device_name.upper()
    for marker, arch in _ARCH_BY_NAME:
        if marker in upper:
            return arch
    return f"sm{capability[0]}{capability[1]}"


@dataclass(frozen=True)
class Device:
    arch: str
    name: str
    torch_device: str
    host: str = field(default_factory=socket.gethostname)
    capabilities: dict = field(default_factory=dict)


def detect_device(arch_override: str = "") -> Device:
    """This process's device: the first visible CUDA GPU (pin with CUDA_VISIBLE_DEVICES), else the CPU.
    A host whose driver reports no GPU is a CPU without loading torch: the web process of embedded
    mode runs a CPU worker, and torch would cost it seconds of start-up and hundreds of MB."""
    if os.environ.get("CUDA_VISIBLE_DEVICES") == "" or not _nvidia_gpus():
        return _cpu(arch_override)
    import torch

    if not torch.cuda.is_available():
        return _cpu(arch_override)
    props = torch.cuda.get_device_properties(0)
    capability = (props.major, props.minor)
    return Device(
        arch=arch_override or arch_for(props.name, capability),
        name=props.name,
        torch_device="cuda",
        capabilities={
            "compute_capability": f"{props.major}.{props.minor}",
            "memory_gib": round(props.total_memory / 2**30, 1),
            "multiprocessors": props.multi_processor_count,
            "cuda": torch.version.cuda,
            "torch": torch.__version__,
            "visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES", ""),
        },
    )


def _cpu(arch_override: str) -> Device:
    try:
        torch_version = metadata.version("torch")
    except metadata.PackageNotFoundError:
        torch_version = None
    return Device(
        arch=arch_override or "cpu",
        name=platform.processor() or platform.machine(),
        torch_device="cpu",
        capabilities={"cpus": os.cpu_count(), "usable_cpus": len(os.sched_getaffinity(0)), "torch": torch_version},
    )


def _nvidia_gpus() -> int:
    """The GPUs NVIDIA's driver reports (NVML: no CUDA context, no torch); 0 where there is no driver."""
    try:
        import pynvml
    except ImportError:
        return 0
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError:
        return 0
    try:
        return pynvml.nvmlDeviceGetCount()
    finally:
        pynvml.nvmlShutdown()
