"""What the converters share to write their Markdown-like output without breaking its structure."""

import re

# Prose that starts like this would turn into a heading or a fence; converters escape it.
MARKDOWN_LOOKALIKE = re.compile(r"^(?:#{1,6}(?:\s|$)|```|~~~)")


def code_fence(code: str, info: str = "") -> str:
    """*code* as a fenced block, with *info* (the language) after the opening fence."""
    # A longer fence than any backtick run inside keeps embedded ``` from closing the block.
    longest = max((len(run) for run in re.findall(r"`{3,}", code)), default=2)
    fence = "`" * (longest + 1)
    return f"{fence}{info}\n{code}\n{fence}"


def titled_text(lines: list[str]) -> tuple[str | None, str]:
    """(title, text) of a converter's output lines: the first `#` heading, and the lines with
    each run of blank lines made one. A fenced block is one entry of `lines`, so blank lines
    inside code are kept."""
    lines = [line for k, line in enumerate(lines) if line or not k or lines[k - 1]]
    title = next((line.lstrip("#").strip() for line in lines if line.startswith("#")), None)
    return title, "\n".join(lines)
