import torch
import torch.nn as nn


class ModelNew(nn.Module):
    """The reference's own operator; names a CUDA stream in code that never runs (and could launch
    nothing differently on the CPU if it did)."""

    def forward(self, A, B):
        if A.is_cuda:
            with torch.cuda.stream(torch.cuda.Stream()):
                pass
        return torch.matmul(A, B)
