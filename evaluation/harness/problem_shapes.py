"""A problem's size constants, read from its syntax tree, and the other sizes a candidate is
tried at once: a candidate right only at the published sizes is flagged `shape_specialized`
(GPU MODE ranks on hidden shapes for the same reason).

Batch sizes are changed first, since nearly every operator accepts another batch; otherwise
every size-like constant (16 or more) is changed. New sizes are odd (n // 2 + 1), which also
finds kernels that assume a multiple of the vector width without checking.
"""

import ast
from dataclasses import dataclass


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
        tree = ast.parse(source)
    except SyntaxError:
        return []
    found = []
    for node in tree.body:
        if not isinstance(node, ast.Assign) or len(node.targets) != 1:
            continue
        target, value = node.targets[0], node.value
        pairs = []
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


def variants(constants: list[SizeConstant]) -> list[dict]:
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
