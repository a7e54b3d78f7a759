"""Honest: the pointwise chain computed in place in a private scratch buffer that the module
allocates once per shape and reuses across calls (never returned), and the final result written
into a tensor allocated fresh in each call: no input is written and no memory is returned twice."""

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self._scratch = {}

    def _scratch_for(self, x):
        key = (tuple(x.shape), x.dtype, x.device)
        buf = self._scratch.get(key)
        if buf is None:
            buf = torch.empty(x.shape, dtype=x.dtype, device=x.device)
            self._scratch[key] = buf
        return buf

    def forward(self, x):
        s = self._scratch_for(x)
        torch.mul(x, 1.5, out=s)
        s.add_(0.25)
        s.tanh_()
        s.mul_(x)
        s.sub_(0.1)
        s.sigmoid_()
        out = torch.empty_like(x)
        torch.add(x, s, alpha=2.0, out=out)
        return out
