"""Honest: SiLU(gate) * up fused into one Triton kernel (one read of each input, one write)
instead of eager's three kernels."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def silu_mul_kernel(gate_ptr, up_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(0)
    offsets = pid.to(tl.int64) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    g = tl.load(gate_ptr + offsets, mask=mask, other=0.0)
    u = tl.load(up_ptr + offsets, mask=mask, other=0.0)
    silu = g / (1.0 + tl.exp(-g))
    tl.store(out_ptr + offsets, silu * u, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, gate, up):
        gate = gate.contiguous()
        up = up.contiguous()
        out = torch.empty_like(gate)
        n = out.numel()
        if n == 0:
            return out
        BLOCK_SIZE = 1024
        grid = (triton.cdiv(n, BLOCK_SIZE),)
        silu_mul_kernel[grid](gate, up, out, n, BLOCK_SIZE=BLOCK_SIZE)
        return out
