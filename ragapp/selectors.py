"""Reads: the knowledge base and its embedding index."""

from __future__ import annotations

import re

from django.core.cache import cache
from django.db import DatabaseError, connection, models

from ragapp.models import (
    Chunk,
    Document,
    EmbeddingIndex,
    Evaluation,
    Feedback,
    QueryRun,
    Thread,
)
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


def knowledge_base_version() -> int:
    """The knowledge base's version: 0 before the first ingest, one more after each change."""
    return EmbeddingIndex.objects.values_list("version", flat=True).first() or 0


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


def threads_visible_to(*, user):
    """The threads `user` may see: their own, or every thread for staff; none for anonymous."""
    if user is None or not user.is_authenticated:
        return Thread.objects.none()
    if user.is_staff:
        return Thread.objects.all()
    return Thread.objects.filter(owner=user)


def threads_owned_by(*, user):
    """The threads `user` may post a follow-up into: their own only, staff included."""
    if user is None or not user.is_authenticated:
        return Thread.objects.none()
    return Thread.objects.filter(owner=user)


def threads_search(*, user, evaluation: bool | None = None, **filters):
    """History by thread: the threads `user` may see with a run matching `filters`, last asked in
    first (the filters and `evaluation` are runs_search's).

    Each carries `run_count` (all its runs), `last_asked`, and its latest run's `latest_run_id`,
    `latest_status` and `latest_risk`.
    """
    matching = runs_search(user=user, evaluation=evaluation, **filters).order_by()
    latest = QueryRun.objects.filter(thread=models.OuterRef("pk")).order_by("-created_at")
    return (
        threads_visible_to(user=user)
        .filter(pk__in=matching.values("thread_id"))
        .select_related("owner")
        .annotate(
            run_count=models.Count("runs"),
            last_asked=models.Max("runs__created_at"),
            latest_run_id=models.Subquery(latest.values("pk")[:1]),
            latest_status=models.Subquery(latest.values("status")[:1]),
            latest_risk=models.Subquery(latest.values("hallucination_risk")[:1]),
        )
        .order_by("-updated_at", "-pk")
    )


def thread_runs(*, thread: Thread) -> list[QueryRun]:
    """A thread's runs, in the order they were asked."""
    return list(thread.runs.order_by("created_at"))


def run_opens_its_thread(*, run: QueryRun) -> bool:
    """Whether `run` is its thread's first question (nothing was asked in it before)."""
    return not QueryRun.objects.filter(
        thread_id=run.thread_id, created_at__lt=run.created_at
    ).exists()


def thread_latest(*, user) -> Thread | None:
    """The thread `user` asked in last (what `ask --continue` continues)."""
    if user is None:
        return Thread.objects.filter(owner__isnull=True).order_by("-updated_at").first()
    return Thread.objects.filter(owner=user).order_by("-updated_at").first()


def thread_latest_asked(*, user) -> Thread | None:
    """As thread_latest, leaving out the threads of `manage.py eval_rag` (also ownerless): a
    golden-set question is nobody's conversation."""
    threads = Thread.objects.filter(owner__isnull=True) if user is None else user.threads.all()
    return threads.exclude(runs__evaluation__isnull=False).order_by("-updated_at").first()


def thread_history(*, run: QueryRun, turns: int) -> list[tuple[str, str]]:
    """The last `turns` finished turns of `run`'s thread before it, oldest first.

    Each turn is (question, answer). A turn that was itself a follow-up gives its standalone
    question, which reads without its own history; a turn that was not answered gives its
    question with an empty answer: what was asked is still context.
    """
    earlier = (
        QueryRun.objects.filter(thread_id=run.thread_id, created_at__lt=run.created_at)
        .exclude(pk=run.pk)
        .filter(status__in=[QueryRun.Status.ANSWERED, QueryRun.Status.REFUSED])
        .order_by("-created_at")[:turns]
    )
    history = []
    for turn in reversed(list(earlier)):
        question = (turn.response_metadata or {}).get("standalone_question") or turn.query
        answer = turn.answer if turn.status == QueryRun.Status.ANSWERED else ""
        history.append((question, answer))
    return history


