"""CUDA-L1's level 1 task 1 candidate (its mixed-precision path, without its first-call race between
two methods): four launches from Python for ~0.05 ms of GPU work at N = 2048 on an H100/H200, so the
host's launch latency is most of a sample. Measured with harness 6's benchmarks/harness_overhead.py
(removed with harness 7, see RESULTS.md)."""

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return torch.matmul(A.half(), B.half()).to(A.dtype)


N = 2048


def get_inputs():
    return [torch.randn(N, N), torch.randn(N, N)]


def get_init_inputs():
    return []
