"""Model output and document text to safe HTML: a real Markdown parser, then a sanitizer.

markdown-it renders CommonMark (raw HTML in the input is escaped, not passed through), Pygments
highlights fenced code, and nh3 (the ammonia sanitizer) removes anything outside a small
allow-list, so a <script> or an onerror= in a document or an answer is inert.
"""

from __future__ import annotations

import re
from html import escape

import nh3
from markdown_it import MarkdownIt
from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import TextLexer, get_lexer_by_name
from pygments.util import ClassNotFound

_ALLOWED_TAGS = {
    "p", "br", "hr", "strong", "em", "code", "pre", "span", "div", "blockquote", "ul", "ol",
    "li", "h1", "h2", "h3", "h4", "h5", "h6", "table", "thead", "tbody", "tr", "th", "td", "a",
    "sup",
}  # fmt: skip
_ALLOWED_ATTRIBUTES = {
    "a": {"href", "title"},
    "span": {"class"},
    "div": {"class"},
    "code": {"class"},
    "pre": {"class"},
}
_CITATION = re.compile(r"\[(\d{1,2})\]")
_FORMATTER = HtmlFormatter(nowrap=True)


def _highlight(code: str, lang: str, _attrs) -> str:
    try:
        lexer = get_lexer_by_name(lang) if lang else TextLexer()
    except ClassNotFound:
        lexer = TextLexer()
    return f'<pre class="highlight"><code>{highlight(code, lexer, _FORMATTER)}</code></pre>'


_MARKDOWN = MarkdownIt("commonmark", {"html": False, "highlight": _highlight}).enable("table")


def sanitize(html: str) -> str:
    """Keep only harmless markup; links may only be http(s), mailto or in-page."""
    return nh3.clean(
        html,
        tags=_ALLOWED_TAGS,
        attributes=_ALLOWED_ATTRIBUTES,
        url_schemes={"http", "https", "mailto"},
        link_rel="noopener noreferrer nofollow",
    )


def render_markdown(text: str, *, sources: frozenset[int] | set[int] = frozenset()) -> str:
    """Markdown to sanitized HTML; [n] citations of a listed source link to it."""
    html = _MARKDOWN.render(text or "")
    if sources:
        html = _CITATION.sub(
            lambda m: (
                f'<sup><a href="#source-{m.group(1)}">[{m.group(1)}]</a></sup>'
                if int(m.group(1)) in sources
                else m.group(0)
            ),
            html,
        )
    return sanitize(html)


def render_plain(text: str) -> str:
    """Plain text (a document chunk) as escaped, sanitized HTML paragraphs."""
    return sanitize("".join(f"<p>{escape(p)}</p>" for p in (text or "").split("\n\n") if p))
