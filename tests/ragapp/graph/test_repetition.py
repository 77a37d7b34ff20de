"""An answer is cut where the model starts repeating itself, or back to its last whole sentence."""

import pytest

from ragapp.graph.repetition import repeats_already, without_repetition, without_unfinished_tail

LOOP = """To re-embed:

1. **Set the provider** to the new model first.

2. **If it fails**, you can try running the command again.

3. **If it works**, you can proceed with the ingestion.

4. **If it fails**, you can try running the command again.

5. **If it works**, you can"""


def test_a_loop_is_cut_at_its_first_repeated_line_whatever_its_number():
    assert without_repetition(LOOP) == LOOP.split("\n\n4.")[0]


def test_an_answer_that_does_not_repeat_itself_is_unchanged():
    answer = "Run `ingest_docs --reembed` [1].\n\nIt rebuilds the index [1]."
    assert without_repetition(answer) == answer


def test_short_lines_may_repeat():
    answer = "For example:\n```\na\n```\nFor example:\n```\nb\n```"
    assert without_repetition(answer) == answer


def test_a_repeated_code_block_is_a_loop():
    block = "```bash\nuv run python manage.py ingest_docs docs\n```"
    answer = f"Run it:\n{block}\nThen again:\n{block}\nThen again:"
    assert without_repetition(answer) == f"Run it:\n{block}\nThen again:"


def test_a_sentence_repeated_inside_one_paragraph_is_a_loop():
    answer = (
        "POST /api/rag returns 202 Accepted [1]. The run executes in the background [1]. "
        "The run executes in the background [1]. The run executes"
    )
    assert without_repetition(answer) == (
        "POST /api/rag returns 202 Accepted [1]. The run executes in the background [1]."
    )


def test_a_loop_whose_citations_count_up_is_still_a_loop():
    answer = (
        "1. Install Git LFS [2].\n\n"
        "2. Use Git LFS to track PSD files in the repository. [7]\n\n"
        "3. Use Git LFS to track PSD files in the repository. [8]\n\n"
        "4. Use Git LFS to track"
    )
    assert without_repetition(answer) == (
        "1. Install Git LFS [2].\n\n2. Use Git LFS to track PSD files in the repository. [7]"
    )


def test_short_list_items_looping_are_cut_at_the_second_copy():
    answer = "Formats:\n\n- Markdown\n- HTML\n- YAML\n- JSON\n- YAML\n- JSON\n- YAML\n- JSON\n-"
    assert without_repetition(answer) == "Formats:\n\n- Markdown\n- HTML\n- YAML\n- JSON"


def test_a_short_list_item_may_come_twice():
    answer = "Reading:\n- `-in`\n- `-out`\n\nWriting:\n- `-in`\n- `-out`"
    assert without_repetition(answer) == answer


@pytest.mark.parametrize(
    ("capped", "kept"),
    [
        (
            "Set `RAG_TOP_K` [1]. Its default is 5 [1]. You can also set the",
            "Set `RAG_TOP_K` [1]. Its default is 5 [1].",
        ),
        ('It prints "done." [2]\nThen the', 'It prints "done." [2]'),
        ("- `a`: one [1]\n- `b`: two [2]\n- `c`: th", "- `a`: one [1]\n- `b`: two [2]"),
        ("Steps:\n1. Open it [1].\n2. Cl", "Steps:\n1. Open it [1]."),
        (
            "Ingest [1]. Run:\n```bash\nmanage.py ingest_docs docs\n```\nThen set the",
            "Ingest [1]. Run:\n```bash\nmanage.py ingest_docs docs\n```",
        ),
        # An unclosed code block goes whole, with the line that introduced it.
        ("Ingest [1]. Run:\n```bash\nmanage.py ingest_docs do", "Ingest [1]."),
    ],
)
def test_an_answer_cut_at_its_cap_keeps_what_was_finished(capped, kept):
    assert without_unfinished_tail(capped) == kept


def test_an_answer_cut_inside_its_first_sentence_is_kept_as_it_is():
    assert without_unfinished_tail("The setting that controls it is") == (
        "The setting that controls it is"
    )


# Replies as the model writes them, loops and not, to stream a character at a time.
LOOPING = [
    LOOP,
    "POST /api/rag returns 202 Accepted [1]. The run executes in the background [1]. "
    "The run executes in the background [1]. The run executes in the background [1].",
    "Formats:\n\n- Markdown\n- HTML\n- YAML\n- JSON\n- YAML\n- JSON\n- YAML\n- JSON\n- YAML",
    "Run it:\n```bash\nuv run python manage.py ingest_docs docs\n```\nThen again:\n"
    "```bash\nuv run python manage.py ingest_docs docs\n```\nThen again:\n```bash\nuv run",
    "Beta starts with beta serve [1].\nIt listens on port 9000 [1].\n" * 3,
]
NOT_LOOPING = [
    "Run `ingest_docs --reembed` [1].\n\nIt rebuilds the index [1].",
    "For example:\n```\na\n```\nFor example:\n```\nb\n```",
    "Reading:\n- `-in`\n- `-out`\n\nWriting:\n- `-in`\n- `-out`",
    # A sentence that begins like an earlier one and goes on otherwise is no copy.
    "Run the command [1]. Run the command again with --force [1]. Run the command [1]x",
]


@pytest.mark.parametrize("reply", LOOPING)
def test_a_loop_is_seen_while_it_is_written_and_cut_where_the_whole_reply_is(reply):
    fired = [i for i in range(1, len(reply) + 1) if repeats_already(reply[:i])]
    assert fired and fired[0] < len(reply)  # before the model got to the end
    # However much more it writes, what is left is the cut of the whole reply.
    for i in fired:
        assert without_repetition(reply[:i]) == without_repetition(reply)


@pytest.mark.parametrize("reply", NOT_LOOPING)
def test_a_reply_that_does_not_repeat_itself_is_never_stopped(reply):
    assert not any(repeats_already(reply[:i]) for i in range(1, len(reply) + 1))


def test_the_last_sentence_is_not_judged_while_it_may_still_grow():
    # The last "Run the command again [1]." could still go on ("... again [1]. Then ..." is the
    # same sentence, but "again [1]" could be "again [1] with --force"): only a sentence that
    # another follows is finished.
    first = "Run the command again [1]. It is safe to do so [1]. Run the command again [1]."
    assert not repeats_already(first)
    assert repeats_already(first + " It")
