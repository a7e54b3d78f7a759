"""A problem's size constants, read from its syntax tree, and the other sizes a candidate is
tried at once: a candidate right only at the published sizes is flagged `shape_specialized`
(GPU MODE ranks on hidden shapes for the same reason).

Batch sizes are changed first, since nearly every operator accepts another batch; otherwise
every size-like constant (16 or more) is changed. New sizes are odd (n // 2 + 1), which also
finds kernels that assume a multiple of the vector width without checking.
"""

import ast
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from evaluation.harness import source_ast


@dataclass(frozen=True)
class SizeConstant:
    name: str
    value: int
    line: int


def _int_value(node: ast.AST) -> int | None:
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return node.value
    return None


def size_constants(source: str) -> list[SizeConstant]:
    try:
        tree = source_ast.parse(source)
    except SyntaxError:
        return []
    found = []
    for node in tree.body:
        if not isinstance(node, ast.Assign) or len(node.targets) != 1:
            continue
        target, value = node.targets[0], node.value
        pairs: list[tuple[ast.expr, ast.expr]] = []
        if isinstance(target, ast.Name):
            pairs = [(target, value)]
        elif isinstance(target, ast.Tuple) and isinstance(value, ast.Tuple) and len(target.elts) == len(value.elts):
            pairs = list(zip(target.elts, value.elts))
        for name, item in pairs:
            number = _int_value(item)
            if isinstance(name, ast.Name) and number is not None and number > 0:
                found.append(SizeConstant(name.id, number, node.lineno))
    return found


def _smaller(value: int) -> int:
    return value // 2 + 1 if value > 2 else value + 1


def variants(constants: list[SizeConstant]) -> list[dict[str, Any]]:
    """Other sizes to try, most likely to be accepted by the reference first."""
    batch = [c for c in constants if "batch" in c.name.lower()]
    sizes = [c for c in constants if c.value >= 16 and c not in batch]
    tried = []
    if batch:
        tried.append({c.name: _smaller(c.value) for c in batch})
    if sizes:
        tried.append({c.name: _smaller(c.value) for c in batch + sizes})
        largest = max(sizes, key=lambda c: c.value)
        tried.append({largest.name: _smaller(largest.value)})
    unique = []
    for variant in tried:
        if variant not in unique:
            unique.append(variant)
    return unique


# -- the size of a problem's inputs, read without running it -----------------------------------------

_CREATORS = {"randn", "rand", "zeros", "ones", "empty", "full", "randint", "normal", "randn_like"}
_ITEM_BYTES = {
    "float64": 8,
    "double": 8,
    "float32": 4,
    "float": 4,
    "float16": 2,
    "half": 2,
    "bfloat16": 2,
    "int64": 8,
    "long": 8,
    "int32": 4,
    "int": 4,
    "int16": 2,
    "int8": 1,
    "uint8": 1,
    "bool": 1,
    "complex64": 8,
    "complex128": 16,
}
_OPERATORS: dict[type[ast.operator], Callable[[Any, Any], Any]] = {
    ast.Add: lambda a, b: a + b,
    ast.Sub: lambda a, b: a - b,
    ast.Mult: lambda a, b: a * b,
    ast.FloorDiv: lambda a, b: a // b,
    ast.Div: lambda a, b: a / b,
    ast.Mod: lambda a, b: a % b,
    ast.Pow: lambda a, b: a**b if abs(b) < 64 else None,
}


class _Unknown(Exception):
    pass


def _evaluate(node: ast.AST, names: dict[str, Any]) -> Any:
    """Numbers, names already bound, tuples and arithmetic: nothing else is evaluated."""
    if isinstance(node, ast.Constant) and type(node.value) in (int, float):
        return node.value
    if isinstance(node, ast.Name) and node.id in names:
        return names[node.id]
    if isinstance(node, (ast.Tuple, ast.List)):
        items = []
        for element in node.elts:
            if isinstance(element, ast.Starred):
                items.extend(_evaluate(element.value, names))
            else:
                items.append(_evaluate(element, names))
        return tuple(items)
    if isinstance(node, ast.BinOp) and type(node.op) in _OPERATORS:
        value = _OPERATORS[type(node.op)](_evaluate(node.left, names), _evaluate(node.right, names))
        if value is None:
            raise _Unknown
        return value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return -_evaluate(node.operand, names)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "int" and len(node.args) == 1:
        return int(_evaluate(node.args[0], names))
    raise _Unknown


