"""Facts about what a call returned, read without running any of the candidate's code.

An output must be a plain strided `torch.Tensor` (a subclass can defer its work, as CUDA-L1's level
1 task 9 `LazyMatmul` does) with one address per element (no broadcast constant), own its storage
(not an input's, an earlier output's or the model's: a stored constant or a reused buffer), and
have the reference's dtype, shape and device. Only `type()` is used on an object before it is
known to be exactly a tensor, because any attribute of a subclass may run candidate code.
"""

from collections.abc import Iterable
from typing import Any

import torch

from evaluation.harness.sandboxed import frames

_Tensor = torch.Tensor
# A tensor's storage: (first address, end address, device index).
Span = tuple[int, int, int]


def flatten(value: object) -> tuple[str, list[Any]]:
    """The structure (as a string like "tuple[T,F]") and the leaves of a returned value, named as
    the reference process names the reference's and the call site the captured output's."""
    return frames.structure_of(value)


def _storage_span(t: torch.Tensor) -> Span:
    storage = t.untyped_storage()
    return storage.data_ptr(), storage.data_ptr() + storage.nbytes(), t.device.index or 0


def span_of(t: torch.Tensor) -> Span:
    return _storage_span(t)


def _overlaps(a: Span, b: Span) -> bool:
    return a[2] == b[2] and a[0] < b[1] and b[0] < a[1] and a[0] != a[1] and b[0] != b[1]


def elements_distinct(t: torch.Tensor) -> bool:
    """Every element at its own address: no expanded (stride 0) or overlapping view. Gaps are
    fine: compiled kernels pad rows for alignment and return the unpadded view."""
    if t.layout is not torch.strided:
        return False
    reach = 0  # the largest offset the dims so far address
    for stride, size in sorted((s, n) for s, n in zip(t.stride(), t.shape) if n != 1):
        if stride <= reach:
            return False
        reach += stride * (size - 1)
    return True


def spans(values: Iterable[object]) -> list[Span]:
    return [_storage_span(v) for v in values if type(v) in (_Tensor, torch.nn.Parameter)]


def readable_spans(values: Iterable[object]) -> tuple[list[Span], str | None]:
    """The spans of earlier outputs, and why one could not be read. torch.compile's CUDA graphs
    (modes reduce-overhead and max-autotune) hand every call the same static output memory and mark
    the earlier output unreadable ("accessing tensor output of CUDAGraphs that has been overwritten
    by a subsequent run"): the reused-buffer case, which torch detects before we compare addresses."""
    readable: list[Span] = []
    unreadable: str | None = None
    for value in values:
        if type(value) is not _Tensor:
            continue
        try:
            readable.append(_storage_span(value))
        except RuntimeError as exc:
            unreadable = str(exc).strip().splitlines()[0][:300]
    return readable, unreadable


def leaf_facts(value: object, *, input_spans: list[Span], earlier_spans: list[Span], model_spans: list[Span]) -> dict[str, Any]:
    kind = type(value)
    facts: dict[str, Any] = {"type": f"{kind.__module__}.{kind.__qualname__}", "plain_tensor": kind is _Tensor}
    if kind is not _Tensor:
        facts["is_tensor_subclass"] = issubclass(kind, _Tensor)
        return facts
    tensor: torch.Tensor = value  # exactly a tensor: its type is checked above
    span = _storage_span(tensor)
    facts.update(
        dtype=str(tensor.dtype).removeprefix("torch."),
        shape=list(tensor.shape),
        device=tensor.device.type,
        strided=tensor.layout is torch.strided,
        distinct_elements=elements_distinct(tensor),
        requires_grad=tensor.requires_grad,
        aliases_input=any(_overlaps(span, s) for s in input_spans),
        aliases_earlier_output=any(_overlaps(span, s) for s in earlier_spans),
        aliases_model_state=any(_overlaps(span, s) for s in model_spans),
    )
    return facts


def output_facts(
    value: object, *, inputs: Iterable[object], earlier_outputs: Iterable[object], model: object, held_spans: Iterable[Span] = ()
) -> dict[str, Any]:
    """`earlier_outputs`: the last call's outputs (kept alive); `held_spans`: the memory of every
    earlier output of the instance that something still holds."""
    structure, leaves = flatten(value)
    input_spans = spans(inputs)
    earlier_spans, earlier_unreadable = readable_spans(earlier_outputs)
    earlier_spans = [*earlier_spans, *held_spans]
    model_spans = spans(_tensors_reachable(model)) if isinstance(model, torch.nn.Module) else []
    seen: list[Span] = []
    leaf_list: list[dict[str, Any]] = []
    for leaf in leaves:
        facts = leaf_facts(leaf, input_spans=input_spans, earlier_spans=earlier_spans, model_spans=model_spans)
        if facts["plain_tensor"]:
            span = _storage_span(leaf)
            facts["aliases_other_output"] = any(_overlaps(span, s) for s in seen)
            seen.append(span)
        leaf_list.append(facts)
    return {"structure": structure, "leaves": leaf_list, "earlier_output_overwritten": earlier_unreadable}


def poison(spec: list[dict[str, Any]], device: str) -> None:
    """Allocate and fill blocks the size of each expected output with NaN (or the largest
    integer), then free them: the allocator hands these blocks out next, so an output the
    candidate never writes holds poison, not a stale correct answer."""
    blocks = []
    for leaf in spec:
        if "dtype" not in leaf:
            continue
        dtype = getattr(torch, leaf["dtype"])
        block = torch.empty(leaf["shape"], dtype=dtype, device=device)
        if dtype.is_floating_point or dtype.is_complex:
            block.fill_(float("nan"))
        elif dtype is torch.bool:
            block.fill_(True)
        else:
            block.fill_(torch.iinfo(dtype).max)
        blocks.append(block)
    del blocks


def _tensors_reachable(root: object, limit: int = 10_000) -> list[torch.Tensor]:
    """Tensors a model holds: its parameters and buffers, and tensors in its attributes, in lists,
    tuples and dicts of them and in its submodules, found through the garbage collector's view of
    references (no attribute of the model's is read, so none of its code runs). Other objects are
    not searched: a tensor stored deeper is still caught, by the poison the call site writes over
    every captured output before the next call."""
    import gc

    seen: set[int] = set()
    found: list[torch.Tensor] = []
    stack = [root]
    while stack and len(seen) < limit:
        item = stack.pop()
        if id(item) in seen:
            continue
        seen.add(id(item))
        if type(item) is _Tensor or type(item) is torch.nn.Parameter:
            found.append(item)
            continue
        if isinstance(item, (dict, list, tuple, set, torch.nn.Module)):
            stack.extend(gc.get_referents(item))
    return found


def reachable_overlap(value: object, model: object) -> bool:
    """Whether any tensor of `value` shares memory with a tensor the model holds."""
    _, leaves = flatten(value)
    held = spans(t for t in _tensors_reachable(model) if type(t) in (_Tensor, torch.nn.Parameter))
    return any(_overlaps(span, other) for span in spans(leaves) for other in held)
