import torch
import torch.nn as nn


class ModelNew(nn.Module):
    """Wrong: ones where the product (zero in float32) belongs."""

    def forward(self, x):
        return torch.ones(x.shape[0], device=x.device, dtype=x.dtype)
