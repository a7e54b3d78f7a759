import torch
import torch.nn as nn


class Model(nn.Module):
    """KernelBench level 3 task 33 (a vanilla RNN cell), smaller: the forward keeps its hidden state
    in `self.hidden`, so each call's output depends on every call before it."""

    def __init__(self, input_size, hidden_size, output_size):
        super().__init__()
        self.hidden = torch.randn((batch_size, hidden_size))
        self.i2h = nn.Linear(input_size + hidden_size, hidden_size)
        self.h2o = nn.Linear(hidden_size, output_size)
        self.tanh = nn.Tanh()

    def forward(self, x):
        self.hidden = self.hidden.to(x.device)
        combined = torch.cat((x, self.hidden), dim=1)
        self.hidden = self.tanh(self.i2h(combined))
        return self.h2o(self.hidden)


batch_size = 4
input_size = 64
hidden_size = 32
output_size = 16


def get_inputs():
    return [torch.randn(batch_size, input_size)]


def get_init_inputs():
    return [input_size, hidden_size, output_size]
