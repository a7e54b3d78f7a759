import torch
import torch.nn as nn


class ModelNew(nn.Module):
    """Honest for a degenerate problem: a new zero tensor each call (the answer never changes)."""

    def __init__(self, features):
        super().__init__()
        self.linear = nn.Linear(features, features)

    def forward(self, x):
        return torch.zeros(x.shape[0], self.linear.out_features)
