"""The model's Markdown as HTML, safe to put in a page, exactly as the run page's script renders it.

A run's reasoning and answers are rendered here for the page as stored (a reload, a late visitor)
and in the browser as they stream (`frontend/markdown.js`, bundled into
`static/vendor/markdown/markdown.bundle.js`). Both sides are markdown-it with the same options
(markdown-it-py 4.3 is the port of markdown-it 14.1.0, the version the bundle pins), then a
sanitiser with the same allowlist: nh3 (ammonia) here, DOMPurify there. Keep the two in step;
tests/e2e/test_run_page.py renders hostile Markdown both ways and compares.

Raw HTML is off, so a model's `<script>` or `<img onerror>` is text; markdown-it refuses
`javascript:`, `vbscript:`, `file:` and `data:` links; images are off (a model's image would be a
request to wherever it points). The sanitiser is the second line, should a rule ever let markup
through: only the tags below, links only to http(s), mailto or the site itself, no style
attributes (the Content Security Policy refuses them; table cells are aligned by a class instead).
"""

import nh3
from django.utils.safestring import SafeString, mark_safe
from markdown_it import MarkdownIt

TAGS = {
    "a",
    "blockquote",
    "br",
    "code",
    "em",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "hr",
    "li",
    "ol",
    "p",
    "pre",
    "s",
    "strong",
    "table",
    "tbody",
    "td",
    "th",
    "thead",
    "tr",
    "ul",
}
ATTRIBUTES = {"a": {"href", "title"}, "code": {"class"}, "ol": {"start"}, "th": {"class"}, "td": {"class"}}
URL_SCHEMES = {"http", "https", "mailto"}
LINK_REL = "nofollow noopener noreferrer"


def _aligned_by_class(state) -> None:
    """A table cell's alignment as a class (`align-right`), not the style attribute markdown-it writes:
    the Content Security Policy refuses style attributes, even in the sanitiser's inert document."""
    for token in state.tokens:
        for child in [token, *(token.children or [])]:
            style = child.attrs.pop("style", None) if child.attrs else None
            if isinstance(style, str) and style.startswith("text-align:"):
                child.attrSet("class", "align-" + style.removeprefix("text-align:"))


# CommonMark with GitHub's tables and strikethrough; a single newline is a line break, as reasoning
# models write prose line by line.
_MARKDOWN = MarkdownIt("commonmark", {"html": False, "breaks": True}).enable(["table", "strikethrough"]).disable("image")
_MARKDOWN.core.ruler.push("aligned_by_class", _aligned_by_class)


def render_markdown(text: str) -> SafeString:
    html = _MARKDOWN.render(text)
    return mark_safe(nh3.clean(html, tags=TAGS, attributes=ATTRIBUTES, url_schemes=URL_SCHEMES, link_rel=LINK_REL))
