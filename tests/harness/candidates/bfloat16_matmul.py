import torch
import torch.nn as nn


class ModelNew(nn.Module):
    """Honest but lower precision: bfloat16 operands, within the half-level tolerance."""

    def forward(self, A, B):
        return torch.matmul(A.bfloat16(), B.bfloat16()).float()
