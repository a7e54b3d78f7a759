"""Two independent matrix products combined: A @ B + relu(C @ D)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A, B, C, D):
        return torch.matmul(A, B) + torch.relu(torch.matmul(C, D))


N = 2048


def get_inputs():
    return [torch.randn(N, N), torch.randn(N, N), torch.randn(N, N), torch.randn(N, N)]


def get_init_inputs():
    return []
