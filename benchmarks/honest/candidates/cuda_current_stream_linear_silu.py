"""Honest: the linear layer's product through torch.matmul (cuBLAS, fp32), then bias + SiLU fused
in one load_inline CUDA kernel launched on at::cuda::getCurrentCUDAStream(). Same nn.Linear,
built in the same order, so the weights are the problem's."""

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

bias_silu_source = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>
#include <cuda_runtime.h>

__global__ void bias_silu_kernel(const float* __restrict__ y, const float* __restrict__ bias,
                                 float* __restrict__ out, int64_t size, int64_t cols) {
    int64_t idx = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    int64_t stride = (int64_t)blockDim.x * gridDim.x;
    for (; idx < size; idx += stride) {
        float v = y[idx] + bias[idx % cols];
        out[idx] = v / (1.0f + expf(-v));
    }
}

torch::Tensor bias_silu_cuda(torch::Tensor y, torch::Tensor bias) {
    TORCH_CHECK(y.is_cuda() && bias.is_cuda(), "bias_silu_cuda: inputs must be CUDA tensors");
    TORCH_CHECK(y.scalar_type() == torch::kFloat32 && bias.scalar_type() == torch::kFloat32,
                "bias_silu_cuda: inputs must be float32");
    TORCH_CHECK(y.dim() == 2 && bias.dim() == 1 && bias.size(0) == y.size(1),
                "bias_silu_cuda: expects y (M, N) and bias (N)");
    const at::cuda::OptionalCUDAGuard device_guard(device_of(y));
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
    cudaStream_t stream = at::cuda::getCurrentCUDAStream();
    bias_silu_kernel<<<num_blocks, block_size, 0, stream>>>(y_c.data_ptr<float>(), bias_c.data_ptr<float>(),
                                                            out.data_ptr<float>(), size, y_c.size(1));
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return out;
}
"""

bias_silu_cpp_source = "torch::Tensor bias_silu_cuda(torch::Tensor y, torch::Tensor bias);"

bias_silu_ext = load_inline(
    name="honest_stream_linear_silu",
    cpp_sources=bias_silu_cpp_source,
    cuda_sources=bias_silu_source,
    functions=["bias_silu_cuda"],
    verbose=False,
    extra_cuda_cflags=["-O3"],
)


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        y = torch.matmul(x, self.linear.weight.t())
        return bias_silu_ext.bias_silu_cuda(y, self.linear.bias)
