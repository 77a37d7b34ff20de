"""Answer reuse: a repeated question gets an earlier run's verified answer at once, as a run.

A submitted first question (not a follow-up: its meaning depends on its thread) is matched
against the earlier runs whose answer may be given again (`reusable_runs`): exactly, by its
normalised text, and with RAG_REUSE=near also by the cosine similarity of the questions'
embeddings. A match makes a normal stored run that is answered at once from the earlier one
(`run_answer_reused`), without the executor's queue; no match leaves the run to the graph.
Why these rules and defaults: docs/graph.md, "Answer reuse".
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import Exists, OuterRef, QuerySet
from django.utils import timezone
from pgvector.django import CosineDistance

from ragapp.models import Feedback, QueryRun, QuestionVector
from ragapp.observability import metrics
from ragapp.providers import get_embeddings
from ragapp.selectors import knowledge_base_version
from ragapp.services import run_create
from ragapp.services.gaps import question_hash, question_vectors_ensure
from ragapp.services.runs import clean_query, run_answer_reused

logger = logging.getLogger(__name__)

# Near matching embeds the questions of at most this many of the latest reusable runs that have no
# vector yet (asked before RAG_REUSE=near, or with `fresh`); every question asked under it has one.
NEAR_BACKFILL = 200


@dataclass(frozen=True)
class ReuseMatch:
    """An earlier run whose answer fits a new question, and how well."""

    run: QueryRun
    match: str  # "exact" or "near"
    similarity: float
    kb_version: int


def reusable_runs(*, owner, kb_version: int) -> QuerySet[QueryRun]:
    """The runs whose answer may be given again to `owner` at knowledge-base version `kb_version`.

    Answered (so judged faithful), at that version, finished within RAG_REUSE_MAX_AGE_SECONDS,
    the first question of its thread, rated unhelpful by nobody (on it or on any reuse of it),
    not part of an evaluation (its settings may be an experiment's), not itself a reuse (its
    original is the run to name). Another user's only if RAG_REUSE_ACROSS_USERS.
    """
    oldest = timezone.now() - timedelta(seconds=settings.RAG_REUSE_MAX_AGE_SECONDS)
    down = Feedback.objects.filter(rating=Feedback.Rating.DOWN)
    earlier_in_thread = QueryRun.objects.filter(
        thread=OuterRef("thread"), created_at__lt=OuterRef("created_at")
    )
    runs = (
        QueryRun.objects.filter(
            status=QueryRun.Status.ANSWERED,
            faithfulness_score__isnull=False,
            kb_version=kb_version,
            finished_at__gte=oldest,
            evaluation__isnull=True,
            reused_from__isnull=True,
        )
        .exclude(query_hash="")
        .filter(~Exists(down.filter(run=OuterRef("pk"))))
        .filter(~Exists(down.filter(run__reused_from=OuterRef("pk"))))
        .filter(~Exists(earlier_in_thread))
    )
    if not settings.RAG_REUSE_ACROSS_USERS:
        owner_id = getattr(owner, "pk", None)
        runs = runs.filter(owner_id=owner_id) if owner_id else runs.filter(owner__isnull=True)
    return runs


def reuse_find(*, query: str, owner=None, thread=None) -> ReuseMatch | None:
    """The earlier run whose answer `owner`'s new question may get, per RAG_REUSE; else None."""
    if settings.RAG_REUSE == "off" or thread is not None:
        return None
    version = knowledge_base_version()
    runs = reusable_runs(owner=owner, kb_version=version)
    key = question_hash(query)
    exact = runs.filter(query_hash=key).order_by("-finished_at").first()
    if exact is not None:
        return ReuseMatch(exact, "exact", 1.0, version)
    if settings.RAG_REUSE != "near":
        return None
    return _near(query, key, runs, version)


def _near(query: str, key: str, runs: QuerySet[QueryRun], version: int) -> ReuseMatch | None:
    embeddings = get_embeddings()
    latest = list(runs.order_by("-finished_at").values_list("query", flat=True)[:NEAR_BACKFILL])
    # The question's vector is stored even when nothing matches: the next asker may match it.
    question_vectors_ensure(questions=[query, *latest], embeddings=embeddings)
    vectors = QuestionVector.objects.filter(model=embeddings.model_id)
    vector = vectors.get(text_hash=key).embedding
    closest = (
        vectors.filter(text_hash__in=runs.values("query_hash"))
        .exclude(text_hash=key)
        .annotate(distance=CosineDistance("embedding", vector))
        .order_by("distance")
        .first()
    )
    if closest is None:
        return None
    similarity = 1.0 - closest.distance
    if similarity < settings.RAG_REUSE_NEAR_THRESHOLD:
        return None
    run = runs.filter(query_hash=closest.text_hash).order_by("-finished_at").first()
    return ReuseMatch(run, "near", round(similarity, 4), version) if run else None


def run_reuse(*, query: str, owner=None, thread=None, subscribers=None) -> QueryRun | None:
    """A new run answered at once from an earlier run's answer, or None when none may be reused.

    Raises ValidationError for a query run_create would refuse. The run starts its own thread.
    """
    query = clean_query(query)
    found = reuse_find(query=query, owner=owner, thread=thread)
    if found is None:
        return None
    same_owner = found.run.owner_id == getattr(owner, "pk", None)
    reuse = {
        "reused_run": str(found.run.pk),
        "match": found.match,
        "similarity": found.similarity,
        "index_version": found.kb_version,
        "same_owner": same_owner,
    }
    if same_owner:
        reuse["question"] = found.run.query  # another user's words are theirs alone
    with transaction.atomic():  # never a queued run left behind without its answer
        run = run_create(query=query, owner=owner, kb_version=found.kb_version)
        run_answer_reused(run=run, source=found.run, reuse=reuse, subscribers=subscribers)
    # Counted as runs like any other (started, answered), and apart, so a dashboard can tell
    # how much of the answered traffic cost no model time.
    transaction.on_commit(metrics.record_reuse)
    logger.info(
        "run %s reuses run %s (%s, %.4f)", run.pk, found.run.pk, found.match, found.similarity
    )
    return run
