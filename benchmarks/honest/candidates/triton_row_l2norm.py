"""Honest: each row divided by its L2 norm in one Triton kernel, one program per row (sum of
squares, sqrt, divide), instead of eager's norm kernel plus a broadcast division."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def row_l2norm_kernel(x_ptr, out_ptr, n_cols, x_row_stride, out_row_stride, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * x_row_stride + cols, mask=mask, other=0.0)
    norm = tl.sqrt(tl.sum(x * x, axis=0))
    tl.store(out_ptr + row * out_row_stride + cols, x / norm, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        n_rows, n_cols = x.shape
        out = torch.empty_like(x)
        if out.numel() == 0:
            return out
        BLOCK_SIZE = triton.next_power_of_2(n_cols)
        num_warps = 4 if BLOCK_SIZE <= 1024 else (8 if BLOCK_SIZE <= 4096 else 16)
        row_l2norm_kernel[(n_rows,)](x, out, n_cols, x.stride(0), out.stride(0), BLOCK_SIZE=BLOCK_SIZE, num_warps=num_warps)
        return out
