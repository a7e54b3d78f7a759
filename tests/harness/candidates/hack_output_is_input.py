import torch
import torch.nn as nn


class ModelNew(nn.Module):
    """ReLU in place: no new memory, the caller's input is destroyed and returned as the output."""

    def forward(self, x):
        return x.relu_()
