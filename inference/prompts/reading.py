"""Reading a rendered prompt back: the problem and the earlier candidates' verdicts.

The builtin optimizer is a backend like any other: it gets the chat messages a model would get
and takes what it needs from them, so what it acts on is what the transcript shows. This is
the inverse of `inference.prompts.history` and the templates' `## Problem` section.
"""

import re
from dataclasses import dataclass, field

from inference.backends.interface import Message
from inference.extraction import PYTHON_LANGUAGES, code_blocks, fenced_lines
from inference.prompts.history import VERIFIED, PriorCandidate, PriorVerdict

_SECTION = re.compile(r"^## (.+)$")
_CANDIDATE = re.compile(r"^### Candidate from round (\d+)\s*$")
_VERDICT = re.compile(r"^- (?P<arch>[^:]+): (?P<status>[a-z_-]+)(?P<rest>.*)$", re.MULTILINE)
_SPEEDUPS = re.compile(r"; (?P<eager>[\d.]+x|not measured) vs eager; (?P<compile>[\d.]+x|not measured) vs torch\.compile")
_REASON = re.compile(r"; reason: (.*)$")


@dataclass(frozen=True)
class PromptContent:
    problem_source: str | None
    history: list[PriorCandidate] = field(default_factory=list)


def _speedup(text: str) -> float | None:
    return None if text == "not measured" else float(text.rstrip("x"))


def _split(text: str, heading: re.Pattern) -> list[tuple[str, str]]:
    """(heading's group, body) for each heading line outside code blocks."""
    parts: list[tuple[str, list[str]]] = []
    for line, in_code in fenced_lines(text):
        match = None if in_code else heading.match(line)
        if match is not None:
            parts.append((match[1].strip(), []))
        elif parts:
            parts[-1][1].append(line)
    return [(title, "\n".join(body)) for title, body in parts]


def _first_python_block(text: str) -> str | None:
    for block in code_blocks(text):
        if block.complete and block.language in PYTHON_LANGUAGES:
            return block.code
    return None


def _verdicts(text: str) -> list[PriorVerdict]:
    verdicts = []
    for match in _VERDICT.finditer(text):
        if match["arch"] == "not evaluated":
            continue
        speedups = _SPEEDUPS.search(match["rest"]) if match["status"] == VERIFIED else None
        reason = _REASON.search(match["rest"])
        verdicts.append(
            PriorVerdict(
                arch=match["arch"],
                status=match["status"],
                speedup_eager=_speedup(speedups["eager"]) if speedups else None,
                speedup_compile=_speedup(speedups["compile"]) if speedups else None,
                reason=reason[1] if reason else "",
            )
        )
    return verdicts


def _history(text: str) -> list[PriorCandidate]:
    history = []
    for round_text, body in _split(text, _CANDIDATE):
        code = _first_python_block(body) or ""
        verdict_text = body.split("```", 1)[0]
        history.append(PriorCandidate(code=code, round=int(round_text), verdicts=_verdicts(verdict_text)))
    return sorted(history, key=lambda c: c.round)


def read_prompt(messages: list[Message]) -> PromptContent:
    """What the last user message says; a prompt not written by our templates gives the first
    Python block as the problem and no history."""
    user = next((m["content"] for m in reversed(messages) if m["role"] == "user"), "")
    sections = dict(_split(user, _SECTION))
    problem = _first_python_block(sections.get("Problem", user))
    history_title = next((title for title in sections if title.startswith("Earlier candidates")), None)
    history = _history(sections[history_title]) if history_title else []
    return PromptContent(problem_source=problem, history=history)
