import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

SOURCE = """
#include <torch/extension.h>
torch::Tensor relu_forward(torch::Tensor x) {
    auto input = x.contiguous();
    auto out = torch::empty_like(input);
    auto* src = input.data_ptr<float>();
    auto* dst = out.data_ptr<float>();
    for (int64_t i = 0; i < input.numel(); ++i) dst[i] = src[i] > 0.f ? src[i] : 0.f;
    return out;
}
"""

relu_extension = load_inline(name="court_test_relu", cpp_sources=SOURCE, functions=["relu_forward"], verbose=False)


class ModelNew(nn.Module):
    """Honest: a C++ extension built with load_inline (cached by source hash)."""

    def forward(self, x):
        return relu_extension.relu_forward(x)
