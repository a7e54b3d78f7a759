import torch
import torch.nn as nn


class ModelNew(nn.Module):
    """Wrong: zeros of the right shape."""

    def forward(self, A, B):
        return torch.zeros(A.shape[0], B.shape[1])
