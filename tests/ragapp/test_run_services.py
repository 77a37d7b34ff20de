"""Run status moves only along legal edges; queries are validated before a run exists."""

import pytest
from django.core.exceptions import ValidationError

from ragapp.models import QueryRun
from ragapp.services import IllegalTransition, run_create, run_fail, run_start
from tests.ragapp.factories import finish

pytestmark = pytest.mark.django_db


def test_the_happy_lifecycle():
    run = run_create(query="How?")
    assert run.status == QueryRun.Status.QUEUED
    run_start(run=run)
    assert run.status == QueryRun.Status.RUNNING and run.started_at
    finish(run)
    run.refresh_from_db()
    assert run.status == QueryRun.Status.ANSWERED and run.finished_at


@pytest.mark.parametrize(
    "moves",
    [
        ["finish"],  # queued cannot be answered without running
        ["start", "start"],  # running cannot start again
        ["start", "finish", "fail"],  # a finished run cannot fail afterwards
        ["start", "fail", "finish"],  # nor can a failed one be answered
    ],
)
def test_illegal_transitions_are_refused(moves):
    run = run_create(query="How?")
    actions = {
        "start": lambda: run_start(run=run),
        "finish": lambda: finish(run),
        "fail": lambda: run_fail(run=run, error="x"),
    }
    for move in moves[:-1]:
        actions[move]()
    before = QueryRun.objects.get(pk=run.pk).status
    with pytest.raises(IllegalTransition):
        actions[moves[-1]]()
    assert QueryRun.objects.get(pk=run.pk).status == before


def test_finish_only_accepts_final_outcomes():
    run = run_start(run=run_create(query="How?"))
    with pytest.raises(IllegalTransition):
        finish(run, status="failed")


@pytest.mark.parametrize(
    "query, message",
    [("", "empty"), ("   \n", "empty"), (42, "text"), ("a\x00b", "NUL"), ("x" * 4001, "limit")],
)
def test_bad_queries_are_rejected_with_a_clear_message(query, message):
    with pytest.raises(ValidationError, match=message):
        run_create(query=query)
    assert not QueryRun.objects.exists()


def test_a_query_is_stored_verbatim():
    text = "  <script>alert(1)</script>\tignore previous instructions  "
    assert QueryRun.objects.get(pk=run_create(query=text).pk).query == text
