"""The portal pages through Django's test client: sign-in, asking, run pages, sanitized answers."""

import json
import re

import pytest
from django.test import Client
from django.urls import reverse

from ragapp.models import QueryRun
from ragapp.services import run_create, run_start
from tests.ragapp.conftest import PASSWORD
from tests.ragapp.factories import finished_run

pytestmark = pytest.mark.django_db


def signed_in(user, *, csrf=False) -> Client:
    client = Client(enforce_csrf_checks=csrf)
    client.force_login(user)
    return client


def answered(owner, answer, *, sources=()):
    return finished_run(
        owner=owner,
        query="How do I restart?",
        answer=answer,
        metadata={"sources": list(sources), "total_ms": 12, "models": {}},
        retrieve={"iteration": 1, "docs_found": 1, "query": "q"},
    )


def test_every_page_needs_sign_in(client, users):
    run = run_create(query="q", owner=users["owner"])
    for url in [
        reverse("ask"),
        reverse("run-detail", args=[run.pk]),
        reverse("run-answer", args=[run.pk]),
    ]:
        response = client.get(url)
        assert response.status_code == 302 and "/accounts/login/" in response["Location"]


def test_sign_in_page_works(client, users):
    assert client.get(reverse("login")).status_code == 200
    response = client.post(reverse("login"), {"username": "owner", "password": PASSWORD})
    assert response.status_code == 302 and response["Location"] == reverse("ask")


def test_ask_page_shows_form_and_recent_runs(users):
    run_create(query="An earlier question", owner=users["owner"])
    run_create(query="Someone else's question", owner=users["other"])
    body = signed_in(users["owner"]).get(reverse("ask")).content.decode()
    assert 'name="query"' in body and "csrfmiddlewaretoken" in body
    assert "An earlier question" in body and "Someone else" not in body


def test_asking_needs_a_csrf_token(users):
    client = signed_in(users["owner"], csrf=True)
    assert client.post(reverse("ask"), {"query": "How?"}).status_code == 403
    assert not QueryRun.objects.exists()
    page = client.get(reverse("ask")).content.decode()
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page).group(1)
    response = client.post(reverse("ask"), {"query": "How?", "csrfmiddlewaretoken": token})
    run = QueryRun.objects.get()
    assert response.status_code == 302
    assert response["Location"] == reverse("run-detail", args=[run.pk])
    assert run.owner == users["owner"] and run.status == QueryRun.Status.QUEUED


@pytest.mark.parametrize("query, message", [("   ", "empty"), ("x" * 100_000, "limit")])
def test_bad_questions_are_refused_clearly(users, query, message):
    response = signed_in(users["owner"]).post(reverse("ask"), {"query": query})
    assert response.status_code == 400
    assert message in response.content.decode()
    assert not QueryRun.objects.exists()


@pytest.mark.parametrize("who, status", [("owner", 200), ("staff", 200), ("other", 404)])
def test_run_pages_belong_to_their_owner(users, who, status):
    run = answered(users["owner"], "Restart it.")
    client = signed_in(users[who])
    assert client.get(reverse("run-detail", args=[run.pk])).status_code == status
    assert client.get(reverse("run-answer", args=[run.pk])).status_code == status


def test_run_page_embeds_the_stored_trace_for_the_script(users):
    run = answered(users["owner"], "Restart it.")
    body = signed_in(users["owner"]).get(reverse("run-detail", args=[run.pk])).content.decode()
    data = re.search(r'<script id="trace-data" type="application/json">(.*?)</script>', body, re.S)
    assert [e["kind"] for e in json.loads(data.group(1))] == ["retrieve"]
    assert f'data-channel="run-{run.pk}"' in body and 'data-last-seq="1"' in body


