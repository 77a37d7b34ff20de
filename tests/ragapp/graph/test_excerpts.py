"""Question-focused excerpts: how chunks are cut into pieces and which pieces are kept."""

from ragapp.graph.excerpts import GAP, excerpt, focused, units
from ragapp.graph.state import RetrievedDoc
from ragapp.providers.fake_embeddings import FakeEmbeddings


def doc(text: str, chunk_id: int = 1) -> RetrievedDoc:
    return RetrievedDoc(
        chunk_id=chunk_id,
        document_id=chunk_id,
        title="T",
        source_path="docs/t.md",
        heading_path="T",
        text=text,
        similarity=0.5,
    )


def test_units_join_wrapped_lines_and_split_sentences():
    text = "## Backups\n\nThe nightly job copies the\ndatabase. It keeps seven days.\n"
    assert units(text) == [
        "## Backups",
        "The nightly job copies the database.",
        "It keeps seven days.",
    ]


def test_units_keep_list_items_table_rows_and_code_blocks_apart():
    text = (
        "Steps:\n- stop the server\n- copy the files\n\n| a | b |\n| 1 | 2 |\n"
        "```bash\nbackup --all\nbackup --verify\n```\nDone. Then restart it."
    )
    assert units(text) == [
        "Steps:",
        "- stop the server",
        "- copy the files",
        "| a | b |",
        "| 1 | 2 |",
        "```bash\nbackup --all\nbackup --verify\n```",
        "Done.",
        "Then restart it.",
    ]


def test_units_keep_a_code_block_the_chunk_ends_inside():
    assert units("Run:\n```\nbackup --all") == ["Run:", "```\nbackup --all"]


def test_units_do_not_split_at_dots_inside_names():
    assert units("Edit settings.py and set v1.2 there. Then go.") == [
        "Edit settings.py and set v1.2 there.",
        "Then go.",
    ]


def test_excerpt_keeps_the_best_pieces_that_fit_in_their_original_order():
    pieces = ["aaaa", "bbbb", "cccc", "dddd"]
    # budget 10: "cccc" (best) and "aaaa" fit with their newlines; "dddd" would not.
    assert excerpt(pieces, [0.5, 0.1, 0.9, 0.4], 10) == f"aaaa\n{GAP}\ncccc\n{GAP}"


def test_excerpt_passes_over_a_long_piece_for_a_shorter_one():
    pieces = ["x" * 20, "short one", "yyyy"]
    assert excerpt(pieces, [0.9, 0.5, 0.1], 16) == f"{GAP}\nshort one\nyyyy"


def test_excerpt_cuts_the_best_piece_at_a_word_when_nothing_fits():
    assert excerpt(["one two three four five"], [1.0], 12) == f"one two {GAP}"


def test_focused_keeps_what_the_question_is_about_and_leaves_short_chunks_alone():
    embedder = FakeEmbeddings()
    long = doc(
        "The billing module sends invoices monthly. Refunds take five days. "
        "Backups are copied to the vault every night at two. The vault keeps seven copies. "
        "Themes change the colours of the portal.",
        chunk_id=1,
    )
    short = doc("Backups are nightly.", chunk_id=2)
    out = focused([long, short], "When are backups copied to the vault?", embedder, budget=100)

    assert "Backups are copied to the vault every night at two." in out[0].excerpt
    assert "Themes" not in out[0].excerpt and len(out[0].excerpt) <= 100
    assert out[0].text == long.text  # the chunk itself is unchanged
    assert out[1] == short and out[1].excerpt == ""
    assert embedder.calls == [5]  # one batch for the long chunk's five sentences


def test_focused_embeds_nothing_when_every_chunk_fits():
    embedder = FakeEmbeddings()
    docs = [doc("Backups are nightly.")]
    assert focused(docs, "backups?", embedder, budget=400) == docs and embedder.calls == []


def test_the_first_hit_stays_whole_and_gains_an_excerpt_of_its_companion():
    from dataclasses import replace

    embedder = FakeEmbeddings()
    first = replace(
        doc("Backups run nightly.", chunk_id=1),
        companions=("Themes change colours. Backups are kept in the vault for seven days.",),
    )
    other = replace(
        doc("Invoices go out monthly.", chunk_id=2),
        companions=("Refunds take five days. The vault is in Frankfurt.",),
    )
    out = focused(
        [first, other], "How long are backups kept in the vault?", embedder, budget=60, whole=1
    )

    assert out[0].excerpt.startswith("Backups run nightly.\n" + GAP + "\n")
    assert "Backups are kept in the vault for seven days." in out[0].excerpt
    assert "Themes" not in out[0].excerpt
    # The other hit is cut from its own chunk and its companion together, with a break between.
    assert len(out[1].excerpt) <= 60 + len(GAP) and "Frankfurt" in out[1].excerpt
    assert out[1].text == other.text and out[1].summary() == other.summary()


def test_a_hit_and_companion_that_fit_are_shown_whole_with_a_break_between():
    from dataclasses import replace

    embedder = FakeEmbeddings()
    short = replace(doc("Backups are nightly."), companions=("They are kept a week.",))
    [out] = focused([short], "backups?", embedder, budget=400)
    assert out.excerpt == f"Backups are nightly.\n{GAP}\nThey are kept a week."
    assert embedder.calls == []  # nothing to choose, nothing embedded


def test_a_break_is_never_chosen_even_when_it_scores_best():
    assert excerpt(["aaaa", GAP, "bbbb"], [0.1, 1.0, 0.5], 5) == f"{GAP}\nbbbb"


def test_a_documents_summary_never_carries_its_excerpt():
    from dataclasses import replace

    summary = replace(doc("text"), excerpt="part").summary()
    assert "excerpt" not in summary and "text" not in summary
