"""Turn documentation files into normalised, Markdown-like text for the chunker.

Every format ends up as Markdown-ish text whose headings are ATX ``#`` lines and whose code
is in fenced blocks, so one chunker can split all of them along their structure.
"""

import codecs
import gzip
import re
import textwrap
import zlib
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path

_FORMAT_BY_SUFFIX = {
    ".md": "markdown",
    ".markdown": "markdown",
    ".rst": "rst",
    ".html": "html",
    ".htm": "html",
    ".txt": "text",
    ".text": "text",
}
# Each of these may also carry a trailing ".gz"; detect_format() handles that.
SUPPORTED_SUFFIXES = frozenset(_FORMAT_BY_SUFFIX)

_SNIFF_BYTES = 8192
_READ_BLOCK = 1 << 16


class LoadError(Exception):
    """A file that cannot be loaded; str() is a human-readable reason."""


class EmptyDocumentError(LoadError):
    """A readable file with no text in it: nothing to ingest, but nothing wrong either."""


@dataclass(frozen=True)
class LoadedDocument:
    path: Path
    title: str
    format: str  # "markdown" | "rst" | "html" | "text"
    text: str
    warnings: tuple[str, ...] = ()


def detect_format(path: Path) -> str | None:
    """Return the format of *path* by suffix (a trailing .gz is allowed); None if unsupported."""
    name = _without_gz(Path(path).name.lower())
    return _FORMAT_BY_SUFFIX.get(Path(name).suffix) if name else None


def load_document(path: Path, *, max_bytes: int) -> LoadedDocument:
    """Read, decode and normalise one documentation file; raise LoadError if it cannot be used."""
    path = Path(path)
    fmt = detect_format(path)
    if fmt is None:
        raise LoadError(f"unsupported file type {path.name!r}")
    text, warnings = _decode(_read_bytes(path, max_bytes))
    text = _normalise(text)
    if not text.strip():
        raise EmptyDocumentError("empty file")
    title, text = _CONVERTERS[fmt](text)
    text = _TRAILING_SPACE.sub("", text).strip("\n")
    if not text.strip():
        raise EmptyDocumentError(f"empty file (no text left after reading it as {fmt})")
    return LoadedDocument(
        path=path,
        title=title or _humanise(path),
        format=fmt,
        text=text + "\n",
        warnings=tuple(warnings),
    )


# --- bytes -> str ----------------------------------------------------------------------------


def _without_gz(name: str) -> str:
    return name[:-3] if name.lower().endswith(".gz") else name


def _size(n: int) -> str:
    if n < 1024:
        return f"{n} bytes"
    value = n / 1024
    for unit in ("KiB", "MiB"):
        if value < 1024:
            return f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} GiB"


def _read_bytes(path: Path, max_bytes: int) -> bytes:
    try:
        if path.name.lower().endswith(".gz"):
            return _gunzip(path, max_bytes)
        size = path.stat().st_size
        if size > max_bytes:
            raise LoadError(
                f"file is too large: {_size(size)} ({size:,} bytes), "
                f"over the limit of {_size(max_bytes)} ({max_bytes:,} bytes)"
            )
        with path.open("rb") as f:
            data = f.read(max_bytes + 1)  # the file may have grown since stat()
    except OSError as exc:
        raise LoadError(f"cannot read file: {exc.strerror or exc}") from exc
    if len(data) > max_bytes:
        raise LoadError(f"file is too large: over the limit of {_size(max_bytes)}")
    return data


def _gunzip(path: Path, max_bytes: int) -> bytes:
    # Streamed so that a small gzip bomb is refused after reading max_bytes, not after
    # inflating all of it into memory.
    out = bytearray()
    try:
        with gzip.open(path, "rb") as f:
            while block := f.read(_READ_BLOCK):
                out += block
                if len(out) > max_bytes:
                    raise LoadError(
                        f"file is too large: decompresses to more than the limit of "
                        f"{_size(max_bytes)} ({max_bytes:,} bytes)"
                    )
    except (gzip.BadGzipFile, EOFError, zlib.error) as exc:
        raise LoadError(f"corrupt gzip file: {exc}") from exc
    return bytes(out)


