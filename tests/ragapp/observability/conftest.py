"""Scraping /metrics as Prometheus does, and a thread executor whose runs a test can wait for."""

import pytest
from prometheus_client.parser import text_string_to_metric_families

import ragapp.runs.executor as executor_module
from ragapp.runs.executor import ThreadRunExecutor

TOKEN = "scrape-token-0123456789abcdef"


@pytest.fixture
def metrics_token(settings):
    settings.RAG_METRICS_TOKEN = TOKEN
    return TOKEN


def scrape(client) -> dict[tuple[str, tuple], float]:
    """Every sample of GET /metrics, by (sample name, sorted labels)."""
    response = client.get("/metrics", HTTP_AUTHORIZATION=f"Bearer {TOKEN}")
    assert response.status_code == 200, response.content
    samples = {}
    for family in text_string_to_metric_families(response.content.decode()):
        for sample in family.samples:
            samples[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return samples


def delta(before: dict, after: dict, name: str, **labels) -> float:
    """How much one sample grew between two scrapes (0 for a sample not there before)."""
    key = (name, tuple(sorted(labels.items())))
    return after.get(key, 0.0) - before.get(key, 0.0)


@pytest.fixture
def thread_executor():
    """This process's executor, replaced by a fresh pool; `.wait()` lets its runs finish."""
    executor = ThreadRunExecutor(max_workers=2)
    executor_module._executor = executor

    def wait():
        executor.shutdown(wait=True)

    executor.wait = wait
    yield executor
    executor.shutdown(wait=True)
    executor_module._executor = None
