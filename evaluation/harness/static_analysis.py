"""What a candidate's source uses, read from its syntax tree (never from text, so a word in a
string or a comment counts for nothing).

These are facts for the verdict and the kernel page: custom CUDA or Triton kernels, which stream
their raw launches go to (the only facts read from the CUDA source's text), streams,
threads, processes, precision changes, try/except fallbacks, introspection of the interpreter,
clocks, network, environment and files. Run-time checks decide the status; a fact never does.
"""

import ast
import re
from collections.abc import Iterator
from typing import Any

from evaluation.harness import source_ast

# fact -> dotted names (after resolving imports and aliases); a name matches a pattern when it
# equals it or lies under it ("torch.cuda.Stream" lies under "torch.cuda").
PATTERNS = {
    "custom_cuda": (
        "torch.utils.cpp_extension",
        "cupy.RawKernel",
        "cupy.RawModule",
        "torch.cuda.jiterator",
        "pycuda",
        "numba.cuda",
        "cuda.bindings",
        "cuda.core",
    ),
    "triton": ("triton",),
    "streams": (
        "torch.cuda.Stream",
        "torch.cuda.stream",
        "torch.cuda.current_stream",
        "torch.cuda.set_stream",
        "torch.cuda.ExternalStream",
        "torch.cuda.default_stream",
    ),
    "cuda_graphs": ("torch.cuda.CUDAGraph", "torch.cuda.graph", "torch.cuda.make_graphed_callables", "torch.cuda.graphs"),
    "threads": ("threading", "_thread", "concurrent.futures"),
    "processes": (
        "multiprocessing",
        "subprocess",
        "torch.multiprocessing",
        "os.fork",
        "os.system",
        "os.popen",
        "os.spawnl",
        "os.spawnv",
        "os.execv",
        "os.execl",
        "os.posix_spawn",
        "os.forkpty",
    ),
    "precision_changes": (
        "torch.float16",
        "torch.half",
        "torch.bfloat16",
        "torch.float8_e4m3fn",
        "torch.float8_e5m2",
        "torch.autocast",
        "torch.cuda.amp",
        "torch.amp",
        "torch.cpu.amp",
        "torch.set_float32_matmul_precision",
        "torch.backends.cuda.matmul.allow_tf32",
        "torch.backends.cudnn.allow_tf32",
        "torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction",
        "torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction",
    ),
    "global_state": (
        "torch.backends",
        "torch.set_default_dtype",
        "torch.set_default_device",
        "torch.set_num_threads",
        "torch.use_deterministic_algorithms",
        "torch.set_default_tensor_type",
        "torch.set_flush_denormal",
    ),
    "introspection": (
        "gc",
        "inspect",
        "sys._getframe",
        "sys.modules",
        "sys.settrace",
        "sys.setprofile",
        "ctypes",
        "builtins",
        "threading.settrace",
        "threading.setprofile",
        "importlib",
    ),
    "clocks": ("time", "timeit", "torch.cuda.Event", "torch.cuda.synchronize", "torch.cuda.Event.elapsed_time"),
    "network": ("socket", "urllib", "http", "requests", "httpx", "ftplib", "smtplib", "ssl", "aiohttp"),
    "environment": ("os.environ", "os.getenv", "os.putenv", "os.unsetenv"),
    "files": ("open", "pathlib", "shutil", "os.remove", "os.unlink", "os.open", "os.listdir", "os.walk", "io.open"),
    "compilation": ("torch.compile", "torch.jit", "torch._dynamo", "torch._inductor"),
}
# Method names that change precision whatever they are called on.
PRECISION_METHODS = {"half", "bfloat16"}
INTROSPECTION_ATTRIBUTES = {
    "__code__",
    "__globals__",
    "__closure__",
    "__builtins__",
    "f_back",
    "f_locals",
    "f_globals",
    "gi_frame",
    "tb_frame",
    "__subclasses__",
}


def _dotted(node: ast.AST) -> str | None:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None


