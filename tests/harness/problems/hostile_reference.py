import sys

import torch
import torch.nn as nn

# A pasted problem is user code too: this one rewrites the reference process's own handlers so that
# its inspection answers with a figure of the wrong type.
_process = sys.modules.get("evaluation.harness.sandboxed.reference_process")
if _process is not None:
    _inspect = _process._HANDLERS["inspect"]

    def _hostile(state, request):
        reply = _inspect(state, request)
        reply["output_bytes"] = "many"
        return reply

    _process._HANDLERS["inspect"] = _hostile


class Model(nn.Module):
    def forward(self, A, B):
        return torch.matmul(A, B)


M = 32
K = 48
N = 24


def get_inputs():
    return [torch.randn(M, K), torch.randn(K, N)]


def get_init_inputs():
    return []
