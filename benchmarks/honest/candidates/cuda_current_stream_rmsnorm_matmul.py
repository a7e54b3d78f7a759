"""Honest: the RMS normalisation in one load_inline CUDA kernel (one block per row: sum of
squares, rsqrt, scale) launched on at::cuda::getCurrentCUDAStream(), then torch.matmul (cuBLAS,
fp32) on its output, on the same stream: a raw kernel feeding a torch op."""

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

rmsnorm_source = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>
#include <cuda_runtime.h>

__device__ __forceinline__ float warp_sum(float v) {
    for (int offset = 16; offset > 0; offset >>= 1) {
        v += __shfl_xor_sync(0xffffffff, v, offset);
    }
    return v;
}

__global__ void rmsnorm_kernel(const float* __restrict__ x, float* __restrict__ out,
                               int64_t rows, int64_t cols, float eps) {
    __shared__ float shared[33];
    int64_t row = blockIdx.x;
    if (row >= rows) {
        return;  // uniform across the block
    }
    const float* xr = x + row * cols;
    float* outr = out + row * cols;
    float s = 0.0f;
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
        float v = xr[c];
        s += v * v;
    }
    int lane = threadIdx.x & 31;
    int warp = threadIdx.x >> 5;
    int num_warps = (blockDim.x + 31) >> 5;
    s = warp_sum(s);
    if (lane == 0) shared[warp] = s;
    __syncthreads();
    if (warp == 0) {
        float t = lane < num_warps ? shared[lane] : 0.0f;
        t = warp_sum(t);
        if (lane == 0) shared[32] = rsqrtf(t / (float)cols + eps);
    }
    __syncthreads();
    float inv = shared[32];
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
        outr[c] = xr[c] * inv;
    }
}

torch::Tensor rmsnorm_cuda(torch::Tensor x, double eps) {
    TORCH_CHECK(x.is_cuda(), "rmsnorm_cuda: input must be a CUDA tensor");
    TORCH_CHECK(x.scalar_type() == torch::kFloat32, "rmsnorm_cuda: input must be float32");
    TORCH_CHECK(x.dim() == 2, "rmsnorm_cuda: input must be 2-D");
    const at::cuda::OptionalCUDAGuard device_guard(device_of(x));
    auto x_c = x.contiguous();
    auto out = torch::empty_like(x_c);
    int64_t rows = x_c.size(0);
    int64_t cols = x_c.size(1);
    if (rows == 0 || cols == 0) {
        return out;
    }
    cudaStream_t stream = at::cuda::getCurrentCUDAStream();
    rmsnorm_kernel<<<(unsigned int)rows, 256, 0, stream>>>(x_c.data_ptr<float>(), out.data_ptr<float>(),
                                                            rows, cols, (float)eps);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return out;
}
"""

rmsnorm_cpp_source = "torch::Tensor rmsnorm_cuda(torch::Tensor x, double eps);"

rmsnorm_ext = load_inline(
    name="honest_stream_rmsnorm_matmul",
    cpp_sources=rmsnorm_cpp_source,
    cuda_sources=rmsnorm_source,
    functions=["rmsnorm_cuda"],
    verbose=False,
    extra_cuda_cflags=["-O3"],
)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.eps = 1e-6

    def forward(self, x, W):
        normed = rmsnorm_ext.rmsnorm_cuda(x, self.eps)
        return torch.matmul(normed, W)
