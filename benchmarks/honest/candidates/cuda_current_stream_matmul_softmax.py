"""Honest: torch.matmul for the scores, then the 1/sqrt(K) scaling and the row softmax fused in one
load_inline CUDA kernel (one block per row: max, sum of exponentials, normalise) launched on
at::cuda::getCurrentCUDAStream()."""

import math

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

scaled_softmax_source = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>
#include <cuda_runtime.h>
#include <math_constants.h>

__device__ __forceinline__ float warp_max(float v) {
    for (int offset = 16; offset > 0; offset >>= 1) {
        v = fmaxf(v, __shfl_xor_sync(0xffffffff, v, offset));
    }
    return v;
}

__device__ __forceinline__ float warp_sum(float v) {
    for (int offset = 16; offset > 0; offset >>= 1) {
        v += __shfl_xor_sync(0xffffffff, v, offset);
    }
    return v;
}

// Every thread of the block gets the result; `shared` holds 33 floats.
__device__ float block_max(float v, float* shared) {
    int lane = threadIdx.x & 31;
    int warp = threadIdx.x >> 5;
    int num_warps = (blockDim.x + 31) >> 5;
    v = warp_max(v);
    if (lane == 0) shared[warp] = v;
    __syncthreads();
    if (warp == 0) {
        float t = lane < num_warps ? shared[lane] : -CUDART_INF_F;
        t = warp_max(t);
        if (lane == 0) shared[32] = t;
    }
    __syncthreads();
    float result = shared[32];
    __syncthreads();
    return result;
}

__device__ float block_sum(float v, float* shared) {
    int lane = threadIdx.x & 31;
    int warp = threadIdx.x >> 5;
    int num_warps = (blockDim.x + 31) >> 5;
    v = warp_sum(v);
    if (lane == 0) shared[warp] = v;
    __syncthreads();
    if (warp == 0) {
        float t = lane < num_warps ? shared[lane] : 0.0f;
        t = warp_sum(t);
        if (lane == 0) shared[32] = t;
    }
    __syncthreads();
    float result = shared[32];
    __syncthreads();
    return result;
}

__global__ void scaled_softmax_kernel(const float* __restrict__ x, float* __restrict__ out,
                                      int64_t rows, int64_t cols, float scale) {
    __shared__ float shared[33];
    int64_t row = blockIdx.x;
    if (row >= rows) {
        return;  // uniform across the block
    }
    const float* xr = x + row * cols;
    float* outr = out + row * cols;
    float m = -CUDART_INF_F;
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
        m = fmaxf(m, xr[c] * scale);
    }
    m = block_max(m, shared);
    float s = 0.0f;
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
        s += expf(xr[c] * scale - m);
    }
    s = block_sum(s, shared);
    float inv = 1.0f / s;
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
        outr[c] = expf(xr[c] * scale - m) * inv;
    }
}

torch::Tensor scaled_softmax_cuda(torch::Tensor x, double scale) {
    TORCH_CHECK(x.is_cuda(), "scaled_softmax_cuda: input must be a CUDA tensor");
    TORCH_CHECK(x.scalar_type() == torch::kFloat32, "scaled_softmax_cuda: input must be float32");
    TORCH_CHECK(x.dim() == 2, "scaled_softmax_cuda: input must be 2-D");
    const at::cuda::OptionalCUDAGuard device_guard(device_of(x));
    auto x_c = x.contiguous();
    auto out = torch::empty_like(x_c);
    int64_t rows = x_c.size(0);
    int64_t cols = x_c.size(1);
    if (rows == 0 || cols == 0) {
        return out;
    }
    cudaStream_t stream = at::cuda::getCurrentCUDAStream();
    scaled_softmax_kernel<<<(unsigned int)rows, 256, 0, stream>>>(x_c.data_ptr<float>(), out.data_ptr<float>(),
                                                                   rows, cols, (float)scale);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return out;
}
"""

scaled_softmax_cpp_source = "torch::Tensor scaled_softmax_cuda(torch::Tensor x, double scale);"

scaled_softmax_ext = load_inline(
    name="honest_stream_matmul_softmax",
    cpp_sources=scaled_softmax_cpp_source,
    cuda_sources=scaled_softmax_source,
    functions=["scaled_softmax_cuda"],
    verbose=False,
    extra_cuda_cflags=["-O3"],
)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A, B):
        scores = torch.matmul(A, B)
        return scaled_softmax_ext.scaled_softmax_cuda(scores, 1.0 / math.sqrt(A.shape[-1]))
