import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, A, B)
        return A @ B
