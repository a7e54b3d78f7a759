"""Honest: torch.matmul (cuBLAS, full fp32), then the 1/sqrt(K) scale and an exact-erf GELU fused
in a load_inline CUDA kernel launched with `<<<blocks, threads>>>` (legacy default stream),
reading the matmul's output."""

import math

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

gelu_source = r"""
#include <torch/extension.h>
#include <cuda_runtime.h>

__global__ void gelu_kernel(const float* __restrict__ x, float* __restrict__ out, int64_t size, float scale) {
    int64_t idx = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    int64_t stride = (int64_t)blockDim.x * gridDim.x;
    for (; idx < size; idx += stride) {
        float v = x[idx] * scale;
        out[idx] = 0.5f * v * (1.0f + erff(v * 0.70710678118654752f));
    }
}

torch::Tensor gelu_cuda(torch::Tensor x, double scale) {
    TORCH_CHECK(x.is_cuda(), "gelu_cuda: input must be a CUDA tensor");
    TORCH_CHECK(x.scalar_type() == torch::kFloat32, "gelu_cuda: input must be float32");
    auto x_c = x.contiguous();
    auto out = torch::empty_like(x_c);
    int64_t size = x_c.numel();
    if (size == 0) {
        return out;
    }
    const int block_size = 256;
    int64_t blocks = (size + block_size - 1) / block_size;
    int num_blocks = (int)(blocks < 65536 ? blocks : 65536);
    gelu_kernel<<<num_blocks, block_size>>>(x_c.data_ptr<float>(), out.data_ptr<float>(), size, (float)scale);
    return out;
}
"""

gelu_cpp_source = "torch::Tensor gelu_cuda(torch::Tensor x, double scale);"

gelu_ext = load_inline(
    name="honest_legacy_matmul_gelu",
    cpp_sources=gelu_cpp_source,
    cuda_sources=gelu_source,
    functions=["gelu_cuda"],
    verbose=False,
    extra_cuda_cflags=["-O3"],
)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A, B):
        y = torch.matmul(A, B)
        return gelu_ext.gelu_cuda(y, 1.0 / math.sqrt(A.shape[-1]))
