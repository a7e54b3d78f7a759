"""Finding a fusable elementwise epilogue in a traced problem: the chain of pointwise operations
after a matmul or convolution, which eager PyTorch runs as one kernel (one full pass over
memory) each, and one Triton kernel can run in a single pass.

Works on a `torch.fx` trace whose nodes carry shapes (`ShapeProp` on meta tensors). The result
is plain data: the operations in the vocabulary of `inference.backends.builtin.analysis.pointwise`, how each
extra operand (a bias, a scale) broadcasts, and the problem's `forward` rewritten by FX to call
`self.fused_epilogue(anchor, *operands)` in place of the chain. Runs inside the analysis child
process, never in a worker or web process.
"""

import ast
import builtins
import operator

import torch
import torch.fx as fx
import torch.nn as nn
import torch.nn.functional as F

ANCHOR_MODULES = (nn.Linear, nn.Conv1d, nn.Conv2d, nn.Conv3d, nn.ConvTranspose1d, nn.ConvTranspose2d, nn.ConvTranspose3d)
ANCHOR_FUNCTIONS = {torch.matmul, torch.mm, torch.bmm, operator.matmul, F.linear, F.conv1d, F.conv2d, F.conv3d}
ANCHOR_METHODS = {"matmul", "mm", "bmm"}
FUSED_MODULE = "fused_epilogue"
# Global names the rewritten forward may use, as FX's code generator writes them.
ALLOWED_GLOBALS = {"torch", "inf", "nan", "device", "NoneType"}


def _unary_module(module: nn.Module) -> tuple[str, dict] | None:
    match module:
        case nn.ReLU():
            return "relu", {}
        case nn.Sigmoid():
            return "sigmoid", {}
        case nn.Tanh():
            return "tanh", {}
        case nn.GELU():
            return ("gelu_tanh" if module.approximate == "tanh" else "gelu"), {}
        case nn.SiLU():
            return "silu", {}
        case nn.Mish():
            return "mish", {}
        case nn.Softplus():
            return "softplus", {"beta": float(module.beta), "threshold": float(module.threshold)}
        case nn.LeakyReLU():
            return "leaky_relu", {"slope": float(module.negative_slope)}
        case nn.Hardtanh():
            return "clamp", {"low": float(module.min_val), "high": float(module.max_val)}
        case nn.ELU():
            return "elu", {"alpha": float(module.alpha)}
        case nn.Hardswish():
            return "hardswish", {}
        case nn.Hardsigmoid():
            return "hardsigmoid", {}
        case nn.Identity():
            return "identity", {}
        case nn.Dropout() if module.p == 0.0:
            return "identity", {}
    return None


_UNARY_FUNCTIONS = {
    torch.relu: "relu",
    F.relu: "relu",
    torch.sigmoid: "sigmoid",
    F.sigmoid: "sigmoid",
    torch.tanh: "tanh",
    F.tanh: "tanh",
    torch.exp: "exp",
    torch.log: "log",
    torch.abs: "abs",
    torch.sqrt: "sqrt",
    torch.neg: "neg",
    operator.neg: "neg",
    torch.square: "square",
    F.silu: "silu",
    F.mish: "mish",
    F.hardswish: "hardswish",
    F.hardsigmoid: "hardsigmoid",
    F.relu6: "relu6",
}
_UNARY_METHODS = {"relu", "sigmoid", "tanh", "exp", "log", "abs", "sqrt", "neg", "square"}
_BINARY_FUNCTIONS = {
    operator.add: "add",
    torch.add: "add",
    operator.sub: "sub",
    torch.sub: "sub",
    operator.mul: "mul",
    torch.mul: "mul",
    operator.truediv: "div",
    torch.div: "div",
    torch.maximum: "maximum",
    torch.minimum: "minimum",
}
_BINARY_METHODS = {"add": "add", "sub": "sub", "mul": "mul", "div": "div"}


def _arg(node: fx.Node, index: int, name: str, default):
    if name in node.kwargs:
        return node.kwargs[name]
    return node.args[index] if len(node.args) > index else default


