"""How far a candidate's output is from the float64 reference, as figures the parent judges.

The error of an element is measured against its own size plus the output's scale (the root mean
square of the reference): |c - r| / (|r| + scale). An absolute tolerance larger than the output's
scale would prove nothing (CUDA-L1's level 2 task 23 passes allclose(atol=1e-2) with a relative
error of 1.9 because its outputs are tiny), so no absolute tolerance is used at all. A NaN or
infinity where the reference is finite is counted, never compared.
"""

import math

import torch


def _finite_max(t: torch.Tensor) -> float:
    return float(t.max().item()) if t.numel() else 0.0


def compare_leaf(candidate: torch.Tensor, reference: torch.Tensor) -> dict:
    result = {"shape": list(candidate.shape), "expected_shape": list(reference.shape),
              "dtype": str(candidate.dtype).removeprefix("torch.")}
    if list(candidate.shape) != list(reference.shape):
        result["shape_mismatch"] = True
        return result
    if not (reference.is_floating_point() or reference.is_complex()):
        mismatches = int((candidate.to(reference.device) != reference).sum().item())
        result.update(exact=True, mismatches=mismatches, max_abs_error=float(mismatches > 0), max_rel_error=float(mismatches > 0))
        return result
    c = candidate.to(device=reference.device, dtype=torch.complex128 if reference.is_complex() else torch.float64)
    r = reference
    finite = torch.isfinite(r)
    bad = int((~torch.isfinite(c) & finite).sum().item())
    nonfinite_mismatch = int(((c != r) & ~finite & ~(torch.isnan(c) & torch.isnan(r))).sum().item())
    reference_nan = int(torch.isnan(r).sum().item())
    diff = (c - r).abs().where(finite, torch.zeros((), dtype=torch.float64, device=r.device))
    diff = torch.nan_to_num(diff, nan=math.inf)
    magnitude = r.abs().where(finite, torch.zeros((), dtype=torch.float64, device=r.device))
    count = max(int(finite.sum().item()), 1)
    scale = math.sqrt(float(magnitude.square().sum().item()) / count)
    norm = math.sqrt(float(magnitude.square().sum().item()))
    max_abs = _finite_max(diff)
    if scale > 0:
        relative = diff / (magnitude + scale)
        max_rel = _finite_max(relative)
        worst = int(relative.reshape(-1).argmax().item()) if relative.numel() else 0
    else:
        max_rel = 0.0 if max_abs == 0 else math.inf
        worst = int(diff.reshape(-1).argmax().item()) if diff.numel() else 0
    finite_diff = diff.where(torch.isfinite(diff), torch.zeros((), dtype=torch.float64, device=r.device))
    rel_l2 = math.sqrt(float(finite_diff.square().sum().item())) / norm if norm > 0 else (0.0 if max_abs == 0 else math.inf)
    index = list(torch.unravel_index(torch.tensor(worst), reference.shape)) if reference.dim() else []
    result.update(
        nonfinite=bad, nonfinite_mismatch=nonfinite_mismatch, reference_nan=reference_nan,
        max_abs_error=max_abs, max_rel_error=max_rel, rel_l2_error=rel_l2, output_scale=scale,
        worst_index=[int(i) for i in index],
        worst_values=[float(c.reshape(-1)[worst].real.item()), float(r.reshape(-1)[worst].real.item())] if c.numel() else [],
    )
    return result


def compare(candidates: list, references: list) -> dict:
    """All leaves compared; the figures are the worst over them."""
    if len(candidates) != len(references):
        return {"leaf_count_mismatch": [len(candidates), len(references)], "leaves": []}
    leaves = []
    for c, r in zip(candidates, references):
        if not isinstance(c, torch.Tensor) or not isinstance(r, torch.Tensor):
            leaves.append({"not_a_tensor": True})
        else:
            leaves.append(compare_leaf(c, r))
    summary = {"leaves": leaves}
    for key in ("max_abs_error", "max_rel_error", "rel_l2_error"):
        values = [leaf[key] for leaf in leaves if key in leaf]
        summary[key] = max(values) if values else None
    for key in ("nonfinite", "nonfinite_mismatch", "reference_nan"):
        summary[key] = sum(leaf.get(key, 0) for leaf in leaves)
    summary["shape_mismatch"] = any(leaf.get("shape_mismatch") for leaf in leaves)
    summary["output_scale"] = min((leaf["output_scale"] for leaf in leaves if "output_scale" in leaf), default=None)
    return summary
