"""ingestion.chunking: structure-aware packing, code fences kept whole, overlap, speed."""

import itertools
import random
import re
import time

import pytest

from ingestion.chunking import ChunkDraft, chunk_document

WORDS = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "iota", "kappa"]


def prose(rng: random.Random, n_words: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n_words)) + "."


def open_fence_at_end(text: str) -> str | None:
    """The marker of a fence still open at the end of *text* (None when all are closed)."""
    marker = None
    for line in text.split("\n"):
        s = line.strip()
        if marker:
            if s and s == marker[0] * len(s) and len(s) >= len(marker):
                marker = None
        elif m := re.match(r"(`{3,}|~{3,})", s):
            marker = m.group(1)
    return marker


def fenced(marker: str, info: str, body: str) -> str:
    return f"{marker}{info}\n{body}\n{marker}"


# --- code fences -------------------------------------------------------------------------------


def make_fence(rng: random.Random, n: int, length: int) -> str:
    """A fenced block of exactly *length* characters, uniquely labelled by *n*."""
    marker = rng.choice(["```", "~~~", "````"])
    info = rng.choice(["", "python", "bash"])
    room = length - 2 * len(marker) - len(info) - 2
    lines = [f"# block {n}"]
    while sum(len(line) + 1 for line in lines) < room - 30:
        lines.append(prose(rng, rng.randint(1, 4)))
    body = "\n".join(lines)
    body += "\n" + "x" * (room - len(body) - 1)
    block = fenced(marker, info, body)
    assert len(block) == length
    return block