def _canonical(node: fx.Node, root: nn.Module) -> tuple[str, list, dict] | None:
    """(operation, tensor-or-scalar operands, parameters) in POINTWISE terms, or None."""
    target = node.target
    if node.op == "call_module":
        found = _unary_module(root.get_submodule(target))
        return None if found is None else (found[0], [node.args[0]], found[1])
    if node.op == "call_method":
        target = target.removesuffix("_")
        if target in _UNARY_METHODS:
            return target, [node.args[0]], {}
        if target in _BINARY_METHODS and len(node.args) == 2 and not node.kwargs:
            return _BINARY_METHODS[target], list(node.args), {}
        if target in ("clamp", "clamp_min", "clamp_max"):
            return _clamp(node, target)
        return None
    if node.op != "call_function":
        return None
    if target in _BINARY_FUNCTIONS and len(node.args) == 2 and not node.kwargs:
        return _BINARY_FUNCTIONS[target], list(node.args), {}
    if target in (torch.clamp, torch.clamp_min, torch.clamp_max):
        return _clamp(node, target.__name__)
    if target is F.gelu:
        return ("gelu_tanh" if _arg(node, 1, "approximate", "none") == "tanh" else "gelu"), [node.args[0]], {}
    if target is F.leaky_relu:
        return "leaky_relu", [node.args[0]], {"slope": float(_arg(node, 1, "negative_slope", 0.01))}
    if target is F.hardtanh:
        return (
            "clamp",
            [node.args[0]],
            {"low": float(_arg(node, 1, "min_val", -1.0)), "high": float(_arg(node, 2, "max_val", 1.0))},
        )
    if target is F.elu:
        return "elu", [node.args[0]], {"alpha": float(_arg(node, 1, "alpha", 1.0))}
    if target is F.softplus:
        return (
            "softplus",
            [node.args[0]],
            {"beta": float(_arg(node, 1, "beta", 1.0)), "threshold": float(_arg(node, 2, "threshold", 20.0))},
        )
    if target in (torch.pow, operator.pow) and node.args[1] in (2, 2.0) and not node.kwargs:
        return "square", [node.args[0]], {}
    name = _UNARY_FUNCTIONS.get(target)
    if name == "relu6":
        return "clamp", [node.args[0]], {"low": 0.0, "high": 6.0}
    return None if name is None else (name, [node.args[0]], {})


def _clamp(node: fx.Node, name: str) -> tuple[str, list, dict] | None:
    low = _arg(node, 1, "min", None) if name != "clamp_max" else None
    high = (_arg(node, 2, "max", None) if name == "clamp" else _arg(node, 1, "max", None)) if name != "clamp_min" else None
    if any(isinstance(v, fx.Node) for v in (low, high)) or (low is None and high is None):
        return None
    if low is not None and high is not None:
        return "clamp", [node.args[0]], {"low": float(low), "high": float(high)}
    if low is not None:
        return "clamp_min", [node.args[0]], {"low": float(low)}
    assert high is not None  # one of the two bounds is set (above)
    return "clamp_max", [node.args[0]], {"high": float(high)}


def _in_place(node: fx.Node, root: nn.Module) -> bool:
    if node.op == "call_module":
        return bool(getattr(root.get_submodule(node.target), "inplace", False))
    if node.op == "call_method":
        return node.target.endswith("_")
    return bool(node.kwargs.get("inplace", False))


def _shape(node) -> tuple | None:
    meta = node.meta.get("tensor_meta") if isinstance(node, fx.Node) else None
    return tuple(meta.shape) if meta is not None and hasattr(meta, "shape") else None


def _dtype(node):
    meta = node.meta.get("tensor_meta")
    return getattr(meta, "dtype", None)


def _side(node: fx.Node, out_shape: tuple) -> dict:
    """An extra operand as the epilogue reads it: _region took it in only with a shape that broadcasts."""
    shape = _shape(node)
    broadcast = _broadcast(shape, out_shape) if shape is not None else None
    assert shape is not None and broadcast is not None
    return {**broadcast, "name": node.name, "shape": list(shape)}


def _broadcast(shape: tuple, out: tuple) -> dict | None:
    """How an extra operand broadcasts against the output: whole, a scalar, or along one axis."""
    if shape == out:
        return {"mode": "full"}
    numel = 1
    for size in shape:
        numel *= size
    if numel == 1:
        return {"mode": "scalar"}
    if len(shape) > len(out):
        return None
    padded = (1,) * (len(out) - len(shape)) + tuple(shape)
    axes = [i for i, size in enumerate(padded) if size != 1]
    if len(axes) == 1 and padded[axes[0]] == out[axes[0]]:
        return {"mode": "axis", "axis": axes[0] - len(out)}
    return None


