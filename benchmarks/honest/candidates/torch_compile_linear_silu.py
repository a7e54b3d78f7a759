"""Honest: linear + SiLU compiled with torch.compile (default mode): the product stays a library
matmul (fp32) and Inductor fuses the bias add and SiLU into one epilogue kernel. Same nn.Linear,
built in the same order, so the weights are the problem's."""

import torch
import torch.nn as nn
import torch.nn.functional as F


def _linear_silu(x, weight, bias):
    return F.silu(F.linear(x, weight, bias))


_compiled_linear_silu = torch.compile(_linear_silu)


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        return _compiled_linear_silu(x, self.linear.weight, self.linear.bias)
