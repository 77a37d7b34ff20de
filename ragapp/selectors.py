"""Reads: the knowledge base and its embedding index."""

from __future__ import annotations

from django.core.cache import cache
from django.db import DatabaseError, connection, models

from ragapp.models import Chunk, Document, EmbeddingIndex, QueryRun
from ragapp.providers import EmbeddingProvider
from ragapp.providers.status import providers_status

REEMBED_HINT = (
    "Re-embed the knowledge base with the current model: `uv run manage.py ingest_docs --reembed` "
    "(or set RAG_EMBEDDING_PROVIDER back to the model the index was built with)."
)


class EmbeddingMismatchError(Exception):
    """The stored vectors come from another embedding model than the one configured."""


def embedding_index_get() -> EmbeddingIndex | None:
    """The index's recorded embedding model, or None before the first ingest."""
    return EmbeddingIndex.objects.first()


def embedding_index_check(*, embeddings: EmbeddingProvider) -> EmbeddingIndex | None:
    """Raise EmbeddingMismatchError unless stored vectors match `embeddings` (or none exist)."""
    index = embedding_index_get()
    if index is None:
        return None
    matches = index.dimensions == embeddings.dimensions and index.model == embeddings.model_id
    if not matches and Chunk.objects.exists():
        raise EmbeddingMismatchError(
            f"The knowledge base was embedded with {index.model} ({index.dimensions} dimensions) "
            f"but the configured model is {embeddings.model_id} ({embeddings.dimensions} "
            f"dimensions); their vectors cannot be compared. {REEMBED_HINT}"
        )
    return index


def pending_migrations() -> list[str]:
    """Migrations not yet applied to the database ("app.name"), in the order they would run.

    Commands check this first: a database left behind by an upgrade otherwise fails later, in
    every run, with "column ... does not exist".
    """
    from django.db.migrations.executor import MigrationExecutor

    executor = MigrationExecutor(connection)
    plan = executor.migration_plan(executor.loader.graph.leaf_nodes())
    return [f"{migration.app_label}.{migration.name}" for migration, _ in plan]


def knowledge_base_stats() -> dict:
    """Documents, chunks and the embedding model, for summaries and health checks."""
    index = embedding_index_get()
    return {
        "documents": Document.objects.count(),
        "chunks": Chunk.objects.count(),
        "embedding_model": index.model if index else None,
        "dimensions": index.dimensions if index else None,
    }


def database_status() -> dict:
    """Whether the database answers a query; never raises."""
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
    except DatabaseError as exc:
        return {"status": "error", "error": type(exc).__name__}
    return {"status": "ok"}


HEALTH_INDEX_CACHE_KEY = "rag:health:index"


def system_health() -> dict:
    """Database, knowledge base and providers at a glance, building no model client.

    `status` is `ok` when a run could be served now, `degraded` when the database answers but a
    model is not ready (a key is missing, a package is not installed), `error` when the database
    does not answer.
    """
    database = database_status()
    providers = providers_status()
    index = None
    if database["status"] == "ok":
        try:
            # Counting every chunk is cheap for docs-sized tables but not free at a million,
            # and anyone may call the health check: count at most every few seconds.
            index = cache.get(HEALTH_INDEX_CACHE_KEY)
            if index is None:
                index = knowledge_base_stats()
                cache.set(HEALTH_INDEX_CACHE_KEY, index, 10)
        except DatabaseError as exc:  # e.g. migrations not applied yet
            database = {"status": "error", "error": type(exc).__name__}
    models_ready = providers["embedding"]["ready"] and providers["chat"]["ready"]
    status = "error" if database["status"] != "ok" else "ok" if models_ready else "degraded"
    return {
        "status": status,
        "database": database,
        "index": index,
        "providers": providers,
        "models_ready": models_ready,
    }


def runs_visible_to(*, user):
    """The runs `user` may see: their own, or every run for staff; none for anonymous users."""
    if user is None or not user.is_authenticated:
        return QueryRun.objects.none()
    if user.is_staff:
        return QueryRun.objects.all()
    return QueryRun.objects.filter(owner=user)


def run_visible_to(*, user, run_id) -> bool:
    """Whether `user` may see the run `run_id`."""
    return runs_visible_to(user=user).filter(pk=run_id).exists()


def run_events_list(*, run: QueryRun, after: int = 0) -> list:
    """A run's stored trace events with a seq above `after`, in order."""
    return list(run.events.filter(seq__gt=after).order_by("seq"))


def run_is_finished(run: QueryRun) -> bool:
    """Whether the run has ended: answered, refused or failed."""
    return run.status in (QueryRun.Status.ANSWERED, QueryRun.Status.REFUSED, QueryRun.Status.FAILED)


def run_trace_complete(run: QueryRun) -> bool:
    """Whether the run's trace will not grow: its `done` is stored, or it ended unstarted.

    The status turns final a moment before `done` is written, so the status alone would let a
    reader stop one event short.
    """
    if not run_is_finished(run):
        return False
    return run.events.filter(kind="done").exists() or not run.events.exists()


def recent_runs(*, user, limit: int = 10) -> list:
    """The user's latest runs (everyone's for staff), newest first."""
    return list(runs_visible_to(user=user).order_by("-created_at")[:limit])


def example_questions(*, limit: int = 4) -> list[str]:
    """Questions a new user could ask, made from section headings of the ingested docs."""
    headings = (
        Chunk.objects.exclude(heading_path="")
        .filter(ordinal=0)
        .order_by("document__source_path")
        .values_list("heading_path", flat=True)[: limit * 4]
    )
    questions, seen = [], set()
    for path in headings:
        leaf = path.split(" > ")[-1]
        if leaf.lower() not in seen and len(leaf) < 60:
            seen.add(leaf.lower())
            questions.append(f"What does the documentation say about {leaf.lower()}?")
    return questions[:limit]


def runs_search(*, user, q: str = "", status: str = "", risk: str = "", since=None, until=None):
    """The history: runs `user` may see, filtered, newest first."""
    runs = runs_visible_to(user=user).select_related("owner").order_by("-created_at")
    if q:
        runs = runs.filter(models.Q(query__icontains=q) | models.Q(answer__icontains=q))
    if status:
        runs = runs.filter(status=status)
    if risk:
        runs = runs.filter(hallucination_risk=risk)
    if since:
        runs = runs.filter(created_at__date__gte=since)
    if until:
        runs = runs.filter(created_at__date__lte=until)
    return runs


def chunk_get(*, chunk_id: int) -> Chunk | None:
    """One chunk with its document (the knowledge base is readable by every signed-in user)."""
    return Chunk.objects.select_related("document").defer("embedding").filter(pk=chunk_id).first()
