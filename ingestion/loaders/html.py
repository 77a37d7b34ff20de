"""HTML: headings, lists and ``<pre>`` kept as Markdown; scripts and site chrome dropped.

Only the page's own text is worth retrieving: navigation bars, sidebars, headers and footers
repeat on every page of a site, and would make every page look relevant to the same queries.
"""

import re
from html.parser import HTMLParser

from ingestion.loaders.markdown_output import MARKDOWN_LOOKALIKE, code_fence

_HTML_SKIPPED = frozenset(
    {"script", "style", "noscript", "template", "svg", "nav", "button", "iframe", "object"}
)
# Site chrome when directly in <body>; inside <article>/<main> they often hold the page's <h1>.
_HTML_CHROME = frozenset({"header", "footer"})
# Sphinx and others mark their sidebars and banners with ARIA roles on plain <div>s.
_HTML_CHROME_ROLES = frozenset({"navigation", "search", "banner", "contentinfo"})
# Generators that use neither: DocBook's "Prev | Up | Home | Next" bars (the PostgreSQL
# manual), Sphinx themes' relbars and sidebars, the YUI layout of Django's docs (#hd, #ft). Their
# link text in every chunk of a page pulled unrelated pages up the rankings. Whole class or id
# tokens only, so "navbar-content" or "footnote" are never taken for chrome.
_HTML_CHROME_NAMES = frozenset(
    {
        "navheader",
        "navfooter",
        "related",
        "sphinxsidebar",
        "breadcrumb",
        "breadcrumbs",
        "hd",
        "ft",
        "sidebar",
    }
)
_HTML_VOID = frozenset(
    {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "wbr"}
)
_HTML_PARAGRAPH = frozenset(
    {
        "address",
        "article",
        "aside",
        "blockquote",
        "caption",
        "details",
        "div",
        "dl",
        "fieldset",
        "figcaption",
        "figure",
        "footer",
        "form",
        "header",
        "hr",
        "main",
        "p",
        "section",
        "summary",
        "table",
    }
)
_HTML_LINE = frozenset({"br", "dd", "dt", "li", "tr"})
_HTML_HEADINGS = {f"h{n}": n for n in range(1, 7)}


def convert(text: str) -> tuple[str | None, str]:
    """(title, text): the page's own title (see _page_title), None with no <title> or <h1>."""
    parser = _HTMLToText()
    parser.feed(text)
    parser.close()
    return _page_title(parser.title, parser.first_h1) or None, "".join(parser.out)


