"""Honest: conv + batch norm (training mode, batch statistics, as the problem) + SiLU in
channels_last memory format: the module's weights are converted once after they are built (same
layers in the same order, so the same values), the input each call. Returns the channels_last
result."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class ModelNew(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, padding=kernel_size // 2, bias=False)
        self.bn = nn.BatchNorm2d(out_channels)
        self.conv = self.conv.to(memory_format=torch.channels_last)

    def forward(self, x):
        x = x.contiguous(memory_format=torch.channels_last)
        return F.silu(self.bn(self.conv(x)))
