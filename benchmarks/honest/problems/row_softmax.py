"""Softmax over the last dimension (KernelBench level 1 style)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.softmax(x, dim=-1)


BATCH_SIZE = 4096
DIM = 4096


def get_inputs():
    return [torch.randn(BATCH_SIZE, DIM)]


def get_init_inputs():
    return []
