"""Validation of problems and candidates on the way in, by parsing, never by running.

Each failure names what is wrong and what to do, so the person who pasted the code can fix it.
"""

import ast
import re
from dataclasses import dataclass

from django.conf import settings

from court.source import detect_language, normalized_source_hash, source_hash
from evaluation.harness import source_ast


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
        return source_ast.parse(source)
    except SyntaxError as exc:
        raise SourceError([f"The {what} is not valid Python: {exc.msg} at line {exc.lineno}, column {exc.offset}."]) from None
    except (ValueError, RecursionError) as exc:
        raise SourceError([f"The {what} cannot be parsed: {exc}."]) from None


def _top_level(tree: ast.Module) -> dict[str, ast.AST]:
    """Names bound at module level by a class, a function or a plain assignment."""
    bound: dict[str, ast.AST] = {}
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


# Docstrings' openings that say nothing of what the model is, and endings that add nothing.
_DOC_OPENING = re.compile(
    r"^(?:initiali[sz]es?\s+(?:the\s+|an?\s+)?|forward\s+pass\s+(?:of|through|for)\s+(?:the\s+|an?\s+)?)", re.I
)
_DOC_ENDING = re.compile(r"\s+(?:implementation\b.*|in\s+pytorch)$", re.I)
# Containers hold layers; they are not what a model is built from.
_CONTAINERS = {"Sequential", "ModuleList", "ModuleDict", "Parameter", "ParameterList", "Identity"}


def _described(doc: str | None) -> str:
    """What a docstring's first sentence says the model is, or "" where it lists parameters."""
    paragraph = " ".join((doc or "").split("\n\n")[0].split())
    if not paragraph or paragraph.startswith((":", "Args", "Parameters", "Returns")):
        return ""
    sentence = re.split(r"(?<=[a-z0-9)])\.\s", paragraph)[0].rstrip(".").split(" :param")[0]
    sentence = _DOC_ENDING.sub("", _DOC_OPENING.sub("", sentence)).strip()
    return sentence[:1].upper() + sentence[1:]


def _listed(names: list[str]) -> str:
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"


def _layers(model: ast.ClassDef) -> list[str]:
    """The torch.nn layers the model makes (nn.Conv2d(...)), in order of first appearance."""
    found = []
    for node in ast.walk(model):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and isinstance(node.func.value, ast.AST):
            owner = ast.unparse(node.func.value)
            name = node.func.attr
            if owner in ("nn", "torch.nn") and name[:1].isupper() and name not in _CONTAINERS and name not in found:
                found.append(name)
    return found


def _title(tree: ast.Module) -> str:
    """A problem's title, from its classes' names and docstrings: Model's docstring (KernelBench's
    levels 1 and 2 say what the model does there), else the module's, else what its __init__ or forward docstring says it
    is ("Initialize the VGG16 model." gives "VGG16 model"), else the classes it is built from, else
    the torch.nn layers it makes. Level 3's modules mostly document only their parameters."""
    classes = [node for node in tree.body if isinstance(node, ast.ClassDef)]
    model = next((node for node in classes if node.name == "Model"), None)
    if model is None:
        return ""
    # Model's docstring, else the module's (a paste often says what it is at its top).
    for documented in (model, tree):
        first = " ".join((ast.get_docstring(documented) or "").split("\n\n")[0].split())
        if first:
            return first[:200]
    methods = {item.name: item for item in model.body if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef))}
    for name in ("__init__", "forward"):
        described = _described(ast.get_docstring(methods[name])) if name in methods else ""
        if described:
            return described[:200]
    helpers = [node.name for node in classes if node is not model]
    if helpers:
        return f"Network of {_listed(helpers)}"[:200]
    layers = _layers(model)
    return f"{_listed(layers)} layers"[:200] if layers else ""


def problem_title(source: str) -> str:
    """The title _title derives, for a module already accepted (the migration that titled the
    problems imported without one); "" for one that no longer parses."""
    try:
        return _title(source_ast.parse(source))
    except (SyntaxError, ValueError, RecursionError):
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
