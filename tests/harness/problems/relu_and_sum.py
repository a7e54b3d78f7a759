import torch
import torch.nn as nn


class Model(nn.Module):
    """Returns a tensor and a Python number."""

    def forward(self, x):
        return torch.relu(x), float(x.sum())


batch_size = 16
dim = 64


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
