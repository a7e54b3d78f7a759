import torch
import torch.nn as nn


class Model(nn.Module):
    """C = A @ B, small enough for the CPU suite."""

    def __init__(self):
        super().__init__()

    def forward(self, A, B):
        return torch.matmul(A, B)


M = 32
K = 48
N = 24


def get_inputs():
    return [torch.randn(M, K), torch.randn(K, N)]


def get_init_inputs():
    return []
