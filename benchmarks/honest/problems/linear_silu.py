"""A linear layer (nn.Linear, with bias) followed by SiLU."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        return F.silu(self.linear(x))


BATCH_SIZE = 4096
IN_FEATURES = 2048
OUT_FEATURES = 2048


def get_inputs():
    return [torch.randn(BATCH_SIZE, IN_FEATURES)]


def get_init_inputs():
    return [IN_FEATURES, OUT_FEATURES]
