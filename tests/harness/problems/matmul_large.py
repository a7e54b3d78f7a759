import torch
import torch.nn as nn


class Model(nn.Module):
    """C = A @ B at 2048 on a side: about 0.34 ms on an H100, device-bound (GPU tests only)."""

    def __init__(self):
        super().__init__()

    def forward(self, A, B):
        return torch.matmul(A, B)


M = 2048
K = 2048
N = 2048


def get_inputs():
    return [torch.randn(M, K), torch.randn(K, N)]


def get_init_inputs():
    return []
