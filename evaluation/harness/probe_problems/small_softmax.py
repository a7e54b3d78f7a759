import torch
import torch.nn as nn


class Model(nn.Module):  # type: ignore[misc]  # torch is not followed (mypy config): nn.Module is Any
    """Softmax over rows of a 16x64 matrix: one short reduction kernel."""

    def __init__(self) -> None:
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.softmax(x, dim=1)


def get_inputs() -> list[torch.Tensor]:
    return [torch.randn(16, 64)]


def get_init_inputs() -> list[object]:
    return []
