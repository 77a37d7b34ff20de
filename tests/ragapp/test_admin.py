"""The Django admin: every model's list, search and detail pages, and read-only traces."""

import pytest
from django.urls import reverse

from ragapp.models import Chunk, Document, Feedback, QueryRun, TraceEvent
from ragapp.services import run_create

pytestmark = pytest.mark.django_db


@pytest.fixture
def run(admin_user, vector):
    document = Document.objects.create(
        source_path="docs/a.md",
        title="Alpha guide",
        format="markdown",
        content_hash="h",
        size_bytes=10,
    )
    Chunk.objects.create(
        document=document,
        ordinal=0,
        text="Alpha text",
        embedding=vector,
    )
    run = run_create(owner=admin_user, query="What is alpha?")
    QueryRun.objects.filter(pk=run.pk).update(status="answered")
    TraceEvent.objects.create(
        run=run,
        seq=1,
        kind="retrieve",
        node="retrieve",
        payload={"docs_found": 1, "iteration": 1, "query": "What is alpha?", "mode": "vector"},
    )
    Feedback.objects.create(run=run, user=admin_user, rating=1, comment="useful")
    return run


@pytest.mark.parametrize(
    "model, search",
    [
        ("document", "Alpha"),
        ("chunk", "alpha"),
        ("queryrun", "alpha"),
        ("feedback", "useful"),
        ("embeddingindex", ""),
    ],
)
def test_changelists_render_and_search(admin_client, run, model, search):
    url = reverse(f"admin:ragapp_{model}_changelist")
    response = admin_client.get(url, {"q": search} if search else {})
    assert response.status_code == 200
    if search:
        assert response.context["cl"].result_count == 1
        miss = admin_client.get(url, {"q": "zzz-no-such-thing"})
        assert miss.context["cl"].result_count == 0


def test_run_page_shows_its_trace_read_only(admin_client, run):
    response = admin_client.get(reverse("admin:ragapp_queryrun_change", args=[run.pk]))
    body = response.content.decode()
    assert response.status_code == 200
    assert "retrieve" in body and "docs_found" in body
    # The readable description column (HTML-escaped quotes).
    assert "retrieve #1: 1 documents for &#x27;What is alpha?&#x27; by vector search" in body
    assert 'name="events-0-kind"' not in body  # inline rows are not editable
    post = admin_client.post(reverse("admin:ragapp_queryrun_change", args=[run.pk]), {})
    assert post.status_code == 403


def test_document_page_lists_its_chunks(admin_client, run):
    document = Document.objects.get()
    response = admin_client.get(reverse("admin:ragapp_document_change", args=[document.pk]))
    assert response.status_code == 200
    assert "Alpha text" in response.content.decode()


def test_admin_requires_staff(client, django_user_model):
    django_user_model.objects.create_user("support", password="pw-12345-long")
    client.login(username="support", password="pw-12345-long")
    response = client.get(reverse("admin:ragapp_queryrun_changelist"))
    assert response.status_code == 302
