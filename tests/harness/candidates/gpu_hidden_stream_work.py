import torch
import torch.nn as nn


class ModelNew(nn.Module):
    """Returns the right product from the calling stream, and leaves a large product running on a
    side stream it never waits for: work outside the timed interval, which a burst's closing
    synchronize finds still running."""

    def __init__(self):
        super().__init__()
        self.stream = None
        self.big = None

    def forward(self, A, B):
        if self.stream is None:
            self.stream = torch.cuda.Stream()
            self.big = torch.randn(4096, 4096, device="cuda")
        out = torch.matmul(A, B)
        with torch.cuda.stream(self.stream):
            for _ in range(4):
                torch.matmul(self.big, self.big)
        return out
