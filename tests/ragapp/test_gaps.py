"""The gaps page, its admin view, and the golden-set export through `eval_rag`."""

import datetime as dt
import json
import random
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse
from django.utils import timezone

from ragapp.gaps import gaps_find
from ragapp.models import Evaluation, Feedback, QueryRun
from ragapp.providers import clear_embeddings_cache, get_embeddings
from ragapp.services import run_create
from ragapp.services.gaps import question_vectors_ensure
from tests.ragapp.conftest import PASSWORD
from tests.ragapp.gap_questions import GROUPS

pytestmark = pytest.mark.django_db

START = timezone.make_aware(dt.datetime(2026, 11, 1, 9, 0))


def make_run(query, *, status="refused", reason="no_relevant_documents", day=0, **meta):
    run = run_create(query=query)
    QueryRun.objects.filter(pk=run.pk).update(
        status=status,
        response_metadata={"refusal_reason": reason if status == "refused" else "", **meta},
        created_at=START + dt.timedelta(days=day),
    )
    run.refresh_from_db()
    return run


def grouped(gaps) -> set[frozenset[str]]:
    return {frozenset(q.question for q in gap.questions) for gap in gaps}


@pytest.fixture
def minilm(settings):
    """The packaged embedding model, whose scale RAG_GAPS_SIMILARITY was measured on."""
    settings.RAG_EMBEDDING_PROVIDER = "local"
    clear_embeddings_cache()
    yield get_embeddings()
    clear_embeddings_cache()


def test_questions_group_by_meaning_into_the_known_groups(minilm):
    questions = [q for group in GROUPS.values() for q in group]
    random.Random(7).shuffle(questions)  # the order asked must not matter
    for day, question in enumerate(questions):
        make_run(question, day=day)
    question_vectors_ensure(questions=questions, embeddings=minilm)

    gaps = gaps_find(model_id=minilm.model_id)

    assert grouped(gaps) == {frozenset(group) for group in GROUPS.values()}
    assert [gap.count for gap in gaps] == [4, 3, 3, 3, 3]  # largest first


def test_a_gap_counts_its_runs_and_shows_examples_documents_and_reasons(fake_embeddings):
    passage = {"title": "Auth", "source_path": "auth.md", "url": "https://d.example/auth.html"}
    make_run("Can I log in with SAML?", day=0, passages=[passage])
    make_run("Can I log in with SAML?", status="failed", day=3)
    last = make_run("can i  log in with saml?", status="answered", day=5)
    Feedback.objects.create(run=last, user=_user("u"), rating=Feedback.Rating.DOWN)
    make_run("Answered and liked", status="answered", day=1)  # not a gap
    evaluation = Evaluation.objects.create(name="e", golden_path="g", mode="full")
    QueryRun.objects.filter(pk=make_run("Can I log in with SAML?", day=2).pk).update(
        evaluation=evaluation  # an evaluation's refusals are not users' gaps
    )
    question_vectors_ensure(
        questions=list(QueryRun.objects.values_list("query", flat=True)), embeddings=fake_embeddings
    )

    [gap] = gaps_find(model_id=fake_embeddings.model_id)

    assert gap.count == 3
    assert (gap.first_asked, gap.last_asked) == (START, START + dt.timedelta(days=5))
    # One example per wording; letter case and spacing do not make another one. Latest first.
    assert [q.run_id for q in gap.examples] == [str(last.pk)]
    assert gap.reasons == {"no_documentation": 1, "failed": 1, "unhelpful": 1}
    assert gap.documents == [
        {"title": "Auth", "path": "auth.md", "url": "https://d.example/auth.html", "count": 1}
    ]


def test_filters_by_date_range_and_reason(fake_embeddings):
    make_run("Is there a Helm chart?", day=0)
    make_run("Is there a Helm chart?", status="failed", day=10)
    make_run("Is there a Slack bot?", reason="unfaithful", day=20)
    question_vectors_ensure(
        questions=list(QueryRun.objects.values_list("query", flat=True)), embeddings=fake_embeddings
    )
    model = fake_embeddings.model_id
    in_range = gaps_find(model_id=model, since=dt.date(2026, 11, 5), until=dt.date(2026, 11, 15))
    assert [(g.question, g.count) for g in in_range] == [("is there a helm chart?", 1)]
    refused = gaps_find(model_id=model, reasons=["refused"])
    assert [g.question for g in refused] == ["is there a slack bot?"]
    assert sum(g.count for g in gaps_find(model_id=model, reasons=["failed", "refused"])) == 2


