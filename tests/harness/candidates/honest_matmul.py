import torch
import torch.nn as nn


class ModelNew(nn.Module):
    """Honest: the same product by broadcasting and a reduction."""

    def forward(self, A, B):
        return (A.unsqueeze(2) * B.unsqueeze(0)).sum(1)
