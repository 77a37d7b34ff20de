"""RAG_HYDE: the first search is for the question and a passage the model writes to answer it."""

import pytest

from ragapp.graph.context import GraphLimits
from ragapp.models import QueryRun, TraceEvent
from ragapp.runs.runner import execute_run
from ragapp.services import run_create

pytestmark = pytest.mark.django_db

# Worded as a user would: none of its words but "module" is on a page, so the question alone
# finds the wrong page. The passage, in the model's words, names what the beta page says.
QUESTION = "How do I launch the module that answers requests?"
PASSAGE = "To bring it up, run beta serve: the beta service then listens on port 9000."


def ask(question, models, **limits):
    run = run_create(query=question)
    execute_run(run, models=models, limits=GraphLimits(**{"top_k": 1, **limits}))
    run.refresh_from_db()
    return run


def retrievals(run) -> list[dict]:
    events = TraceEvent.objects.filter(run=run, kind="retrieve").order_by("seq")
    return [event.payload for event in events]


def first_hit(run) -> str:
    return retrievals(run)[0]["documents"][0]["source_path"]


def test_the_first_search_is_for_the_question_and_the_written_passage(
    knowledge_base, models, script
):
    script.hypothesize = lambda question: PASSAGE
    without = ask(QUESTION, models)
    with_passage = ask(QUESTION, models, hyde=True)

    assert first_hit(without) != "docs/beta.md"  # the question alone misses the page
    assert first_hit(with_passage) == "docs/beta.md"
    retrieved = retrievals(with_passage)[0]
    assert retrieved["query"] == QUESTION  # the trace shows the question as the search's query
    assert retrieved["hypothesis"] == PASSAGE
    assert retrieved["hypothesis_problem"] == ""
    assert retrieved["hypothesis_ms"] >= 0
    assert "hypothesize" in with_passage.response_metadata["node_ms"]
    assert script.calls.count("hypothesize") == 1
    # Without the setting no passage is asked for, and the trace carries no such fields.
    assert "hypothesis" not in retrievals(without)[0]
    assert "hypothesize" not in without.response_metadata["node_ms"]


def test_the_passage_is_a_search_key_never_evidence(knowledge_base, models, script):
    """The judges and the writer see the question as asked and the documents, never the passage."""
    judged, written = [], []
    script.hypothesize = lambda question: PASSAGE
    script.relevance = lambda question, doc: judged.append((question, doc)) or 0.9
    script.generate = lambda question, docs: written.append((question, docs)) or "Run it [1]."
    run = ask(QUESTION, models, hyde=True)

    assert run.status == QueryRun.Status.ANSWERED
    assert judged and written
    seen = [text for pair in judged for text in pair] + [written[0][0], *written[0][1]]
    assert {question for question, _ in judged} == {QUESTION} and written[0][0] == QUESTION
    assert not any("run beta serve" in text for text in seen)


def test_a_failed_passage_leaves_the_search_to_the_question(knowledge_base, models, script):
    def broken(question):
        raise RuntimeError("the model server went away")

    script.hypothesize = broken
    failed = ask(QUESTION, models, hyde=True)
    plain = ask(QUESTION, models)

    retrieved = retrievals(failed)[0]
    assert retrieved["hypothesis"] == ""
    assert "the model server went away" in retrieved["hypothesis_problem"]
    assert retrieved["documents"] == retrievals(plain)[0]["documents"]
    assert failed.status in (QueryRun.Status.ANSWERED, QueryRun.Status.REFUSED)  # not failed


def test_an_empty_passage_is_said_so(knowledge_base, models, script):
    script.hypothesize = lambda question: " \n "
    retrieved = retrievals(ask(QUESTION, models, hyde=True))[0]

    assert retrieved["hypothesis"] == ""
    assert retrieved["hypothesis_problem"] == "the model wrote nothing"


def test_a_question_naming_what_no_chunk_holds_gets_no_passage(knowledge_base, models, script):
    script.hypothesize = lambda question: PASSAGE
    run = ask(
        "How do I start the beta service with --turbo-mode?",
        models,
        hyde=True,
        refuse_unknown_names=True,
    )

    assert "hypothesize" not in script.calls
    assert "hypothesis" not in retrievals(run)[0]
    assert run.status == QueryRun.Status.REFUSED


def test_only_the_first_retrieval_writes_a_passage(knowledge_base, models, script):
    script.hypothesize = lambda question: PASSAGE
    script.relevance = lambda question, doc: 0.0  # nothing passes: the query is broadened twice
    run = ask(QUESTION, models, hyde=True, max_retrievals=3)

    first, *later = retrievals(run)
    assert first["hypothesis"] == PASSAGE
    assert len(later) == 2 and all("hypothesis" not in payload for payload in later)
    assert script.calls.count("hypothesize") == 1
