"""The best chunks of one page for a query, ranked within that page alone.

The page a question is about is found more often than its chunk that holds the answer: on
manual pages the option that answers is a line in OPTIONS or SYNOPSIS, while the chunk that
ranked best is the page's introduction or an example. The global ranking looks only
`CANDIDATE_FACTOR * k` chunks deep over the whole knowledge base, so a page's other chunks are
rarely among its candidates. Ranking the first hit's page on its own, by the same two signals
(cosine distance and BM25, fused by reciprocal rank), finds them at the cost of one query over
that page's rows; the excerpt then keeps the pieces closest to the question
(docs/evaluation.md, "The first hit's page").
"""

from __future__ import annotations

from django.db.models.expressions import RawSQL

from ragapp.models import Chunk
from ragapp.retrieval.text_search import idf, query_terms, query_vector
from ragapp.retrieval.vector import cosine_distance_to

# Reciprocal rank fusion within the page, as in the global ranking (retrievers.RRF_K). BM25
# weighs as much as the cosine here: it was measured so (docs/evaluation.md).
PAGE_RRF_K = 60
PAGE_TEXT_WEIGHT = 1.0
# A page is ranked over at most this many of its chunks (a long manual page has a few hundred).
PAGE_ROWS_LIMIT = 500


def best_of_page(
    document_id: int,
    *,
    vector: list[float],
    dimensions: int,
    query: str | None,
    n: int,
    exclude: set[int],
) -> list[int]:
    """The ids of the `n` chunks of `document_id` (not in `exclude`) best for the query.

    Best first.

    `query` adds BM25 to the cosine ranking (None: cosine only). The caller holds the snapshot.
    """
    if n <= 0:
        return []
    rows = Chunk.objects.filter(document_id=document_id).exclude(id__in=exclude)
    rows = rows.annotate(distance=cosine_distance_to(vector, dimensions=dimensions))
    text = _bm25_vector(query) if query else None
    if text:
        # `<#>` is the negative inner product: below 0 when the chunk holds a query word.
        rows = rows.annotate(bm25_distance=RawSQL("bm25 <#> %s::sparsevec", [text]))
        found = list(rows.values_list("id", "distance", "bm25_distance")[:PAGE_ROWS_LIMIT])
    else:
        found = [(i, d, 0.0) for i, d in rows.values_list("id", "distance")[:PAGE_ROWS_LIMIT]]
    scores: dict[int, float] = {}
    for rank, row in enumerate(sorted(found, key=lambda r: (r[1], r[0])), 1):
        scores[row[0]] = 1.0 / (PAGE_RRF_K + rank)
    lexical = sorted((r for r in found if r[2] < 0), key=lambda r: (r[2], r[0]))
    for rank, row in enumerate(lexical, 1):
        scores[row[0]] += PAGE_TEXT_WEIGHT / (PAGE_RRF_K + rank)
    return sorted(scores, key=lambda i: (-scores[i], i))[:n]


def _bm25_vector(query: str) -> str | None:
    """The query's BM25 weights as a sparse vector (text_search.bm25_chunks's query side)."""
    terms = query_terms(query)
    present = [t for t, count in terms.frequencies.items() if count > 0]
    if not present or not terms.chunks:
        return None
    return query_vector({t: idf(terms.frequencies[t], terms.chunks) for t in present})
