"""Query embeddings are cached by model and text; a cache that is down only costs speed.

The cache is the real one: Django's local memory by default, and a real Redis (Debian's
redis-server, as tests/deploy uses) that is then stopped, or never there.
"""

import shutil
import subprocess
import time

import pytest
import redis

from deploy.web import free_port
from ragapp.providers import get_embeddings
from ragapp.providers.fake_embeddings import FakeEmbeddings
from ragapp.providers.query_cache import QueryCachingEmbeddings, query_embedding_key
from ragapp.runs.runner import execute_run
from ragapp.services import run_create

QUESTION = "How do I start the beta service?"


class CountingEmbeddings(FakeEmbeddings):
    """The fake model, counting the queries it really embeds."""

    def __init__(self):
        super().__init__()
        self.queries: list[str] = []

    def embed_query(self, text: str) -> list[float]:
        self.queries.append(text)
        return super().embed_query(text)


def redis_cache(settings, port: int) -> None:
    settings.CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": f"redis://127.0.0.1:{port}/0",
        }
    }


@pytest.fixture
def redis_server():
    if shutil.which("redis-server") is None:
        pytest.skip("Debian's redis-server is not installed (apt-get install redis-server)")
    port = free_port()
    process = subprocess.Popen(
        ["redis-server", "--port", str(port), "--save", "", "--appendonly", "no"],
        stdout=subprocess.DEVNULL,
    )
    client = redis.Redis(port=port)
    for _ in range(100):
        try:
            client.ping()
            break
        except redis.ConnectionError:
            time.sleep(0.05)
    yield port, process
    process.terminate()
    process.wait(timeout=10)


def test_every_provider_is_built_with_the_query_cache(fresh_cache):
    embeddings = get_embeddings()
    assert isinstance(embeddings, QueryCachingEmbeddings)
    assert embeddings.model_id == embeddings.inner.model_id  # keyed like the model itself


def test_a_repeated_query_is_embedded_once_in_local_memory(fresh_cache):
    inner = CountingEmbeddings()
    cached = QueryCachingEmbeddings(inner)
    first = cached.embed_query(QUESTION)
    assert cached.embed_query(QUESTION) == first
    assert inner.queries == [QUESTION]
    cached.embed_query("Another question?")
    assert inner.queries == [QUESTION, "Another question?"]
    # Documents are never cached: an ingest embeds each text once anyway.
    cached.embed_documents([QUESTION])
    assert inner.calls == [1]


def test_redis_caches_queries_and_its_outage_only_costs_speed(
    settings, redis_server, knowledge_base, fake_chat
):
    port, process = redis_server
    redis_cache(settings, port)
    inner = CountingEmbeddings()
    cached = QueryCachingEmbeddings(inner)
    vector = cached.embed_query(QUESTION)
    assert cached.embed_query(QUESTION) == vector and inner.queries == [QUESTION]
    key = query_embedding_key(inner.model_id, QUESTION)
    assert redis.Redis(port=port).exists(f":1:{key}")  # really in Redis, by model and text

    process.terminate()
    process.wait(timeout=10)
    # Redis is gone: the same answer, embedded by the model again.
    assert cached.embed_query(QUESTION) == vector
    assert inner.queries == [QUESTION, QUESTION]
    # A whole run through the real graph still answers.
    run = run_create(query=QUESTION)
    execute_run(run)
    run.refresh_from_db()
    assert run.status == "answered", run.error


def test_a_cache_that_was_never_there_only_costs_speed(settings, knowledge_base, fake_chat):
    redis_cache(settings, free_port())  # nothing listens there
    inner = CountingEmbeddings()
    cached = QueryCachingEmbeddings(inner)
    assert cached.embed_query(QUESTION) == cached.embed_query(QUESTION)
    assert inner.queries == [QUESTION, QUESTION]
    run = run_create(query=QUESTION)
    execute_run(run)
    run.refresh_from_db()
    assert run.status == "answered", run.error
