"""Honest: the convolution without its bias through F.conv2d (cuDNN), then the per-channel bias
added by a load_inline CUDA kernel launched with `<<<blocks, threads>>>` (legacy default stream).
The weights are the problem's: the same nn.Conv2d is built in the same order."""

import torch.nn as nn
import torch.nn.functional as F
from torch.utils.cpp_extension import load_inline

channel_bias_source = r"""
#include <torch/extension.h>
#include <cuda_runtime.h>

__global__ void channel_bias_kernel(const float* __restrict__ y, const float* __restrict__ bias,
                                    float* __restrict__ out, int64_t size, int64_t channels, int64_t plane) {
    int64_t idx = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    int64_t stride = (int64_t)blockDim.x * gridDim.x;
    for (; idx < size; idx += stride) {
        out[idx] = y[idx] + bias[(idx / plane) % channels];
    }
}

torch::Tensor channel_bias_cuda(torch::Tensor y, torch::Tensor bias) {
    TORCH_CHECK(y.is_cuda() && bias.is_cuda(), "channel_bias_cuda: inputs must be CUDA tensors");
    TORCH_CHECK(y.scalar_type() == torch::kFloat32 && bias.scalar_type() == torch::kFloat32,
                "channel_bias_cuda: inputs must be float32");
    TORCH_CHECK(y.dim() == 4 && bias.dim() == 1 && bias.size(0) == y.size(1),
                "channel_bias_cuda: expects y (N, C, H, W) and bias (C)");
    auto y_c = y.contiguous();
    auto bias_c = bias.contiguous();
    auto out = torch::empty_like(y_c);
    int64_t size = y_c.numel();
    if (size == 0) {
        return out;
    }
    int64_t channels = y_c.size(1);
    int64_t plane = y_c.size(2) * y_c.size(3);
    const int block_size = 256;
    int64_t blocks = (size + block_size - 1) / block_size;
    int num_blocks = (int)(blocks < 65536 ? blocks : 65536);
    channel_bias_kernel<<<num_blocks, block_size>>>(y_c.data_ptr<float>(), bias_c.data_ptr<float>(),
                                                    out.data_ptr<float>(), size, channels, plane);
    return out;
}
"""

channel_bias_cpp_source = "torch::Tensor channel_bias_cuda(torch::Tensor y, torch::Tensor bias);"

channel_bias_ext = load_inline(
    name="honest_legacy_conv_bias",
    cpp_sources=channel_bias_cpp_source,
    cuda_sources=channel_bias_source,
    functions=["channel_bias_cuda"],
    verbose=False,
    extra_cuda_cflags=["-O3"],
)


class ModelNew(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, padding=kernel_size // 2)

    def forward(self, x):
        y = F.conv2d(x, self.conv.weight, None, self.conv.stride, self.conv.padding)
        return channel_bias_ext.channel_bias_cuda(y, self.conv.bias)
