"""The OpenAPI schema: valid, true to the events the graph really emits, and fuzzed live."""

import json
import re
import subprocess
from io import StringIO

import jsonschema
import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from rest_framework.authtoken.models import Token

from ragapp.graph.context import ChatModels, GraphLimits
from ragapp.models import TraceEvent
from ragapp.providers.fake_chat import FakeChatModel, FakeScript
from ragapp.runs.reuse import run_reuse
from ragapp.runs.runner import execute_run
from ragapp.services import run_create
from ragapp.trace.kinds import EventKind
from ragapp.trace.stream import event_message

pytestmark = pytest.mark.django_db


def test_the_schema_passes_drf_spectaculars_validation_without_warnings(tmp_path):
    target = tmp_path / "schema.yaml"
    call_command(
        "spectacular", "--validate", "--fail-on-warn", "--file", str(target), stderr=StringIO()
    )
    text = target.read_text()
    for path in ("/api/rag:", "/api/runs:", "/api/runs/{run_id}/events:", "/api/token:"):
        assert path in text
    assert "text/event-stream" in text


@pytest.fixture
def member(client, users):
    client.force_login(users["other"])
    return client


@pytest.fixture
def openapi(member) -> dict:
    response = member.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json")
    assert response.status_code == 200
    return json.loads(response.content)


def _run_with(script: FakeScript, question: str, history=None, *, method="structured", **limits):
    model = FakeChatModel(script=script)
    models = ChatModels(
        generator=model,
        grader=model,
        broadener=model,
        relevance_method=method,
        faithfulness_method=method,
        names={"generation": "fake-chat", "grading": "fake-chat", "broadening": "fake-chat"},
    )
    run = run_create(query=question)
    execute_run(run, models=models, limits=GraphLimits(top_k=2, **limits), history=history)
    return run


def test_every_event_the_graph_emits_matches_its_documented_schema(
    openapi, knowledge_base, settings
):
    def beta(question, doc):
        return 0.9 if "beta" in doc.lower() else 0.1

    scores = iter([0.3, 0.95])  # unfaithful first, faithful after the refinement
    refine = FakeScript(relevance=beta, faithfulness=lambda answer, docs: next(scores))
    nothing_relevant = FakeScript(relevance=lambda question, doc: 0.0)
    broken = FakeScript(invalid_output_for={"DocumentRelevance"})
    for script in (FakeScript(relevance=beta), refine, nothing_relevant, broken):
        _run_with(script, "How do I start the beta service?")
    # The retrieval gate stops the yes/no judge at the first pass: a chunk not asked about has
    # a null score in its grade event and in a refusal's passages.
    unfaithful = FakeScript(relevance=lambda q, doc: 0.9, faithfulness=lambda a, docs: 0.1)
    gated = _run_with(
        unfaithful,
        "How do I start the beta service?",
        method="logprobs",
        relevance_gate="retrieval",
    )
    assert [g.payload["score"] for g in gated.events.filter(kind="grade")] == [0.9, None]
    gated.refresh_from_db()
    assert None in [p["relevance"] for p in gated.response_metadata["passages"]]
    # A follow-up, condensed; and one whose condense call fails (the fallback shape).
    earlier = [("How do I start the beta service?", "Run `beta start` [1].")]
    _run_with(FakeScript(relevance=beta), "and which port does it use?", earlier)

    def broken_condense(earlier, followup):
        raise RuntimeError("no model")

    _run_with(FakeScript(relevance=beta, condense=broken_condense), "and then?", earlier)
    # The first question asked again: answered from the earlier run (a `reuse` event).
    settings.RAG_REUSE = "exact"
    assert run_reuse(query="How do I start the beta service?") is not None

    validator = jsonschema.Draft202012Validator(
        {"$ref": "#/components/schemas/TraceEvent", "components": openapi["components"]}
    )
    schemas = openapi["components"]["schemas"]
    events = [
        json.loads(json.dumps(event_message(e), default=str)) for e in TraceEvent.objects.all()
    ]
    assert {e["kind"] for e in events} == {kind.value for kind in EventKind}  # every kind seen
    for event in events:
        validator.validate(event)
        envelope = schemas[f"{event['kind'].title().replace('_', '')}Event"]
        payload_ref = envelope["properties"]["payload"]["$ref"].rsplit("/", 1)[-1]
        documented = set(schemas[payload_ref]["properties"])
        assert set(event["payload"]) <= documented, (
            event["kind"],
            set(event["payload"]) - documented,
        )


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(
    "server", [{"RAG_API_RUN_RATE": "off", "RAG_API_TOKEN_RATE": "off"}], indirect=True
)
def test_schemathesis_finds_no_server_error_against_the_live_server(server, tmp_path):
    user = get_user_model().objects.get(username="alice")
    token = Token.objects.create(user=user)
    result = subprocess.run(
        [
            "st",
            "run",
            f"{server}/api/schema/?format=json",
            "--checks",
            "not_a_server_error,status_code_conformance,content_type_conformance,"
            "response_schema_conformance",
            "--max-examples",
            "15",
            "--seed",
            "1",
            "--phases",
            "examples,coverage,fuzzing",
            "--request-timeout",
            "30",
            "--no-color",
            "--header",
            f"Authorization: Token {token.key}",
        ],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=tmp_path,
    )
    print(result.stdout[-3000:])
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-2000:]
    assert "No issues found" in result.stdout or "passed" in result.stdout, result.stdout[-3000:]