def test_answers_are_rendered_as_sanitized_markdown(users):
    answer = (
        "Run `restart` [1].\n\n<script>alert('x')</script><img src=x onerror=alert(1)>\n\n"
        "```bash\nsystemctl restart worker\n```\n\n[click](javascript:alert(1))"
    )
    source = {
        "n": 1,
        "chunk_id": 7,
        "title": "<b onmouseover=alert(1)>Guide</b>",
        "heading_path": "Ops",
        "source_path": "docs/ops.md",
        "similarity": 0.8,
        "cited": True,
    }
    run = answered(users["owner"], answer, sources=[source])
    body = signed_in(users["owner"]).get(reverse("run-answer", args=[run.pk])).content.decode()
    assert "<script>" not in body and "onerror=" not in body.replace("onerror=alert(1)&gt;", "")
    assert "&lt;script&gt;" in body  # shown as text, inert
    assert 'href="javascript' not in body
    assert '<a href="#source-1"' in body  # the citation links to its source
    assert '<pre class="highlight">' in body and "systemctl" in body
    assert "&lt;b onmouseover=alert(1)&gt;Guide&lt;/b&gt;" in body  # document text escaped
    assert "badge-faithful" in body
    assert "12 ms" in body and "0 tokens" in body  # response metadata


def test_a_failed_run_shows_its_error(users):
    from ragapp.services import run_fail

    run = run_fail(run=run_start(run=run_create(query="q", owner=users["owner"])), error="Boom")
    body = signed_in(users["owner"]).get(reverse("run-answer", args=[run.pk])).content.decode()
    assert "The run failed." in body and "Boom" in body


def test_feedback_is_stored_and_replaced(users):
    from ragapp.models import Feedback

    run = answered(users["owner"], "Restart it.")
    client = signed_in(users["owner"])
    url = reverse("run-feedback", args=[run.pk])
    assert client.post(url, {"rating": "1", "comment": "clear"}).status_code == 302
    assert client.post(url, {"rating": "-1", "comment": "actually wrong"}).status_code == 302
    feedback = Feedback.objects.get()
    assert (feedback.rating, feedback.comment) == (-1, "actually wrong")
    assert feedback.user == users["owner"]
    assert client.post(url, {"rating": "5"}).status_code == 400
    assert signed_in(users["other"]).post(url, {"rating": "1"}).status_code == 404


def test_feedback_needs_csrf_and_a_finished_run(users):
    run = run_create(query="q", owner=users["owner"])
    url = reverse("run-feedback", args=[run.pk])
    assert signed_in(users["owner"], csrf=True).post(url, {"rating": "1"}).status_code == 403
    assert signed_in(users["owner"]).post(url, {"rating": "1"}).status_code == 400  # queued


def test_history_searches_filters_and_keeps_runs_private(users):
    answered(users["owner"], "Restart it.")
    run_create(query="Where are the backups?", owner=users["owner"])
    run_create(query="Mallory's secret question", owner=users["other"])
    client = signed_in(users["owner"])
    body = client.get(reverse("history")).content.decode()
    assert "How do I restart?" in body and "backups" in body and "Mallory" not in body
    body = client.get(reverse("history"), {"q": "backups"}).content.decode()
    assert "backups" in body and "How do I restart?" not in body
    body = client.get(reverse("history"), {"status": "answered"}).content.decode()
    assert "How do I restart?" in body and "backups" not in body
    staff = signed_in(users["staff"]).get(reverse("history")).content.decode()
    assert "Mallory" in staff


def test_replay_page_carries_the_trace_and_controls(users):
    run = answered(users["owner"], "Restart it.")
    body = signed_in(users["owner"]).get(reverse("run-replay", args=[run.pk])).content.decode()
    assert 'data-replay="1"' in body and 'id="replay-speed"' in body and "Show all" in body
    assert signed_in(users["other"]).get(reverse("run-replay", args=[run.pk])).status_code == 404