@pytest.mark.parametrize(("size", "overlap"), [(300, 60), (800, 150)])
@pytest.mark.parametrize("seed", range(6))
def test_fences_that_fit_are_never_split(seed, size, overlap):
    rng = random.Random(seed)
    # Sizes at and around the chunk size, where an off-by-one would split a fence.
    lengths = [size, size - 1, size + 1, size - 20, size // 2, size // 3, 60, size + 150]
    parts, fences = [], []
    for n in range(80):
        if rng.random() < 0.1:
            parts.append(f"{'#' * rng.randint(1, 3)} Heading {n}")
        elif rng.random() < 0.4:
            fences.append(make_fence(rng, n, lengths[len(fences) % len(lengths)]))
            parts.append(fences[-1])
        else:
            parts.append(prose(rng, rng.randint(3, size // 5)))
    chunks = chunk_document("\n\n".join(parts), title="Doc", chunk_size=size, chunk_overlap=overlap)

    assert len(fences) >= len(lengths)
    assert [c.ordinal for c in chunks] == list(range(len(chunks)))
    for chunk in chunks:
        assert chunk.text.strip()
        assert len(chunk.text) <= size
        assert open_fence_at_end(chunk.text) is None, chunk.text
        assert chunk.has_code == ("```" in chunk.text or "~~~" in chunk.text)
    for block in fences:
        holding = [c.ordinal for c in chunks if block in c.text]
        if len(block) <= size:
            assert len(holding) == 1, block
        else:
            assert holding == []
            label = block.split("\n")[1]
            assert sum(label in c.text.split("\n") for c in chunks) == 1  # its first piece


def test_oversized_code_block_is_split_into_valid_fenced_pieces():
    body = "\n".join(f"value_{n:03d} = compute({n})  # step" for n in range(40))
    text = "## Run\n\n" + fenced("```", "python", body)
    chunks = chunk_document(text, title="Doc", chunk_size=300, chunk_overlap=50)

    assert len(chunks) > 2
    bodies = []
    for chunk in chunks:
        assert chunk.text.removeprefix("## Run\n\n").startswith("```python\n")
        assert chunk.text.endswith("\n```")
        assert len(chunk.text) <= 300
        assert chunk.has_code
        assert chunk.heading_path == "Doc > Run"
        bodies.append(chunk.text.removeprefix("## Run\n\n")[10:-4])
    assert "\n".join(bodies) == body
    # The heading line still fits in front of the first piece (9 lines of 30 characters).
    first = "\n".join(f"value_{n:03d} = compute({n})  # step" for n in range(9))
    assert chunks[0].text == "## Run\n\n" + fenced("```", "python", first)
    assert "## Run" not in chunks[1].text


def test_code_line_longer_than_a_chunk_is_cut():
    text = fenced("```", "", "x" * 250)
    chunks = chunk_document(text, title="T", chunk_size=100, chunk_overlap=10)
    assert [c.text for c in chunks] == [
        fenced("```", "", "x" * 92),
        fenced("```", "", "x" * 92),
        fenced("```", "", "x" * 66),
    ]


def test_unclosed_fence_runs_to_the_end_and_is_closed():
    text = "Intro.\n\n```bash\necho hi\n# not a heading\n\n"
    chunks = chunk_document(text, title="T")
    assert [(c.text, c.has_code) for c in chunks] == [
        ("Intro.\n\n```bash\necho hi\n# not a heading\n```", True)
    ]


def test_inline_code_span_with_triple_backticks_is_not_a_fence():
    text = "Use ```inline``` here.\n\n# Next\n\nBody."
    chunks = chunk_document(text, title="T")
    assert [(c.heading_path, c.text, c.has_code) for c in chunks] == [
        ("T", "Use ```inline``` here.", False),
        ("T > Next", "# Next\n\nBody.", False),
    ]


# --- headings ----------------------------------------------------------------------------------


def test_heading_paths_and_hash_lines_inside_code():
    text = (
        "# Guide\n\nIntro.\n\n"
        "## Install\n\nUse pip.\n\n```bash\n# not a heading\npip install x\n```\n\n"
        "~~~\n## nor this\n~~~\n\n"
        "### On Linux\n\nApt.\n\n"
        "## Usage ##\n\nRun it.\n"
    )
    chunks = chunk_document(text, title="Guide")
    assert [(c.ordinal, c.heading_path, c.text, c.has_code) for c in chunks] == [
        (0, "Guide", "# Guide\n\nIntro.", False),
        (
            1,
            "Guide > Install",
            "## Install\n\nUse pip.\n\n```bash\n# not a heading\npip install x\n```\n\n"
            "~~~\n## nor this\n~~~",
            True,
        ),
        (2, "Guide > Install > On Linux", "### On Linux\n\nApt.", False),
        (3, "Guide > Usage", "## Usage ##\n\nRun it.", False),
    ]


def test_title_is_the_root_unless_the_h1_repeats_it():
    text = "Preamble.\n\n# Other Name\n\nBody.\n\n# `api` [Reference](ref.md)\n\nMore."
    paths = [c.heading_path for c in chunk_document(text, title="My Doc")]
    assert paths == ["My Doc", "My Doc > Other Name", "My Doc > api Reference"]
    paths = [c.heading_path for c in chunk_document("# my doc\n\nx", title="My Doc")]
    assert paths == ["My Doc"]


def test_not_headings():
    text = "#hashtag is text\n\n    # indented code\n\n#!/bin/sh"
    chunks = chunk_document(text, title="T")
    assert [(c.heading_path, c.text) for c in chunks] == [("T", text)]


def test_empty_sections_merge_into_the_next_one():
    text = "# Top\n\n## Empty\n### Deeper\n\nBody.\n\n## Also empty\n\n## Last\n\nEnd."
    chunks = chunk_document(text, title="Top")
    assert [(c.heading_path, c.text) for c in chunks] == [
        ("Top > Empty > Deeper", "# Top\n## Empty\n### Deeper\n\nBody."),
        ("Top > Last", "## Also empty\n## Last\n\nEnd."),
    ]


def test_headings_only_or_empty_give_no_chunks():
    assert chunk_document("# A\n\n## B\n\n", title="A") == []
    assert chunk_document("", title="A") == []
    assert chunk_document("\n \n", title="A") == []


def test_heading_line_only_in_the_first_chunk_of_its_section():
    paras = [f"Paragraph {n} " + "word " * 30 for n in range(6)]
    text = "## Section\n\n" + "\n\n".join(p.strip() for p in paras)
    chunks = chunk_document(text, title="T", chunk_size=400, chunk_overlap=0)
    assert len(chunks) > 1
    assert chunks[0].text.startswith("## Section\n\nParagraph 0 ")
    assert all("## Section" not in c.text for c in chunks[1:])
    assert {c.heading_path for c in chunks} == {"T > Section"}


def test_heading_that_does_not_fit_with_its_code_block_is_left_to_the_path():
    block = fenced("```", "", "y" * 290)
    chunks = chunk_document("## Big\n\n" + block, title="T", chunk_size=300, chunk_overlap=50)
    assert [(c.heading_path, c.text) for c in chunks] == [("T > Big", block)]


# --- prose and overlap -------------------------------------------------------------------------


def test_paragraphs_are_packed_with_overlap_between_chunks():
    paras = [
        "First one has words. It ends here.",
        "Second paragraph talks about setup. Then it continues a while longer.",
        "Third paragraph explains usage. The final sentence matters.",
        "Fourth closes.",
    ]
    chunks = chunk_document("\n\n".join(paras), title="T", chunk_size=120, chunk_overlap=40)
    assert [c.text for c in chunks] == [
        "First one has words. It ends here.\n\n" + paras[1],
        "Then it continues a while longer.\n\n" + paras[2] + "\n\n" + paras[3],
    ]


def test_overlap_is_a_suffix_of_the_previous_chunk_and_never_code():
    rng = random.Random(7)
    parts = [prose(rng, rng.randint(5, 40)) for _ in range(40)]
    parts.insert(20, fenced("```", "", "code_line()\n" * 10))
    chunks = chunk_document("\n\n".join(parts), title="T", chunk_size=300, chunk_overlap=80)
    overlapped = 0
    for prev, nxt in itertools.pairwise(chunks):
        head = nxt.text.split("\n\n")[0]
        if prev.text.endswith("```"):
            assert "code_line" not in head
        elif prev.text.endswith(head):
            overlapped += 1
            assert len(head) <= 80
            assert head[0].isalpha()  # starts at a word, not inside one
    assert overlapped >= len(chunks) // 2


def test_long_paragraph_is_split_by_the_recursive_splitter():
    words = [f"w{n}" for n in range(600)]
    text = "## Long\n\n" + " ".join(words)
    chunks = chunk_document(text, title="T", chunk_size=500, chunk_overlap=100)
    assert len(chunks) >= 6
    assert chunks[0].text.startswith("## Long\n\nw0 w1 ")
    seen: list[str] = []
    for prev, nxt in itertools.pairwise(chunks):
        assert len(nxt.text) <= 500
        first_word = nxt.text.split()[0]
        assert first_word in prev.text.split()  # consecutive pieces overlap
    for chunk in chunks:
        for word in chunk.text.removeprefix("## Long\n\n").split():
            if not seen or int(word[1:]) > int(seen[-1][1:]):
                seen.append(word)
    assert seen == words


def test_whitespace_free_blob_is_cut_into_chunks():
    chunks = chunk_document("start " + "z" * 2500 + " end", title="T", chunk_size=1000)
    assert [len(c.text) for c in chunks] == [5, 1000, 1000, 500, 3]
    assert "".join(c.text for c in chunks[1:4]) == "z" * 2500


def test_sizes_ordinals_and_has_code_on_a_mixed_document():
    rng = random.Random(3)
    parts = []
    for n in range(200):
        kind = rng.random()
        if kind < 0.1:
            parts.append(f"## Part {n}")
        elif kind < 0.3:
            parts.append(
                fenced("```", "sh", "\n".join(f"cmd {k}" for k in range(rng.randint(1, 150))))
            )
        else:
            parts.append(prose(rng, rng.randint(1, 400)))
    chunks = chunk_document("\n\n".join(parts), title="Mixed")
    assert [c.ordinal for c in chunks] == list(range(len(chunks)))
    assert all(isinstance(c, ChunkDraft) for c in chunks)
    assert max(len(c.text) for c in chunks) <= 800
    assert any(c.has_code for c in chunks) and not all(c.has_code for c in chunks)
    assert all(c.has_code == ("```" in c.text) for c in chunks)
    assert all(open_fence_at_end(c.text) is None for c in chunks)


@pytest.mark.parametrize(("size", "overlap"), [(0, 0), (100, 100), (100, -1), (100, 200)])
def test_invalid_sizes_are_refused(size, overlap):
    with pytest.raises(ValueError):
        chunk_document("text", title="T", chunk_size=size, chunk_overlap=overlap)


def test_large_document_chunks_in_linear_time():
    rng = random.Random(11)
    unit = "\n\n".join(
        [
            "## Heading",
            prose(rng, 120),
            fenced("```", "py", "print(1)\n" * 30),
            prose(rng, 2000),  # longer than a chunk: goes through the splitter
        ]
    )
    text = "\n\n".join([unit] * (5_000_000 // len(unit)))
    started = time.perf_counter()
    chunks = chunk_document(text, title="Big")
    elapsed = time.perf_counter() - started
    assert len(chunks) > 5_000
    assert elapsed < 20, f"5 MB took {elapsed:.1f}s"
