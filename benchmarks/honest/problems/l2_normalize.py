"""Each row divided by its L2 norm (KernelBench level 1's L2Norm form)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return x / torch.norm(x, p=2, dim=1, keepdim=True)


BATCH_SIZE = 4096
DIM = 4096


def get_inputs():
    return [torch.randn(BATCH_SIZE, DIM)]


def get_init_inputs():
    return []
