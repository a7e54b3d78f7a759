"""KernelBench level 3 task 34's own forward as a candidate: the problem, unchanged.

The harness marks it incorrect (timed_outputs_match_reference), on the CPU as on the H200: the forward
carries `self.hidden` from one call to the next, and the reference process advances its model only on
the calls it is asked to compare, while the candidate's model advances on every timed call.

    python -m evaluation.harness verify --problem <level3_task034 problem.py> \
        --candidate benchmarks/results/h200-2026-11-24-builtin250/L3T34-problem-forward-as-candidate.py \
        --device cpu --baselines eager --json
"""

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, input_size, hidden_size, output_size):
        super().__init__()
        self.hidden = torch.randn((8, hidden_size))
        self.i2h = nn.Linear(input_size + hidden_size, hidden_size)
        self.h2o = nn.Linear(hidden_size, output_size)
        self.tanh = nn.Tanh()

    def forward(self, x):
        self.hidden = self.hidden.to(x.device)
        combined = torch.cat((x, self.hidden), dim=1)
        self.hidden = self.tanh(self.i2h(combined))
        output = self.h2o(self.hidden)
        return self.hidden
