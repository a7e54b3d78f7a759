"""Validation of problems and candidates on the way in, by parsing, never by running.

Each failure names what is wrong and what to do, so the person who pasted the code can fix it.
"""

import ast
from dataclasses import dataclass

from django.conf import settings

from kernels.source import detect_language, normalized_source_hash, source_hash


class SourceError(ValueError):
    """Pasted code that cannot be accepted; the message says what to fix."""

    def __init__(self, problems: list[str]):
        self.problems = problems
        super().__init__(" ".join(problems))


@dataclass(frozen=True)
class ValidProblem:
    source: str
    normalized_hash: str
    title: str


@dataclass(frozen=True)
class ValidCandidate:
    code: str
    source_hash: str
    language: str


def _parse(source: str, *, what: str, max_bytes: int) -> ast.Module:
    if not isinstance(source, str) or not source.strip():
        raise SourceError([f"The {what} is empty: paste a Python module."])
    size = len(source.encode("utf-8", errors="surrogatepass"))
    if size > max_bytes:
        raise SourceError([f"The {what} is {size:,} bytes; the limit is {max_bytes:,}. Remove what the module does not need."])
    if "\x00" in source:
        raise SourceError([f"The {what} contains a NUL character: paste it as plain text."])
    try:
        return ast.parse(source)
    except SyntaxError as exc:
        raise SourceError([f"The {what} is not valid Python: {exc.msg} at line {exc.lineno}, column {exc.offset}."]) from None
    except (ValueError, RecursionError) as exc:
        raise SourceError([f"The {what} cannot be parsed: {exc}."]) from None


def _top_level(tree: ast.Module) -> dict[str, ast.AST]:
    """Names bound at module level by a class, a function or a plain assignment."""
    bound = {}
    for node in tree.body:
        if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            bound[node.name] = node
        elif isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    bound[target.id] = node
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            bound[node.target.id] = node
    return bound


def _required_arguments(func: ast.FunctionDef) -> int:
    args = func.args
    positional = len(args.posonlyargs) + len(args.args) - len(args.defaults)
    keyword_only = sum(1 for default in args.kw_defaults if default is None)
    return positional + keyword_only


def _check_model_class(bound: dict, name: str, errors: list[str]) -> None:
    node = bound.get(name)
    if node is None:
        errors.append(f"No class `{name}` is defined at module level: define `class {name}(nn.Module)`.")
    elif not isinstance(node, ast.ClassDef):
        errors.append(f"`{name}` must be a class (an `nn.Module` subclass), not a {type(node).__name__} statement.")
    elif not any(isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and item.name == "forward" for item in node.body):
        errors.append(f"`{name}` defines no `forward` method: it must compute the output in `forward`.")


def _check_input_function(bound: dict, name: str, errors: list[str]) -> None:
    node = bound.get(name)
    if node is None:
        errors.append(f"No function `{name}()` is defined at module level: KernelBench problems define it.")
    elif isinstance(node, ast.AsyncFunctionDef):
        errors.append(f"`{name}` must be a plain function, not `async def`.")
    elif not isinstance(node, ast.FunctionDef):
        errors.append(f"`{name}` must be a function defined with `def {name}():`.")
    elif _required_arguments(node):
        errors.append(f"`{name}()` must be callable without arguments; give its parameters defaults.")


def _title(tree: ast.Module) -> str:
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == "Model":
            doc = ast.get_docstring(node) or ""
            first = " ".join(doc.split("\n\n")[0].split())
            if first:
                return first[:200]
    return ""


def validate_problem(source: str) -> ValidProblem:
    """Accept a problem in KernelBench form: `Model`, `get_inputs`, `get_init_inputs`."""
    tree = _parse(source, what="problem", max_bytes=settings.PROBLEM_SOURCE_MAX_BYTES)
    bound = _top_level(tree)
    errors: list[str] = []
    _check_model_class(bound, "Model", errors)
    _check_input_function(bound, "get_inputs", errors)
    _check_input_function(bound, "get_init_inputs", errors)
    if errors:
        raise SourceError(errors)
    return ValidProblem(source=source, normalized_hash=normalized_source_hash(source), title=_title(tree))


def validate_candidate(code: str) -> ValidCandidate:
    """Accept a candidate: a module defining `ModelNew`."""
    tree = _parse(code, what="candidate", max_bytes=settings.CANDIDATE_SOURCE_MAX_BYTES)
    errors: list[str] = []
    _check_model_class(_top_level(tree), "ModelNew", errors)
    if errors:
        raise SourceError(errors)
    return ValidCandidate(code=code, source_hash=source_hash(code), language=detect_language(tree))


def validate_proof_inputs(source: str) -> str:
    """Accept a hack report's proof: a module defining `get_inputs()` that gives breaking inputs."""
    tree = _parse(source, what="proof", max_bytes=settings.PROBLEM_SOURCE_MAX_BYTES)
    errors: list[str] = []
    _check_input_function(_top_level(tree), "get_inputs", errors)
    if errors:
        raise SourceError(errors)
    return source
