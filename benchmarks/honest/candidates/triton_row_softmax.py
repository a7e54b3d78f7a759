"""Honest: a row softmax in one Triton kernel, one program per row holding the whole row in
registers (max, exponentials, sum, normalise: one read and one write of the data)."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def row_softmax_kernel(x_ptr, out_ptr, n_cols, x_row_stride, out_row_stride, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * x_row_stride + cols, mask=mask, other=-float("inf"))
    x = x - tl.max(x, axis=0)
    numerator = tl.exp(x)
    denominator = tl.sum(numerator, axis=0)
    tl.store(out_ptr + row * out_row_stride + cols, numerator / denominator, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x2 = x.contiguous().reshape(-1, x.shape[-1])
        n_rows, n_cols = x2.shape
        out = torch.empty_like(x2)
        if out.numel() == 0:
            return out.reshape(x.shape)
        BLOCK_SIZE = triton.next_power_of_2(n_cols)
        num_warps = 4 if BLOCK_SIZE <= 1024 else (8 if BLOCK_SIZE <= 4096 else 16)
        row_softmax_kernel[(n_rows,)](x2, out, n_cols, x2.stride(0), out.stride(0), BLOCK_SIZE=BLOCK_SIZE, num_warps=num_warps)
        return out.reshape(x.shape)