def run_events_list(*, run: QueryRun, after: int = 0) -> list:
    """A run's stored trace events with a seq above `after`, in order."""
    return list(run.events.filter(seq__gt=after).order_by("seq"))


def run_is_finished(run: QueryRun) -> bool:
    """Whether the run has ended: answered, refused or failed."""
    return run.status in (QueryRun.Status.ANSWERED, QueryRun.Status.REFUSED, QueryRun.Status.FAILED)


def evaluation_get(*, evaluation_id) -> Evaluation | None:
    """The evaluation with this id, or None."""
    return Evaluation.objects.filter(pk=evaluation_id).first()


def evaluation_unfinished_latest() -> Evaluation | None:
    """The newest evaluation that has not finished (its command stopped or is still going)."""
    return Evaluation.objects.filter(finished_at__isnull=True).order_by("-created_at").first()


def evaluation_finished_runs(*, evaluation: Evaluation) -> list[QueryRun]:
    """The evaluation's answered, refused and failed runs, oldest first."""
    finished = (QueryRun.Status.ANSWERED, QueryRun.Status.REFUSED, QueryRun.Status.FAILED)
    return list(evaluation.runs.filter(status__in=finished).order_by("created_at", "pk"))


def evaluation_live_runs(*, evaluation: Evaluation, since) -> list[QueryRun]:
    """The evaluation's running runs whose process beat at or after `since`: still going."""
    return list(evaluation.runs.filter(status=QueryRun.Status.RUNNING, heartbeat_at__gte=since))


def run_trace_complete(run: QueryRun) -> bool:
    """Whether the run's trace will not grow: its `done` is stored, or it ended unstarted.

    The status turns final a moment before `done` is written, so the status alone would let a
    reader stop one event short.
    """
    if not run_is_finished(run):
        return False
    return run.events.filter(kind="done").exists() or not run.events.exists()


def recent_runs(*, user, limit: int = 10) -> list:
    """The user's latest runs (everyone's for staff), newest first; evaluation runs left out."""
    runs = runs_visible_to(user=user).filter(evaluation__isnull=True)
    return list(runs.order_by("-created_at")[:limit])


# Headings that name a part of a page rather than a subject: no question reads well from them.
_GENERIC_HEADINGS = {
    "contents", "examples", "example", "faq", "glossary", "introduction", "notes", "overview",
    "quick start", "reference", "results", "see also", "stack", "summary", "tests", "usage",
}  # fmt: skip
# A heading that starts with one of these is not a subject of its own ("From Python").
_PREPOSITIONS = {"about", "after", "at", "before", "by", "for", "from", "in", "into", "on", "to",
                 "under", "with", "without"}  # fmt: skip
_ARTICLES = {"a", "an", "the"}
_QUESTION_WORDS = {"what", "when", "where", "which", "who", "why"}
# Verbs a task heading starts with ("Restart the worker", "Switching embedding models").
_TASK_VERBS = {
    "add", "ask", "back", "build", "change", "check", "choose", "configure", "connect", "create",
    "debug", "delete", "deploy", "disable", "enable", "evaluate", "export", "find", "follow",
    "get", "install", "ingest", "keep", "list", "migrate", "monitor", "move", "open", "preview",
    "prune", "read", "rebuild", "remove", "rename", "replay", "reset", "restart", "restore",
    "rotate", "run", "scale", "send", "set", "share", "sign", "start", "stop", "switch", "test",
    "troubleshoot", "tune", "update", "upgrade", "use", "watch", "write",
}  # fmt: skip
# Their -ing forms, spelled out from the list: stripping "ing" guesses wrong too often (us-ing).
_GERUNDS = {
    (verb[:-1] if verb.endswith("e") else verb)
    + ("n" if verb == "run" else "t" if verb == "set" else "p" if verb == "stop" else "")
    + "ing": verb
    for verb in _TASK_VERBS
}


