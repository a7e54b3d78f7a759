import torch
import torch.nn as nn


class ModelNew(nn.Module):
    """CUDA-L1 level 2 task 23's trick in its simplest form: outputs are ~1e-4, so zeros pass
    allclose(atol=1e-2) while being 100% wrong."""

    def __init__(self, features):
        super().__init__()
        self.linear = nn.Linear(features, features)

    def forward(self, x):
        return torch.zeros(x.shape[0], self.linear.out_features)
