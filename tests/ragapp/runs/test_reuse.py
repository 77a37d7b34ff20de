"""Answer reuse: a repeated question gets an earlier verified answer at once, as an audited run.

Originals go through the real graph with the fake models; repeats go through `run_submit` (what
the portal and the API call) and, at the end, through POST /api/rag and `manage.py ask`.
"""

from io import StringIO

import pytest
from django.core.management import call_command
from rest_framework.test import APIClient

from ingestion.services import ingest_paths
from ragapp.models import QueryRun
from ragapp.runs.runner import execute_run
from ragapp.runs.submit import run_submit
from ragapp.selectors import knowledge_base_version
from ragapp.services import feedback_submit, run_create
from tests.ragapp.api.conftest import token_client

pytestmark = pytest.mark.django_db

QUESTION = "How do I start the beta service?"


@pytest.fixture
def reuse(settings, knowledge_base, fake_chat):
    settings.RAG_REUSE = "exact"
    settings.RAG_REUSE_ACROSS_USERS = True
    return settings


def answered(question: str = QUESTION, owner=None) -> QueryRun:
    """A run the graph really answered (fake models), faithful, as a later repeat finds it."""
    run = run_create(query=question, owner=owner)
    execute_run(run)
    run.refresh_from_db()
    assert run.status == QueryRun.Status.ANSWERED and run.faithfulness_score >= 0.8
    return run


def kinds(run: QueryRun) -> list[str]:
    return list(run.events.order_by("seq").values_list("kind", flat=True))


def reuse_payload(run: QueryRun) -> dict:
    return run.events.get(kind="reuse").payload


def test_an_exact_repeat_is_answered_at_once_from_the_verified_run(reuse, users):
    original = answered(owner=users["owner"])

    repeat = run_submit(query="  how do I START the beta   service? ", owner=users["owner"])

    repeat.refresh_from_db()
    assert repeat.status == QueryRun.Status.ANSWERED and repeat.pk != original.pk
    assert repeat.reused_from_id == original.pk
    assert repeat.answer == original.answer
    assert repeat.faithfulness_score == original.faithfulness_score
    assert repeat.response_metadata["sources"] == original.response_metadata["sources"]
    assert repeat.response_metadata["tokens"] == {}  # no model was called
    assert kinds(repeat) == ["reuse", "answer", "done"]
    assert reuse_payload(repeat) == {
        "reused_run": str(original.pk),
        "match": "exact",
        "similarity": 1.0,
        "index_version": knowledge_base_version(),
        "same_owner": True,
        "question": QUESTION,
    }
    answer = repeat.events.get(kind="answer").payload
    assert answer["answer"] == original.answer and answer["status"] == "answered"
    assert repeat.thread_id != original.thread_id  # a new conversation of its own

    # A repeat of the repeat names the original, never the reuse.
    again = run_submit(query=QUESTION, owner=users["owner"])
    assert again.reused_from_id == original.pk
    assert reuse_payload(again)["reused_run"] == str(original.pk)


def test_a_near_repeat_is_reused_only_in_near_mode_and_within_the_threshold(reuse, users):
    original = answered(owner=users["owner"])
    paraphrase = "How can I start the beta service?"  # fake embedder: 6 of 7 words shared

    assert run_submit(query=paraphrase, owner=users["owner"]).status == "queued"  # exact mode

    reuse.RAG_REUSE = "near"
    reuse.RAG_REUSE_NEAR_THRESHOLD = 0.8
    near = run_submit(query=paraphrase, owner=users["owner"])
    assert near.status == "answered" and near.reused_from_id == original.pk
    payload = reuse_payload(near)
    assert payload["match"] == "near" and 0.8 <= payload["similarity"] < 1.0

    other = run_submit(query="Where do the beta logs rotate to?", owner=users["owner"])
    assert other.status == "queued" and other.reused_from is None

    reuse.RAG_REUSE_NEAR_THRESHOLD = 0.99  # the same paraphrase, a stricter threshold
    assert run_submit(query=paraphrase, owner=users["owner"]).status == "queued"


