import torch
import torch.nn as nn


class Model(nn.Module):
    """A linear layer's output scaled down to about 1e-4: any answer passes allclose(atol=1e-2)."""

    def __init__(self, features):
        super().__init__()
        self.linear = nn.Linear(features, features)

    def forward(self, x):
        return self.linear(x) * 1e-4


batch_size = 8
features = 16


def get_inputs():
    return [torch.randn(batch_size, features)]


def get_init_inputs():
    return [features]
