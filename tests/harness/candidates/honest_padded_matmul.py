import torch
import torch.nn as nn


class ModelNew(nn.Module):
    """Honest: writes the product into rows padded to 16 columns, as compiled matmuls do for
    alignment, and returns the unpadded view."""

    def forward(self, A, B):
        columns = -(-B.shape[1] // 16) * 16
        padded = torch.empty(A.shape[0], columns, dtype=A.dtype, device=A.device)
        torch.matmul(A, B, out=padded[:, :B.shape[1]])
        return padded[:, :B.shape[1]]
