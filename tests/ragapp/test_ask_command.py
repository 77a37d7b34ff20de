"""`manage.py ask` prints the live trace, then the answer with its verdict and sources."""

import re
from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from ragapp.models import QueryRun
from ragapp.services import run_create

pytestmark = pytest.mark.django_db


def ingest_a_guide(folder) -> None:
    """One page, "Guide > Restart", ingested from `folder`."""
    (folder / "guide.md").write_text(
        "# Guide\n\n## Restart\n\nRestart the worker with `systemctl restart worker`.\n"
    )
    call_command("ingest_docs", str(folder), stdout=StringIO(), stderr=StringIO())


# Events are published after their rows commit; a real transaction lets that happen here.
@pytest.mark.django_db(transaction=True)
def test_ask_prints_trace_answer_and_sources(tmp_path, fake_chat):
    ingest_a_guide(tmp_path)
    out = StringIO()
    call_command("ask", "How do I restart the worker?", stdout=out)
    text = out.getvalue()
    lines = text.splitlines()
    assert lines[0].startswith("[ 1] retrieve #1: 1 documents for 'How do I restart the worker?'")
    assert "grading document 1 of 1 ... relevance" in text
    assert "[ 7] done (answered)" in text
    assert "systemctl restart worker" in text
    assert "Verdict: answered, faithfulness 0.95, risk low" in text
    assert "  [1] " in text and "guide.md > Guide > Restart" in text
    assert QueryRun.objects.get().status == QueryRun.Status.ANSWERED


@pytest.mark.django_db(transaction=True)
def test_ask_says_which_names_no_page_mentions_and_prints_unjudged_passages(
    tmp_path, fake_chat, settings
):
    settings.RAG_REFUSE_UNKNOWN_NAMES = True
    ingest_a_guide(tmp_path)
    out = StringIO()
    call_command("ask", "How do I restart the worker with --graceful?", stdout=out)
    text = out.getvalue()
    assert "no document mentions --graceful" in text
    assert "The documentation does not mention `--graceful`" in text
    assert "Verdict: refused (no_relevant_documents)" in text
    assert "guide.md > Guide > Restart (not judged)" in text


def test_ask_rejects_an_empty_question(fake_chat):
    with pytest.raises(CommandError, match="empty"):
        call_command("ask", "   ", stdout=StringIO())


# Threads: --thread and --continue ask a follow-up, read with the thread's earlier turns.


@pytest.mark.django_db(transaction=True)
def test_ask_continues_a_thread_and_prints_the_condense_line(tmp_path, fake_chat):
    ingest_a_guide(tmp_path)
    out = StringIO()
    call_command("ask", "How do I restart the worker?", stdout=out)
    first = QueryRun.objects.get()
    assert f"thread {first.thread_id} (ask --continue to follow up)" in out.getvalue()

    out = StringIO()
    call_command("ask", "and check it is up?", "--continue", stdout=out)
    lines = out.getvalue().splitlines()
    assert lines[0] == (
        "[ 1] made the follow-up standalone: 'and check it is up?' → "
        "'and check it is up? (about: How do I restart the worker?)'"
        + lines[0].rsplit("'", 1)[1]  # its duration
    )
    assert re.fullmatch(r" \(\d+ ms\)", lines[0].rsplit("'", 1)[1])
    second = QueryRun.objects.latest("created_at")
    assert second.thread_id == first.thread_id

    call_command("ask", "and stop it?", "--thread", str(first.thread_id), stdout=StringIO())
    assert first.thread.runs.count() == 3


def test_ask_refuses_a_thread_it_cannot_continue(users, fake_chat):
    with pytest.raises(CommandError, match="no thread to continue"):
        call_command("ask", "and then?", "--continue", stdout=StringIO())
    with pytest.raises(CommandError, match="There is no thread 987654"):
        call_command("ask", "and then?", "--thread", "987654", stdout=StringIO())
    # A portal user's thread stays theirs.
    theirs = run_create(query="My question", owner=users["owner"])
    with pytest.raises(CommandError, match="belongs to a user"):
        call_command("ask", "and then?", "--thread", str(theirs.thread_id), stdout=StringIO())
    with pytest.raises(CommandError):
        call_command("ask", "and then?", "--thread", "abc", stdout=StringIO())
    assert QueryRun.objects.count() == 1


def test_continue_skips_the_threads_of_evaluations(fake_chat):
    from ragapp.models import Evaluation
    from ragapp.selectors import thread_latest_asked

    asked = run_create(query="Asked from the command line")
    evaluation = Evaluation.objects.create(name="golden", golden_path="g.jsonl", mode="full")
    run_create(query="A golden-set question", evaluation=evaluation)
    assert thread_latest_asked(user=None) == asked.thread