def _base_forms(words: list[str]) -> list[str]:
    """Each -ing verb after "and" or "or" in its base form ("check and stopping": "stop")."""
    return [
        _GERUNDS.get(word.lower(), word) if i and words[i - 1].lower() in ("and", "or") else word
        for i, word in enumerate(words)
    ]


# Task verbs that are nouns as often ("Run statuses", "Test settings"): a task only as a gerund
# or followed by a determiner ("Run the tests").
_NOUN_LIKE_VERBS = {"back", "build", "change", "check", "move", "run", "set", "test", "use",
                    "watch"}  # fmt: skip
_DETERMINERS = _ARTICLES | {"all", "it", "my", "one", "several", "the", "them", "this", "your"}
# A one-word subject that reads without "the": "How does retrieval work?"
_MASS_NOUN_ENDINGS = ("al", "ance", "ence", "ing", "ion", "ity", "ure")
# Words that make a heading a statement or a detail rather than a subject.
_NOT_A_SUBJECT = {
    "are",
    "is",
    "not",
    "of",
    "on",
    "one",
    "at",
    "in",
    "for",
    "with",
    "against",
    "today",
}


def heading_as_question(heading_path: str) -> str | None:
    """A heading of the knowledge base as a question a user could ask, or None if none reads well.

    "Ops > Restart the worker" asks "How do I restart the worker?", "Switching embedding models"
    asks "How do I switch embedding models?", a subject ("Rate limits", "The HNSW vector index")
    asks how it works. Deterministic, no model call: the Ask page shows these on every visit.
    """
    parts = [p.strip() for p in heading_path.split(" > ") if p.strip()]
    if not parts:
        return None
    # After a colon comes detail ("Health: `GET /api/rag`"); code elsewhere is not a subject.
    leaf = parts[-1].split(":")[0].strip(" .-\u2014")
    if not leaf or len(leaf) > 60 or re.search(r"[`()\d#{}/,_]", leaf) or leaf[0].islower():
        return None  # a lower-case heading names code ("grade_docs", "done"), not a subject
    if leaf.endswith("?"):
        return leaf
    words = leaf.split()
    first = words[0].lower()
    if leaf.lower() in _GENERIC_HEADINGS or first in _PREPOSITIONS:
        return None
    if first in _QUESTION_WORDS | {"how"}:
        if len(words) > 2 and words[1].lower() == "to":  # "Where to add things"
            return f"{words[0].capitalize()} do I {' '.join(_base_forms(words[2:]))}?"
        return None  # "Why this layout": a statement, not a question to ask
    verb = _GERUNDS.get(first, first)
    rest = " ".join(_base_forms(words[1:]))
    if first != verb and " and " in f" {rest} ":  # "Signing in and accounts": the task alone
        tail = words[words.index("and") + 1 :] if "and" in words else []
        if tail and not tail[0].lower().endswith("ing"):
            rest = " ".join(_base_forms(words[1 : words.index("and")]))
    is_task = verb in _TASK_VERBS and (
        verb not in _NOUN_LIKE_VERBS or first != verb or (rest and words[1].lower() in _DETERMINERS)
    )
    if is_task:
        if not rest:  # "Ops > Restart": what is restarted, the section above says
            return f"{parts[-2]}: how do I {verb}?" if len(parts) > 1 else None
        return f"How do I {verb} {rest}?"
    lowered = {word.lower() for word in words}
    if (
        len(words) > 4
        or lowered & _NOT_A_SUBJECT
        or any(w[1:] != w[1:].lower() and not w.isupper() for w in words)
    ):
        return None  # a statement, a detail or a code name (QueryRun), not a subject
    if words[0][1:] == words[0][1:].lower():  # "Rate limits" but "HNSW index", "PostgreSQL"
        words[0] = words[0].lower()
    subject = " ".join(words)
    if words[-1].endswith("s") and not words[-1].endswith(("ss", "us")):
        return f"How do {subject} work?"
    if first in _ARTICLES or (len(words) == 1 and first.endswith(_MASS_NOUN_ENDINGS)):
        return f"How does {subject} work?"
    return f"How does the {subject} work?"


