import subprocess

import torch
import torch.nn as nn

# A helper process that outlives every call: work could be shipped to it untimed.
helper = subprocess.Popen(["sleep", "30"])


class ModelNew(nn.Module):
    def forward(self, A, B):
        return torch.matmul(A, B)
