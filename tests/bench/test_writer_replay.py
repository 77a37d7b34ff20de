"""bench/writer_replay.py writes a run's draft again from the documents its writer read.

A variant of the writer is only measured fairly if the replay gives the writer what the run gave
it: the same hits, cut to the same excerpts, with the same ones usable. The fake writer answers
from the documents it is shown, so a replay that rebuilt them wrongly writes another answer.
"""

import sys

import pytest

from ragapp.models import Chunk
from tests.bench.test_export_drafts import evaluate

pytestmark = pytest.mark.django_db


@pytest.fixture
def replayed(tmp_path, knowledge_base, fake_chat, settings, load_bench):
    """The bench module, and one answered run of `eval_rag --name replayed` with excerpts on."""
    settings.RAG_TOP_K = 2
    settings.RAG_EXCERPT_CHARS = 300  # the local default: later hits shown as excerpts
    run = evaluate(tmp_path, "replayed")
    assert run.status == "answered"
    return load_bench("writer_replay"), run, tmp_path / "golden.jsonl"


def test_the_replay_writes_the_runs_draft_again_from_the_same_documents(replayed):
    bench, run, golden = replayed
    cases, skipped = bench.replayable("replayed", golden)
    assert skipped == {}
    [case] = cases
    assert case.recorded == run.answer
    assert [doc.chunk_id for doc in case.documents] == [
        doc["chunk_id"] for doc in run.events.get(kind="retrieve").payload["documents"]
    ]
    assert case.usable == run.events.get(kind="generate").payload["usable"]

    report = bench.replay(cases, ["base", "question-last"])
    assert report["base"][0]["text"] == run.answer  # the same documents, the same answer
    # The fake writer quotes the last line it read, the excerpt's, not the port: wrong, as the
    # evaluation scored it.
    assert "9000" not in run.answer
    assert [row["right"] for row in report["recorded"]] == [False]
    assert [row["right"] for row in report["base"]] == [False]
    assert bench.summary(report, cases).splitlines()[1:] == [
        "recorded                0     0     0",
        "base                    0     0     0",
        "question-last           0     0     0",
    ]
    # A draft is right when it states every expected fact.
    report["question-last"][0] = bench._row(case, "It listens on port 9000. [1]")
    assert bench.summary(report, cases).splitlines()[-1] == (
        "question-last           1     1     0   won p; lost -"
    )


def test_question_last_says_the_question_again_after_the_task(replayed):
    bench, run, golden = replayed
    [case], _ = bench.replayable("replayed", golden)
    _, (system, body) = bench._asked(object(), case, "question-last")
    _, (same_system, product) = bench._asked(object(), case, "base")
    assert system.content == same_system.content
    assert body.content == f"{product.content}\n\nThe question, once more: {run.query}"


def test_source_first_begins_the_reply_for_the_writer_to_continue(replayed):
    bench, _, golden = replayed
    [case], _ = bench.replayable("replayed", golden)
    _, asked = bench._asked(object(), case, "source-first")
    _, product = bench._asked(object(), case, "base")
    assert asked[:-1] == product
    assert (asked[-1].type, asked[-1].content) == ("ai", "According to document [")


def test_a_run_whose_hits_are_not_found_again_is_left_out(replayed, capsys):
    bench, run, golden = replayed
    # The knowledge base changed since the run: its first hit is gone.
    hit = run.events.get(kind="retrieve").payload["documents"][0]["chunk_id"]
    Chunk.objects.filter(pk=hit).delete()
    cases, skipped = bench.replayable("replayed", golden)
    assert cases == [] and skipped == {"hits not found again": 1}
    assert "not the run's hits" in capsys.readouterr().err


def test_bad_names_stop_with_a_clear_message(replayed, monkeypatch):
    bench, _, golden = replayed
    argv = ["writer_replay.py", "replayed", str(golden), "--variants", "x"]
    monkeypatch.setattr(sys, "argv", argv)
    with pytest.raises(SystemExit, match="Unknown variant 'x'"):
        bench.main()
    with pytest.raises(SystemExit, match="No evaluation called 'nope'"):
        bench.replayable("nope", golden)
    [case], _ = bench.replayable("replayed", golden)
    with pytest.raises(SystemExit, match=r"needs a writer on a llama\.cpp server"):
        bench._asked(object(), case, "bias:1")
