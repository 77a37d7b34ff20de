"""API clients and real runs (scripted fake models) for the API tests."""

import pytest
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from ragapp.runs.runner import execute_run
from ragapp.services import run_create


def token_client(user) -> APIClient:
    """A client authenticating with the user's API token, as scripts do."""
    client = APIClient()
    token, _ = Token.objects.get_or_create(user=user)
    client.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
    return client


@pytest.fixture
def answered_run(knowledge_base, fake_chat, users):
    """A run by `owner` that went through the real graph with the fake models."""
    run = run_create(query="How do I start the beta service?", owner=users["owner"])
    execute_run(run)
    run.refresh_from_db()
    assert run.status == "answered"
    return run