def _bind(statements: list[ast.stmt], names: dict[str, Any]) -> None:
    for node in statements:
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = node.targets[0]
            try:
                value = _evaluate(node.value, names)
            except (_Unknown, TypeError, ZeroDivisionError, OverflowError):
                continue
            if isinstance(target, ast.Name):
                names[target.id] = value
            elif isinstance(target, ast.Tuple) and isinstance(value, tuple) and len(value) == len(target.elts):
                for element, item in zip(target.elts, value):
                    if isinstance(element, ast.Name):
                        names[element.id] = item


def _tensor_bytes(node: ast.AST, names: dict[str, Any], tensors: dict[str, tuple[int, str]]) -> tuple[int, str]:
    """(bytes, description) of one created tensor: torch.randn(...) and the like, possibly followed
    by .half() / .to(dtype) / .cuda(), or a local name bound to one."""
    if isinstance(node, ast.Name) and node.id in tensors:
        return tensors[node.id]
    dtype = None
    while (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and not (isinstance(node.func.value, ast.Name) and node.func.value.id == "torch")
    ):
        method = node.func.attr
        if method in ("half", "float", "double", "bfloat16", "long", "int", "bool"):
            dtype = dtype or method
        elif method == "to" and node.args and isinstance(node.args[0], ast.Attribute):
            dtype = dtype or node.args[0].attr
        node = node.func.value
    if isinstance(node, ast.Name) and node.id in tensors:
        nbytes, detail = tensors[node.id]
        return nbytes, detail
    if not (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in _CREATORS
        and isinstance(node.func.value, ast.Name)
        and node.func.value.id == "torch"
    ):
        raise _Unknown
    keywords = {k.arg: k.value for k in node.keywords if k.arg}
    if "dtype" in keywords and isinstance(keywords["dtype"], ast.Attribute):
        dtype = dtype or keywords["dtype"].attr
    positional = node.args
    if node.func.attr == "randint":
        shape_node = keywords.get("size") or (
            positional[2] if len(positional) > 2 else positional[1] if len(positional) > 1 else None
        )
        dtype = dtype or "int64"
        if shape_node is None:
            raise _Unknown
        shape = _evaluate(shape_node, names)
    elif node.func.attr == "full":
        shape = _evaluate(positional[0], names) if positional else _evaluate(keywords["size"], names)
    else:
        if "size" in keywords:
            shape = _evaluate(keywords["size"], names)
        else:
            parts: list[Any] = []
            for arg in positional:
                value = _evaluate(arg.value if isinstance(arg, ast.Starred) else arg, names)
                parts.extend(value if isinstance(value, tuple) else [value])
            shape = tuple(parts)
    shape = shape if isinstance(shape, tuple) else (shape,)
    if not all(type(n) is int and n >= 0 for n in shape):
        raise _Unknown
    count = 1
    for n in shape:
        count *= n
    name = dtype or "float32"
    return count * _ITEM_BYTES.get(name, 4), f"{'x'.join(map(str, shape))} {name}"


def input_bytes(source: str) -> tuple[int, str] | None:
    """The bytes `get_inputs()` returns, estimated from the syntax tree alone (KernelBench's form:
    torch.randn(batch_size, dim) and the like over module constants); None where it cannot tell."""
    try:
        tree = source_ast.parse(source)
    except SyntaxError:
        return None
    names: dict[str, Any] = {}
    _bind(tree.body, names)
    function = next((n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "get_inputs"), None)
    if function is None:
        return None
    local = dict(names)
    tensors: dict[str, tuple[int, str]] = {}
    total, details = 0, []
    for statement in function.body:
        if isinstance(statement, ast.Assign) and len(statement.targets) == 1 and isinstance(statement.targets[0], ast.Name):
            try:
                tensors[statement.targets[0].id] = _tensor_bytes(statement.value, local, tensors)
            except (_Unknown, TypeError, IndexError, KeyError, ZeroDivisionError, OverflowError):
                _bind([statement], local)
        elif isinstance(statement, ast.Return) and isinstance(statement.value, (ast.List, ast.Tuple)):
            for element in statement.value.elts:
                try:
                    nbytes, detail = _tensor_bytes(element, local, tensors)
                except (_Unknown, TypeError, IndexError, KeyError, ZeroDivisionError, OverflowError):
                    continue  # a number, or a tensor made some other way: not counted
                total += nbytes
                details.append(detail)
            return (total, ", ".join(details)) if details else None
    return None
