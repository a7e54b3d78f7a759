import ctypes

import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, A, B):
        ctypes.memset(0, 0, 8)  # writes to address 0: SIGSEGV