def test_the_interactive_docs_load_their_scripts_from_this_server(member):
    page = member.get("/api/docs/")
    assert page.status_code == 200
    assets = re.findall(r'(?:src|href)="([^"]+)"', page.content.decode())
    # The page's own start-up script, served from its URL rather than inline, then the sidecar's
    # files (closing a file response ends the request, and the test's database connection).
    assets.remove("/api/docs/?script=")
    script = member.get("/api/docs/?script=")
    assert script.status_code == 200 and script["Content-Type"] == "application/javascript"
    assert b"SwaggerUIBundle" in script.content
    assert member.get("/api/redoc/").status_code == 200
    assert assets and all(a.startswith("/static/drf_spectacular_sidecar/") for a in assets)
    for asset in assets:
        response = member.get(asset)
        assert response.status_code == 200, asset
        response.close()


@pytest.mark.parametrize("url", ["/api/docs/", "/api/redoc/"])
def test_the_docs_pages_run_no_inline_script_and_allow_only_what_they_need(member, url):
    page = member.get(url)
    html = page.content.decode()
    tags = re.findall(r"<script\b([^>]*)>", html)
    assert tags and all("src=" in attributes for attributes in tags), tags
    csp = dict(
        (name, values)
        for name, *values in (d.split() for d in page["Content-Security-Policy"].split(";"))
    )
    assert csp["script-src"] == ["'self'"]
    # Swagger UI's and Redoc's inline <style>, and Redoc's search worker: on these pages only.
    assert csp["style-src"] == ["'self'", "'unsafe-inline'"]
    assert csp["worker-src"] == ["'self'", "blob:"]
    assert "'unsafe-inline'" not in member.get("/").headers["Content-Security-Policy"]


# --- Who may read the schema and the docs ----------------------------------------------------


def test_the_schema_is_for_signed_in_or_token_users_only(client, users):
    from tests.ragapp.api.conftest import token_client

    assert client.get("/api/schema/").status_code == 401
    assert token_client(users["owner"]).get("/api/schema/").status_code == 200
    client.force_login(users["other"])
    assert client.get("/api/schema/").status_code == 200


@pytest.mark.parametrize("url", ["/api/docs/", "/api/docs/?script=", "/api/redoc/"])
def test_a_browser_that_is_not_signed_in_is_sent_to_sign_in_for_the_docs(client, url):
    response = client.get(url)
    assert response.status_code == 302
    assert response["Location"].startswith("/accounts/login/?next=/api/")