def _decode(data: bytes) -> tuple[str, list[str]]:
    # UTF-16 is full of NUL bytes, so it must be recognised (by its BOM) before the binary check.
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        try:
            return data.decode("utf-16"), []
        except UnicodeDecodeError as exc:
            raise LoadError(f"invalid UTF-16 text: {exc.reason}") from exc
    if b"\0" in data[:_SNIFF_BYTES]:
        raise LoadError("looks binary (a NUL byte in the first 8 KB), not text")
    try:
        return data.decode("utf-8-sig"), []
    except UnicodeDecodeError as exc:
        bad = exc.start
    # cp1252 is what most non-UTF-8 docs really are; latin-1 accepts any byte, so it never fails.
    try:
        text, encoding = data.decode("cp1252"), "cp1252"
    except UnicodeDecodeError:
        text, encoding = data.decode("latin-1"), "latin-1"
    return text, [f"not valid UTF-8 (first bad byte at offset {bad}); decoded as {encoding}"]


_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_TRAILING_SPACE = re.compile(r"[^\S\n]+$", re.MULTILINE)


def _normalise(text: str) -> str:
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    text = text.replace("\u2028", "\n").replace("\u2029", "\n")
    return _TRAILING_SPACE.sub("", _CONTROL.sub("", text))


def _humanise(path: Path) -> str:
    stem = Path(_without_gz(path.name)).stem
    words = " ".join(re.split(r"[\s_-]+", stem)).strip()
    return words[:1].upper() + words[1:] if words else path.name


# --- Markdown ----------------------------------------------------------------------------------

_FENCE_OPEN = re.compile(r"^\s*(`{3,}|~{3,})(.*)$")
_ATX_H1 = re.compile(r"^ {0,3}#[ \t]+(.+?)(?:[ \t]+#+)?[ \t]*$")
_SETEXT_UNDERLINE = re.compile(r"^ {0,3}(=+|-+)$")
_NOT_SETEXT_TEXT = re.compile(r"^(?: {4}|\s*(?:[#>|]|[*+-]\s|\d+[.)]\s|`{3}|~{3}))")
_FRONT_MATTER = re.compile(r"\A---\n(.*?)^(?:---|\.\.\.)$\n?", re.DOTALL | re.MULTILINE)
_YAML_KEY = re.compile(r"^[\w-]+\s*:")
_YAML_TITLE = re.compile(r"^title\s*:\s*(.+?)\s*$", re.MULTILINE)


def _fence_marker(line: str) -> str | None:
    m = _FENCE_OPEN.match(line)
    if not m or (m.group(1)[0] == "`" and "`" in m.group(2)):
        return None
    return m.group(1)


def _closes(line: str, marker: str) -> bool:
    s = line.strip()
    return len(s) >= len(marker) and s == marker[0] * len(s)


def _markdown(text: str) -> tuple[str | None, str]:
    fm_title = None
    m = _FRONT_MATTER.match(text)
    # A leading '---' may also be a thematic break, so only YAML-looking blocks are front matter.
    if m and _YAML_KEY.match(m.group(1).lstrip("\n")):
        if t := _YAML_TITLE.search(m.group(1)):
            fm_title = _unquote(t.group(1))
        text = text[m.end() :]
    text = _setext_to_atx(text)
    return _first_h1(text) or fm_title, text


def _unquote(value: str) -> str:
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        return value[1:-1]
    return value


def _setext_to_atx(text: str) -> str:
    # The chunker only knows '#' headings; rewriting setext ones keeps their sections. Only a
    # one-line paragraph counts, which avoids turning a list or table followed by '---' into one.
    out: list[str] = []
    marker = None
    for line in text.split("\n"):
        if marker:
            marker = None if _closes(line, marker) else marker
        elif m := _fence_marker(line):
            marker = m
        elif (
            (u := _SETEXT_UNDERLINE.match(line))
            and out
            and out[-1].strip()
            and not _NOT_SETEXT_TEXT.match(out[-1])
            and (len(out) == 1 or not out[-2].strip())
        ):
            level = 1 if u.group(1)[0] == "=" else 2
            out[-1] = "#" * level + " " + out[-1].strip()
            continue
        out.append(line)
    return "\n".join(out)


def _first_h1(text: str) -> str | None:
    marker = None
    for line in text.split("\n"):
        if marker:
            marker = None if _closes(line, marker) else marker
        elif m := _fence_marker(line):
            marker = m
        elif h := _ATX_H1.match(line):
            return h.group(1).strip()
    return None


def _code_fence(code: str, info: str = "") -> str:
    # A longer fence than any backtick run inside keeps embedded ``` from closing the block.
    longest = max((len(run) for run in re.findall(r"`{3,}", code)), default=2)
    fence = "`" * (longest + 1)
    return f"{fence}{info}\n{code}\n{fence}"


