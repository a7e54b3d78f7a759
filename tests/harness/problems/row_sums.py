import torch
import torch.nn as nn


class Model(nn.Module):
    """Row sums one row at a time: a slow reference that an honest candidate beats by far."""

    def __init__(self):
        super().__init__()

    def forward(self, A):
        return torch.stack([row.sum() for row in A])


ROWS = 256
COLS = 64


def get_inputs():
    return [torch.randn(ROWS, COLS)]


def get_init_inputs():
    return []
