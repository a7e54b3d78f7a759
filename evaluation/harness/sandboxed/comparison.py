"""How far a candidate's output is from the float64 reference, as figures the parent judges.

Every leaf of the output is compared: tensors, Python numbers, None, in tuples, lists and dicts
(the structures must match). A tensor element's error is measured against its own size plus the
output's scale: |c - r| / (|r| + scale), the scale being the root mean square of the reference, but
never more than twice its typical size (the median of |r| over its nonzero elements). On a
well-behaved output the two agree (a normal output's RMS is 1.5 times its median), so honest kernels
are judged as before; on a heavy-tailed one (exp(3x)) a few huge elements made the
RMS so large that most elements could be zero and pass, and the cap stops that. No absolute
tolerance is used at all: an absolute tolerance larger than the output's scale proves
nothing (CUDA-L1's level 2 task 23 passes allclose(atol=1e-2) with a relative error of 1.9 because
its outputs are tiny). A NaN or infinity where the reference is finite is counted, never compared.
A Python float is held to the same measure with its own size as the scale; integers, booleans and
None must be equal.
"""

import math
from typing import Any, cast

import torch

from evaluation.harness.sandboxed.frames import Captured


def _finite_max(t: torch.Tensor) -> float:
    return float(t.max().item()) if t.numel() else 0.0


# The scale is at most this many times the output's typical size.
SCALE_CAP = 2.0


def typical_size(magnitude: torch.Tensor, finite: torch.Tensor) -> float:
    """The median of |r| over the finite nonzero elements. Exact zeros say nothing of the size of an
    output's values: a ReLU after a batch norm zeroes about half of them, and where slightly fewer than
    half were zero the median over all elements fell among the smallest positive values, collapsing the
    scale (the problem's own float32 output read 10 against float64, and an honest channels_last kernel
    was called wrong; harness 11)."""
    values = magnitude[finite]
    nonzero = values[values != 0]
    return float(nonzero.median().item()) if nonzero.numel() else 0.0


def _unravel(flat: int, shape: list[int]) -> list[int]:
    """A flat index's place in `shape` (torch.unravel_index imports sympy: seconds in a fresh process)."""
    if not shape or 0 in shape:
        return []
    index: list[int] = []
    for size in reversed(shape):
        flat, rest = divmod(flat, size)
        index.append(rest)
    return index[::-1]


def compare_leaf(candidate: torch.Tensor, reference: torch.Tensor) -> dict[str, Any]:
    result: dict[str, Any] = {
        "shape": list(candidate.shape),
        "expected_shape": list(reference.shape),
        "dtype": str(candidate.dtype).removeprefix("torch."),
    }
    if list(candidate.shape) != list(reference.shape):
        result["shape_mismatch"] = True
        return result
    if not (reference.is_floating_point() or reference.is_complex()):
        mismatches = int((candidate.to(reference.device) != reference).sum().item())
        result.update(exact=True, mismatches=mismatches, max_abs_error=float(mismatches > 0), max_rel_error=float(mismatches > 0))
        return result
    c = candidate.to(device=reference.device, dtype=torch.complex128 if reference.is_complex() else torch.float64)
    r = reference.to(torch.complex128 if reference.is_complex() else torch.float64)
    finite = torch.isfinite(r)
    bad = int((~torch.isfinite(c) & finite).sum().item())
    nonfinite_mismatch = int(((c != r) & ~finite & ~(torch.isnan(c) & torch.isnan(r))).sum().item())
    reference_nan = int(torch.isnan(r).sum().item())
    diff = (c - r).abs().where(finite, torch.zeros((), dtype=torch.float64, device=r.device))
    diff = torch.nan_to_num(diff, nan=math.inf)
    magnitude = r.abs().where(finite, torch.zeros((), dtype=torch.float64, device=r.device))
    count = max(int(finite.sum().item()), 1)
    norm = math.sqrt(float(magnitude.square().sum().item()))
    scale = min(norm / math.sqrt(count), SCALE_CAP * typical_size(magnitude, finite))
    max_abs = _finite_max(diff)
    denominator = magnitude + scale
    relative = torch.where(denominator > 0, diff / denominator.clamp_min(1e-300), torch.where(diff > 0, math.inf, 0.0))
    max_rel = _finite_max(relative) if relative.numel() else 0.0
    worst = int(relative.reshape(-1).argmax().item()) if relative.numel() else 0
    finite_diff = diff.where(torch.isfinite(diff), torch.zeros((), dtype=torch.float64, device=r.device))
    rel_l2 = math.sqrt(float(finite_diff.square().sum().item())) / norm if norm > 0 else (0.0 if max_abs == 0 else math.inf)
    index = _unravel(worst, list(reference.shape))
    # Elements left at zero or at the harness's NaN poison where the reference has a value: an output
    # the call never wrote (or wrote only after it returned, which is the same to the capture).
    expected = finite & (r != 0)
    unwritten = int((expected & ((c == 0) | torch.isnan(c))).sum().item())
    result.update(unwritten_fraction=unwritten / max(int(expected.sum().item()), 1))
    result.update(
        nonfinite=bad,
        nonfinite_mismatch=nonfinite_mismatch,
        reference_nan=reference_nan,
        max_abs_error=max_abs,
        max_rel_error=max_rel,
        rel_l2_error=rel_l2,
        output_scale=scale,
        worst_index=[int(i) for i in index],
        worst_values=[float(c.reshape(-1)[worst].real.item()), float(r.reshape(-1)[worst].real.item())] if c.numel() else [],
    )
    return result


