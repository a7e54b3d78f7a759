"""relu(x * 2 + 1): three elementwise kernels in eager."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.relu(x * 2.0 + 1.0)


BATCH_SIZE = 4096
DIM = 4096


def get_inputs():
    return [torch.randn(BATCH_SIZE, DIM)]


def get_init_inputs():
    return []
