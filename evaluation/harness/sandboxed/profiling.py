"""Which kernels a call really launched, read from torch's profiler.

On CUDA these are the GPU kernels; on the CPU, the aten operators. A candidate whose kernels are
exactly the reference's ran none of its own (CUDA-L1's level 1 task 13 claims an fp16 kernel but
launches the same kernels as eager and matches it bit for bit).
"""

from collections import Counter

import torch
from torch.profiler import ProfilerActivity, profile


def kernels_of(run, device: str) -> tuple[list[dict], object]:
    """The kernels `run()` launched, and what it returned. The call site's own copies and fills
    show as Memcpy/Memset and are left out."""
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device == "cuda" else [])
    with profile(activities=activities) as prof:
        result = run()
        if device == "cuda":
            torch.cuda.synchronize()
    counts: Counter = Counter()
    for event in prof.events():
        if device == "cuda":
            if event.device_type == torch.autograd.DeviceType.CUDA and not event.name.startswith(("Memcpy", "Memset")):
                counts[event.name] += 1
        elif event.name.startswith("aten::"):
            counts[event.name] += 1
    kernels = [{"name": name, "count": count} for name, count in counts.most_common()]
    return kernels, result