def compare_number(candidate: object, reference: object) -> dict[str, Any]:
    """A Python number (or None) against the reference's: floats by relative error, the rest exactly."""
    result: dict[str, Any] = {"type": type(reference).__name__}
    if type(reference) is float and type(candidate) in (float, int) and type(candidate) is not bool:
        c, r = float(cast("float | int", candidate)), reference  # its type is checked above
        if math.isnan(r) or math.isinf(r):
            same = (math.isnan(c) and math.isnan(r)) or c == r
            result.update(nonfinite_mismatch=int(not same), max_abs_error=0.0, max_rel_error=0.0)
            return result
        if not math.isfinite(c):
            result.update(nonfinite=1, max_abs_error=math.inf, max_rel_error=math.inf)
            return result
        error = abs(c - r)
        relative = error / (2 * abs(r)) if r else (0.0 if error == 0 else math.inf)
        result.update(max_abs_error=error, max_rel_error=relative, worst_values=[c, r])
        return result
    try:
        same = type(candidate) is type(reference) and type(reference) in (int, bool, str, type(None)) and candidate == reference
    except Exception:  # noqa: BLE001  (values of the problem's own types; nothing to compare them by)
        same = False
    result.update(
        exact=True,
        mismatches=int(not same),
        max_abs_error=float(not same),
        max_rel_error=float(not same),
        worst_values=[repr(candidate)[:40], repr(reference)[:40]],
    )
    return result


def compare_values(candidate: object, reference: object) -> dict[str, Any]:
    if isinstance(reference, torch.Tensor):
        if not isinstance(candidate, torch.Tensor):
            return {"not_a_tensor": True, "max_rel_error": math.inf, "max_abs_error": math.inf}
        return compare_leaf(candidate, reference)
    if isinstance(candidate, torch.Tensor):
        return {"unexpected_tensor": True, "max_rel_error": math.inf, "max_abs_error": math.inf}
    return compare_number(candidate, reference)


def summarize(leaves: list[dict[str, Any]]) -> dict[str, Any]:
    """The worst figures over all leaves."""
    summary: dict[str, Any] = {"leaves": leaves}
    for key in ("max_abs_error", "max_rel_error", "rel_l2_error"):
        values = [leaf[key] for leaf in leaves if leaf.get(key) is not None]
        summary[key] = max(values) if values else None
    for key in ("nonfinite", "nonfinite_mismatch", "reference_nan"):
        summary[key] = sum(leaf.get(key, 0) for leaf in leaves)
    summary["shape_mismatch"] = any(leaf.get("shape_mismatch") for leaf in leaves)
    summary["unwritten_fraction"] = max((leaf.get("unwritten_fraction", 0.0) for leaf in leaves), default=0.0)
    summary["output_scale"] = min((leaf["output_scale"] for leaf in leaves if "output_scale" in leaf), default=None)
    return summary


def compare_leaves(candidates: list[Any], references: list[Any]) -> dict[str, Any]:
    """Two lists of leaves of the same structure (the reference against itself, in this process)."""
    if len(candidates) != len(references):
        return {
            "leaf_count_mismatch": [len(candidates), len(references)],
            "leaves": [],
            "max_rel_error": None,
            "max_abs_error": None,
            "rel_l2_error": None,
            "output_scale": None,
            "reference_nan": 0,
            "nonfinite": 0,
        }
    return summarize([compare_values(c, r) for c, r in zip(candidates, references)])


def compare_outputs(structure: str, captured: list[Captured], reference_structure: str, references: list[Any]) -> dict[str, Any]:
    """The captured output (frames.Captured leaves) against the reference's, leaf by leaf."""
    if structure != reference_structure:
        summary = summarize([])
        summary.update(
            structure_mismatch=[structure, reference_structure],
            max_rel_error=math.inf,
            max_abs_error=math.inf,
            uncaptured=[leaf.note for leaf in captured if leaf.kind == "uncaptured"],
        )
        return summary
    leaves: list[dict[str, Any]] = []
    for got, expected in zip(captured, references):
        if got.kind in ("other", "uncaptured"):
            leaves.append({"uncaptured": got.note, "max_rel_error": math.inf, "max_abs_error": math.inf})
        elif got.kind == "none":
            leaves.append(compare_number(None, expected))
        else:
            leaves.append(compare_values(got.value, expected))
    return summarize(leaves)
