import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def wild_store(out_ptr):
    tl.store(out_ptr + (1 << 40), 1.0)  # four terabytes past the output: an illegal address


class ModelNew(nn.Module):
    def forward(self, A, B):
        out = torch.empty(A.shape[0], B.shape[1], device=A.device)
        wild_store[(1,)](out)
        torch.cuda.synchronize()
        return out