class _CanonicalFinder(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.url = ""

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = dict(attrs)
        rels = (values.get("rel") or "").lower().split()
        if tag == "link" and "canonical" in rels and not self.url:
            self.url = (values.get("href") or "").strip()


def canonical_url(text: str) -> str:
    """The page's `<link rel="canonical" href>`, "" without one: where it says it lives."""
    finder = _CanonicalFinder()
    # The link belongs in <head>: reading that far is enough, and cheap on a large page.
    head_end = text.lower().find("</head>")
    finder.feed(text if head_end < 0 else text[:head_end])
    finder.close()
    return finder.url


# What sites put between a page's title and their own name: "Signals — Django documentation".
_TITLE_SEPARATOR = re.compile(r"\s*[\u2014\u2013|\u00b7]\s*|\s+[-:]\s+")


def _page_title(title: str, h1: str) -> str:
    """The page's own title: "Signals — Django 3.2 documentation" becomes "Signals".

    The site's name in every title would otherwise lead the heading path of every chunk. It is
    cut only where the page's first <h1> confirms where its own title ends.
    """
    own = bool(title and h1) and title.casefold().startswith(h1.casefold())
    if own and _TITLE_SEPARATOR.match(title, len(h1)):
        return h1
    return title or h1


def _is_chrome(tag: str, attrs: list[tuple[str, str | None]]) -> bool:
    if tag in _HTML_VOID:
        return False
    values = dict(attrs)
    if values.get("role") in _HTML_CHROME_ROLES:
        return True
    names = (values.get("class") or "").split() + (values.get("id") or "").split()
    return any(name in _HTML_CHROME_NAMES for name in names)


class _HTMLToText(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.out: list[str] = []  # finished lines, each ending in "\n"; "\n" alone is a blank
        self.title = ""
        self.first_h1 = ""
        self._line: list[str] = []
        self._prefix = ""
        self._skip_tag: str | None = None
        self._skip_depth = 0
        self._in_head = False
        self._title: list[str] | None = None
        self._content_depth = 0
        self._lists = 0
        self._pre: list[str] | None = None
        self._pre_lang = ""

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if self._skip_tag:
            if tag == self._skip_tag:  # nested <nav> in <nav>: wait for the outer end tag
                self._skip_depth += 1
            return
        if tag == "title" and not self.title:
            self._title = []
            return
        if tag in ("head", "body"):
            self._in_head = tag == "head"
            return
        if self._in_head:
            return
        if (
            tag in _HTML_SKIPPED
            or (tag in _HTML_CHROME and not self._content_depth)
            or _is_chrome(tag, attrs)
        ):
            self._skip_tag, self._skip_depth = tag, 1
            return
        if tag in ("article", "main"):
            self._content_depth += 1
        if self._pre is not None:
            if tag == "br":
                self._pre.append("\n")
            elif tag == "code":
                self._pre_lang = self._pre_lang or _language(attrs)
            return
        if tag == "pre":
            self._paragraph()
            self._pre, self._pre_lang = [], _language(attrs)
        elif tag in _HTML_HEADINGS:
            self._paragraph()
            self._prefix = "#" * _HTML_HEADINGS[tag] + " "
        elif tag in ("ul", "ol"):
            self._paragraph() if not self._lists else self._newline()
            self._lists += 1
        elif tag == "li":
            self._newline()
            self._prefix = "  " * max(self._lists - 1, 0) + "- "
        elif tag in ("td", "th") and self._line:
            self._line.append(" | ")
        elif tag == "code":
            self._line.append("`")
        elif tag in _HTML_LINE:
            self._newline()
        elif tag in _HTML_PARAGRAPH:
            self._paragraph()

    def handle_endtag(self, tag: str) -> None:
        if self._skip_tag:
            if tag == self._skip_tag:
                self._skip_depth -= 1
                if not self._skip_depth:
                    self._skip_tag = None
            return
        if tag == "title" and self._title is not None:
            self.title = " ".join("".join(self._title).split())
            self._title = None
            return
        if tag == "head":
            self._in_head = False
            return
        if tag in ("article", "main"):
            self._content_depth = max(self._content_depth - 1, 0)
        if self._pre is not None:
            if tag == "pre":
                self._end_pre()
            return
        if tag in ("ul", "ol"):
            self._lists = max(self._lists - 1, 0)
            self._paragraph() if not self._lists else self._newline()
        elif tag == "code":
            self._line.append("`")
        elif tag in _HTML_HEADINGS or tag in _HTML_PARAGRAPH:
            self._paragraph()
        elif tag in _HTML_LINE:
            self._newline()

    def handle_data(self, data: str) -> None:
        if self._skip_tag:
            return
        if self._title is not None:
            self._title.append(data)
        elif self._pre is not None:
            self._pre.append(data)
        elif not self._in_head:
            self._line.append(data)

    def close(self) -> None:
        super().close()
        if self._pre is not None:
            self._end_pre()
        self._paragraph()

    def _newline(self) -> None:
        text = " ".join("".join(self._line).split())
        self._line = []
        if not text:
            return  # keep the prefix: <li><p>text</p></li> puts the text after the "- "
        if self._prefix.startswith("#"):
            # Sphinx and MkDocs append a permalink anchor (a pilcrow or zero-width space).
            text = text.rstrip("¶\u200b ").strip()
            if self._prefix == "# " and not self.first_h1:
                self.first_h1 = text
        elif not self._prefix and MARKDOWN_LOOKALIKE.match(text):
            text = "\\" + text  # prose must not turn into a heading or a fence
        self.out.append(self._prefix + text + "\n")
        self._prefix = ""

    def _paragraph(self) -> None:
        self._newline()
        # Inside a list, a blank line would split one item's text from its "- " line.
        if self.out and self.out[-1] != "\n" and not self._lists:
            self.out.append("\n")

    def _end_pre(self) -> None:
        code = "".join(self._pre or []).replace("\xa0", " ")
        self._pre = None
        # HTML drops the newline right after <pre>; trailing blank lines are layout only.
        code = code.lstrip("\n").rstrip()
        if code:
            self.out += [code_fence(code, self._pre_lang) + "\n", "\n"]


def _language(attrs: list[tuple[str, str | None]]) -> str:
    for name, value in attrs:
        if name == "class" and value:
            for cls in value.split():
                if cls.startswith(("language-", "lang-")):
                    return cls.split("-", 1)[1]
    return ""
