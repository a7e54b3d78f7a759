"""Finding the candidate in a model's answer: the last complete Python code block that defines
`ModelNew` and parses.

The answer may be streamed and incomplete, so a block whose closing fence has not arrived is
reported as cut off rather than guessed at. Fences follow CommonMark: an opening line of three or
more backticks (or tildes) with an optional language, closed by a line of at least as many of
the same character and nothing else; a line such as `s = "```"` inside the code is not a fence.
Only the answer counts: text the model wrote inside `<think>`...`</think>` is reasoning.
"""

import ast
import enum
import re
from collections.abc import Iterator
from dataclasses import dataclass

from evaluation.harness import source_ast

PYTHON_LANGUAGES = {"", "python", "py", "python3"}

_FENCE = re.compile(r"^ {0,3}(?P<fence>`{3,}|~{3,})\s*(?P<info>[^`\s]*)[^`]*$")
_THINK_OPEN = "<think>"
_THINK_CLOSE = "</think>"


class Outcome(enum.StrEnum):
    FOUND = "found"
    NO_CODE_BLOCK = "no_code_block"
    NO_MODEL_NEW = "no_model_new"
    UNPARSABLE = "unparsable"
    CUT_OFF = "cut_off"
    STILL_REASONING = "still_reasoning"


@dataclass(frozen=True)
class CodeBlock:
    language: str
    code: str
    complete: bool


@dataclass(frozen=True)
class ExtractedCandidate:
    """`code` is the candidate's source, or None with `message` saying what was missing."""

    outcome: Outcome
    message: str
    code: str | None = None


def fenced_lines(text: str) -> Iterator[tuple[str, bool]]:
    """Each line, and whether it is part of a fenced block (its fence lines included)."""
    fence = None
    for line in text.splitlines():
        if fence is None:
            opening = _FENCE.match(line)
            if opening is not None:
                fence = opening["fence"]
            yield line, fence is not None
        else:
            if _closes(line, fence):
                fence = None
            yield line, True


def code_blocks(text: str) -> list[CodeBlock]:
    """Every fenced block in order; the last one is incomplete when its closing fence is missing."""
    blocks: list[CodeBlock] = []
    body: list[str] | None = None
    language = ""
    fence = ""
    for line, inside in fenced_lines(text):
        if not inside:
            continue
        if body is None:
            opening = _FENCE.match(line)
            assert opening is not None  # fenced_lines marks a block's first line inside only where a fence opens
            fence, language, body = opening["fence"], opening["info"].lower(), []
        elif _closes(line, fence):
            blocks.append(CodeBlock(language=language, code="\n".join(body) + "\n", complete=True))
            body = None
        else:
            body.append(line)
    if body is not None:
        blocks.append(CodeBlock(language=language, code="\n".join(body) + "\n", complete=False))
    return blocks


def _closes(line: str, fence: str) -> bool:
    stripped = line.strip()
    return len(line) - len(line.lstrip(" ")) <= 3 and len(stripped) >= len(fence) and set(stripped) == {fence[0]}


def answer_part(text: str) -> tuple[str, bool]:
    """The text after the model's reasoning, and whether the reasoning is still open."""
    if _THINK_CLOSE in text:
        return text.rsplit(_THINK_CLOSE, 1)[1], False
    if _THINK_OPEN in text:
        return "", True
    return text, False


def _defines_model_new(tree: ast.Module) -> bool:
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and node.name == "ModelNew":
            return True
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "ModelNew" for t in node.targets):
            return True
    return False


def extract_candidate(answer: str) -> ExtractedCandidate:
    text, still_reasoning = answer_part(answer)
    if still_reasoning:
        return ExtractedCandidate(
            Outcome.STILL_REASONING,
            "The model's answer ended inside its <think> reasoning, so there is no answer to take "
            "code from; allow more tokens or ask for a shorter analysis.",
        )
    blocks = [b for b in code_blocks(text) if b.language in PYTHON_LANGUAGES]
    if not blocks:
        return ExtractedCandidate(
            Outcome.NO_CODE_BLOCK,
            "The answer has no ```python code block; the candidate must be one fenced block defining class ModelNew.",
        )
    syntax_errors = []
    for block in reversed(blocks):
        if not block.complete:
            continue
        try:
            tree = source_ast.parse(block.code)
        except SyntaxError as exc:
            if "ModelNew" in block.code:
                syntax_errors.append(f"line {exc.lineno}: {exc.msg}")
            continue
        if _defines_model_new(tree):
            return ExtractedCandidate(Outcome.FOUND, "Found a code block defining ModelNew.", block.code)
    if not blocks[-1].complete:
        return ExtractedCandidate(
            Outcome.CUT_OFF,
            "The last code block is cut off: the answer ended before its closing ``` (the model "
            "probably hit its token limit), and no earlier complete block defines ModelNew.",
        )
    if syntax_errors:
        return ExtractedCandidate(
            Outcome.UNPARSABLE,
            f"The code block defining ModelNew is not valid Python ({syntax_errors[0]}).",
        )
    return ExtractedCandidate(
        Outcome.NO_MODEL_NEW,
        f"The answer has {len(blocks)} Python code block{'s' if len(blocks) != 1 else ''}, but none "
        "defines class ModelNew; the candidate must define ModelNew(nn.Module).",
    )
