import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        return {0: torch.clamp_min(x, 0.0), 1: torch.max(x, dim=1)}