def _aliases(nodes: list[ast.AST]) -> dict[str, str]:
    aliases = {}
    for node in nodes:
        if isinstance(node, ast.Import):
            for alias in node.names:
                aliases[alias.asname or alias.name.split(".")[0]] = alias.name if alias.asname else alias.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for alias in node.names:
                aliases[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    return aliases


def _resolve(name: str, aliases: dict[str, str]) -> str:
    head, _, rest = name.partition(".")
    if head in aliases:
        return aliases[head] + ("." + rest if rest else "")
    return name


# pattern -> the facts it names: a name's facts are those of its dotted prefixes (`_facts_of`).
_FACTS_BY_PATTERN: dict[str, list[str]] = {}
for _fact, _patterns in PATTERNS.items():
    for _pattern in _patterns:
        _FACTS_BY_PATTERN.setdefault(_pattern, []).append(_fact)


def _facts_of(name: str) -> list[str]:
    """The facts of every pattern `name` equals or lies under (PATTERNS), each once, in PATTERNS' order:
    looked up by the name's dotted prefixes rather than tried against every pattern."""
    parts = name.split(".")
    found = {fact for i in range(1, len(parts) + 1) for fact in _FACTS_BY_PATTERN.get(".".join(parts[:i]), ())}
    return [fact for fact in PATTERNS if fact in found]


def _used_names(nodes: list[ast.AST], aliases: dict[str, str]) -> Iterator[tuple[str, int]]:
    """(resolved dotted name, line) for every import, name and attribute chain in the tree."""
    for node in nodes:
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, node.lineno
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for alias in node.names:
                yield f"{node.module}.{alias.name}", node.lineno
        elif isinstance(node, (ast.Attribute, ast.Name)):
            dotted = _dotted(node)
            if dotted:
                yield _resolve(dotted, aliases), node.lineno


def _fallbacks(nodes: list[ast.AST]) -> list[int]:
    """Lines of try statements with a handler broad enough to hide a failing kernel."""
    lines = []
    for node in nodes:
        if isinstance(node, ast.Try):
            for handler in node.handlers:
                caught = _dotted(handler.type) if handler.type is not None else None
                if handler.type is None or caught in ("Exception", "BaseException", "RuntimeError"):
                    lines.append(node.lineno)
                    break
    return lines


_LAUNCH = re.compile(r"<<<(.*?)>>>", re.S)
_LEGACY_STREAMS = {"0", "nullptr", "NULL", "cudaStreamLegacy", "0u"}


def _launch_arguments(text: str) -> list[str]:
    """The top-level, comma-separated arguments of one launch configuration."""
    parts, depth, current = [], 0, ""
    for char in text:
        if char in "([{":
            depth += 1
        elif char in ")]}":
            depth -= 1
        if char == "," and depth == 0:
            parts.append(current.strip())
            current = ""
        else:
            current += char
    return [*parts, current.strip()]


def stream_safety(nodes: list[ast.AST]) -> dict[str, int | str] | None:
    """Which stream the source's raw CUDA launches (`kernel<<<...>>>` in its CUDA strings) go to: the
    legacy default stream (no stream argument, or 0), where a PyTorch user's own work also runs by
    default, or a stream it names (the current one, at::cuda::getCurrentCUDAStream(), is what torch's
    own kernels and CUDA graph capture follow). A fact for the kernel page, never a verdict: a kernel
    on the legacy stream is right wherever its caller runs on the default stream."""
    legacy = named = 0
    docstrings = {
        id(node.body[0].value)
        for node in nodes
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
        and node.body
        and isinstance(node.body[0], ast.Expr)
    }
    for node in nodes:
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and "<<<" in node.value and id(node) not in docstrings:
            for match in _LAUNCH.finditer(node.value):
                arguments = _launch_arguments(match.group(1))
                if len(arguments) < 4 or arguments[3] in _LEGACY_STREAMS:
                    legacy += 1
                else:
                    named += 1
    if not legacy and not named:
        return None
    if legacy and named:
        summary = f"{legacy} launch(es) on the legacy default stream, {named} on a stream the code names"
    elif legacy:
        summary = (
            "every raw launch goes to the legacy default stream: right where its caller runs on the default stream, "
            "as PyTorch does unless told otherwise; not on another current stream, nor inside a CUDA graph capture"
        )
    else:
        summary = "every raw launch goes to a stream the code names (the current stream, as torch's own kernels)"
    return {"legacy_default_stream": legacy, "named_stream": named, "summary": summary}


def analyze(source: str) -> dict[str, Any]:
    # Text, not the syntax tree: a comment or string naming it keeps the candidate on the full path,
    # where loading decides. Without the name anywhere it cannot define ModelNew, and the harness
    # stops before computing any reference (CUDA-L1's release has 17 such entries, the string "None").
    names_model_new = "ModelNew" in source
    try:
        tree = source_ast.parse(source)
    except SyntaxError as exc:
        return {
            "parse_error": f"SyntaxError at line {exc.lineno}: {exc.msg}",
            "facts": {},
            "defines_model_new": False,
            "names_model_new": names_model_new,
        }
    # Every node once, in ast.walk's order: each fact below reads this list (walking the tree for each
    # was half of importing a release's candidates).
    nodes = list(ast.walk(tree))
    aliases = _aliases(nodes)
    facts: dict[str, set[int]] = {name: set() for name in PATTERNS}
    facts["try_except_fallbacks"] = set(_fallbacks(nodes))
    matched: dict[str, list[str]] = {}  # a name's facts, worked out once (a source uses few names, many times)
    for name, line in _used_names(nodes, aliases):
        if name not in matched:
            matched[name] = _facts_of(name)
        for fact in matched[name]:
            facts[fact].add(line)
    for node in nodes:
        if isinstance(node, ast.Attribute):
            if node.attr in PRECISION_METHODS:
                facts["precision_changes"].add(node.lineno)
            if node.attr in INTROSPECTION_ATTRIBUTES:
                facts["introspection"].add(node.lineno)
        elif isinstance(node, ast.FunctionDef) and any(
            _resolve(_dotted(d.func if isinstance(d, ast.Call) else d) or "", aliases).startswith("triton")
            for d in node.decorator_list
        ):
            facts["triton"].add(node.lineno)
    classes = [node.name for node in tree.body if isinstance(node, ast.ClassDef)]
    found = {name: sorted(lines) for name, lines in facts.items() if lines}
    if found.get("custom_cuda"):
        language = "cuda"
    elif found.get("triton"):
        language = "triton"
    else:
        language = "pytorch"
    return {
        "parse_error": None,
        "facts": found,
        "language": language,
        "defines_model_new": "ModelNew" in classes,
        "names_model_new": names_model_new,
        "classes": classes,
        "stream_safety": stream_safety(nodes),
    }


# What a candidate does to be fast, from its source (and its problem's): `optimization_kind`. In the
# order they are decided: the first that applies names the candidate.
KINDS = {
    "none": "no ModelNew: nothing to run",
    "cuda": "raw CUDA (load_inline and the like)",
    "triton": "Triton kernels",
    "cuda_graph": "CUDA graph replay of PyTorch calls",
    "compile": "torch.compile or TorchScript",
    "flags": "the problem's own code with flags only (TF32, cudnn.benchmark, precision)",
    "unchanged": "the problem's own code, unchanged",
    "rewrite": "a rewrite in PyTorch",
}


def _class_body(tree: ast.Module, name: str) -> str | None:
    """A class's methods as a syntax tree dump, docstrings left out; None where it has no such class."""
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == name:
            methods = []
            for item in node.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    body = item.body
                    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                        body = body[1:]
                    methods.append(ast.dump(ast.Module(body=body, type_ignores=[]), annotate_fields=False))
            # `super(Model, self)` against `super(ModelNew, self)` is no change.
            return "\n".join(methods).replace("'ModelNew'", "'Model'")
    return None


def optimization_kind(candidate_source: str, problem_source: str | None = None, facts: dict[str, Any] | None = None) -> str:
    """What kind of optimization a candidate is (a key of KINDS), from its syntax tree: custom
    kernels first, then how PyTorch calls are replayed or compiled; without any, whether its ModelNew
    is the problem's own Model (with flags set around it, or not) or a rewrite. `facts`: analyze()'s,
    where the caller has them."""
    facts = facts if facts is not None else analyze(candidate_source)
    if not facts.get("defines_model_new"):
        return "none"
    found = facts.get("facts") or {}
    for kind, fact in (("cuda", "custom_cuda"), ("triton", "triton"), ("cuda_graph", "cuda_graphs"), ("compile", "compilation")):
        if found.get(fact):
            return kind
    if problem_source is not None:
        try:
            same = _class_body(source_ast.parse(candidate_source), "ModelNew") == _class_body(
                source_ast.parse(problem_source), "Model"
            )
        except SyntaxError:
            same = False
        if same:
            return "flags" if found.get("precision_changes") or found.get("global_state") else "unchanged"
    return "rewrite"
