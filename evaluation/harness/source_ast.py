"""`ast.parse` for a process whose threads parse at once (a worker's verification threads, a test
run's shared verification beside its own test). CPython 3.11 keeps the AST constructor's recursion
depth in the ast module's state, shared by every thread, so two threads parsing together can fail
with "SystemError: AST constructor recursion depth mismatch" (python/cpython#106905; seen in CI on
2026-11-29). One lock for the whole process; a parse takes milliseconds."""

import ast
import threading

_LOCK = threading.Lock()


def parse(source: str, filename: str = "<unknown>") -> ast.Module:
    with _LOCK:
        return ast.parse(source, filename)
