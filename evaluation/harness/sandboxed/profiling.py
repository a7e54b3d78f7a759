"""Which kernels a call really launched, read from torch's profiler.

On CUDA these are the GPU kernels; on the CPU, the aten operators. A candidate whose kernels are
exactly the reference's ran none of its own (CUDA-L1's level 1 task 13 claims an fp16 kernel but
launches the same kernels as eager and matches it bit for bit).
"""

from collections import Counter
from collections.abc import Callable
from typing import Any, TypeVar

import torch
from torch.profiler import ProfilerActivity, profile

_Result = TypeVar("_Result")


def kernels_of(run: Callable[[], _Result], device: str) -> tuple[dict[str, list[dict[str, Any]]], _Result]:
    """What `run()` launched, and what it returned: `kernels`, each kernel (CUDA) or aten operator
    (CPU) by name with its count, the call site's own copies and fills (Memcpy/Memset) left out; and
    `work`, each operator the profiler counts FLOPs of (products, convolutions, pointwise arithmetic) by
    name and input shapes. Names alone do not say the work is the same: (A@B)@C and A@(B@C) launch the
    same matrix-product kernels, on different shapes."""
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device == "cuda" else [])
    with profile(activities=activities, with_flops=True) as prof:
        result = run()
        if device == "cuda":
            torch.cuda.synchronize()
    counts: Counter[str] = Counter()
    work: Counter[tuple[str, str]] = Counter()
    for event in prof.events():
        if device == "cuda":
            if event.device_type == torch.autograd.DeviceType.CUDA and not event.name.startswith(("Memcpy", "Memset")):
                counts[event.name] += 1
        elif event.name.startswith("aten::"):
            counts[event.name] += 1
        if event.flops and event.device_type == torch.autograd.DeviceType.CPU:
            work[(event.name, str(event.input_shapes))] += 1
    return {
        "kernels": [{"name": name, "count": count} for name, count in counts.most_common()],
        "work": [{"op": op, "shapes": shapes, "count": count} for (op, shapes), count in sorted(work.items())],
    }, result
