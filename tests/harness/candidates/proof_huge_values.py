import torch


def get_inputs():
    """Catastrophic cancellation: float32's rounding, not the kernel, decides these."""
    A = torch.full((M, K), 1e8)
    B = torch.ones(K, N)
    A[:, 1] = -1e8
    A[:, 2] = 1.0
    return [A, B]
