"""Honest: the same convolution run in channels_last (NHWC) memory format, which cuDNN's fastest
kernels use: input and weight converted each call, the output returned as cuDNN gives it
(channels_last strides, one address per element). Same nn.Conv2d, built in the same order."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class ModelNew(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, padding=kernel_size // 2)

    def forward(self, x):
        x = x.contiguous(memory_format=torch.channels_last)
        weight = self.conv.weight.contiguous(memory_format=torch.channels_last)
        return F.conv2d(x, weight, self.conv.bias, self.conv.stride, self.conv.padding)
