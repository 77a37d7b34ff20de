"""AsciiDoc (Antora, Asciidoctor, Git's manual pages): `#` headings, listings as fenced code.

Enough of the language for documentation, not a full Asciidoctor:

- `= Title` .. `====== Section` become `#` .. `######` headings (the document title is level 1);
- listing (`----`) and literal (`....`) blocks become fenced code, with the language of a
  `[source,lang]` line before them; an indented paragraph outside a list is literal too;
- a description list's term (`--verbose::`, `Term;;`) becomes a bold line, and the indented
  text after it its description (Git's manual pages are written so);
- admonitions (`NOTE: ...`, `[WARNING]` before a block) become "Note: ..." text; example,
  sidebar, quote and open blocks keep their text; tables keep their cells, a row to a line;
- attribute entries (`:product: Acme`) are dropped and their references (`{product}`) replaced
  by their values; comments, passthrough blocks, `include::`, `image::` and `toc::` lines are
  dropped; block anchors and attribute lists (`[[id]]`, `[#id.role]`) are dropped;
- inline macros read as their text: `link:url[text]` and `https://url[text]` as Markdown links,
  `xref:page.adoc[text]` and `<<id,text>>` as their text, `kbd:[Ctrl+C]` as its keys.
"""

import re

from ingestion.loaders.markdown_output import MARKDOWN_LOOKALIKE, code_fence, titled_text

_HEADING = re.compile(r"^(={1,6})[ \t]+(.+?)(?:[ \t]+=+)?[ \t]*$")
# A two-line section title's underline (`git-add(1)` over `==========`), levels 0 to 4.
_UNDERLINE = re.compile(r"^([=\-~^+])\1+$")
_UNDERLINE_LEVELS = "=-~^+"
_ATTRIBUTE_ENTRY = re.compile(r"^:(!?[\w-]+!?):(?:[ \t]+(.*))?$")
_ATTRIBUTE_REF = re.compile(r"\{([\w-]+)\}")
_BLOCK_ATTRIBUTES = re.compile(r"^\[(?:\[[^\]]*\]|[^\[\]]*)\]$")
_SOURCE = re.compile(r"^\[(?:source)?(?:%[\w%]*)?,\s*([\w+#.-]+)")
# A style that makes the next paragraph (or block) verbatim text: fenced code here.
_VERBATIM_STYLE = re.compile(r"^\[(?:source|listing|literal|verse)\b[^\]]*\]$")
_ADMONITION_STYLE = re.compile(r"^\[(NOTE|TIP|IMPORTANT|WARNING|CAUTION)\]$")
_ADMONITION = re.compile(r"^(NOTE|TIP|IMPORTANT|WARNING|CAUTION):[ \t]+(.*)$")
_BLOCK_TITLE = re.compile(r"^\.([^.\s].*)$")
_DELIMITER = re.compile(r"^(-{4,}|\.{4,}|={4,}|\*{4,}|_{4,}|\+{4,}|/{4,}|--)$")
_TABLE = re.compile(r"^[|!,:]={3,}$")
# A cell's specifier, written against the "|" that opens it: a span (`2+`), a duplication (`3*`),
# an alignment (`^`, `.>`) and a style (`a`, `h`, `m`, ...), as in `2+^h|Total`. It stands at the
# start of a line or after white space (Asciidoctor's rule); anywhere else it is the cell's text.
_SPEC = r"((?:(\d+)(?:\.\d+)?([+*]))?[<^>]?(?:\.[<^>])?[adehlmsv]?)$"
_SPEC_AT_START = re.compile(r"^\s*" + _SPEC)
_SPEC_AT_END = re.compile(r"\s" + _SPEC)
_COLS = re.compile(r"\bcols\s*=\s*\"?([^\"\]]+)\"?")
_DESCRIPTION_TERM = re.compile(r"^(?!\s)(.+?)(:{2,4}|;;)(?:[ \t]+(.*))?$")
_LIST_ITEM = re.compile(r"^[ \t]*(\*{1,5}|\.{1,5}|-|\d+\.)[ \t]+(.*)$")
_DROPPED_LINE = re.compile(r"^(?:include|image|toc|video|audio)::|^//(?!/)|^ifn?def::|^endif::")
_CONTINUATION = "+"

_LINK = re.compile(r"\blink:([^\s\[]+)\[([^\]]*)\]")
_URL = re.compile(r"\b((?:https?|ftp)://[^\s\[<]+)\[([^\]]*)\]")
_XREF = re.compile(r"\bxref:([^\s\[]+)\[([^\]]*)\]")
_CROSS_REFERENCE = re.compile(r"<<([^,>]+)(?:,\s*([^>]+))?>>")
_UI_MACRO = re.compile(r"\b(?:kbd|btn|pass|footnote)(?::[\w-]*)?:\[([^\]]*)\]")
_MENU = re.compile(r"\bmenu:([^\[\s]+)\[([^\]]*)\]")
# Any other inline macro (`linkgit:git-commit[1]`, `man:ls[1]`): its target, then its text.
_MACRO = re.compile(r"\b(?!https?:|ftp:|mailto:)[a-z]+:([^\s\[:][^\s\[]*)\[([^\]]*)\]")
_ANCHOR = re.compile(r"\[\[[^\]]*\]\]|\banchor:[\w-]+\[[^\]]*\]")