def test_chunk_page_shows_document_text_inert(users, vector):
    from ragapp.models import Chunk, Document

    document = Document.objects.create(
        source_path="docs/x.md", title="X", format="markdown", content_hash="h", size_bytes=1
    )
    chunk = Chunk.objects.create(
        document=document,
        ordinal=0,
        heading_path="X",
        text="<script>alert(1)</script> text",
        embedding=vector,
    )
    body = signed_in(users["other"]).get(reverse("chunk-detail", args=[chunk.pk])).content.decode()
    assert "&lt;script&gt;alert(1)&lt;/script&gt; text" in body and "<script>alert" not in body


def source(**overrides):
    """A stored source of an answer, as the runner records it."""
    return {
        "n": 1,
        "chunk_id": 7,
        "title": "Install",
        "heading_path": "Guide > Install",
        "source_path": "/srv/docs/guide/install.md",
        "similarity": 0.8,
        **overrides,
    }


def test_the_answer_block_of_a_finished_run_carries_the_feedback_form(users):
    # The live page fetches this block when the run finishes: it was rendered without the form.
    run = answered(users["owner"], "Restart it.")
    client = signed_in(users["owner"], csrf=True)
    block = client.get(reverse("run-answer", args=[run.pk])).content.decode()
    assert f'action="{reverse("run-feedback", args=[run.pk])}"' in block
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', block).group(1)
    url = reverse("run-feedback", args=[run.pk])
    response = client.post(url, {"rating": "1", "csrfmiddlewaretoken": token})
    assert response.status_code == 302  # the block's own token passes the CSRF check
    replay = client.get(reverse("run-answer", args=[run.pk]), {"replay": "1"}).content.decode()
    assert "answer-card" in replay and "/feedback/" not in replay  # replay offers no feedback


def test_the_answer_block_of_an_unfinished_run_has_no_feedback_form(users):
    run = run_start(run=run_create(query="q", owner=users["owner"]))
    block = signed_in(users["owner"]).get(reverse("run-answer", args=[run.pk])).content.decode()
    assert "/feedback/" not in block


def test_a_finished_run_page_leads_with_its_answer_and_folds_its_trace(users):
    run = answered(users["owner"], "Restart it [1].", sources=[source()])
    body = signed_in(users["owner"]).get(reverse("run-detail", args=[run.pk])).content.decode()
    assert body.index('class="answer-card"') < body.index('id="trace-fold"')  # no JavaScript needed
    assert re.search(r'<details id="trace-fold" class="trace-fold">', body)  # folded, not open
    assert 'action="/runs/' in body and 'data-answer-shown="1"' in body


def test_a_running_run_page_keeps_its_trace_open_and_waits_for_the_answer(users):
    run = run_start(run=run_create(query="q", owner=users["owner"]))
    body = signed_in(users["owner"]).get(reverse("run-detail", args=[run.pk])).content.decode()
    assert '<details id="trace-fold" class="trace-fold" open>' in body
    assert "answer-card" not in body and "/feedback/" not in body
    assert 'data-answer-shown=""' in body


@pytest.mark.parametrize(
    "docs_dir, stored, shown",
    [
        ("/srv/docs", "/srv/docs/guide/install.md", "guide/install.md"),  # under the docs root
        ("/srv/docs", "/var/lib/imports/team/guide/install.md", "guide/install.md"),  # last two
        ("/srv/docs", "README.md", "README.md"),
    ],
)
def test_sources_show_a_short_path_with_the_stored_one_in_a_title(
    users, settings, docs_dir, stored, shown
):
    from pathlib import Path

    settings.RAG_DOCS_DIR = Path(docs_dir)
    run = answered(users["owner"], "Install it [1].", sources=[source(source_path=stored)])
    body = signed_in(users["owner"]).get(reverse("run-answer", args=[run.pk])).content.decode()
    assert f'<span class="source-path" title="{stored}">{shown}</span>' in body
    assert body.count(stored) == 1 or stored == shown  # in the title only
    run.refresh_from_db()
    assert run.response_metadata["sources"][0]["source_path"] == stored  # stored as it was


