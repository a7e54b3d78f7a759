import torch
import torch.nn as nn


class Model(nn.Module):
    """relu(x + y) * 0.5 on 4096 elements: three short elementwise kernels."""

    def __init__(self):
        super().__init__()

    def forward(self, x, y):
        return torch.relu(x + y) * 0.5


def get_inputs():
    return [torch.randn(64, 64), torch.randn(64, 64)]


def get_init_inputs():
    return []
