"""A gated pair of linear heads on one input: tanh(head_a(x)) * sigmoid(head_b(x))."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, in_features, hidden_features):
        super().__init__()
        self.head_a = nn.Linear(in_features, hidden_features)
        self.head_b = nn.Linear(in_features, hidden_features)

    def forward(self, x):
        return torch.tanh(self.head_a(x)) * torch.sigmoid(self.head_b(x))


BATCH_SIZE = 4096
IN_FEATURES = 1024
HIDDEN_FEATURES = 1024


def get_inputs():
    return [torch.randn(BATCH_SIZE, IN_FEATURES)]


def get_init_inputs():
    return [IN_FEATURES, HIDDEN_FEATURES]
