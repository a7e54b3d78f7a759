"""The device's measured ceilings, for the speed-of-light floor: memory bandwidth (a large
device-to-device copy, bytes read plus written) and matrix rate (a large bf16 product on CUDA,
the fastest dense format a candidate may use; fp32 on the CPU)."""

import time
from collections.abc import Callable

import torch


def _median_ms(fn: Callable[[], object], repeats: int, device: str) -> float:
    samples = []
    for _ in range(repeats):
        if device == "cuda":
            torch.cuda.synchronize()
        begin = time.perf_counter()
        fn()
        if device == "cuda":
            torch.cuda.synchronize()
        samples.append((time.perf_counter() - begin) * 1e3)
    samples.sort()
    return samples[len(samples) // 2]


def measure(device: str) -> dict[str, float | str]:
    if device == "cuda":
        copy_bytes, n, dtype, repeats = 2**30, 8192, torch.bfloat16, 10
    else:
        copy_bytes, n, dtype, repeats = 64 * 2**20, 512, torch.float32, 5
    source = torch.empty(copy_bytes // 4, dtype=torch.float32, device=device).fill_(1.0)
    target = torch.empty_like(source)
    target.copy_(source)
    copy_ms = _median_ms(lambda: target.copy_(source), repeats, device)
    a = torch.randn(n, n, device=device, dtype=dtype)
    b = torch.randn(n, n, device=device, dtype=dtype)
    a @ b
    matmul_ms = _median_ms(lambda: a @ b, repeats, device)
    return {
        "bandwidth_gb_s": 2 * copy_bytes / (copy_ms * 1e-3) / 1e9,
        "matrix_tflop_s": 2 * n**3 / (matmul_ms * 1e-3) / 1e12,
        "matrix_dtype": str(dtype).removeprefix("torch."),
    }