def test_the_docs_root_inside_the_project_is_keyed_as_ingest_docs_keys_it(users, settings):
    settings.RAG_DOCS_DIR = settings.BASE_DIR / "docs"
    run = answered(users["owner"], "See [1].", sources=[source(source_path="docs/guide/a.md")])
    body = signed_in(users["owner"]).get(reverse("run-detail", args=[run.pk])).content.decode()
    assert '<span class="source-path" title="docs/guide/a.md">guide/a.md</span>' in body
    assert 'data-docs-root="docs"' in body  # trace.js shortens the trace lines the same way


def test_closest_passages_of_a_refusal_show_short_paths_too(users):
    passage = {
        "chunk_id": 7,
        "title": "Billing",
        "heading_path": "Billing",
        "source_path": "/opt/site/content/docs/billing.md",
        "relevance": 0.2,
        "excerpt": "Invoices are monthly.",
    }
    run = finished_run(
        owner=users["owner"],
        status="refused",
        answer="No relevant documentation.",
        metadata={"refusal_reason": "no_relevant_documents", "passages": [passage]},
    )
    body = signed_in(users["owner"]).get(reverse("run-answer", args=[run.pk])).content.decode()
    assert 'title="/opt/site/content/docs/billing.md">docs/billing.md</span>' in body
    assert "low relevance" in body


@pytest.mark.parametrize(
    "similarity, word", [(0.83, "high"), (0.7, "high"), (0.55, "medium"), (0.12, "low")]
)
def test_relevance_is_a_word_and_a_bar_not_decimals(users, similarity, word):
    run = answered(users["owner"], "See [1].", sources=[source(similarity=similarity)])
    body = signed_in(users["owner"]).get(reverse("run-answer", args=[run.pk])).content.decode()
    meter = re.search(r"<meter [^>]*>", body).group(0)
    assert f'value="{similarity:.3f}"' in meter and 'low="0.4" high="0.7"' in meter
    text = re.sub(r"<[^>]+>", "", body)  # what a reader sees, the meter's title aside
    assert f"{word} relevance" in text
    assert not re.search(r"relevance \d", text)


def test_copy_answer_carries_the_markdown_with_its_source_lines(users):
    from html import unescape

    run = answered(users["owner"], "Run `restart` [1].", sources=[source()])
    body = signed_in(users["owner"]).get(reverse("run-answer", args=[run.pk])).content.decode()
    copied = unescape(re.search(r'data-copy-text="([^"]*)"', body).group(1))
    assert copied == (
        "Run `restart` [1].\n\nSources:\n\n"
        "- [1] [Install — Guide > Install](http://testserver/chunks/7/) · guide/install.md"
    )


# Feedback in one click, without a reload, and changeable later.


def test_feedback_posted_by_the_page_script_gets_the_feedback_block_back(users):
    from ragapp.models import Feedback

    run = answered(users["owner"], "Restart it.")
    client = signed_in(users["owner"])
    url = reverse("run-feedback", args=[run.pk])
    # static/ragapp/feedback.js: the thumb alone, then the comment; no redirect, no reload.
    response = client.post(url, {"rating": "-1"}, headers={"X-Requested-With": "fetch"})
    assert response.status_code == 200
    block = response.content.decode()
    assert "Thanks for the feedback." in block and 'id="feedback"' in block
    assert re.search(r'value="-1" class="thumb thumb-down" aria-pressed="true"', block)
    assert 'name="comment"' in block  # the comment box comes after the click
    response = client.post(
        url, {"rating": "-1", "comment": "Wrong unit."}, headers={"X-Requested-With": "fetch"}
    )
    assert (Feedback.objects.get().rating, Feedback.objects.get().comment) == (-1, "Wrong unit.")
    assert "Wrong unit." in response.content.decode()


