"""(A @ B) @ x with x thin: evaluated left to right, as written, it costs a full N^3 product."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A, B, x):
        return torch.matmul(torch.matmul(A, B), x)


N = 2048
COLS = 64


def get_inputs():
    return [torch.randn(N, N), torch.randn(N, N), torch.randn(N, COLS)]


def get_init_inputs():
    return []
