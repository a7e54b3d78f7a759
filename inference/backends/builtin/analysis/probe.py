"""The analysis process: loads a problem on PyTorch's meta device and describes it.

Started by `inference.backends.builtin.analysis.analyse_problem` in the OS sandbox with the problem on stdin;
prints one JSON object (see `inference.backends.builtin.analysis.profile.ProblemProfile`). The problem's own code
runs here, so this runs only sandboxed, with time and memory limits, and on the meta device: shapes
and dtypes propagate, no memory is allocated and no kernel runs, so even KernelBench's largest
sizes cost nothing.
"""

import json
import os
import resource
import sys
import traceback
import types
from typing import Any

import torch
import torch.fx as fx
from torch.fx.passes.shape_prop import ShapeProp
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils.flop_counter import flop_registry

from inference.backends.builtin.analysis.epilogue import find_epilogue

# Recurrent problems run thousands of tiny ops; past this many the op mix says enough.
MAX_RECORDED_OPS = 20_000

VIEWS = {
    "view",
    "_unsafe_view",
    "reshape",
    "permute",
    "transpose",
    "t",
    "expand",
    "alias",
    "unsqueeze",
    "squeeze",
    "select",
    "slice",
    "detach",
    "split",
    "unbind",
    "split_with_sizes",
    "unsafe_split",
    "as_strided",
    "lift_fresh",
    "empty",
    "empty_like",
    "empty_strided",
    "unfold",
    "diagonal",
    "narrow",
    "chunk",
    "_reshape_alias",
}
CATEGORIES = {
    "matmul": {
        "mm",
        "addmm",
        "bmm",
        "baddbmm",
        "matmul",
        "linear",
        "addbmm",
        "_scaled_dot_product_flash_attention",
        "_scaled_dot_product_efficient_attention",
        "_scaled_dot_product_cudnn_attention",
    },
    "convolution": {"convolution", "_convolution", "conv2d", "conv1d", "conv3d", "cudnn_convolution"},
    "normalization": {
        "native_batch_norm",
        "_native_batch_norm_legit",
        "_native_batch_norm_legit_no_training",
        "native_group_norm",
        "native_layer_norm",
        "instance_norm",
        "_batch_norm_impl_index",
    },
    "reduction": {
        "sum",
        "mean",
        "amax",
        "amin",
        "max",
        "min",
        "argmax",
        "argmin",
        "prod",
        "norm",
        "linalg_vector_norm",
        "_softmax",
        "_log_softmax",
        "_safe_softmax",
        "logsumexp",
        "var",
        "std",
        "var_mean",
        "cumsum",
        "cumprod",
        "all",
        "any",
    },
    "pooling": {
        "max_pool2d_with_indices",
        "max_pool3d_with_indices",
        "avg_pool2d",
        "avg_pool3d",
        "avg_pool1d",
        "adaptive_avg_pool2d",
        "_adaptive_avg_pool2d",
        "adaptive_max_pool2d",
        "max_pool1d",
        "_adaptive_avg_pool3d",
    },
    "data movement": {
        "cat",
        "stack",
        "clone",
        "copy_",
        "_to_copy",
        "contiguous",
        "index",
        "index_select",
        "gather",
        "scatter",
        "flip",
        "roll",
        "pad",
        "constant_pad_nd",
        "tril",
        "triu",
        "diag_embed",
        "masked_fill",
        "zeros_like",
        "ones_like",
        "full",
        "zeros",
        "ones",
        "fill_",
        "zero_",
        "where",
    },
}


def _category(name: str) -> str:
    for category, names in CATEGORIES.items():
        if name in names:
            return category
    return "pointwise"


def _tensors(value):
    if isinstance(value, torch.Tensor):
        yield value
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _tensors(item)
    elif isinstance(value, dict):
        for item in value.values():
            yield from _tensors(item)


def _nbytes(tensors) -> int:
    seen, total = set(), 0
    for tensor in tensors:
        if id(tensor) not in seen:
            seen.add(id(tensor))
            total += tensor.numel() * tensor.element_size()
    return total


class TooManyOps(Exception):
    pass


