"""Honest: the explicit attention replaced by F.scaled_dot_product_attention (same default scale
1/sqrt(head_dim), no mask, no dropout), which never materialises the score matrix."""

import torch.nn as nn
import torch.nn.functional as F


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, q, k, v):
        return F.scaled_dot_product_attention(q, k, v)
