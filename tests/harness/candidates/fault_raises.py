import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, A, B):
        raise RuntimeError("the kernel is not finished")
