"""Rendering the prompt files into chat messages.

Templates are plain Markdown files named `NAME.vVERSION.md` in `templates/`, with `{name}`
placeholders. Plain placeholders rather than Django templates: the builtin optimizer and the GPU
benchmark read and render prompts where Django is not configured, and a prompt is text with a
few holes, not a page. Only `{identifier}` tokens whose name the renderer is given are replaced,
so braces in code (CUDA, Python dicts) pass through untouched; an unknown placeholder is an error.
"""

import re
from functools import cache
from pathlib import Path
from typing import NamedTuple

from inference.backends.interface import Message
from inference.prompts.history import PriorCandidate, history_section

TEMPLATE_DIR = Path(__file__).resolve().parent / "templates"

_PLACEHOLDER = re.compile(r"\{([a-z_]+)\}")
_FILE_NAME = re.compile(r"^(?P<name>[a-z_]+)\.v(?P<version>\d+)\.md$")


class Template(NamedTuple):
    name: str
    version: int
    text: str

    @property
    def id(self) -> str:
        """What the run page shows and the run stores, e.g. `contrastive.v1`."""
        return f"{self.name}.v{self.version}"


class RenderedPrompt(NamedTuple):
    messages: list[Message]
    template: str


@cache
def templates() -> dict[str, Template]:
    """The newest version of each template."""
    newest: dict[str, Template] = {}
    for path in sorted(TEMPLATE_DIR.glob("*.md")):
        match = _FILE_NAME.match(path.name)
        if match is None:
            continue
        template = Template(match["name"], int(match["version"]), path.read_text())
        if template.name not in newest or template.version > newest[template.name].version:
            newest[template.name] = template
    return newest


def fill(template: Template, **values: str) -> str:
    def substitute(match: re.Match) -> str:
        name = match[1]
        if name not in values:
            raise KeyError(f"template {template.id} has a placeholder {{{name}}} that was not given")
        return values[name]

    return _PLACEHOLDER.sub(substitute, template.text).strip() + "\n"


def render_prompt(problem_source: str, history: list[PriorCandidate] | None = None) -> RenderedPrompt:
    """Round 1 gets the single-shot prompt; later rounds the contrastive one with the history."""
    system = templates()["system"]
    if history:
        user_template = templates()["contrastive"]
        user = fill(user_template, problem_source=problem_source.strip(), history=history_section(history))
    else:
        user_template = templates()["single_shot"]
        user = fill(user_template, problem_source=problem_source.strip())
    messages: list[Message] = [
        {"role": "system", "content": fill(system)},
        {"role": "user", "content": user},
    ]
    return RenderedPrompt(messages, f"{user_template.id}+{system.id}")
