"""What the documentation could not answer: failed, refused and unhelpful runs, by meaning.

Questions are grouped by the cosine similarity of their embeddings (the configured embedder),
greedily in the order first asked: a question joins the group whose first question is closest,
if at least `RAG_GAPS_SIMILARITY`, else starts a new one. Vectors are cached per question text
(`QuestionVector`), so a page over 10,000 runs embeds only what is new.
"""

from __future__ import annotations

import datetime as dt
from collections import Counter
from dataclasses import dataclass, field

import numpy as np
from django.conf import settings
from django.db.models import Exists, JSONField, OuterRef, Q, TextField
from django.db.models.expressions import RawSQL
from django.db.models.fields.json import KeyTextTransform
from django.db.models.functions import Cast

from ragapp.models import Feedback, QueryRun, QuestionVector
from ragapp.services.gaps import question_hash, question_key

REASONS = {
    "no_documentation": "No documentation found",
    "refused": "Refused",
    "failed": "Failed",
    "unhelpful": "Rated unhelpful",
}
EXAMPLES = 3
DOCUMENTS = 3


@dataclass
class GapQuestion:
    """One run of a gap: what was asked, when, and why it counts as a gap."""

    run_id: str
    question: str
    asked_at: dt.datetime
    reasons: tuple[str, ...]


@dataclass
class Gap:
    """Questions of one meaning that the documentation did not answer."""

    questions: list[GapQuestion] = field(default_factory=list)
    documents: list[dict] = field(default_factory=list)  # the closest, most often retrieved
    doc_counts: Counter = field(default_factory=Counter, repr=False)
    doc_info: dict = field(default_factory=dict, repr=False)

    @property
    def count(self) -> int:
        """How many times it was asked."""
        return len(self.questions)

    @property
    def first_asked(self) -> dt.datetime:
        return min(q.asked_at for q in self.questions)

    @property
    def last_asked(self) -> dt.datetime:
        return max(q.asked_at for q in self.questions)

    @property
    def question(self) -> str:
        """The group's representative: its most often asked wording."""
        return Counter(question_key(q.question) for q in self.questions).most_common(1)[0][0]

    @property
    def examples(self) -> list[GapQuestion]:
        """A few different wordings, latest first, each linked to a run."""
        seen, out = set(), []
        for q in sorted(self.questions, key=lambda q: q.asked_at, reverse=True):
            if question_key(q.question) not in seen:
                seen.add(question_key(q.question))
                out.append(q)
        return out[:EXAMPLES]

    @property
    def reasons(self) -> dict[str, int]:
        return dict(Counter(r for q in self.questions for r in q.reasons).most_common())


def gap_runs(
    *,
    since: dt.date | None = None,
    until: dt.date | None = None,
    reasons: list[str] | None = None,
) -> list[dict]:
    """The runs that were refused, found no documentation, failed or were rated unhelpful.

    Evaluation runs are left out: their unanswerable questions are unanswerable on purpose.
    Each row has id, query, created_at, reasons and the documents it retrieved.
    """
    unhelpful = Feedback.objects.filter(run=OuterRef("pk"), rating=Feedback.Rating.DOWN)
    runs = (
        QueryRun.objects.filter(evaluation__isnull=True)
        .annotate(unhelpful=Exists(unhelpful))
        .filter(Q(status__in=["refused", "failed"]) | Q(unhelpful=True))
    )
    if since:
        runs = runs.filter(created_at__date__gte=since)
    if until:
        runs = runs.filter(created_at__date__lte=until)
    rows = runs.order_by("created_at").values(
        "id",
        "query",
        "status",
        "created_at",
        "unhelpful",
        refusal_reason=KeyTextTransform("refusal_reason", "response_metadata"),
        # Only what names a document, built in the database: the passages' texts would make up
        # most of what Python has to decode (10,000 runs: 0.7 s of JSON otherwise).
        documents=RawSQL(_DOCUMENTS_SQL, [], output_field=JSONField()),
    )
    wanted = set(reasons or REASONS)
    out = []
    for row in rows:
        why = _reasons(row)
        if wanted.intersection(why):
            out.append({**row, "reasons": why})
    return out