_LABELS = {
    "NOTE": "Note",
    "TIP": "Tip",
    "IMPORTANT": "Important",
    "WARNING": "Warning",
    "CAUTION": "Caution",
}


def convert(text: str) -> tuple[str | None, str]:
    """(title, text): the title is the document title (`= Title`), else the first section title."""
    title, converted = titled_text(_Reader(text.expandtabs(8).split("\n")).read())
    return title, converted.strip("\n")


class _Reader:
    """One pass over the lines, holding what a block attribute line set for the block after it."""

    def __init__(self, lines: list[str]):
        self.lines = lines
        self.attributes: dict[str, str] = {}
        self.out: list[str] = []
        self.language = ""
        self.admonition = ""
        self.verbatim = False
        self.columns = 0  # a table's column count, from a `[cols=...]` line before it

    def read(self) -> list[str]:
        i = 0
        while i < len(self.lines):
            i = self._line(i)
        return self.out

    def _line(self, i: int) -> int:
        line = self.lines[i]
        stripped = line.strip()
        if not stripped:
            self.out.append("")
            return i + 1
        if self._attribute_entry(line) or _DROPPED_LINE.match(line):
            return i + 1
        if self._underlined(i):
            level = _UNDERLINE_LEVELS.index(self.lines[i + 1].strip()[0]) + 1
            self.out += ["", "#" * level + " " + self._inline(stripped), ""]
            return self._header(i + 2) if i == 0 and level == 1 else i + 2
        if _TABLE.match(stripped):
            return self._table(i + 1, stripped)
        if _DELIMITER.match(stripped):
            return self._block(i + 1, stripped)
        if self.verbatim:
            return self._literal_paragraph(i)
        if _VERBATIM_STYLE.match(stripped):
            self.verbatim = True
            self.language = m.group(1) if (m := _SOURCE.match(stripped)) else ""
            return i + 1
        if m := _ADMONITION_STYLE.match(stripped):
            self.admonition = _LABELS[m.group(1)]
            return i + 1
        if _BLOCK_ATTRIBUTES.match(stripped):
            if m := _COLS.search(stripped):
                self.columns = _column_count(m.group(1))
            return i + 1
        if m := _HEADING.match(line):
            self.out += ["", "#" * len(m.group(1)) + " " + self._inline(m.group(2)), ""]
            if i == 0 and len(m.group(1)) == 1:
                return self._header(i + 1)
            return i + 1
        if m := _BLOCK_TITLE.match(line):
            self.out.append(f"**{self._inline(m.group(1))}**")
            return i + 1
        if line == _CONTINUATION:
            return i + 1
        if m := _DESCRIPTION_TERM.match(line):
            self.out.append(f"**{self._inline(m.group(1))}**")
            if m.group(3):
                self.out.append(self._inline(m.group(3)))
            return i + 1
        if m := _LIST_ITEM.match(line):
            depth = len(m.group(1)) if m.group(1)[0] in "*." else 1
            self.out.append("  " * (depth - 1) + "- " + self._inline(m.group(2)))
            return i + 1
        if line[0] in " \t":
            # An indented line goes on the text before it (a description list's term, as in
            # Git's option lists, or a paragraph); after a blank line it opens a literal one.
            if i and self.lines[i - 1].strip():
                self.out.append(self._prose(stripped))
                return i + 1
            return self._literal_paragraph(i)
        if m := _ADMONITION.match(line):
            self.out.append(f"{_LABELS[m.group(1)]}: {self._inline(m.group(2))}")
            return i + 1
        self.out.append(self._prose(line))
        return i + 1

    def _underlined(self, i: int) -> bool:
        """Whether line i is a two-line section title: text over an underline of its length."""
        if i + 1 >= len(self.lines) or not (m := _UNDERLINE.match(self.lines[i + 1].strip())):
            return False
        title = self.lines[i].strip()
        plain = not _DELIMITER.match(title) and not _LIST_ITEM.match(title)
        return plain and title[0] not in "[.:/|" and abs(len(m.group(0)) - len(title)) <= 2

    def _header(self, start: int) -> int:
        """Past the author and revision lines that follow the document title, up to a blank line."""
        i = start
        while i < len(self.lines) and self.lines[i].strip():
            self._attribute_entry(self.lines[i])
            i += 1
        return i

    def _attribute_entry(self, line: str) -> bool:
        """Whether `line` is an attribute entry (`:product: Acme`); its value is kept for
        `{product}`, and an unset one (`:product!:`) is only skipped."""
        if not (m := _ATTRIBUTE_ENTRY.match(line)):
            return False
        if not m.group(1).startswith("!") and not m.group(1).endswith("!"):
            self.attributes[m.group(1)] = self._inline(m.group(2) or "")
        return True

    def _style(self) -> tuple[str, str]:
        """The language and admonition set for the block now read; every pending style ends."""
        style = self.language, self.admonition
        self.language = self.admonition = ""
        self.verbatim = False
        return style

    def _block(self, start: int, delimiter: str) -> int:
        end = self._closing(start, delimiter)
        body = self.lines[start:end]
        language, admonition = self._style()
        kind = delimiter[0]
        if kind in "-." and delimiter != "--":
            self.out += ["", code_fence("\n".join(body), language), ""]
        elif kind in "+/":
            pass  # passthrough (raw HTML) and comment blocks: nothing to read
        else:
            if admonition:
                self.out += ["", f"{admonition}:"]
            # Example, sidebar, quote and open blocks hold ordinary text, read with this page's
            # attributes.
            inner = _Reader(body)
            inner.attributes = self.attributes
            self.out += ["", *inner.read(), ""]
        return end + 1

    def _closing(self, start: int, delimiter: str) -> int:
        """The index of the line that closes a block opened by `delimiter`, else the end."""
        lines = range(start, len(self.lines))
        return next((k for k in lines if self.lines[k].strip() == delimiter), len(self.lines))

    def _table(self, start: int, delimiter: str) -> int:
        """A table's rows, one to a line: `| cell | cell |`.

        Rows are not delimited in AsciiDoc: the columns are counted, from the `cols` attribute
        or else the table's first line, and a cell spanning columns (`2+|`) counts for them.
        """
        end = self._closing(start, delimiter)
        columns, self.columns = self.columns, 0
        row: list[str] = []
        width = 0
        self.out.append("")
        for line in self.lines[start:end]:
            if not line.strip():
                continue
            cells = _cells(line)
            if cells[0][0]:  # text before the line's first "|" goes on the cell before
                if row:
                    row[-1] = f"{row[-1]} {self._inline(cells[0][0])}"
                else:
                    row.append(self._inline(cells[0][0]))
            columns = columns or sum(span for _, span in cells[1:]) or 1
            for text, span in cells[1:]:
                row.append(self._inline(text))
                width += span
                if width >= columns:
                    self.out.append("| " + " | ".join(row) + " |")
                    row, width = [], 0
        if row:
            self.out.append("| " + " | ".join(row) + " |")
        self.out.append("")
        self._style()
        return end + 1

    def _literal_paragraph(self, i: int) -> int:
        end = i
        while end < len(self.lines) and self.lines[end].strip():
            end += 1
        body = self.lines[i:end]
        margin = min(len(line) - len(line.lstrip()) for line in body)
        language, _ = self._style()
        self.out += ["", code_fence("\n".join(line[margin:] for line in body), language), ""]
        return end

    def _prose(self, line: str) -> str:
        text = self._inline(line)
        # Prose that starts like a Markdown heading or fence must not become one.
        return "\\" + text if MARKDOWN_LOOKALIKE.match(text) else text

    def _inline(self, text: str) -> str:
        text = _ATTRIBUTE_REF.sub(lambda m: self.attributes.get(m.group(1), m.group(0)), text)
        text = _ANCHOR.sub("", text)
        text = _LINK.sub(lambda m: f"[{m.group(2) or m.group(1)}]({m.group(1)})", text)
        text = _URL.sub(lambda m: f"[{m.group(2) or m.group(1)}]({m.group(1)})", text)
        text = _XREF.sub(lambda m: m.group(2) or _page_name(m.group(1)), text)
        text = _CROSS_REFERENCE.sub(lambda m: (m.group(2) or m.group(1)).strip(), text)
        text = _MENU.sub(
            lambda m: " > ".join([m.group(1), *filter(None, m.group(2).split(">"))]), text
        )
        text = _UI_MACRO.sub(lambda m: m.group(1), text)
        return _MACRO.sub(
            lambda m: f"{m.group(1)}({m.group(2)})" if m.group(2) else m.group(1), text
        )


