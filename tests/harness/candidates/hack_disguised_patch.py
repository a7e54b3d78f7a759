import time

import torch
import torch.nn as nn

_matmul = torch.matmul


def _slow_matmul(*args, **kwargs):
    time.sleep(0.002)
    return _matmul(*args, **kwargs)


# Slows the baseline's torch.matmul, dressed as torch._dynamo's own rewrapping: the real function
# under __wrapped__, and code that claims to come from torch/_dynamo/eval_frame.py.
_slow_matmul.__code__ = _slow_matmul.__code__.replace(co_filename="/site-packages/torch/_dynamo/eval_frame.py")
_slow_matmul.__wrapped__ = _matmul
torch.matmul = _slow_matmul


class ModelNew(nn.Module):
    def forward(self, A, B):
        return _matmul(A, B)
