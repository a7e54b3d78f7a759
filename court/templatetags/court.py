"""Template tags for what every page shows the same way: a speedup read with its interval, a flag
with what it means (court.flag_meanings), and a message's `code` as code."""

import re

from django import template
from django.utils.html import escape, format_html, format_html_join
from django.utils.safestring import SafeString, mark_safe

from court import flag_meanings as flag_table
from court.models.evaluations import FASTER, NO_DIFFERENCE, NO_INTERVAL, SLOWER, Speedup
from court.presentation import format_ms

register = template.Library()


def _interval(speedup: Speedup) -> str:
    assert speedup.interval is not None  # shown only where one was measured (Speedup.difference)
    low, high = speedup.interval
    return f"95% interval {low:.2f}–{high:.2f}x"


@register.simple_tag
def speedup(value: Speedup | None) -> str:
    """A speedup as it may be read: a number only where the interval says it is one. Noise (an
    interval reaching within 1% of 1) reads "no measurable difference" and is never a win."""
    if value is None or value.value is None:
        return "—"
    difference = value.difference
    if difference == NO_DIFFERENCE:
        return format_html(
            '<span class="speedup same" title="{}">no measurable difference</span>',
            f"Measured {value.value:.2f}x, but its {_interval(value)} reaches within 1% of 1: not a win.",
        )
    if difference == NO_INTERVAL:
        return format_html(
            '<span class="speedup unsure" title="{}">{}x</span>',
            "No interval was measured (an older harness): not counted as a win.",
            f"{value.value:.2f}",
        )
    what = {FASTER: "faster beyond doubt", SLOWER: "slower beyond doubt"}[difference or ""]
    return format_html(
        '<span class="speedup {}" title="{}">{}x</span>', difference, f"{_interval(value)}: {what}.", f"{value.value:.2f}"
    )


@register.simple_tag
def flag(name: str) -> str:
    """A flag, its meaning on hover or focus (and in `flag_list` for whoever cannot hover)."""
    return format_html('<span class="flag" title="{}" tabindex="0">{}</span>', flag_table.describe(name), name)


@register.simple_tag
def flag_list(names) -> str:
    """The meaning of each flag named, as a definition list."""
    shown = sorted(set(names))
    if not shown:
        return ""
    items = format_html_join("", "<dt>{}</dt><dd>{}</dd>", ((name, flag_table.describe(name)) for name in shown))
    return format_html('<dl class="flag-meanings">{}</dl>', items)


@register.filter
def flags_of(rows) -> list[str]:
    """Every flag on these rows (the leaderboard's), and `degenerate` where a problem is."""
    names = {name for row in rows for name in row.flags}
    return sorted(names | ({"degenerate"} if any(row.degenerate for row in rows) else set()))


@register.filter
def ms(value: float | None) -> str:
    """A time in milliseconds to three significant figures (court.presentation.format_ms), or a dash."""
    return format_ms(value) or "—"


_CODE_SPAN = re.compile(r"`([^`\n]+)`")


@register.filter
def code_spans(message) -> SafeString:
    """A message (a validation error, a verdict's reason) escaped, its `backticked` names set as code:
    the same text the API gives as Markdown reads as the page's own."""
    return mark_safe(_CODE_SPAN.sub(r"<code>\1</code>", escape(str(message))))  # escaped before any tag is added
