"""Prompts: the versioned template files and the code that renders them into chat messages.

`render_prompt(problem_source, history)` is what the run loop calls each round; it returns the
messages and the id of the template used (shown on the run page). `read_prompt` reads such
messages back, for the builtin optimizer.
"""

from inference.prompts.history import PriorCandidate, PriorVerdict
from inference.prompts.reading import PromptContent, read_prompt
from inference.prompts.rendering import RenderedPrompt, render_prompt, templates

__all__ = [
    "PriorCandidate",
    "PriorVerdict",
    "PromptContent",
    "RenderedPrompt",
    "read_prompt",
    "render_prompt",
    "templates",
]
