import torch
import torch.nn as nn


class Model(nn.Module):
    """A 32x48x24 product: a call of about 10 us on a GPU, most of it the launch."""

    def __init__(self):
        super().__init__()

    def forward(self, A, B):
        return torch.matmul(A, B)


def get_inputs():
    return [torch.randn(32, 48), torch.randn(48, 24)]


def get_init_inputs():
    return []
