"""Shared fixtures: a throwaway embedded PostgreSQL, and the fake embedding model."""

import os
import shutil
import tempfile
from pathlib import Path

import pytest
from django.conf import settings as django_settings

from config.embedded_postgres import stop_server
from ragapp.providers import clear_embeddings_cache, get_embeddings
from tests.ragapp.live_server import web_processes  # noqa: F401  (a fixture: `server` needs it)

# Each worker runs its own embedded PostgreSQL, browser and model servers: past four, a worker adds
# more memory than speed (the model tests hold a 1.5B model each).
MAX_WORKERS = 4

# The modules that run real packaged models (every `slow` test is in one). Their llama.cpp servers
# take every core, so the two run one after the other on one worker, never side by side.
MODEL_MODULES = (
    "tests/ragapp/providers/test_local_llm.py",
    "tests/ragapp/providers/test_contract.py",
)


def pytest_xdist_auto_num_workers(config):
    """`-n auto`: one worker per CPU this process may use, at most MAX_WORKERS.

    PYTEST_XDIST_AUTO_NUM_WORKERS still decides when it is set, as it does without this hook.
    """
    if os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS"):
        return int(os.environ["PYTEST_XDIST_AUTO_NUM_WORKERS"])
    # sched_getaffinity is Linux's; macOS and Windows have cpu_count only.
    usable = getattr(os, "sched_getaffinity", None)
    cpus = len(usable(0)) if usable else (os.cpu_count() or 1)
    return min(cpus, MAX_WORKERS)


def pytest_xdist_make_scheduler(config, log):
    """`--dist loadfile`, with MODEL_MODULES as one unit of work."""
    if config.getoption("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    class ModelModulesTogether(LoadFileScheduling):
        def _split_scope(self, nodeid: str) -> str:
            module = super()._split_scope(nodeid)
            return MODEL_MODULES[0] if module in MODEL_MODULES else module

    return ModelModulesTogether(config, log)


def pytest_collection_modifyitems(config, items):
    """MODEL_MODULES first, each module's tests together, the rest in their usual order.

    Workers take units of work in this order (addopts turn xdist's own reordering off); the
    model modules run for minutes, and started last they would keep one worker busy after the
    others are done. pytest-django has ordered the tests by kind of database access across
    modules; kept together, a model module starts its servers once.
    """
    slow = {_module(item) for item in items if item.get_closest_marker("slow")}
    if unlisted := slow.difference(MODEL_MODULES):
        raise pytest.UsageError(f"slow tests outside MODEL_MODULES (tests/conftest.py): {unlisted}")
    rank = {module: n for n, module in enumerate(MODEL_MODULES)}
    items.sort(key=lambda item: rank.get(_module(item), len(MODEL_MODULES)))


def _module(item) -> str:
    return item.nodeid.split("::", 1)[0]


@pytest.fixture(scope="session")
def django_db_modify_db_settings(django_db_modify_db_settings_parallel_suffix):
    """Run the test database on a fresh embedded server in a temporary data dir, then stop it."""
    database = django_settings.DATABASES["default"]
    if database["ENGINE"] != "config.db_backend":
        yield  # DATABASE_URL is set: pytest-django creates test_<name> on that server
        return
    data_dir = Path(tempfile.mkdtemp(prefix="rag-test-"))
    database["DATA_DIR"] = str(data_dir)
    yield
    stop_server(data_dir)
    shutil.rmtree(data_dir, ignore_errors=True)


@pytest.fixture(autouse=True)
def fake_embeddings(settings):
    """Every test uses the deterministic fake embedder unless it asks for another.

    The pre-filter threshold is derived from the embedder at start-up (0.25 is MiniLM's scale);
    with the fake embedder a fresh process has it off, and so do the tests.
    """
    settings.RAG_EMBEDDING_PROVIDER = "fake"
    settings.RAG_RELEVANCE_PREFILTER = 0.0
    clear_embeddings_cache()
    yield get_embeddings()
    clear_embeddings_cache()


@pytest.fixture(autouse=True)
def no_answer_reuse(settings):
    """Answer reuse off: most tests ask one question again and expect the graph to run again.

    tests/ragapp/runs/test_reuse.py turns it on where it is the subject.
    """
    settings.RAG_REUSE = "off"
