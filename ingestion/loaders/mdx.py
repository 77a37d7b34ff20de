"""MDX (Docusaurus, Nextra, Mintlify): Markdown once its JSX and ES-module lines are taken out.

An MDX page is Markdown in which `import`/`export` statements and JSX components may stand. The
components wrap prose (`<Tabs>`, `<TabItem label="macOS">`, `<Callout type="warning">`); their
tags are dropped and their prose is kept, with a tab's or callout's label as a bold line so the
text under it still says which case it is about. `{/* comments */}` and import/export blocks
are dropped. Docusaurus admonitions (`:::note Title` .. `:::`) become "**Note:** Title". Fenced
code is left exactly as it is. The result goes through the Markdown converter.
"""

import re

from ingestion.loaders import markdown

# An ES-module statement: it starts at the margin and, in MDX, runs to the next blank line.
_ESM = re.compile(r"^(?:import|export)\s")
_COMMENT = re.compile(r"\{/\*.*?\*/\}", re.DOTALL)
# A JSX component's tag: capitalised or dotted names (`<Tabs>`, `</TabItem>`, `<Foo.Bar />`),
# which HTML's lower-case tags are not.
_TAG_START = re.compile(r"<(/?)([A-Z]\w*(?:\.\w+)*)")
_LABEL = re.compile(
    r"\b(?:label|title)\s*=\s*(?:\"([^\"]*)\"|'([^']*)'|\{\s*[\"'`]([^\"'`]*)[\"'`]\s*\})"
)
_ADMONITION = re.compile(r"^[ \t]*:::[ \t]*([A-Za-z]+)[ \t]*(.*?)[ \t]*$")
_ADMONITION_END = re.compile(r"^[ \t]*:::[ \t]*$")
_CODE_SPAN = re.compile(r"(`+[^`]*?`+)")
_BLANK_RUN = re.compile(r"\n[ \t]*(?:\n[ \t]*){2,}")


def convert(text: str) -> tuple[str | None, str]:
    """(title, text), as the Markdown converter gives them for the page without its JSX."""
    out, pos = [], 0
    for start, end in _fences(text):
        out += [_prose(text[pos:start]), text[start:end]]
        pos = end
    out.append(_prose(text[pos:]))
    return markdown.convert("".join(out))


def _fences(text: str) -> list[tuple[int, int]]:
    """Where each fenced code block stands in `text`, from its opening line's first character to
    its closing line's last (or the end), by the Markdown converter's own rules for fences."""
    spans, fence, start, offset = [], None, 0, 0
    for line in text.split("\n"):
        if fence and markdown.fence_closes(line, fence):
            spans.append((start, offset + len(line)))
            fence = None
        elif not fence and (fence := markdown.fence_marker(line)):
            start = offset
        offset += len(line) + 1
    if fence:
        spans.append((start, len(text)))
    return spans


def _prose(text: str) -> str:
    """A stretch of the page outside fenced code, without its ES modules, comments and tags."""
    kept: list[str] = []
    in_module = False
    for line in _COMMENT.sub("", text).split("\n"):
        if in_module or _ESM.match(line):
            in_module = bool(line.strip())
        elif _ADMONITION_END.match(line):
            continue
        elif m := _ADMONITION.match(line):
            kept.append(f"**{m.group(1).capitalize()}:** {m.group(2)}".rstrip())
        else:
            kept.append(line)
    # A tag quoted in a code span (`<Tabs>`) is what the page is about: only the rest is read.
    pieces = _CODE_SPAN.split("\n".join(kept))
    return "".join(p if i % 2 else _without_tags(p) for i, p in enumerate(pieces))


def _without_tags(text: str) -> str:
    """Every component tag removed (it may span lines); its label or title kept, on its own line."""
    out, pos = [], 0
    while m := _TAG_START.search(text, pos):
        end = _tag_end(text, m.end())
        if end is None:
            break
        out.append(text[pos : m.start()])
        labels = (
            []
            if m.group(1)
            else [next(filter(None, g), "") for g in _LABEL.findall(text[m.end() : end])]
        )
        if labels := [label for label in labels if label.strip()]:
            out.append("\n\n" + "\n\n".join(f"**{label.strip()}**" for label in labels) + "\n\n")
        pos = end
    out.append(text[pos:])
    # A tag alone on its line leaves the line empty: runs of blank lines become one.
    return _BLANK_RUN.sub("\n\n", "".join(out))


def _tag_end(text: str, start: int) -> int | None:
    """The index just past the `>` that closes the tag, skipping `{...}` and quoted values."""
    depth, quote = 0, ""
    for i in range(start, len(text)):
        ch = text[i]
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "\"'`":
            quote = ch
        elif ch == "{":
            depth += 1
        elif ch == "}":
            depth = max(0, depth - 1)
        elif ch == ">" and depth == 0:
            return i + 1
    return None
