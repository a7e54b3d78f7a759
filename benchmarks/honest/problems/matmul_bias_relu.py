"""A scaled matrix product (1/sqrt(K), as a linear layer keeps activations near unit size), a bias
broadcast over rows, and a ReLU. The bias is drawn from [0, 1), so about a third of the outputs
are zero (given as inputs, no weights)."""

import math

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A, B, bias):
        return torch.relu(torch.matmul(A, B) / math.sqrt(A.shape[-1]) + bias)


M = 2048
K = 2048
N = 2048


def get_inputs():
    return [torch.randn(M, K), torch.randn(K, N), torch.rand(N)]


def get_init_inputs():
    return []
