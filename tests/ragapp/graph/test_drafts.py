"""The draft the graph keeps of a writer's reply: the node and the replay benchmarks share it."""

from ragapp.graph.drafts import draft_of, repeating, unwrapped

CAPPED = "Set `RAG_TOP_K` [1].\n\nIts default is 5 [1]. With a larger value the model reads"


def test_the_answer_tags_a_small_model_copies_go():
    assert unwrapped("<answer>\nRun `ingest_docs` [1].\n</answer>") == "Run `ingest_docs` [1]."
    assert unwrapped("Quote <answer> as written.") == "Quote <answer> as written."


def test_a_capped_reply_loses_its_unfinished_tail_and_the_trace_can_say_how_much():
    draft = draft_of(f"<answer>{CAPPED}", capped=True)
    assert draft.written == CAPPED
    assert draft.finished == draft.answer == "Set `RAG_TOP_K` [1].\n\nIts default is 5 [1]."


def test_a_reply_that_ended_by_itself_keeps_its_last_sentence_whatever_its_end():
    assert draft_of(CAPPED, capped=False).answer == CAPPED


def test_a_loop_is_cut_from_the_draft_after_the_tail():
    # The order matters: cut first, the loop would leave "See the table below" as an unfinished
    # last line, and the tail cut would take it too. The graph cuts the tail of what the model
    # wrote, then the loop, and the trace counts each cut.
    reply = (
        "Set the provider first [1]. Then run the command [1].\n"
        "See the table below\n"
        "Set the provider first [1]. Then run the command [1]. Then"
    )
    draft = draft_of(reply, capped=True)
    assert draft.finished == reply.removesuffix(" Then")
    assert draft.answer == (
        "Set the provider first [1]. Then run the command [1].\nSee the table below"
    )


def test_a_reply_is_stopped_when_it_repeats_even_inside_the_tags():
    # The last sentence may still grow: a copy counts once a sentence follows it.
    assert repeating("<answer>" + "Run the command again [1]. " * 2 + "Run")
    assert not repeating("<answer>Run the command again [1]. Then check the index [1]. Run")
