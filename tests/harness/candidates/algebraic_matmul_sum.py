import torch
import torch.nn as nn


class ModelNew(nn.Module):
    """Right, through algebra the reference does not use: sum(A @ B) = A.sum(0) . B.sum(1).
    Faster than the FLOP floor of the product, so flagged beyond_speed_of_light."""

    def forward(self, A, B):
        return torch.dot(A.sum(0), B.sum(1))
