"""What the platform knows of a piece of Python source without running it.

Problems and candidates arrive as text from people, models and imports. Nothing here executes
that text: it is parsed into a syntax tree, hashed and inspected. Running it is the harness's job,
in its sandbox.
"""

import ast
import hashlib

from evaluation.harness import source_ast

LANGUAGE_CUDA = "cuda"
LANGUAGE_TRITON = "triton"
LANGUAGE_PYTORCH = "pytorch"


def normalized_source(tree: ast.Module) -> str:
    """The module as Python itself would print it: comments, blank lines and quoting gone.

    Docstrings stay: KernelBench level 2 tasks 33 and 39 differ only in theirs, and the
    catalogue must keep both.
    """
    return ast.unparse(tree)


def source_hash(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def normalized_source_hash(source: str) -> str:
    """Hash of the normalized source, so the same module pasted twice is one problem."""
    return source_hash(normalized_source(source_ast.parse(source)))


def _dotted_name(node: ast.AST) -> str:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
    return ".".join(reversed(parts))


def detect_language(tree: ast.Module) -> str:
    """cuda if it builds a C++/CUDA extension, triton if it uses Triton, else pytorch.

    Read from imports and calls in the syntax tree, so a mention in a comment or string does
    not count.
    """
    imported: set[str] = set()
    called = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            imported.add(node.module)
            imported.update(f"{node.module}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Call):
            called.add(_dotted_name(node.func).rsplit(".", 1)[-1])
    builds_extension = called & {"load", "CUDAExtension"} and any(
        name.startswith("torch.utils.cpp_extension") for name in imported
    )
    if "load_inline" in called or builds_extension:
        return LANGUAGE_CUDA
    if any(name == "triton" or name.startswith("triton.") for name in imported):
        return LANGUAGE_TRITON
    return LANGUAGE_PYTORCH


def detect_language_of(code: str) -> str:
    """detect_language for source text; code that does not parse counts as plain PyTorch."""
    try:
        return detect_language(source_ast.parse(code))
    except (SyntaxError, ValueError, RecursionError):
        return LANGUAGE_PYTORCH
