import torch
import torch.nn as nn


class Model(nn.Module):  # type: ignore[misc]  # torch is not followed (mypy config): nn.Module is Any
    """relu(x + y) * 0.5 on 4096 elements: three short elementwise kernels."""

    def __init__(self) -> None:
        super().__init__()

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return torch.relu(x + y) * 0.5


def get_inputs() -> list[torch.Tensor]:
    return [torch.randn(64, 64), torch.randn(64, 64)]


def get_init_inputs() -> list[object]:
    return []
