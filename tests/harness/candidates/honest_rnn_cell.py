import torch
import torch.nn as nn


class ModelNew(nn.Module):
    """The RNN cell with its two input matmuls split (x @ W_x + h @ W_h instead of a concatenation),
    carrying its hidden state from call to call as the problem does."""

    def __init__(self, input_size, hidden_size, output_size):
        super().__init__()
        self.hidden = torch.randn((4, hidden_size))
        self.i2h = nn.Linear(input_size + hidden_size, hidden_size)
        self.h2o = nn.Linear(hidden_size, output_size)
        self.input_size = input_size

    def forward(self, x):
        weight = self.i2h.weight
        hidden = self.hidden.to(x.device)
        pre = torch.addmm(self.i2h.bias, x, weight[:, :self.input_size].t())
        self.hidden = torch.tanh(pre.addmm_(hidden, weight[:, self.input_size:].t()))
        return self.h2o(self.hidden)
