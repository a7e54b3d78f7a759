import torch.nn as nn
from tqdm import tqdm


class ModelNew(nn.Module):
    """Honest, and shows a progress bar while it sets up, as torch.compile's autotuning does where
    tqdm is installed: tqdm then starts its monitor thread, a daemon that wakes every 10 s."""

    def __init__(self):
        super().__init__()
        for _ in tqdm(range(3), desc="tuning", disable=False, mininterval=0):
            pass

    def forward(self, A, B):
        return A @ B
