"""Split normalised Markdown-like text into overlapping chunks along its structure.

Sections come from ATX headings, blocks within a section from blank lines and fenced code.
Blocks are packed greedily up to ``chunk_size`` characters; a fenced code block is never cut
unless it alone is larger than a chunk, and then every piece is re-fenced.
"""

import re
from collections.abc import Iterator
from dataclasses import dataclass

from langchain_text_splitters import RecursiveCharacterTextSplitter

_ATX = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")
# Any indentation: MkDocs-style docs indent fences by four spaces inside lists and admonitions.
_FENCE_OPEN = re.compile(r"^(\s*)(`{3,}|~{3,})(.*)$")
_LINK = re.compile(r"\[([^\]]*)\]\([^)]*\)")
_SENTENCE_END = re.compile(r"[.!?][\"')\]]*\s+")
_SEP = "\n\n"


@dataclass(frozen=True)
class ChunkDraft:
    ordinal: int
    text: str
    heading_path: str  # "Title > Section > Sub"
    has_code: bool
    page: int | None = None  # the PDF page it comes from

    @property
    def heading(self) -> str:
        """The section's own heading ("Sub"); "" at the top of the document, under its title."""
        return self.heading_path.rsplit(" > ", 1)[1] if " > " in self.heading_path else ""


def chunk_document(
    text: str, *, title: str, chunk_size: int = 800, chunk_overlap: int = 150
) -> list[ChunkDraft]:
    """Split Markdown-like *text* into ordered chunks of at most about *chunk_size* characters."""
    if chunk_size <= 0 or not 0 <= chunk_overlap < chunk_size:
        raise ValueError("need chunk_size > 0 and 0 <= chunk_overlap < chunk_size")
    packer = _Packer(chunk_size, chunk_overlap)
    for path, lead, blocks in _sections(text, title):
        packer.start_section(path, lead)
        for block, is_code in blocks:
            if is_code:
                packer.add_code(block)
            else:
                packer.add_prose(block)
    packer.flush()
    return [
        ChunkDraft(ordinal=n, text=chunk, heading_path=path, has_code=has_code)
        for n, (path, chunk, has_code) in enumerate(packer.chunks)
    ]


def _heading_name(raw: str) -> str:
    return " ".join(_LINK.sub(r"\1", raw).replace("`", "").replace("**", "").split())


def _join_path(title: str, stack: list[tuple[int, str]]) -> str:
    names: list[str] = []
    for name in (title.strip(), *(name for _, name in stack)):
        # The first h1 usually repeats the title; the path should not say it twice.
        if name and (not names or names[-1].casefold() != name.casefold()):
            names.append(name)
    return " > ".join(names)


def _sections(text: str, title: str) -> Iterator[tuple[str, str, list[tuple[str, bool]]]]:
    """Yield (heading path, heading lines, [(block, is_code)]) for each section with a body."""
    stack: list[tuple[int, str]] = []
    lead: list[str] = []  # heading lines of this section and of empty ones just before it
    blocks: list[tuple[str, bool]] = []
    para: list[str] = []
    fence: list[str] = []
    marker = ""

    def end_paragraph() -> None:
        if para:
            blocks.append(("\n".join(para), False))
            para.clear()

    for line in text.split("\n"):
        if marker:
            fence.append(line)
            stripped = line.strip()
            if len(stripped) >= len(marker) and stripped == marker[0] * len(stripped):
                blocks.append(("\n".join(fence), True))
                fence, marker = [], ""
            continue
        m = _FENCE_OPEN.match(line) if "```" in line or "~~~" in line else None
        # A backtick in the info string makes it an inline code span, not a fence.
        if m and (m.group(2)[0] == "~" or "`" not in m.group(3)):
            end_paragraph()
            fence, marker = [line], m.group(2)
            continue
        if "#" in line[:4] and (h := _ATX.match(line)):
            end_paragraph()
            if blocks:
                yield _join_path(title, stack), "\n".join(lead), blocks
                lead, blocks = [], []
            level = len(h.group(1))
            while stack and stack[-1][0] >= level:
                stack.pop()
            stack.append((level, _heading_name(h.group(2) or "")))
            lead.append(line.strip())
            continue
        if line.strip():
            para.append(line)
        else:
            end_paragraph()
    if marker:  # an unclosed fence runs to the end; close it so the chunk stays valid Markdown
        while len(fence) > 1 and not fence[-1].strip():
            fence.pop()
        indent = fence[0][: len(fence[0]) - len(fence[0].lstrip())]
        blocks.append(("\n".join([*fence, indent + marker]), True))
    end_paragraph()
    if blocks:
        yield _join_path(title, stack), "\n".join(lead), blocks


