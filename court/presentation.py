"""How code and verdicts are shown: highlighted source, the diff against the reference, times.

Highlighting happens on the server (Pygments), so pages read fine without JavaScript, and all
user code reaches the page escaped by the highlighter.
"""

import difflib
import math

from django.utils.safestring import mark_safe
from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import DiffLexer, PythonLexer

_FORMATTER = HtmlFormatter(cssclass="highlight", wrapcode=True)


def highlighted_python(code: str):
    return mark_safe(highlight(code, PythonLexer(), _FORMATTER))


def diff_against_reference(reference: str, candidate: str) -> str:
    lines = difflib.unified_diff(
        reference.splitlines(keepends=True),
        candidate.splitlines(keepends=True),
        fromfile="reference.py",
        tofile="kernel.py",
    )
    return "".join(lines)


def highlighted_diff(reference: str, candidate: str):
    return mark_safe(highlight(diff_against_reference(reference, candidate), DiffLexer(), _FORMATTER))


def format_ms(value: float | None) -> str:
    """Three significant figures, no exponent (run.js's formatMs is the same)."""
    if value is None:
        return ""
    if value >= 100:
        decimals = 0
    elif value > 0:
        decimals = min(6, 2 - math.floor(math.log10(value)))
    else:
        decimals = 0
    return f"{value:.{decimals}f} ms"
