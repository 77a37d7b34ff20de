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


def test_a_first_question_starts_a_thread_titled_after_it(users):
    run = run_create(query="How do I rotate the keys? " + "x" * 300, owner=users["owner"])

    assert run.thread.owner == users["owner"]
    assert run.thread.title == run.query[:200]
    assert list(run.thread.runs.all()) == [run]


def test_a_follow_up_joins_its_thread_and_moves_it_up(users):
    first = run_create(query="How do I rotate the keys?", owner=users["owner"])
    other = run_create(query="Something else?", owner=users["owner"])
    before = first.thread.updated_at

    second = run_create(query="and how often?", owner=users["owner"], thread=first.thread)

    first.thread.refresh_from_db()
    assert second.thread_id == first.thread_id
    assert list(first.thread.runs.order_by("created_at")) == [first, second]
    assert first.thread.updated_at > before
    assert first.thread.updated_at > other.thread.updated_at


@pytest.mark.parametrize("asker", ["other", "staff", None])
def test_nobody_posts_into_someone_elses_thread(users, asker):
    thread = run_create(query="How do I rotate the keys?", owner=users["owner"]).thread

    with pytest.raises(ValidationError, match="belongs to someone else"):
        run_create(query="and how often?", owner=users.get(asker), thread=thread)
    assert thread.runs.count() == 1