def _cells(line: str) -> list[tuple[str, int]]:
    """(text, columns spanned) of each cell a table line opens, after the text before its first
    "|" (with a span of 0: it goes on the cell before)."""
    pieces = re.split(r"(?<!\\)\|", line)
    cells, span = [], 0
    for n, piece in enumerate(pieces):
        last = n == len(pieces) - 1
        spec = None if last else (_SPEC_AT_START if n == 0 else _SPEC_AT_END).search(piece)
        text, next_span = (piece[: spec.start(1)], spec) if spec else (piece, None)
        cells.append((text.strip().replace("\\|", "|"), span))
        # `2+|` spans two columns; `3*|` is three cells of one column each.
        span = int(next_span.group(2)) if next_span and next_span.group(3) == "+" else 1
    return cells


def _column_count(cols: str) -> int:
    """Columns of a `cols` attribute: `3`, `1,2,3` or `2*,1`."""
    if cols.strip().isdigit():
        return int(cols.strip())
    total = 0
    for spec in cols.split(","):
        m = re.match(r"\s*(\d+)\*", spec)
        total += int(m.group(1)) if m else 1
    return total


def _page_name(target: str) -> str:
    # `xref:install.adoc#linux[]` with no text reads as the page it points to.
    return (
        target.split("#")[-1] if "#" in target else target.rsplit("/", 1)[-1].removesuffix(".adoc")
    )
