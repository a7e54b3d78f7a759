"""Honest: torch.matmul followed by one fused scale + bias-add + ReLU load_inline CUDA kernel
(launched with `<<<blocks, threads>>>`, no stream argument) on the matmul's output: one pass
instead of three."""

import math

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

bias_relu_source = r"""
#include <torch/extension.h>
#include <cuda_runtime.h>

__global__ void bias_relu_kernel(const float* __restrict__ y, const float* __restrict__ bias,
                                 float* __restrict__ out, int64_t size, int64_t cols, float scale) {
    int64_t idx = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    int64_t stride = (int64_t)blockDim.x * gridDim.x;
    for (; idx < size; idx += stride) {
        float v = y[idx] * scale + bias[idx % cols];
        out[idx] = v > 0.0f ? v : 0.0f;
    }
}

torch::Tensor bias_relu_cuda(torch::Tensor y, torch::Tensor bias, double scale) {
    TORCH_CHECK(y.is_cuda() && bias.is_cuda(), "bias_relu_cuda: inputs must be CUDA tensors");
    TORCH_CHECK(y.scalar_type() == torch::kFloat32 && bias.scalar_type() == torch::kFloat32,
                "bias_relu_cuda: inputs must be float32");
    TORCH_CHECK(y.dim() == 2 && bias.dim() == 1 && bias.size(0) == y.size(1),
                "bias_relu_cuda: expects y (M, N) and bias (N)");
    auto y_c = y.contiguous();
    auto bias_c = bias.contiguous();
    auto out = torch::empty_like(y_c);
    int64_t size = y_c.numel();
    if (size == 0) {
        return out;
    }
    const int block_size = 256;
    int64_t blocks = (size + block_size - 1) / block_size;
    int num_blocks = (int)(blocks < 65536 ? blocks : 65536);
    bias_relu_kernel<<<num_blocks, block_size>>>(y_c.data_ptr<float>(), bias_c.data_ptr<float>(),
                                                 out.data_ptr<float>(), size, y_c.size(1), (float)scale);
    return out;
}
"""

bias_relu_cpp_source = "torch::Tensor bias_relu_cuda(torch::Tensor y, torch::Tensor bias, double scale);"

bias_relu_ext = load_inline(
    name="honest_legacy_matmul_bias_relu",
    cpp_sources=bias_relu_cpp_source,
    cuda_sources=bias_relu_source,
    functions=["bias_relu_cuda"],
    verbose=False,
    extra_cuda_cflags=["-O3"],
)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A, B, bias):
        y = torch.matmul(A, B)
        return bias_relu_ext.bias_relu_cuda(y, bias, 1.0 / math.sqrt(A.shape[-1]))
