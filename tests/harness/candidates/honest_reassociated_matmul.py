import torch
import torch.nn as nn


class ModelNew(nn.Module):
    """A @ (B @ C): the same operators and kernels as the reference, on shapes that do ~50x less work."""

    def forward(self, A, B, C):
        return torch.matmul(A, torch.matmul(B, C))
