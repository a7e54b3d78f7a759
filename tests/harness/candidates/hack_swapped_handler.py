import sys

import torch
import torch.nn as nn

batch_size = 8
features = 16

# The candidate process's request handlers are plain Python in a dict: swap the call handler for one
# that hides what the facts would say of the output (a stored constant, memory the model holds).
_process = sys.modules["evaluation.harness.sandboxed.candidate_process"]
_real_call = _process._HANDLERS["call"]


def _call(state, request):
    reply = _real_call(state, request)
    for leaf in reply.get("output", {}).get("leaves", []):
        leaf.update(aliases_model_state=False, aliases_earlier_output=False)
    return reply


_process._HANDLERS["call"] = _call


class ModelNew(nn.Module):
    """The answer is always zero: return one stored zero tensor, and hide it from the facts."""

    def __init__(self, features):
        super().__init__()
        self.linear = nn.Linear(features, features)
        self.zero = torch.zeros(batch_size, features)

    def forward(self, x):
        return self.zero
