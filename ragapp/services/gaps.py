"""Writes for the gaps page: the cached embeddings of the questions it groups."""

from __future__ import annotations

import hashlib

from ragapp.models import QuestionVector
from ragapp.providers import EmbeddingProvider


def question_key(question: str) -> str:
    """How a question is told apart: letter case and runs of whitespace do not count."""
    return " ".join(question.casefold().split())


def question_hash(question: str) -> str:
    """The sha256 of the question's key, under which its vector is stored."""
    return hashlib.sha256(question_key(question).encode("utf-8")).hexdigest()


def question_vectors_ensure(*, questions: list[str], embeddings: EmbeddingProvider) -> int:
    """Embed and store the questions that have no vector for this model yet; return how many."""
    wanted = {question_hash(q): question_key(q) for q in questions}
    have = set(
        QuestionVector.objects.filter(
            model=embeddings.model_id, text_hash__in=list(wanted)
        ).values_list("text_hash", flat=True)
    )
    missing = [(h, text) for h, text in wanted.items() if h not in have]
    if not missing:
        return 0
    vectors = embeddings.embed_documents([text for _, text in missing])
    QuestionVector.objects.bulk_create(
        [
            QuestionVector(text_hash=h, model=embeddings.model_id, embedding=vector)
            for (h, _), vector in zip(missing, vectors, strict=True)
        ],
        batch_size=1000,
        ignore_conflicts=True,  # another request may have embedded the same question meanwhile
    )
    return len(missing)
