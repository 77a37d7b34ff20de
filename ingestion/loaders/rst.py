"""reStructuredText: section titles become ``#`` headings, code and literal blocks fenced code.

Admonitions become "Note: ..." text; directives that carry no prose, comments and link targets
are dropped; footnotes are kept. Not a full docutils parser: enough of it for documentation.
"""

import re
import textwrap

from ingestion.loaders.markdown_output import MARKDOWN_LOOKALIKE, code_fence, titled_text

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


def convert(text: str) -> tuple[str | None, str]:
    """(title, text): the title is the first section title, None if there is none."""
    return titled_text(_rst_lines(text.expandtabs(8).split("\n"), {}))


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
            out += ["", code_fence("\n".join(_dedented(lines[i + 1 : end]))), ""]
            i = end
        elif _ADORNMENT.match(line) and len(line) >= 4:  # a transition: nothing to retrieve
            i += 1
        else:
            line = _rst_inline(line)
            out.append("\\" + line if MARKDOWN_LOOKALIKE.match(line) else line)
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
        return ["", code_fence("\n".join(body), arg.split()[0] if arg else ""), ""] if body else []
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
