import time

import torch
import torch.nn as nn

_matmul = torch.matmul


def slow_matmul(*args, **kwargs):
    # The reference (the eager baseline) calls torch.matmul: make it slow, look fast.
    time.sleep(0.002)
    return _matmul(*args, **kwargs)


torch.matmul = slow_matmul


class ModelNew(nn.Module):
    def forward(self, A, B):
        return _matmul(A, B)
