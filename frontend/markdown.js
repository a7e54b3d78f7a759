// The model's Markdown as HTML for the run page's live stream, exactly as inference/markdown.py
// renders a stored transcript on the server: markdown-it with the same options (markdown-it-py 4.3
// there is the port of the markdown-it version pinned here), then DOMPurify with nh3's allowlist.
// Keep the two in step; tests/e2e/test_run_page.py renders hostile Markdown both ways and compares.
import MarkdownIt from "markdown-it";
import DOMPurify from "dompurify";

const TAGS = [
  "a", "blockquote", "br", "code", "em", "h1", "h2", "h3", "h4", "h5", "h6", "hr", "li", "ol", "p",
  "pre", "s", "strong", "table", "tbody", "td", "th", "thead", "tr", "ul",
];
// nh3 allows these per tag (a: href, title; code, th, td: class; ol: start); markdown-it writes no others.
const ATTRIBUTES = ["href", "title", "class", "start"];
// http(s), mailto, or a link without a scheme (the site itself), as nh3's url_schemes.
const URLS = /^(?:(?:https?|mailto):|[^a-z]|[a-z+.-]+(?:[^a-z+.\-:]|$))/i;
const LINK_REL = "nofollow noopener noreferrer";

const markdown = new MarkdownIt("commonmark", { html: false, breaks: true })
  .enable(["table", "strikethrough"])
  .disable("image");
// A table cell's alignment as a class (align-right), not the style attribute markdown-it writes: the
// Content Security Policy refuses style attributes, even in the sanitiser's inert document.
markdown.core.ruler.push("aligned_by_class", (state) => {
  for (const token of state.tokens) {
    for (const node of [token, ...(token.children || [])]) {
      const index = node.attrIndex("style");
      if (index < 0) continue;
      const [, style] = node.attrs.splice(index, 1)[0];
      if (style.startsWith("text-align:")) node.attrSet("class", `align-${style.slice("text-align:".length)}`);
    }
  }
});
const purify = DOMPurify(window);
purify.addHook("afterSanitizeAttributes", (node) => {
  if (node.tagName === "A") node.setAttribute("rel", LINK_REL);
});

// The Markdown as a fragment, never a string: nothing parses the sanitised markup again.
export function render(text) {
  return purify.sanitize(markdown.render(text), {
    ALLOWED_TAGS: TAGS,
    ALLOWED_ATTR: ATTRIBUTES,
    ALLOWED_URI_REGEXP: URLS,
    ALLOW_DATA_ATTR: false,
    ALLOW_ARIA_ATTR: false,
    RETURN_DOM_FRAGMENT: true,
  });
}

// A candidate's code as the server highlighted it (Pygments: a div of spans in a pre), sanitised
// all the same: a fragment of those elements and their classes only.
export function highlighted(html) {
  return purify.sanitize(html, {
    ALLOWED_TAGS: ["div", "pre", "span", "code"],
    ALLOWED_ATTR: ["class"],
    ALLOW_DATA_ATTR: false,
    ALLOW_ARIA_ATTR: false,
    RETURN_DOM_FRAGMENT: true,
  });
}
