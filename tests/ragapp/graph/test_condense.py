"""A follow-up is made standalone first (`condense`); a first question never pays for it."""

import pytest

from ragapp.graph.context import GraphLimits
from ragapp.models import QueryRun, TraceEvent
from ragapp.runs.runner import execute_run
from ragapp.services import run_create

pytestmark = pytest.mark.django_db

EARLIER = [("How do I start the beta service?", "Run `beta start` [1].")]


def ask(question, models, history=None):
    run = run_create(query=question)
    execute_run(run, models=models, limits=GraphLimits(top_k=2), history=history)
    run.refresh_from_db()
    return run


def events(run, kind=None):
    rows = TraceEvent.objects.filter(run=run).order_by("seq")
    return [e for e in rows if kind is None or e.kind == kind]


def test_a_first_question_makes_no_condense_call(knowledge_base, models, script):
    run = ask("How do I start the beta service?", models)

    assert "condense" not in script.calls
    assert not events(run, "condense")
    assert events(run)[0].kind == "retrieve"
    assert run.response_metadata["standalone_question"] == ""


def test_a_follow_up_is_answered_as_its_standalone_question(knowledge_base, models, script):
    script.condense = lambda earlier, followup: "Which port does the beta service listen on?"
    script.relevance = lambda question, doc: 0.9 if "beta" in doc.lower() else 0.1
    run = ask("and which port does it use?", models, history=EARLIER)

    first = events(run)[0]
    assert (first.kind, first.node, first.seq) == ("condense", "condense", 1)
    assert first.payload == {
        "original_question": "and which port does it use?",
        "standalone_question": "Which port does the beta service listen on?",
        "turns": 1,
        "fallback": False,
        "reason": "",
        "duration_ms": first.payload["duration_ms"],
    }
    assert first.duration_ms is not None
    # Retrieval searched for the standalone question, and the run still shows what was asked.
    assert events(run, "retrieve")[0].payload["query"] == (
        "Which port does the beta service listen on?"
    )
    assert run.query == "and which port does it use?"
    assert run.response_metadata["standalone_question"] == (
        "Which port does the beta service listen on?"
    )
    assert "condense" in run.response_metadata["node_ms"]
    assert run.status == QueryRun.Status.ANSWERED


def test_the_model_sees_the_earlier_turns(knowledge_base, models, script):
    seen = []
    script.condense = lambda earlier, followup: seen.append((earlier, followup)) or followup
    ask("and on Windows?", models, history=[*EARLIER, ("What about logs?", "In /var/log [1].")])

    assert seen == [(["How do I start the beta service?", "What about logs?"], "and on Windows?")]


def test_a_condense_failure_falls_back_to_the_question_as_asked(knowledge_base, models, script):
    def broken(earlier, followup):
        raise RuntimeError("the model server went away")

    script.condense = broken
    run = ask("and which port does it use?", models, history=EARLIER)

    condensed = events(run, "condense")[0].payload
    assert condensed["fallback"] is True
    assert condensed["standalone_question"] == "and which port does it use?"
    assert "the model server went away" in condensed["reason"]
    assert events(run, "retrieve")[0].payload["query"] == "and which port does it use?"
    assert run.status in (QueryRun.Status.ANSWERED, QueryRun.Status.REFUSED)  # not failed


def test_an_empty_reply_falls_back_too(knowledge_base, models, script):
    script.condense = lambda earlier, followup: "  \n"
    run = ask("and which port does it use?", models, history=EARLIER)

    condensed = events(run, "condense")[0].payload
    assert condensed["fallback"] is True and condensed["reason"] == "the model wrote no question"


def test_a_run_in_a_thread_is_read_with_the_threads_earlier_turns(knowledge_base, models, script):
    seen = []
    script.condense = lambda earlier, followup: seen.append(earlier) or "beta service port"
    first = ask("How do I start the beta service?", models, history=None)
    followup = run_create(query="and its port?", thread=first.thread)
    execute_run(followup, models=models, limits=GraphLimits(top_k=2))
    third = run_create(query="and on Windows?", thread=first.thread)
    execute_run(third, models=models, limits=GraphLimits(top_k=2))

    # The second turn is given as its standalone question, which reads without its own history.
    assert seen == [
        ["How do I start the beta service?"],
        ["How do I start the beta service?", "beta service port"],
    ]
    assert events(first)[0].kind == "retrieve"  # a thread's first question: no condense call


def test_only_the_last_turns_of_a_thread_are_read(knowledge_base, models, script, settings):
    settings.RAG_THREAD_TURNS = 1
    seen = []
    script.condense = lambda earlier, followup: seen.append(earlier) or followup
    first = ask("How do I start the beta service?", models, history=None)
    for question in ("What about alpha?", "and its port?"):
        execute_run(
            run_create(query=question, thread=first.thread),
            models=models,
            limits=GraphLimits(top_k=2),
        )

    assert seen[-1] == ["What about alpha?"]


def test_a_model_that_repeats_the_earlier_question_gets_both_asked(knowledge_base, models, script):
    script.condense = lambda earlier, followup: "how do I start the BETA service"
    run = ask("and which port does it use?", models, history=EARLIER)

    condensed = events(run, "condense")[0].payload
    assert condensed["fallback"] is False
    assert condensed["standalone_question"] == (
        "How do I start the beta service? and which port does it use?"
    )
    assert condensed["reason"].startswith("the model repeated an earlier question")
    assert events(run, "retrieve")[0].payload["query"] == condensed["standalone_question"]


def test_a_follow_up_left_unchanged_with_a_reference_gets_the_earlier_question(
    knowledge_base, models, script
):
    script.condense = lambda earlier, followup: followup  # nothing resolved
    run = ask("Which port does it use?", models, history=EARLIER)

    condensed = events(run, "condense")[0].payload
    assert condensed["standalone_question"] == (
        "How do I start the beta service? Which port does it use?"
    )
    assert condensed["reason"].startswith("the model left a reference unresolved")


def test_a_follow_up_that_stands_alone_is_kept_as_the_model_returned_it(
    knowledge_base, models, script
):
    script.condense = lambda earlier, followup: followup
    run = ask("Which port does the beta service use?", models, history=EARLIER)

    condensed = events(run, "condense")[0].payload
    assert condensed["standalone_question"] == "Which port does the beta service use?"
    assert condensed["reason"] == ""