# --- reStructuredText --------------------------------------------------------------------------

_ADORNMENT = re.compile(r"^([=\-~^\"'`#*+:._])\1+$")
_DIRECTIVE = re.compile(r"^(\s*)\.\.\s+([A-Za-z0-9][\w.:+-]*?)::(?:\s+(.*))?$")
_EXPLICIT = re.compile(r"^(\s*)\.\.(?:\s+(.*))?$")
_OPTION = re.compile(r"^:[^:\s][^:]*:(?:\s|$)")
_CODE_DIRECTIVES = frozenset({"code", "code-block", "sourcecode"})
# Directives whose argument and body are references or markup, not prose worth retrieving.
_DROPPED_DIRECTIVES = frozenset(
    {
        "contents",
        "currentmodule",
        "default-role",
        "highlight",
        "image",
        "include",
        "index",
        "literalinclude",
        "meta",
        "module",
        "raw",
        "role",
        "sectnum",
        "tabularcolumns",
        "target-notes",
        "toctree",
    }
)
_LABELS = {
    "attention": "Attention",
    "caution": "Caution",
    "danger": "Danger",
    "error": "Error",
    "hint": "Hint",
    "important": "Important",
    "note": "Note",
    "seealso": "See also",
    "tip": "Tip",
    "todo": "To do",
    "warning": "Warning",
    "deprecated": "Deprecated since version",
    "versionadded": "Added in version",
    "versionchanged": "Changed in version",
}
_RST_INLINE = re.compile(
    r"``(?P<lit>.+?)``"
    r"|(?P<role>:[\w.+:-]+:)`(?P<rtext>[^`]+)`"
    r"|`(?P<ltext>[^`<]*?)\s*<(?P<url>[^`>]+)>`_{1,2}"
    r"|`(?P<text>[^`]+)`_{0,2}"
)
_PLAIN_ROLES = frozenset({"abbr", "any", "doc", "download", "guilabel", "numref", "ref", "term"})


def _rst(text: str) -> tuple[str | None, str]:
    lines = _rst_lines(text.expandtabs(8).split("\n"), {})
    # Fenced blocks are single entries here, so this collapses blank runs only outside code.
    lines = [line for k, line in enumerate(lines) if line or not k or lines[k - 1]]
    return _first_heading(lines), "\n".join(lines)


def _first_heading(lines: list[str]) -> str | None:
    return next((line.lstrip("#").strip() for line in lines if line.startswith("#")), None)


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def _block_end(lines: list[str], start: int, indent: int) -> int:
    """Index just past the last non-blank line of the block indented deeper than *indent*."""
    end = start
    for j in range(start, len(lines)):
        if lines[j].strip():
            if _indent(lines[j]) <= indent:
                break
            end = j + 1
    return end


def _dedented(lines: list[str]) -> list[str]:
    return textwrap.dedent("\n".join(lines)).strip("\n").split("\n")


def _rst_heading(lines: list[str], i: int) -> tuple[int, tuple[str, bool], str] | None:
    """(lines consumed, adornment style, title) if a section title starts at line *i*."""
    line = lines[i]
    if _ADORNMENT.match(line):
        if i + 2 < len(lines) and lines[i + 2] == line:
            title = lines[i + 1].strip()
            if title and len(line) >= len(title) and not _ADORNMENT.match(title):
                return 3, (line[0], True), title
        return None
    if i + 1 >= len(lines) or not line.strip() or line[0].isspace():
        return None
    under = lines[i + 1]
    if not _ADORNMENT.match(under) or len(under) < len(line):
        return None
    # A title starts a paragraph: anything else is prose that happens to precede a line of dashes.
    if i and lines[i - 1].strip() and not _ADORNMENT.match(lines[i - 1]):
        return None
    return 2, (under[0], False), line.strip()