def _user(name, **extra):
    from django.contrib.auth import get_user_model
    from django.contrib.auth.hashers import make_password

    return get_user_model().objects.create(username=name, password=make_password(PASSWORD), **extra)


def test_the_page_the_download_and_the_admin_view_are_for_staff_only(client, fake_embeddings):
    run = make_run("How do I set up SAML single sign-on?")
    pages = [reverse("gaps"), reverse("gaps-export"), reverse("admin:ragapp_gaps")]
    for url in pages:
        assert client.get(url).status_code == 302  # anonymous: to a sign-in page
    client.force_login(_user("plain"))
    for url in pages:
        response = client.get(url)
        assert response.status_code == 302 and "login" in response["Location"]
    client.force_login(_user("boss", is_staff=True))

    page = client.get(reverse("gaps"))
    assert page.status_code == 200
    assert reverse("run-detail", args=[run.pk]).encode() in page.content
    assert b"How do I set up SAML single sign-on?" in page.content
    assert b'href="/gaps/"' in page.content  # the staff nav link
    admin_page = client.get(reverse("admin:ragapp_gaps"))
    assert admin_page.status_code == 200 and b"SAML single sign-on" in admin_page.content

    download = client.get(reverse("gaps-export"))
    assert download["Content-Disposition"] == 'attachment; filename="golden-from-gaps.jsonl"'
    out = StringIO()
    call_command("export_golden", stdout=out)
    assert download.content.decode() == out.getvalue()  # the same file as the command's


def test_plain_users_see_no_gaps_link(client):
    client.force_login(_user("plain"))
    assert b'href="/gaps/"' not in client.get(reverse("history")).content


def test_export_round_trip_through_eval_rag(tmp_path, knowledge_base, fake_embeddings):
    make_run("How do I set up SAML single sign-on?", day=0)
    make_run("how do I set up SAML single sign-on?", day=1)
    liked = make_run(
        "Which port does the beta service listen on?",
        status="answered",
        day=2,
        sources=[
            {"n": 1, "cited": True, "source_path": "docs/beta.md", "heading_path": "Beta"},
            {"n": 2, "cited": False, "source_path": "docs/alpha.md", "heading_path": "Alpha"},
        ],
    )
    Feedback.objects.create(run=liked, user=_user("u"), rating=Feedback.Rating.UP)
    golden = tmp_path / "golden.jsonl"
    call_command("export_golden", "--output", str(golden), stdout=StringIO(), stderr=StringIO())
    lines = [json.loads(line) for line in golden.read_text().splitlines()]
    gap, helpful = lines
    assert (gap["question"], gap["answerable"], gap["sources"]) == (
        "how do I set up SAML single sign-on?",
        False,
        [],
    )
    assert (helpful["answerable"], helpful["sources"], helpful["facts"]) == (
        True,
        ["docs/beta.md"],  # the documents the answer cited
        [],
    )

    with pytest.raises(CommandError, match=r"line 2: unfinished: fill in 'facts'"):
        call_command("eval_rag", str(golden), "--retrieval-only", stdout=StringIO())

    helpful["facts"] = ["9000"]
    del helpful["todo"]
    golden.write_text("".join(json.dumps(line) + "\n" for line in (gap, helpful)))
    out = StringIO()
    call_command(
        "eval_rag", str(golden), "--retrieval-only", "--output", str(tmp_path / "r"), stdout=out
    )
    assert "2 questions (1 answerable)" in out.getvalue()


def test_export_golden_filters_by_kind_and_date(fake_embeddings):
    make_run("Old gap", day=0)
    make_run("New gap", day=9)
    out = StringIO()
    call_command("export_golden", "--gaps", "--since", "2026-11-05", stdout=out)
    assert [json.loads(line)["question"] for line in out.getvalue().splitlines()] == ["New gap"]
    out = StringIO()
    call_command("export_golden", "--helpful", stdout=out)
    assert out.getvalue() == ""
    with pytest.raises(CommandError, match="Not a date"):
        call_command("export_golden", "--since", "yesterday", stdout=StringIO())
