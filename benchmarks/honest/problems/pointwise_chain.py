"""A chain of eight small pointwise operations (eight kernel launches in eager): launch-bound at
this size, where fusion or a CUDA graph pays."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        y = x * 1.5
        y = y + 0.25
        y = torch.tanh(y)
        y = y * x
        y = y - 0.1
        y = torch.sigmoid(y)
        y = y * 2.0
        return y + x


BATCH_SIZE = 1024
DIM = 2048


def get_inputs():
    return [torch.randn(BATCH_SIZE, DIM)]


def get_init_inputs():
    return []