def test_an_ingest_that_changes_the_knowledge_base_stops_reuse(
    reuse, users, tmp_path, fake_embeddings
):
    answered(owner=users["owner"])
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "delta.md").write_text("# Delta\n\nDelta runs on port 7000.\n")
    before = knowledge_base_version()

    ingest_paths(paths=[docs], embeddings=fake_embeddings)
    assert knowledge_base_version() > before
    assert run_submit(query=QUESTION, owner=users["owner"]).status == "queued"

    # An ingest that changes nothing keeps the version, so a new answer is reusable again.
    fresh_original = answered(owner=users["owner"])
    unchanged = knowledge_base_version()
    ingest_paths(paths=[docs], embeddings=fake_embeddings)
    assert knowledge_base_version() == unchanged
    assert run_submit(query=QUESTION, owner=users["owner"]).reused_from_id == fresh_original.pk

    # Pruning a document is a change too.
    (docs / "delta.md").unlink()
    ingest_paths(paths=[docs], embeddings=fake_embeddings, prune=True)
    assert knowledge_base_version() > unchanged
    assert run_submit(query=QUESTION, owner=users["owner"]).status == "queued"


def test_an_unhelpful_rating_by_anyone_stops_reuse(reuse, users):
    original = answered(owner=users["owner"])
    feedback_submit(run=original, user=users["owner"], rating=1)
    repeat = run_submit(query=QUESTION, owner=users["other"])
    assert repeat.reused_from_id == original.pk  # thumbs up: still reused

    # Someone who got the reused answer finds it unhelpful: the original is not reused again.
    feedback_submit(run=repeat, user=users["other"], rating=-1)
    assert run_submit(query=QUESTION, owner=users["owner"]).status == "queued"

    second = answered(owner=users["owner"])
    feedback_submit(run=second, user=users["staff"], rating=-1)
    assert run_submit(query=QUESTION, owner=users["owner"]).status == "queued"


def test_fresh_bypasses_reuse(reuse, users):
    answered(owner=users["owner"])
    fresh = run_submit(query=QUESTION, owner=users["owner"], fresh=True)
    assert fresh.status == "queued" and fresh.reused_from is None and kinds(fresh) == []


def test_only_verified_first_questions_of_real_runs_are_reused(reuse, users, settings):
    original = answered(owner=users["owner"])
    follow_up = run_create(query=QUESTION, owner=users["owner"], thread=original.thread)
    execute_run(follow_up)
    # A follow-up is never reused, nor answered by reuse: its meaning depends on its thread.
    assert run_submit(query=QUESTION, owner=users["owner"], thread=original.thread).status == (
        "queued"
    )
    settings.RAG_REUSE_MAX_AGE_SECONDS = 0  # everything is too old
    assert run_submit(query=QUESTION, owner=users["owner"]).status == "queued"
    settings.RAG_REUSE_MAX_AGE_SECONDS = 3600
    QueryRun.objects.filter(pk=original.pk).update(status="refused")
    assert run_submit(query=QUESTION, owner=users["owner"]).status == "queued"


def test_another_users_answer_is_reused_without_their_identity_or_feedback(reuse, users):
    original = answered(owner=users["owner"])
    feedback_submit(run=original, user=users["owner"], rating=1, comment="owner-secret-comment")

    response = token_client(users["other"]).post("/api/rag", {"query": QUESTION}, format="json")
    assert response.status_code == 202, response.content
    repeat = QueryRun.objects.get(pk=response.json()["id"])
    assert repeat.status == "answered" and repeat.reused_from_id == original.pk
    assert repeat.owner == users["other"] and repeat.feedback.count() == 0

    payload = reuse_payload(repeat)
    assert payload["same_owner"] is False and "question" not in payload
    other = token_client(users["other"])
    shown = other.get(f"/api/runs/{repeat.pk}").content.decode()
    shown += other.get(f"/api/runs/{repeat.pk}/events").content.decode()
    assert '"owner":"other"' in shown.replace(" ", "")
    assert "owner-secret-comment" not in shown and '"owner":"owner"' not in shown
    assert other.get(f"/api/runs/{original.pk}").status_code == 404  # the link is no way in

    reuse.RAG_REUSE_ACROSS_USERS = False
    assert run_submit(query=QUESTION, owner=users["other"]).status == "queued"
    assert run_submit(query=QUESTION, owner=users["owner"]).reused_from_id == original.pk


