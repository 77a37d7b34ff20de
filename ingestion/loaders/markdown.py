"""Markdown: front matter removed, setext headings rewritten as the ``#`` ones the chunker knows."""

import re

_FENCE_OPEN = re.compile(r"^\s*(`{3,}|~{3,})(.*)$")
_ATX_H1 = re.compile(r"^ {0,3}#[ \t]+(.+?)(?:[ \t]+#+)?[ \t]*$")
_SETEXT_UNDERLINE = re.compile(r"^ {0,3}(=+|-+)$")
_NOT_SETEXT_TEXT = re.compile(r"^(?: {4}|\s*(?:[#>|]|[*+-]\s|\d+[.)]\s|`{3}|~{3}))")
_FRONT_MATTER = re.compile(r"\A---\n(.*?)^(?:---|\.\.\.)$\n?", re.DOTALL | re.MULTILINE)
_YAML_KEY = re.compile(r"^[\w-]+\s*:")
_YAML_TITLE = re.compile(r"^title\s*:\s*(.+?)\s*$", re.MULTILINE)
_YAML_URL = re.compile(r"^url\s*:\s*(.+?)\s*$", re.MULTILINE)


def convert(text: str) -> tuple[str | None, str]:
    """(title, text): the first level-1 heading, else the front matter's title, else None."""
    fm_title = None
    m = _FRONT_MATTER.match(text)
    # A leading '---' may also be a thematic break, so only YAML-looking blocks are front matter.
    if m and _YAML_KEY.match(m.group(1).lstrip("\n")):
        if t := _YAML_TITLE.search(m.group(1)):
            fm_title = _unquote(t.group(1))
        text = text[m.end() :]
    text = _setext_to_atx(text)
    return _first_h1(text) or fm_title, text


def front_matter_url(text: str) -> str:
    """The `url:` of the front matter, "" without one: where the page says it is published."""
    m = _FRONT_MATTER.match(text)
    if m and _YAML_KEY.match(m.group(1).lstrip("\n")) and (u := _YAML_URL.search(m.group(1))):
        return _unquote(u.group(1))
    return ""


def fence_marker(line: str) -> str | None:
    """The fence `line` opens (three or more backticks or tildes, as written), else None."""
    m = _FENCE_OPEN.match(line)
    if not m or (m.group(1)[0] == "`" and "`" in m.group(2)):
        return None
    return m.group(1)


def fence_closes(line: str, marker: str) -> bool:
    """Whether `line` closes the fence `marker` opened: the same character, at least as many."""
    s = line.strip()
    return len(s) >= len(marker) and s == marker[0] * len(s)


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
            marker = None if fence_closes(line, marker) else marker
        elif m := fence_marker(line):
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
            marker = None if fence_closes(line, marker) else marker
        elif m := fence_marker(line):
            marker = m
        elif h := _ATX_H1.match(line):
            return h.group(1).strip()
    return None
