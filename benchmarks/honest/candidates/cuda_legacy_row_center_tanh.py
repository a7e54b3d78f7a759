"""Honest: two raw load_inline CUDA kernels in sequence, both launched with `<<<grid, block>>>`
(legacy default stream): a per-row mean (one block per row, shared-memory reduction), then an
elementwise pass subtracting each row's mean and applying tanh. The second reads the first's
output; stream order on the one default stream makes that safe."""

import torch.nn as nn
from torch.utils.cpp_extension import load_inline

row_center_source = r"""
#include <torch/extension.h>
#include <cuda_runtime.h>

__device__ __forceinline__ float warp_sum(float v) {
    for (int offset = 16; offset > 0; offset >>= 1) {
        v += __shfl_xor_sync(0xffffffff, v, offset);
    }
    return v;
}

__global__ void row_mean_kernel(const float* __restrict__ x, float* __restrict__ means,
                                int64_t rows, int64_t cols) {
    __shared__ float partial[32];
    int64_t row = blockIdx.x;
    if (row >= rows) {
        return;  // uniform across the block
    }
    const float* xr = x + row * cols;
    float s = 0.0f;
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
        s += xr[c];
    }
    int lane = threadIdx.x & 31;
    int warp = threadIdx.x >> 5;
    s = warp_sum(s);
    if (lane == 0) {
        partial[warp] = s;
    }
    __syncthreads();
    int num_warps = (blockDim.x + 31) >> 5;
    if (warp == 0) {
        float t = lane < num_warps ? partial[lane] : 0.0f;
        t = warp_sum(t);
        if (lane == 0) {
            means[row] = t / (float)cols;
        }
    }
}

__global__ void center_tanh_kernel(const float* __restrict__ x, const float* __restrict__ means,
                                   float* __restrict__ out, int64_t size, int64_t cols) {
    int64_t idx = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    int64_t stride = (int64_t)blockDim.x * gridDim.x;
    for (; idx < size; idx += stride) {
        out[idx] = tanhf(x[idx] - means[idx / cols]);
    }
}

torch::Tensor row_center_tanh_cuda(torch::Tensor x) {
    TORCH_CHECK(x.is_cuda(), "row_center_tanh_cuda: input must be a CUDA tensor");
    TORCH_CHECK(x.scalar_type() == torch::kFloat32, "row_center_tanh_cuda: input must be float32");
    TORCH_CHECK(x.dim() == 2, "row_center_tanh_cuda: input must be 2-D");
    auto x_c = x.contiguous();
    int64_t rows = x_c.size(0);
    int64_t cols = x_c.size(1);
    auto out = torch::empty_like(x_c);
    if (rows == 0 || cols == 0) {
        return out;
    }
    auto means = torch::empty({rows}, x_c.options());

    row_mean_kernel<<<(unsigned int)rows, 256>>>(x_c.data_ptr<float>(), means.data_ptr<float>(), rows, cols);

    int64_t size = rows * cols;
    const int block_size = 256;
    int64_t blocks = (size + block_size - 1) / block_size;
    int num_blocks = (int)(blocks < 65536 ? blocks : 65536);
    center_tanh_kernel<<<num_blocks, block_size>>>(x_c.data_ptr<float>(), means.data_ptr<float>(),
                                                   out.data_ptr<float>(), size, cols);
    return out;
}
"""

row_center_cpp_source = "torch::Tensor row_center_tanh_cuda(torch::Tensor x);"

row_center_ext = load_inline(
    name="honest_legacy_row_center_tanh",
    cpp_sources=row_center_cpp_source,
    cuda_sources=row_center_source,
    functions=["row_center_tanh_cuda"],
    verbose=False,
    extra_cuda_cflags=["-O3"],
)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return row_center_ext.row_center_tanh_cuda(x)