def test_evaluation_runs_are_never_reused(reuse, users):
    from ragapp.services import evaluation_create

    evaluation = evaluation_create(name="e", golden_path="g.jsonl", mode="full", settings={})
    run = run_create(query=QUESTION, evaluation=evaluation)
    execute_run(run)
    assert QueryRun.objects.get(pk=run.pk).status == "answered"
    assert run_submit(query=QUESTION, owner=users["owner"]).status == "queued"


def test_ask_reuses_and_fresh_runs_the_graph(reuse, users, django_capture_on_commit_callbacks):
    answered()  # ask's runs have no owner
    out = StringIO()
    with django_capture_on_commit_callbacks(execute=True):  # ask prints events once committed
        call_command("ask", QUESTION, stdout=out)
    assert "answered earlier: reusing run" in out.getvalue()
    out = StringIO()
    with django_capture_on_commit_callbacks(execute=True):
        call_command("ask", QUESTION, "--fresh", stdout=out)
    assert "answered earlier" not in out.getvalue() and "retrieve #1" in out.getvalue()


def test_the_api_says_answered_earlier_and_takes_fresh(reuse, users):
    original = answered(owner=users["owner"])
    client = APIClient()
    client.force_authenticate(users["owner"])
    reused = client.post("/api/rag", {"query": QUESTION}, format="json").json()
    assert reused["status"] == "answered"
    earlier = client.get(reused["urls"]["run"]).json()["answered_earlier"]
    assert earlier["run"] == str(original.pk) and earlier["same_owner"] is True
    assert earlier["url"].endswith(f"/api/runs/{original.pk}") and earlier["match"] == "exact"
    other = APIClient()
    other.force_authenticate(users["other"])
    theirs = other.post("/api/rag", {"query": QUESTION}, format="json").json()
    earlier = other.get(theirs["urls"]["run"]).json()["answered_earlier"]
    assert earlier["same_owner"] is False and earlier["url"] is None
    assert client.get(f"/api/runs/{original.pk}").json()["answered_earlier"] is None
    fresh = client.post("/api/rag", {"query": QUESTION, "fresh": True}, format="json").json()
    assert fresh["status"] == "queued"


def test_the_run_page_says_answered_earlier_links_it_and_offers_a_fresh_answer(reuse, users):
    from django.test import Client

    original = answered(owner=users["owner"])
    mine = run_submit(query=QUESTION, owner=users["owner"])
    theirs = run_submit(query=QUESTION, owner=users["other"])
    client = Client()
    client.force_login(users["owner"])
    page = client.get(f"/runs/{mine.pk}/").content.decode()
    assert "answered earlier" in page and f'href="/runs/{original.pk}/"' in page
    assert 'name="fresh" value="1"' in page and "Fresh answer" in page

    response = client.post("/", {"query": QUESTION, "fresh": "1"})
    assert response.status_code == 302
    fresh = QueryRun.objects.filter(owner=users["owner"]).first()  # newest first
    assert fresh.status == "queued" and fresh.reused_from is None
    assert client.post("/", {"query": QUESTION}).status_code == 302  # without: reused again
    assert QueryRun.objects.filter(owner=users["owner"]).first().reused_from_id == original.pk

    client.force_login(users["other"])
    page = client.get(f"/runs/{theirs.pk}/").content.decode()
    assert "answered earlier" in page and "for another user" in page
    assert f"/runs/{original.pk}/" not in page  # no link they could not open
