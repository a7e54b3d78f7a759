"""The SwiGLU gate: SiLU of one tensor times another (three elementwise kernels in eager)."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, gate, up):
        return F.silu(gate) * up


BATCH_SIZE = 4096
DIM = 4096


def get_inputs():
    return [torch.randn(BATCH_SIZE, DIM), torch.randn(BATCH_SIZE, DIM)]


def get_init_inputs():
    return []