# The documents a run retrieved (its closest passages when refused, its sources when answered):
# source_path, title and url of each, as one small JSON array.
_DOCUMENTS_SQL = """
    SELECT coalesce(jsonb_agg(jsonb_build_object(
        'source_path', d->'source_path', 'title', d->'title', 'url', d->'url')), '[]'::jsonb)
    FROM jsonb_array_elements(
        CASE WHEN jsonb_typeof(ragapp_queryrun.response_metadata->'passages') = 'array'
             THEN ragapp_queryrun.response_metadata->'passages' ELSE '[]'::jsonb END
        || CASE WHEN jsonb_typeof(ragapp_queryrun.response_metadata->'sources') = 'array'
             THEN ragapp_queryrun.response_metadata->'sources' ELSE '[]'::jsonb END
    ) AS d
    WHERE jsonb_typeof(d) = 'object'
"""


def _reasons(row: dict) -> tuple[str, ...]:
    why = []
    if row["status"] == "failed":
        why.append("failed")
    elif row["status"] == "refused":
        no_docs = row["refusal_reason"] == "no_relevant_documents"
        why.append("no_documentation" if no_docs else "refused")
    if row["unhelpful"]:
        why.append("unhelpful")
    return tuple(why)


def gaps_find(
    *,
    model_id: str,
    since: dt.date | None = None,
    until: dt.date | None = None,
    reasons: list[str] | None = None,
    threshold: float | None = None,
    rows: list[dict] | None = None,
) -> list[Gap]:
    """The gaps, largest first; questions without a cached vector (`model_id`) stand alone.

    Call `services.gaps.question_vectors_ensure` first so that every question has one. `rows`
    are `gap_runs` for the same filters, when the caller has them already.
    """
    threshold = settings.RAG_GAPS_SIMILARITY if threshold is None else threshold
    if rows is None:
        rows = gap_runs(since=since, until=until, reasons=reasons)
    hashes = [question_hash(row["query"]) for row in rows]
    vectors = _vectors(model_id, set(hashes))
    groups = _group([vectors.get(h) for h in hashes], threshold)
    gaps: dict[int, Gap] = {}
    for row, group in zip(rows, groups, strict=True):
        gap = gaps.setdefault(group, Gap())
        gap.questions.append(
            GapQuestion(str(row["id"]), row["query"], row["created_at"], row["reasons"])
        )
        _count_documents(gap, row)
    for gap in gaps.values():
        gap.documents = [
            {**gap.doc_info[key], "count": n} for key, n in gap.doc_counts.most_common(DOCUMENTS)
        ]
    return sorted(gaps.values(), key=lambda g: (-g.count, -g.last_asked.timestamp()))


def _vectors(model_id: str, hashes: set[str]) -> dict[str, np.ndarray]:
    """The cached vectors of the questions `hashes`, by hash.

    Read as text and parsed by numpy in one call each: pgvector's own converter parses every
    number in Python, about 1 s for the 3,000 distinct questions of 10,000 runs.
    """
    rows = (
        QuestionVector.objects.filter(model=model_id, text_hash__in=list(hashes))
        .annotate(text=Cast("embedding", TextField()))
        .values_list("text_hash", "text")
    )
    return {h: np.array(text[1:-1].split(","), dtype=np.float32) for h, text in rows}


def _group(vectors: list, threshold: float) -> list[int]:
    """A group number per vector: the first earlier leader at least `threshold` similar."""
    dims = next((len(v) for v in vectors if v is not None), 0)
    leaders = np.empty((len(vectors), dims), dtype=np.float32)
    count = 0
    groups = []
    by_text: dict[bytes, int] = {}  # identical vectors (the same question) skip the search
    for vector in vectors:
        if vector is None:
            groups.append(-1 - len(groups))  # no vector: a group of its own
            continue
        v = np.asarray(vector, dtype=np.float32)
        key = v.tobytes()
        if key in by_text:
            groups.append(by_text[key])
            continue
        v /= np.linalg.norm(v) or 1.0
        best = -1
        if count:
            sims = leaders[:count] @ v
            i = int(np.argmax(sims))
            best = i if sims[i] >= threshold else -1
        if best < 0:
            leaders[count] = v
            best, count = count, count + 1
        by_text[key] = best
        groups.append(best)
    return groups


def _count_documents(gap: Gap, row: dict) -> None:
    found = row["documents"] or []
    for doc in {d.get("source_path") or "": d for d in found}.values():
        key = doc.get("source_path") or ""
        gap.doc_counts[key] += 1
        gap.doc_info.setdefault(
            key, {"title": doc.get("title") or "", "path": key, "url": doc.get("url") or ""}
        )
