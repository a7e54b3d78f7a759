"""Honest: the eight-kernel pointwise chain captured once in a torch.cuda.CUDAGraph on static
buffers (lazily, per input shape, after warm-up on a side stream as torch documents); each call
copies its input into the static input, replays the graph (one launch instead of eight) and
returns a clone of the static output, so every call returns new memory."""

import torch
import torch.nn as nn


def _chain(x):
    y = x * 1.5
    y = y + 0.25
    y = torch.tanh(y)
    y = y * x
    y = y - 0.1
    y = torch.sigmoid(y)
    y = y * 2.0
    return y + x


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self._graphs = {}

    def _capture(self, x):
        static_x = torch.empty_like(x)
        static_x.copy_(x)
        side = torch.cuda.Stream(device=x.device)
        side.wait_stream(torch.cuda.current_stream(x.device))
        with torch.cuda.stream(side):
            for _ in range(3):
                _chain(static_x)
        torch.cuda.current_stream(x.device).wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            static_out = _chain(static_x)
        return graph, static_x, static_out

    def forward(self, x):
        with torch.no_grad():
            key = (tuple(x.shape), tuple(x.stride()), x.dtype, x.device)
            entry = self._graphs.get(key)
            if entry is None:
                entry = self._capture(x)
                self._graphs[key] = entry
            graph, static_x, static_out = entry
            static_x.copy_(x)
            graph.replay()
            return static_out.clone()
