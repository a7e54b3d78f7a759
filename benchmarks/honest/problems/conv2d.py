"""A 3x3 convolution with bias, 'same' padding (weights from nn.Conv2d)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, padding=kernel_size // 2)

    def forward(self, x):
        return self.conv(x)


BATCH_SIZE = 16
IN_CHANNELS = 64
OUT_CHANNELS = 128
KERNEL_SIZE = 3
HEIGHT = 56
WIDTH = 56


def get_inputs():
    return [torch.randn(BATCH_SIZE, IN_CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return [IN_CHANNELS, OUT_CHANNELS, KERNEL_SIZE]