def _region(anchor: fx.Node, root: nn.Module, order: dict) -> tuple[list, list, list] | None:
    """The longest run of fusable pointwise nodes after `anchor` with a single result."""
    out_shape = _shape(anchor)
    if out_shape is None or _dtype(anchor) != torch.float32:
        return None
    values = {anchor}
    derived: set[fx.Node] = set()  # computed from the region by something not fused: never an extra operand
    region, ops, sides = [], [], []
    for node in list(anchor.graph.nodes)[order[anchor] + 1 :]:
        reads = set(node.all_input_nodes)
        canonical = _canonical(node, root) if node.op in ("call_module", "call_method", "call_function") else None
        if canonical is None or _shape(node) != out_shape or _dtype(node) != torch.float32 or not reads & values:
            if reads & (values | derived):
                derived.add(node)
            continue
        name, operands, params = canonical
        if _in_place(node, root) and len(operands[0].users) > 1:
            derived.add(node)
            continue
        encoded: list[dict] = []
        fusable = True
        for operand in operands:
            if isinstance(operand, fx.Node) and operand in values:
                encoded.append({"value": "x" if operand is anchor else operand.name})
            elif isinstance(operand, fx.Node) and operand not in derived:
                broadcast = _broadcast(_shape(operand) or (), out_shape) if _shape(operand) is not None else None
                if broadcast is None or _dtype(operand) != torch.float32:
                    fusable = False
                    break
                if operand not in sides:
                    sides.append(operand)
                encoded.append({"side": sides.index(operand)})
            elif isinstance(operand, (int, float)) and not isinstance(operand, bool):
                encoded.append({"const": float(operand)})
            else:
                fusable = False
                break
        if not fusable:
            derived.add(node)
            continue
        region.append(node)
        values.add(node)
        ops.append({"out": node.name, "op": name, "args": encoded, "params": params})
    # Keep the longest prefix whose only value used outside it is its last one.
    for length in range(len(region), 1, -1):
        kept = set(region[:length])
        if all(set(n.users) <= kept for n in region[: length - 1]):
            used = {i["side"] for op in ops[:length] for i in op["args"] if "side" in i}
            return region[:length], ops[:length], [s for i, s in enumerate(sides) if i in used]
    return None


def _is_anchor(node: fx.Node, root: nn.Module) -> bool:
    if node.op == "call_module":
        return isinstance(root.get_submodule(node.target), ANCHOR_MODULES)
    if node.op == "call_function":
        return node.target in ANCHOR_FUNCTIONS
    return node.op == "call_method" and node.target in ANCHOR_METHODS


def find_epilogue(traced: fx.GraphModule, root: nn.Module) -> dict | None:
    """The largest fusable epilogue, or None. `traced` must have shapes (ShapeProp)."""
    order = {node: i for i, node in enumerate(traced.graph.nodes)}
    best = None
    for node in traced.graph.nodes:
        if _is_anchor(node, root):
            found = _region(node, root, order)
            if found is not None and (best is None or len(found[0]) > len(best[1][0])):
                best = (node, found)
    if best is None:
        return None
    anchor, (region, ops, sides) = best
    return _rewrite(traced, root, anchor, region, ops, sides)


def _renumber(ops: list[dict], region: list) -> list[dict]:
    names = {node.name: f"v{i}" for i, node in enumerate(region)}
    renamed = []
    for op in ops:
        args = [{"value": names.get(a["value"], a["value"])} if "value" in a else a for a in op["args"]]
        renamed.append({**op, "out": names[op["out"]], "args": args})
    return renamed


def _rewrite(traced, root, anchor, region, ops, sides) -> dict | None:
    graph = traced.graph
    sink = region[-1]
    traced.add_submodule(FUSED_MODULE, nn.Identity())
    with graph.inserting_before(sink):
        fused = graph.call_module(FUSED_MODULE, (anchor, *sides))
    sink.replace_all_uses_with(fused)
    for node in reversed(region):
        graph.erase_node(node)
    code = graph.python_code(root_module="self")
    used = _free_names(code.src)
    if used - ALLOWED_GLOBALS:
        return None
    ops = _renumber(ops, region)
    out_shape = _shape(anchor)
    assert out_shape is not None  # _region found one
    return {
        "anchor": anchor.name,
        "anchor_shape": list(out_shape),
        "sides": [_side(s, out_shape) for s in sides],
        "ops": ops,
        "result": ops[-1]["out"],
        "forward_code": code.src.strip("\n") + "\n",
        "globals": sorted(used),
    }


def _free_names(source: str) -> set[str]:
    """Names the code reads but neither assigns, takes as an argument, nor gets from builtins."""
    tree = ast.parse(source)
    bound = {a.arg for node in ast.walk(tree) if isinstance(node, ast.arguments) for a in node.args + node.kwonlyargs}
    bound |= {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load)}
    read = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    return read - bound - set(dir(builtins))
