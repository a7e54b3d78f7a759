"""Explicit scaled dot-product attention: softmax(q k^T / sqrt(d)) v, no mask, no dropout."""

import math

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, q, k, v):
        scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(q.shape[-1])
        return torch.matmul(torch.softmax(scores, dim=-1), v)


BATCH_SIZE = 4
HEADS = 16
SEQ_LEN = 1024
HEAD_DIM = 64


def get_inputs():
    return [
        torch.randn(BATCH_SIZE, HEADS, SEQ_LEN, HEAD_DIM),
        torch.randn(BATCH_SIZE, HEADS, SEQ_LEN, HEAD_DIM),
        torch.randn(BATCH_SIZE, HEADS, SEQ_LEN, HEAD_DIM),
    ]


def get_init_inputs():
    return []
