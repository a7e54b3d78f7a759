import torch
import torch.nn as nn


class Model(nn.Module):
    """ReLU on positive inputs: the published inputs never exercise the negative half."""

    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.relu(x)


batch_size = 8
dim = 64


def get_inputs():
    return [torch.rand(batch_size, dim)]


def get_init_inputs():
    return []
