import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

# KernelBench's own example launches this way: no stream argument, so the kernel goes to the legacy
# default stream, after a torch operator on the current one.
source = r"""
#include <torch/extension.h>

__global__ void relu_kernel(const float* x, float* out, int64_t n) {
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = x[i] > 0.f ? x[i] : 0.f;
}

torch::Tensor relu_cuda(torch::Tensor x) {
    auto out = torch::empty_like(x);
    int64_t n = x.numel();
    relu_kernel<<<(n + 255) / 256, 256>>>(x.data_ptr<float>(), out.data_ptr<float>(), n);
    return out;
}
"""

relu = load_inline(
    name="kernel_court_test_legacy_relu",
    cpp_sources="torch::Tensor relu_cuda(torch::Tensor x);",
    cuda_sources=source,
    functions=["relu_cuda"],
    verbose=False,
)


class ModelNew(nn.Module):
    """Honest: the product by torch, the ReLU by a raw kernel on the legacy default stream."""

    def forward(self, A, B):
        return relu.relu_cuda(torch.matmul(A, B).contiguous())