def _rst_lines(lines: list[str], styles: dict[tuple[str, bool], int]) -> list[str]:
    out: list[str] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        if heading := _rst_heading(lines, i):
            consumed, style, title = heading
            # Like docutils: levels follow the order in which each adornment style first appears.
            level = styles.setdefault(style, len(styles) + 1)
            out += ["#" * min(level, 6) + " " + _rst_inline(title), ""]
            i += consumed
        elif m := _DIRECTIVE.match(line):
            indent, name, arg = len(m.group(1)), m.group(2).lower(), (m.group(3) or "").strip()
            end = _block_end(lines, i + 1, indent)
            out += _rst_directive(name, arg, lines[i + 1 : end], styles)
            i = end
        elif m := _EXPLICIT.match(line):
            end = _block_end(lines, i + 1, len(m.group(1)))
            rest = (m.group(2) or "").strip()
            if rest.startswith("["):  # a footnote or citation: its text is content
                out += [_rst_inline(rest), *_rst_lines(_dedented(lines[i + 1 : end]), styles), ""]
            # Everything else (comments, link targets, substitutions) is markup, not content.
            i = end
        elif line.rstrip().endswith("::") and _starts_literal(lines, i):
            end = _block_end(lines, i + 1, _indent(line))
            text = line.rstrip()[:-2].rstrip()
            if text:
                suffix = "" if line.rstrip().endswith(" ::") else ":"
                out.append(_rst_inline(text) + suffix)
            out += ["", _code_fence("\n".join(_dedented(lines[i + 1 : end]))), ""]
            i = end
        elif _ADORNMENT.match(line) and len(line) >= 4:  # a transition: nothing to retrieve
            i += 1
        else:
            line = _rst_inline(line)
            out.append("\\" + line if _MARKDOWN_LOOKALIKE.match(line) else line)
            i += 1
    return out


def _starts_literal(lines: list[str], i: int) -> bool:
    for j in range(i + 1, len(lines)):
        if lines[j].strip():
            return _indent(lines[j]) > _indent(lines[i])
    return False


def _rst_directive(
    name: str, arg: str, block: list[str], styles: dict[tuple[str, bool], int]
) -> list[str]:
    body = list(block)
    while body and _OPTION.match(body[0].strip()):
        body.pop(0)
    body = _dedented(body) if any(line.strip() for line in body) else []
    if name in _CODE_DIRECTIVES:
        return ["", _code_fence("\n".join(body), arg.split()[0] if arg else ""), ""] if body else []
    if name in _DROPPED_DIRECTIVES or name.startswith("auto") or (name == "figure" and not body):
        return []
    if label := _LABELS.get(name):
        # "Note:" runs into its body; "Note: <text on the directive line>" is a paragraph itself.
        head = [f"{label}: {_rst_inline(arg)}", ""] if arg else [f"{label}:"]
    elif ":" in name:  # a domain object such as py:function: its argument is a signature
        head = [f"`{arg}`"] if arg else []
    else:  # figure's argument is an image path; for topic, rubric, tab... it is a title
        head = [_rst_inline(arg)] if arg and name != "figure" else []
    return ["", *head, *_rst_lines(body, styles), ""]


def _rst_inline(line: str) -> str:
    return _RST_INLINE.sub(_rst_inline_match, line)


def _rst_inline_match(m: re.Match[str]) -> str:
    if m.group("lit") is not None:
        return f"`{m.group('lit')}`"
    if m.group("role") is not None:
        text = m.group("rtext")
        if text.endswith(">") and "<" in text:  # :ref:`label text <target>`
            text = text[: text.rindex("<")].strip() or text[text.rindex("<") + 1 : -1]
        text = text.lstrip("!")
        if text.startswith("~"):  # Sphinx shows only the last component of ~a.b.c
            text = text[1:].rsplit(".", 1)[-1]
        role = m.group("role").strip(":").rsplit(":", 1)[-1]
        return text if role in _PLAIN_ROLES else f"`{text}`"
    if m.group("url") is not None:
        label = m.group("ltext").strip() or m.group("url")
        return f"[{label}]({m.group('url')})"
    return m.group("text")


# --- HTML --------------------------------------------------------------------------------------

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
_MARKDOWN_LOOKALIKE = re.compile(r"^(?:#{1,6}(?:\s|$)|```|~~~)")


def _html(text: str) -> tuple[str | None, str]:
    parser = _HTMLToText()
    parser.feed(text)
    parser.close()
    return _page_title(parser.title, parser.first_h1) or None, "".join(parser.out)


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
        elif not self._prefix and _MARKDOWN_LOOKALIKE.match(text):
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
            self.out += [_code_fence(code, self._pre_lang) + "\n", "\n"]


def _language(attrs: list[tuple[str, str | None]]) -> str:
    for name, value in attrs:
        if name == "class" and value:
            for cls in value.split():
                if cls.startswith(("language-", "lang-")):
                    return cls.split("-", 1)[1]
    return ""


# --- plain text --------------------------------------------------------------------------------


def _text(text: str) -> tuple[str | None, str]:
    return None, text


_CONVERTERS = {"markdown": _markdown, "rst": _rst, "html": _html, "text": _text}
