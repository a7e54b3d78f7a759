"""A model's Markdown becomes HTML that can run nothing: hostile markup stays text, links stay links."""

import re
from html.parser import HTMLParser

import pytest

from inference.markdown import render_markdown

# What a model (or a prompt injected into its problem) might write to run code in a viewer's page.
HOSTILE = [
    "<script>alert(1)</script>",
    "<img src=x onerror=alert(1)>",
    "<svg onload=alert(1)>",
    '<a href="javascript:alert(1)">click</a>',
    "[click](javascript:alert(1))",
    "[click](JaVaScRiPt:alert(1))",
    "[click](java\tscript:alert(1))",
    "[click](vbscript:msgbox(1))",
    "[click](data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==)",
    "![x](javascript:alert(1))",
    '![x](https://tracker.example/pixel.png "beacon")',
    "<javascript:alert(1)>",
    '<iframe src="https://example.org"></iframe>',
    "<style>body{display:none}</style>",
    '<div style="position:fixed;inset:0">cover</div>',
    "```python\" onmouseover=\"alert(1)\nprint('x')\n```",
    "| a |\n|:-:|\n| <b onclick=alert(1)>b</b> |",
    "[ref]\n\n[ref]: javascript:alert(1)",
    "<!-- <script>alert(1)</script> -->",
]


# The elements Markdown makes, and the only attributes they may carry.
MARKDOWN_ELEMENTS = {"a", "blockquote", "br", "code", "em", "h1", "h2", "hr", "li", "ol", "p", "pre", "s", "strong"}
MARKDOWN_ELEMENTS |= {"table", "thead", "tbody", "tr", "th", "td", "ul"}
SAFE_ATTRIBUTES = {
    ("a", "href"),
    ("a", "title"),
    ("a", "rel"),
    ("code", "class"),
    ("ol", "start"),
    ("th", "class"),
    ("td", "class"),
}


class Elements(HTMLParser):
    def __init__(self, html: str):
        super().__init__()
        self.found: list[tuple[str, list[tuple[str, str]]]] = []
        self.feed(html)

    def handle_starttag(self, tag, attrs):
        self.found.append((tag, attrs))


@pytest.mark.parametrize("text", HOSTILE)
def test_hostile_markdown_renders_nothing_that_runs(text):
    html = str(render_markdown(text))
    for tag, attrs in Elements(html).found:
        assert tag in MARKDOWN_ELEMENTS, html
        for name, value in attrs:
            assert (tag, name) in SAFE_ATTRIBUTES, html
            if name == "href":
                assert re.match(r"(https?:|mailto:|/|#)", value), html
            if name == "class":
                assert re.fullmatch(r"language-[^\s]+|align-(left|right|center)", value), html


def test_markdown_is_rendered():
    html = str(render_markdown("# Plan\n\nFuse **the** `relu` into the matmul:\n\n- one\n- two\n\n```python\nx = 1\n```"))
    assert "<h1>Plan</h1>" in html
    assert "<strong>the</strong>" in html and "<code>relu</code>" in html
    assert "<li>one</li>" in html
    assert '<pre><code class="language-python">x = 1\n</code></pre>' in html


def test_a_link_is_kept_and_opens_nothing_of_ours():
    html = str(render_markdown("See [the paper](https://arxiv.org/abs/2507.14111)."))
    assert '<a href="https://arxiv.org/abs/2507.14111" rel="nofollow noopener noreferrer">the paper</a>' in html


def test_a_single_newline_is_a_line_break():
    assert "<br>" in str(render_markdown("first thought\nsecond thought"))


def test_table_alignment_is_a_class_not_a_style_attribute():
    html = str(render_markdown("| a | b | c |\n|:--|--:|---|\n| 1 | 2 | 3 |"))
    assert '<th class="align-left">a</th>' in html and '<td class="align-right">2</td>' in html and "<td>3</td>" in html
    assert "style" not in html