def example_questions(*, limit: int = 4) -> list[str]:
    """Questions a new user could ask, made from real section headings of the ingested docs.

    One per document in turn, so the examples span the knowledge base; within a document, task
    headings ("How do I ...?") before subjects.
    """
    # Each heading once (a long section spans several chunks), in the order of the documents.
    rows = (
        Chunk.objects.exclude(heading_path="")
        .values_list("document_id", "heading_path")
        .annotate(first=models.Min("ordinal"))
        .order_by("document__source_path", "first")[:2000]  # a bound for very large bases
    )
    by_document: dict[int, list[str]] = {}
    seen = set()
    for document_id, path, _ in rows:
        question = heading_as_question(path)
        if question and question.lower() not in seen:
            seen.add(question.lower())
            by_document.setdefault(document_id, []).append(question)
    for questions in by_document.values():
        questions.sort(key=lambda question: " do I " not in question)  # stable: tasks first
    suggested = []
    for turn in range(max((len(q) for q in by_document.values()), default=0)):
        suggested += [
            questions[turn] for questions in by_document.values() if turn < len(questions)
        ]
    return suggested[:limit]


def runs_search(
    *,
    user,
    q: str = "",
    status: str = "",
    risk: str = "",
    since=None,
    until=None,
    evaluation: bool | None = None,
):
    """The history: runs `user` may see, filtered, newest first.

    `evaluation` True keeps only the runs of `manage.py eval_rag`, False only people's runs,
    None both.
    """
    runs = runs_visible_to(user=user).select_related("owner").order_by("-created_at")
    if evaluation is not None:
        runs = runs.filter(evaluation__isnull=not evaluation)
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


def chunks_by_id(*, chunk_ids) -> dict[int, Chunk]:
    """Chunks with their documents, by id (the source previews of an answer); missing ids absent."""
    chunks = Chunk.objects.select_related("document").defer("embedding").filter(pk__in=chunk_ids)
    return {chunk.pk: chunk for chunk in chunks}


def run_grade_scores(*, run: QueryRun) -> dict[int, float | None]:
    """The relevance each chunk got when graded in `run` (its last grading), by chunk id.

    None for a chunk the judge was not asked about: the retrieval gate passed it, or it was read
    on after a refusal (a `retrieve` event with `read_on`; no judge grades those, and the search's
    similarity to the question would read as a low relevance verdict the run never gave).
    """
    scores = {}
    events = run.events.filter(kind__in=("grade", "retrieve")).order_by("seq")
    for kind, payload in events.values_list("kind", "payload"):
        if kind == "retrieve":
            if payload.get("read_on"):
                # A hit shown as an excerpt, then read on whole, keeps the grade it got.
                for doc in payload.get("documents") or []:
                    scores.setdefault(doc.get("chunk_id"), None)
            continue
        chunk_id = (payload.get("document") or {}).get("chunk_id")
        if chunk_id is not None and "score" in payload:
            scores[chunk_id] = payload["score"]
    return scores


def feedback_get(*, run: QueryRun, user) -> Feedback | None:
    """`user`'s feedback on `run`, if they gave any."""
    return Feedback.objects.filter(run=run, user=user).first()


def chunk_get(*, chunk_id: int) -> Chunk | None:
    """One chunk with its document (the knowledge base is readable by every signed-in user)."""
    return Chunk.objects.select_related("document").defer("embedding").filter(pk=chunk_id).first()
