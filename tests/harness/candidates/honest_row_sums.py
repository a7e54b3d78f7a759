import torch.nn as nn


class ModelNew(nn.Module):
    """Honest: one reduction instead of a Python loop over rows."""

    def forward(self, A):
        return A.sum(1)
