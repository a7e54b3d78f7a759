"""Conv2d (no bias), BatchNorm2d (training mode, batch statistics) and SiLU: an EfficientNet-style
conv block."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, padding=kernel_size // 2, bias=False)
        self.bn = nn.BatchNorm2d(out_channels)

    def forward(self, x):
        return F.silu(self.bn(self.conv(x)))


BATCH_SIZE = 16
IN_CHANNELS = 64
OUT_CHANNELS = 64
KERNEL_SIZE = 3
HEIGHT = 56
WIDTH = 56


def get_inputs():
    return [torch.randn(BATCH_SIZE, IN_CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return [IN_CHANNELS, OUT_CHANNELS, KERNEL_SIZE]