def test_the_run_page_shows_the_feedback_given_so_it_can_be_changed(users):
    from ragapp.services import feedback_submit

    run = answered(users["owner"], "Restart it.")
    body = signed_in(users["owner"]).get(reverse("run-detail", args=[run.pk])).content.decode()
    assert 'aria-pressed="true"' not in body and 'name="comment"' not in body  # thumbs first
    feedback_submit(run=run, user=users["owner"], rating=1, comment="Clear & short")
    body = signed_in(users["owner"]).get(reverse("run-detail", args=[run.pk])).content.decode()
    assert re.search(r'value="1" class="thumb thumb-up" aria-pressed="true"', body)
    assert "You rated this answer helpful." in body
    assert re.search(r">\s*Clear &amp; short</textarea>", body)  # kept when the rating changes
    assert re.search(r'<button type="submit" name="rating" value="1" class="send-comment">', body)


# Sources open a preview of their chunk in place.


def test_a_source_carries_a_preview_of_its_chunk_with_its_heading_path(users, vector):
    from ragapp.models import Chunk, Document

    document = Document.objects.create(
        source_path="docs/ops.md", title="Ops", format="markdown", content_hash="h", size_bytes=1
    )
    chunk = Chunk.objects.create(
        document=document,
        ordinal=0,
        heading_path="Ops > Restart",
        text="Restart with `systemctl restart worker`.\n\n<script>alert(1)</script>",
        embedding=vector,
    )
    stored = source(chunk_id=chunk.pk, heading_path="Ops > Restart", source_path="docs/ops.md")
    run = answered(users["owner"], "Restart it [1].", sources=[stored])
    body = signed_in(users["owner"]).get(reverse("run-answer", args=[run.pk])).content.decode()
    preview = re.search(r'<details class="source-preview">(.*?)</details>', body, re.S).group(1)
    assert "Preview" in preview and "Ops \u203a Restart" in preview
    assert "<code>systemctl restart worker</code>" in preview
    assert "<script>" not in preview and "&lt;script&gt;" in preview  # chunk text stays inert
    assert "Open the published page" not in preview  # no public link recorded


def test_a_source_preview_links_to_the_published_page_when_there_is_one(users, vector):
    from ragapp.models import Chunk, Document

    document = Document.objects.create(
        source_path="docs/ops.md", title="Ops", format="markdown", content_hash="h", size_bytes=1
    )
    chunk = Chunk.objects.create(
        document=document, ordinal=0, heading_path="Ops", text="Restart.", embedding=vector
    )
    published = source(chunk_id=chunk.pk, url="https://docs.example.com/ops/#restart")
    unsafe = source(n=2, chunk_id=chunk.pk, url="javascript:alert(1)")
    run = answered(users["owner"], "See [1] and [2].", sources=[published, unsafe])
    body = signed_in(users["owner"]).get(reverse("run-answer", args=[run.pk])).content.decode()
    first, second = re.findall(r'<details class="source-preview">(.*?)</details>', body, re.S)
    assert '<a href="https://docs.example.com/ops/#restart"' in first
    assert "Open the published page" in first
    assert "Open the published page" not in second  # only http(s) links are followed


# A refusal says why in one sentence; the claims are the trace's.


@pytest.mark.parametrize(
    "reason, sentence",
    [
        ("no_relevant_documents", "Nothing in the documentation was relevant enough"),
        ("not_in_documents", "The passages found do not answer this question."),
        ("unfaithful", "The draft answer said things the documentation does not support"),
    ],
)
def test_a_refusal_says_why_in_one_sentence_without_the_claims(users, reason, sentence):
    passage = {
        "chunk_id": 7,
        "title": "Billing",
        "heading_path": "Billing",
        "source_path": "docs/billing.md",
        "relevance": 0.2,
        "excerpt": "Invoices are monthly.",
    }
    run = finished_run(
        owner=users["owner"],
        status="refused",
        answer="I can't give a reliable answer. Unsupported claims: refunds take 3 days.",
        metadata={"refusal_reason": reason, "passages": [passage]},
    )
    body = signed_in(users["owner"]).get(reverse("run-answer", args=[run.pk])).content.decode()
    assert re.search(rf'<p class="refusal-why">{re.escape(sentence)}[^<]*</p>', body)
    assert "Unsupported claims" not in body and "refunds take 3 days" not in body
    assert "Passage 1" in body and "not an answer" in body


