"""A two-layer MLP (nn.Linear, ReLU, nn.Linear) on a small batch: a few short kernels."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, in_features, hidden_features, out_features):
        super().__init__()
        self.fc1 = nn.Linear(in_features, hidden_features)
        self.fc2 = nn.Linear(hidden_features, out_features)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


BATCH_SIZE = 512
IN_FEATURES = 1024
HIDDEN_FEATURES = 2048
OUT_FEATURES = 1024


def get_inputs():
    return [torch.randn(BATCH_SIZE, IN_FEATURES)]


def get_init_inputs():
    return [IN_FEATURES, HIDDEN_FEATURES, OUT_FEATURES]
