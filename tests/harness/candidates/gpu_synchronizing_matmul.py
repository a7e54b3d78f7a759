import torch
import torch.nn as nn


class ModelNew(nn.Module):
    """Right, and waits for the device inside every call (as `.item()` or a copy to the host would)."""

    def forward(self, A, B):
        out = torch.matmul(A, B)
        torch.cuda.synchronize()
        return out
