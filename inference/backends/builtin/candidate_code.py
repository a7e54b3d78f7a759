"""Writing a candidate module: a header naming the transformation, the problem's own module
(so `ModelNew` can subclass `Model` and build the same parameters from the same random
numbers), then the transformation's code from its template in `templates/`.

Templates are Python files with `$name` placeholders (`string.Template`): `$` does not occur in
the Python they hold, while braces do.
"""

import ast
import string
from pathlib import Path

from evaluation.harness import source_ast
from inference.backends.builtin.analysis.profile import Epilogue
from inference.backends.builtin.triton_epilogue import render_fused_epilogue

TEMPLATE_DIR = Path(__file__).resolve().parent / "templates"
MARKER = "# builtin-transformation: "
PROBLEM_INPUT_FUNCTIONS = {"get_inputs", "get_init_inputs"}
# How FX's generated code names a few globals; defined when the traced forward uses them.
FX_GLOBALS = {
    "inf": "from math import inf",
    "nan": "from math import nan",
    "device": "device = torch.device",
    "NoneType": "NoneType = type(None)",
}


def template(name: str) -> str:
    return (TEMPLATE_DIR / f"{name}.py.tmpl").read_text()


def problem_module(source: str) -> tuple[list[str], str]:
    """The problem's `from __future__` lines (which must come first) and the rest of its source,
    without `get_inputs`/`get_init_inputs`: the harness takes inputs from the problem itself."""
    lines = source.splitlines()
    drop: set[int] = set()
    future = []
    for node in source_ast.parse(source).body:
        start = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])]) - 1
        end = node.end_lineno or node.lineno  # set on every node ast.parse makes
        if isinstance(node, ast.FunctionDef) and node.name in PROBLEM_INPUT_FUNCTIONS:
            drop.update(range(start, end))
        elif isinstance(node, ast.ImportFrom) and node.module == "__future__":
            future.extend(lines[start:end])
            drop.update(range(start, end))
    kept = [line for i, line in enumerate(lines) if i not in drop]
    return future, "\n".join(kept).strip("\n")


def render_candidate(*, key: str, title: str, problem_source: str, body: str, imports: list[str] | None = None) -> str:
    future, problem = problem_module(problem_source)
    header = [
        f"{MARKER}{key}",
        f"# {title}",
        "# Written by Kernel Court's builtin optimizer, a rule-based program (not a language model).",
        *future,
        "",
        "import torch",
        "import torch.nn as nn",
        *(imports or []),
        "",
        "# ---- The problem's module, unchanged (its input functions left out) ----",
        "",
        problem,
        "",
        "",
        "# ---- The candidate ----",
        "",
    ]
    return "\n".join(header) + "\n" + body.strip("\n") + "\n"


def render_body(template_name: str, *, fresh_output: bool = False, **values: str) -> str:
    body = string.Template(template(template_name)).substitute(values)
    return (template("fresh_output") + "\n\n" + body) if fresh_output else body


def render_epilogue_body(epilogue: Epilogue) -> tuple[str, list[str]]:
    imports = [FX_GLOBALS[name] for name in epilogue.globals if name in FX_GLOBALS]
    return render_fused_epilogue(epilogue, template("triton_epilogue")), imports


def transformation_of(code: str) -> str | None:
    """Which builtin transformation a candidate applied, from its header; None if not ours."""
    for line in code.splitlines()[:3]:
        if line.startswith(MARKER):
            return line.removeprefix(MARKER).strip()
    return None
