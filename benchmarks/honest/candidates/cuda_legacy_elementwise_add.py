"""Honest: KernelBench's own example, an elementwise add in a load_inline CUDA kernel launched
with `<<<blocks, threads>>>` (no stream argument: the legacy default stream)."""

import torch.nn as nn
from torch.utils.cpp_extension import load_inline

elementwise_add_source = r"""
#include <torch/extension.h>
#include <cuda_runtime.h>

__global__ void elementwise_add_kernel(const float* __restrict__ a, const float* __restrict__ b,
                                       float* __restrict__ out, int64_t size) {
    int64_t idx = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    int64_t stride = (int64_t)blockDim.x * gridDim.x;
    for (; idx < size; idx += stride) {
        out[idx] = a[idx] + b[idx];
    }
}

torch::Tensor elementwise_add_cuda(torch::Tensor a, torch::Tensor b) {
    TORCH_CHECK(a.is_cuda() && b.is_cuda(), "elementwise_add_cuda: inputs must be CUDA tensors");
    TORCH_CHECK(a.scalar_type() == torch::kFloat32 && b.scalar_type() == torch::kFloat32,
                "elementwise_add_cuda: inputs must be float32");
    TORCH_CHECK(a.sizes() == b.sizes(), "elementwise_add_cuda: inputs must have the same shape");
    auto a_c = a.contiguous();
    auto b_c = b.contiguous();
    auto out = torch::empty_like(a_c);
    int64_t size = a_c.numel();
    if (size == 0) {
        return out;
    }
    const int block_size = 256;
    int64_t blocks = (size + block_size - 1) / block_size;
    int num_blocks = (int)(blocks < 65536 ? blocks : 65536);
    elementwise_add_kernel<<<num_blocks, block_size>>>(a_c.data_ptr<float>(), b_c.data_ptr<float>(),
                                                       out.data_ptr<float>(), size);
    return out;
}
"""

elementwise_add_cpp_source = "torch::Tensor elementwise_add_cuda(torch::Tensor a, torch::Tensor b);"

elementwise_add = load_inline(
    name="honest_legacy_elementwise_add",
    cpp_sources=elementwise_add_cpp_source,
    cuda_sources=elementwise_add_source,
    functions=["elementwise_add_cuda"],
    verbose=False,
    extra_cuda_cflags=["-O3"],
)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.elementwise_add = elementwise_add

    def forward(self, a, b):
        return self.elementwise_add.elementwise_add_cuda(a, b)
