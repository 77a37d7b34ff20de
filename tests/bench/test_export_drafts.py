"""bench/export_drafts.py exports a draft with everything its writer and the answer check read.

A label is only as good as the evidence it is judged against. The trace keeps no texts, and a
draft exported with its chunks alone lacked what the model was also shown: each hit's excerpt of
its page's next-best chunk, and the path of each document (an answer that says "see beta.md" is
not making anything up). Judged again against the complete documents, 6 of 77 drafts changed
their label, 4 of them to faithful (docs/evaluation.md, "What the answers shown say").
"""

import json
import sys
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command

from ragapp.models import QueryRun

pytestmark = pytest.mark.django_db


@pytest.fixture
def export(monkeypatch, load_bench):
    """bench/export_drafts.py's main, run as `export_drafts.py ARGS...`."""
    module = load_bench("export_drafts")

    def run(*args: str) -> None:
        monkeypatch.setattr(sys, "argv", ["export_drafts.py", *args])
        module.main()

    return run


def evaluate(
    tmp_path: Path, name: str, question: str = "Which port does the beta service listen on?"
) -> QueryRun:
    """One answerable question through `eval_rag --name NAME` with the fake models; its run."""
    golden = tmp_path / "golden.jsonl"
    item = {"id": "p", "question": question}
    item |= {"answerable": True, "sources": ["beta.md"], "facts": ["9000"]}
    golden.write_text(json.dumps(item) + "\n")
    call_command(
        "eval_rag", str(golden), "--name", name, "--output", str(tmp_path / "report"),
        stdout=StringIO(), stderr=StringIO(),
    )  # fmt: skip
    return QueryRun.objects.get(evaluation__name=name)


def test_a_draft_comes_with_the_excerpts_and_paths_its_writer_read(
    tmp_path, knowledge_base, fake_chat, settings, export
):
    settings.RAG_TOP_K = 2
    settings.RAG_EXCERPT_CHARS = 300  # the local default: hits shown with their page's next chunk
    run = evaluate(tmp_path, "drafts")
    assert run.status == "answered"

    out = tmp_path / "drafts.jsonl"
    export("drafts", str(out), "--origin", "a test")

    [line] = [json.loads(text) for text in out.read_text().splitlines()]
    assert line["answer"] == run.answer and line["faithful"] is None
    assert line["origin"] == "a test"
    # The page's path and section, the hit whole (once), then what the excerpt showed of its
    # page's next chunk.
    assert line["documents"][0] == (
        "docs/beta.md\nBeta\n\n"
        "Beta setup: the beta service starts with `beta serve` on port 9000.\n\n[...] "
        "[...]\nBeta logs rotate daily; keep seven days."
    )


def test_without_excerpts_a_draft_comes_with_its_chunks_alone(
    tmp_path, knowledge_base, fake_chat, settings, export
):
    settings.RAG_TOP_K = 2  # RAG_EXCERPT_CHARS stays 0, as with the openai provider
    evaluate(tmp_path, "plain")

    out = tmp_path / "drafts.jsonl"
    export("plain", str(out))

    [line] = [json.loads(text) for text in out.read_text().splitlines()]
    assert line["documents"][0] == (
        "docs/beta.md\nBeta\n\nBeta setup: the beta service starts with `beta serve` on port 9000."
    )


def test_a_draft_whose_search_had_a_written_passage_gets_its_excerpts_too(
    tmp_path, knowledge_base, fake_chat, settings, export, monkeypatch
):
    """With RAG_HYDE the run searched for the question and a passage: the export searches the
    same, or it finds other hits than the run recorded and leaves the excerpts out."""
    from ragapp.providers import fake_chat as fake_module

    passage = "To bring it up, run beta serve: the beta service then listens on port 9000."
    scripted = fake_module.FakeScript(
        hypothesize=lambda question: passage, relevance=lambda question, doc: 0.9
    )
    monkeypatch.setattr(
        fake_module, "fake_chat_model", lambda name: fake_module.FakeChatModel(script=scripted)
    )
    settings.RAG_HYDE = True
    settings.RAG_TOP_K = 2
    settings.RAG_EXCERPT_CHARS = 300
    run = evaluate(tmp_path, "hyde", "How do I launch the module that answers requests?")
    assert run.status == "answered"

    out = tmp_path / "drafts.jsonl"
    export("hyde", str(out))

    [line] = [json.loads(text) for text in out.read_text().splitlines()]
    assert line["documents"][0] == (
        "docs/beta.md\nBeta\n\n"
        "Beta setup: the beta service starts with `beta serve` on port 9000.\n\n[...] "
        "[...]\nBeta logs rotate daily; keep seven days."
    )


def test_a_second_read_after_a_refusal_is_not_counted_as_a_search(
    tmp_path, knowledge_base, fake_chat, load_bench
):
    from ragapp.models import TraceEvent

    run = evaluate(tmp_path, "reads")
    first = run.events.get(kind="retrieve")
    seq = run.events.order_by("-seq").first().seq
    TraceEvent.objects.create(run=run, seq=seq + 1, kind="retrieve", payload={"read_on": True})
    searched = load_bench("export_drafts").searches(run)
    assert [event.pk for event in searched] == [first.pk]