# "Try asking": real headings, phrased as questions.


@pytest.mark.parametrize(
    "heading_path, question",
    [
        ("Ops > Restart the worker", "How do I restart the worker?"),
        ("Ops > Restart", "Ops: how do I restart?"),
        ("Embeddings > Switching embedding models", "How do I switch embedding models?"),
        (
            "Architecture > Checking and stopping the server: `x`",
            "How do I check and stop the server?",
        ),
        ("Guide > How to rotate the logs", "How do I rotate the logs?"),
        ("Guide > Where to add things", "Where do I add things?"),
        ("API > Rate limits", "How do rate limits work?"),
        ("Architecture > The HNSW vector index", "How does the HNSW vector index work?"),
        ("Architecture > Retrieval", "How does retrieval work?"),
        ("Graph > Run statuses", "How do run statuses work?"),
        ("FAQ > Can I run two workers?", "Can I run two workers?"),
        ("Events > grade_docs", None),  # code, not a subject
        ("Overview > Glossary", None),
        ("Results (2026-12-01)", None),
        ("Graph > The last event is always done", None),  # a statement
    ],
)
def test_headings_become_questions(heading_path, question):
    from ragapp.selectors import heading_as_question

    assert heading_as_question(heading_path) == question


def test_the_ask_page_suggests_questions_from_the_knowledge_base_headings(users, vector):
    from ragapp.models import Chunk, Document

    headings = {
        "docs/a.md": ["Ops > Glossary", "Ops > Rate limits", "Ops > Restarting the worker"],
        "docs/b.md": ["Backups > Restore a backup"],
    }
    for path, paths in headings.items():
        document = Document.objects.create(
            source_path=path, title=path, format="markdown", content_hash=path, size_bytes=1
        )
        for ordinal, heading_path in enumerate(paths):
            Chunk.objects.create(
                document=document,
                ordinal=ordinal,
                heading_path=heading_path,
                text="t",
                embedding=vector,
            )
    body = signed_in(users["owner"]).get(reverse("ask")).content.decode()
    suggested = re.findall(r'data-question="([^"]+)"', body)
    # Tasks first, one per document in turn, then subjects; never "What does ... say about".
    assert suggested == [
        "How do I restart the worker?",
        "How do I restore a backup?",
        "How do rate limits work?",
    ]


# History: staff see the evaluations' runs apart.


def test_evaluation_runs_are_apart_from_peoples_runs_for_staff(users):
    from ragapp.models import Evaluation

    evaluation = Evaluation.objects.create(name="golden", golden_path="g.jsonl", mode="full")
    run_create(query="A question from a person", owner=users["other"])
    eval_run = run_create(query="A golden-set question", owner=None)
    QueryRun.objects.filter(pk=eval_run.pk).update(evaluation=evaluation)
    staff = signed_in(users["staff"])

    body = staff.get(reverse("history")).content.decode()
    assert "A question from a person" in body and "golden-set" not in body  # off by default
    assert 'name="evaluation"' in body
    body = staff.get(reverse("history"), {"evaluation": "on"}).content.decode()
    assert "golden-set" in body and "from a person" not in body
    ask = staff.get(reverse("ask")).content.decode()
    assert "golden-set" not in ask  # nor among the recent questions

    body = signed_in(users["other"]).get(reverse("history"), {"evaluation": "on"}).content.decode()
    assert 'name="evaluation"' not in body and "A question from a person" in body
