"""Values that cross from the reference process to the candidate's as data: init inputs and the
non-tensor inputs of a call, as tagged JSON.

The candidate's process never runs the problem's code: what `get_init_inputs()` and `get_inputs()`
return reaches it encoded here (tensors of inputs travel as raw bytes on the inputs pipe; a tensor
among the init inputs, rare and small, is encoded here too). Decoding builds only numbers, strings,
tuples, lists, dicts, dtypes and tensors, never objects of other types.
"""

import base64
import math
from typing import Any, cast

import torch

MAX_TENSOR_BYTES = 64 * 2**20


class UnsupportedValue(ValueError):
    """A value that cannot cross as data; the message says which and what is allowed."""


def encode(value: object, *, depth: int = 0) -> dict[str, Any]:
    if depth > 20:
        raise UnsupportedValue("a value nested more than 20 levels deep")
    if value is None or type(value) in (bool, int, str):
        return {"v": value}
    if type(value) is float:
        return {"v": value} if math.isfinite(value) else {"float": repr(value)}
    if type(value) in (tuple, list):
        items = cast("tuple[object, ...] | list[object]", value)
        return {type(value).__name__: [encode(v, depth=depth + 1) for v in items]}
    if type(value) is dict:
        return {"dict": [[encode(k, depth=depth + 1), encode(v, depth=depth + 1)] for k, v in value.items()]}
    if isinstance(value, torch.dtype):
        return {"dtype": str(value).removeprefix("torch.")}
    if isinstance(value, torch.Tensor):
        host = value.detach().to("cpu").contiguous()
        nbytes = host.numel() * host.element_size()
        if nbytes > MAX_TENSOR_BYTES:
            raise UnsupportedValue(f"an init input tensor of {nbytes} bytes (at most {MAX_TENSOR_BYTES})")
        raw = host.reshape(-1).view(torch.uint8).numpy().tobytes() if host.numel() else b""
        return {
            "tensor": {
                "dtype": str(host.dtype).removeprefix("torch."),
                "shape": list(host.shape),
                "data": base64.b64encode(raw).decode(),
            }
        }
    raise UnsupportedValue(
        f"a {type(value).__module__}.{type(value).__qualname__}: inputs and init inputs may be "
        "tensors, numbers, strings, None, dtypes, or tuples, lists and dicts of these"
    )


def decode(data: object, device: str) -> Any:
    if not isinstance(data, dict) or len(data) != 1:
        raise UnsupportedValue("not an encoded value")
    ((tag, body),) = data.items()
    if tag == "v":
        if body is not None and type(body) not in (bool, int, float, str):
            raise UnsupportedValue("not a plain value")
        return body
    if tag == "float":
        return float(body)
    if tag in ("tuple", "list"):
        items = [decode(v, device) for v in body]
        return tuple(items) if tag == "tuple" else items
    if tag == "dict":
        return {decode(k, device): decode(v, device) for k, v in body}
    if tag == "dtype":
        dtype = getattr(torch, body, None)
        if not isinstance(dtype, torch.dtype):
            raise UnsupportedValue(f"unknown dtype {body!r}")
        return dtype
    if tag == "tensor":
        dtype = getattr(torch, body["dtype"], None)
        if not isinstance(dtype, torch.dtype):
            raise UnsupportedValue(f"unknown dtype {body['dtype']!r}")
        raw = base64.b64decode(body["data"])
        if not raw:
            return torch.empty(body["shape"], dtype=dtype, device=device)
        return torch.frombuffer(bytearray(raw), dtype=dtype).reshape(body["shape"]).to(device)
    raise UnsupportedValue(f"unknown tag {tag!r}")


def input_slots(spec: list[dict[str, Any]], device: str) -> tuple[list[Any], tuple[torch.Tensor, ...]]:
    """A call's arguments from their description: empty tensors, which the call site fills from the
    inputs pipe inside its window, and the non-tensor values, decoded."""
    args: list[Any] = []
    slots: list[torch.Tensor] = []
    for entry in spec:
        if "tensor" in entry:
            dtype = getattr(torch, entry["tensor"]["dtype"], None)
            if not isinstance(dtype, torch.dtype):
                raise UnsupportedValue(f"unknown dtype {entry['tensor']['dtype']!r}")
            tensor = torch.empty(entry["tensor"]["shape"], dtype=dtype, device=device)
            args.append(tensor)
            slots.append(tensor)
        else:
            args.append(decode(entry["value"], device))
    return args, tuple(slots)
