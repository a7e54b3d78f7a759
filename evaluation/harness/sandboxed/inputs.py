"""Inputs: generated fresh for every call from a seed the parent sends just in time.

The parent draws each seed from a secret random source when it asks for the call, so a candidate
cannot know future inputs, and every call sees new values (a cache keyed on pointers, shapes or
contents never hits a correct answer). The reference process generates the same inputs from the
same seed on the same device; the two sides' fingerprints must agree.
"""

import types
from typing import Any

import torch

from evaluation.harness.sandboxed.loading import problem_constants, seed_everything, to_device

# Fingerprints are reduced in chunks so their scratch memory stays small beside big inputs.
_CHUNK = 1 << 24
_GOLDEN = 0.6180339887498949


def generate(
    source_module: types.ModuleType,
    seed: int,
    device: str,
    variant: dict[str, Any] | None,
    problem_module: types.ModuleType | None = None,
) -> list[Any]:
    """`source_module.get_inputs()` after `seed`, made on the device, with the problem's constants varied."""
    seed_everything(seed)
    with problem_constants(problem_module or source_module, variant), torch.device(device):
        raw = source_module.get_inputs()
    return list(to_device(list(raw), device))


def fingerprint(value: object) -> list[object]:
    """Three float64 figures that change when any element changes or moves: sum, sum of squares,
    and a sum weighted by position (read back from the device once)."""
    if not isinstance(value, torch.Tensor):
        return [repr(value)[:200]]
    flat = value.detach().reshape(-1)
    if flat.is_complex():
        flat = torch.view_as_real(flat).reshape(-1)
    sums = torch.zeros(3, dtype=torch.float64, device=flat.device)
    for start in range(0, flat.numel(), _CHUNK):
        chunk = flat[start : start + _CHUNK].to(torch.float64)
        weights = torch.arange(start, start + chunk.numel(), device=chunk.device, dtype=torch.float64).mul_(_GOLDEN).frac_()
        sums += torch.stack((chunk.sum(), chunk.square().sum(), chunk.mul(weights).sum()))
    return [str(value.dtype), list(value.shape), *sums.tolist()]


def fingerprints(values: list[Any]) -> list[list[object]]:
    return [fingerprint(v) for v in values]


def describe(values: list[Any]) -> list[dict[str, Any]]:
    """Shapes and dtypes of the inputs, as a reader sees them in the verdict."""
    return [
        {"shape": list(v.shape), "dtype": str(v.dtype).removeprefix("torch.")}
        if isinstance(v, torch.Tensor)
        else {"value": repr(v)[:80]}
        for v in values
    ]