def _tail(text: str, limit: int) -> str:
    """At most *limit* trailing characters of *text*, starting at a sentence or word boundary."""
    if limit <= 0:
        return ""
    if len(text) <= limit:
        return text
    window = text[-limit:]
    sentence = _SENTENCE_END.search(window)
    if sentence and len(window) - sentence.end() >= limit // 4:
        return window[sentence.end() :]
    if text[-limit - 1].isspace():
        return window.lstrip()
    word = re.search(r"\s+", window)
    return window[word.end() :] if word else ""


def _split_fence(block: str, size: int) -> list[str]:
    """Cut an oversized fenced block at line boundaries, fencing each piece on its own."""
    opener, *body, closer = block.split("\n")
    budget = max(size - len(opener) - len(closer) - 2, 1)
    pieces: list[str] = []
    lines: list[str] = []
    length = -1  # of "\n".join(lines)
    for line in body:
        # A single line longer than a chunk has to be cut; nothing better is possible.
        for seg in [line[k : k + budget] for k in range(0, len(line), budget)] or [""]:
            if lines and length + 1 + len(seg) > budget:
                pieces.append("\n".join([opener, *lines, closer]))
                lines, length = [], -1
            lines.append(seg)
            length += 1 + len(seg)
    if lines:
        pieces.append("\n".join([opener, *lines, closer]))
    return pieces or [block]


class _Packer:
    """Greedy packing of blocks into chunks, with prose overlap between consecutive chunks.

    A chunk may open with prefix text that is not its own content: the section's heading lines
    (its first chunk) or the overlap carried from the previous chunk. Prefixes are added only
    when they fit, and a chunk holding nothing but a prefix is never emitted.
    """

    def __init__(self, size: int, overlap: int) -> None:
        self.size, self.overlap = size, overlap
        self.splitter = RecursiveCharacterTextSplitter(chunk_size=size, chunk_overlap=overlap)
        self.chunks: list[tuple[str, str, bool]] = []
        self._path = ""
        self._parts: list[str] = []
        self._length = 0
        self._has_content = False
        self._has_code = False
        self._last_prose = ""  # the overlap source; empty after a code block

    def start_section(self, path: str, lead: str) -> None:
        self.flush()
        self._path, self._last_prose = path, ""
        # The heading line opens the section's first chunk: the embedding then sees the words
        # of the heading next to the body, and later chunks rely on heading_path instead of
        # repeating it. If it does not fit with the first block, heading_path alone carries it.
        if lead and len(lead) <= self.size:
            self._append(lead, content=False)

    def add_prose(self, text: str) -> None:
        if len(text) <= self.size:
            self._add(text, is_code=False)
            return
        if self._has_content:
            self._next_chunk(self.overlap)
        # Cut the paragraph a little smaller so the prefix (heading or overlap) still fits in
        # front of its first piece, unless that would squeeze the pieces too much.
        room = self.size - self._length - len(_SEP) if self._parts else self.size
        if room < self.size // 2:
            self.flush()
            room = self.size
        for k, piece in enumerate(self._split_prose(text, room)):
            if k:  # the splitter already overlaps its pieces: no second overlap
                self.flush()
            self._append(piece, content=True)

    def _split_prose(self, text: str, size: int) -> Iterator[str]:
        splitter = self.splitter
        if size < self.size:
            overlap = min(self.overlap, size // 2)
            splitter = RecursiveCharacterTextSplitter(chunk_size=size, chunk_overlap=overlap)
        # The splitter cuts a run without whitespace one character at a time, which takes a
        # minute for a 50 MB blob (base64, minified code); such runs are cut here instead.
        for k, segment in enumerate(re.split(rf"(\S{{{size + 1},}})", text)):
            if k % 2:
                yield from (segment[i : i + size] for i in range(0, len(segment), size))
            elif segment.strip():
                yield from splitter.split_text(segment)

    def add_code(self, block: str) -> None:
        for piece in [block] if len(block) <= self.size else _split_fence(block, self.size):
            self._add(piece, is_code=True)

    def flush(self) -> None:
        if self._has_content:
            self.chunks.append((self._path, _SEP.join(self._parts), self._has_code))
        self._parts, self._length = [], 0
        self._has_content = self._has_code = False

    def _add(self, text: str, *, is_code: bool) -> None:
        if self._parts and self._length + len(_SEP) + len(text) > self.size:
            self._next_chunk(self.size - len(text) - len(_SEP))
        self._append(text, content=True, is_code=is_code)

    def _next_chunk(self, room: int) -> None:
        """Flush, and open the next chunk with up to *room* characters of this one's prose."""
        carry = _tail(self._last_prose, min(self.overlap, room)) if self._has_content else ""
        self.flush()
        if carry:
            self._append(carry, content=False)

    def _append(self, text: str, *, content: bool, is_code: bool = False) -> None:
        self._length += len(text) + (len(_SEP) if self._parts else 0)
        self._parts.append(text)
        if content:
            self._has_content = True
            self._has_code |= is_code
            # Overlap is never taken from code: half a fence would start the next chunk.
            self._last_prose = "" if is_code else text
