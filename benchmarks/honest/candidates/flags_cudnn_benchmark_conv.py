"""Honest: the same convolution with cuDNN's autotuner on (torch.backends.cudnn.benchmark = True):
the first call per shape times cuDNN's algorithms and later calls use the fastest. Same
nn.Conv2d, built in the same order, so the weights are the problem's."""

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, padding=kernel_size // 2)

    def forward(self, x):
        torch.backends.cudnn.benchmark = True
        return self.conv(x)