class OpRecorder(TorchDispatchMode):
    """Each aten op the forward runs: its category, FLOPs and the bytes it reads and writes."""

    def __init__(self):
        super().__init__()
        self.ops: dict[str, dict] = {}
        self.count = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        name = func.overloadpacket.__name__
        if name in VIEWS:
            return out
        self.count += 1
        if self.count > MAX_RECORDED_OPS:
            raise TooManyOps
        flops = 0
        counter = flop_registry.get(func.overloadpacket)
        if counter is not None:
            flops = int(counter(*args, **kwargs, out_val=out))
        inputs = list(_tensors((args, kwargs)))
        outputs = list(_tensors(out))
        if flops == 0 and outputs:
            flops = max(t.numel() for t in outputs)
        record = self.ops.setdefault(
            name, {"name": name, "category": _category(name), "count": 0, "flops": 0, "bytes": 0, "dtypes": []}
        )
        record["count"] += 1
        record["flops"] += flops
        record["bytes"] += _nbytes(inputs) + _nbytes(outputs)
        for tensor in inputs[:2]:
            if str(tensor.dtype) not in record["dtypes"]:
                record["dtypes"].append(str(tensor.dtype))
        if name in CATEGORIES["convolution"] and inputs:
            record.setdefault("input_ranks", [])
            if inputs[0].dim() not in record["input_ranks"]:
                record["input_ranks"].append(inputs[0].dim())
        return out


def _attribute_identities(model: torch.nn.Module) -> dict[str, int]:
    """Each plain attribute of the module and its submodules (not parameters, buffers or
    submodules, which live in their own dicts), by the identity of the object it holds."""
    return {
        f"{prefix}.{name}".lstrip("."): id(value)
        for prefix, module in model.named_modules()
        for name, value in vars(module).items()
        if not name.startswith("_")
    }


def _state_carried(model, inputs, *, after_a_whole_call: bool) -> list[str]:
    """Module attributes a forward sets to a new object on every call (an RNN's `self.hidden =
    tanh(...)`): state carried from one call to the next, which replaying a captured graph would not
    carry. Compared between two whole calls, so an attribute set to the same object each time
    (`self.c0 = self.h0.to(x.device)`, the same tensor from the second call on) is not state."""
    with torch.no_grad():
        if not after_a_whole_call:
            model(*inputs)
        before = _attribute_identities(model)
        model(*inputs)
    after = _attribute_identities(model)
    return sorted(name for name, identity in after.items() if before.get(name) != identity)


def _describe(value) -> list[dict]:
    return [{"shape": list(t.shape), "dtype": str(t.dtype)} for t in _tensors(value)]


def _load(source: str) -> types.ModuleType:
    module = types.ModuleType("problem")
    module.__file__ = "<problem>"
    sys.modules["problem"] = module
    exec(compile(source, "<problem>", "exec"), module.__dict__)
    for name in ("Model", "get_inputs", "get_init_inputs"):
        if not hasattr(module, name):
            raise ValueError(f"the problem defines no {name}")
    return module


def analyse(source: str) -> dict:
    problem = _load(source)
    torch.manual_seed(0)
    with torch.device("meta"):
        init_inputs = problem.get_init_inputs()
        model = problem.Model(*init_inputs)
        inputs = problem.get_inputs()
    result: dict[str, Any] = {
        "inputs": _describe(inputs),
        "non_tensor_inputs": sum(not isinstance(i, torch.Tensor) for i in inputs),
        "parameter_bytes": _nbytes(list(model.parameters()) + list(model.buffers())),
        "ops": [],
        "complete": True,
        "epilogue": None,
        "notes": [],
    }
    recorder = OpRecorder()
    try:
        with torch.no_grad(), recorder:
            output = model(*inputs)
        result["outputs"] = _describe(output)
    except TooManyOps:
        result["complete"] = False
        result["notes"].append(f"stopped counting after {MAX_RECORDED_OPS} ops; the totals cover those only")
    result["state_carried"] = _state_carried(model, inputs, after_a_whole_call=result["complete"])
    result["ops"] = sorted(recorder.ops.values(), key=lambda op: -op["bytes"])
    result["kernel_launches"] = recorder.count
    try:
        traced = fx.symbolic_trace(model)
        ShapeProp(traced).propagate(*inputs)
        result["epilogue"] = find_epilogue(traced, model)
    except Exception as exc:  # noqa: BLE001  (any failure only means no FX-based candidate)
        result["notes"].append(f"torch.fx could not trace the module ({type(exc).__name__}: {str(exc)[:200]})")
    return result


def main() -> None:
    seconds = int(os.environ.get("KERNEL_COURT_CPU_SECONDS", "0"))
    if seconds:
        resource.setrlimit(resource.RLIMIT_CPU, (seconds, seconds))
    source = sys.stdin.read()
    try:
        result = {"ok": True, **analyse(source)}
    except Exception as exc:  # noqa: BLE001  (the parent reports it; the problem's code can raise anything)
        result = {"ok": False, "error": f"{type(exc).__name__}: {exc}", "traceback": traceback.format_exc(limit=4)[-2000:]}
    sys.stdout.write(json.dumps(result))


if __name__ == "__main__":
    main()
