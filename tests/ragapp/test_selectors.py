"""Reads that the pages build on, against the real database."""

import pytest

from ragapp.models import TraceEvent
from ragapp.selectors import run_grade_scores
from ragapp.services import run_create

pytestmark = pytest.mark.django_db


def test_a_chunk_read_on_has_no_relevance_unless_it_was_graded_before():
    run = run_create(query="How do beta logs rotate?")
    events = [
        ("grade", {"score": 0.8, "document": {"chunk_id": 1}}),
        ("grade", {"score": None, "document": {"chunk_id": 2}}),  # the gate did not ask
        ("retrieve", {"read_on": False, "documents": [{"chunk_id": 1}, {"chunk_id": 2}]}),
        # Chunk 1 was a hit shown as an excerpt, then read on whole; chunk 3 is new.
        ("retrieve", {"read_on": True, "documents": [{"chunk_id": 1}, {"chunk_id": 3}]}),
    ]
    for seq, (kind, payload) in enumerate(events, 1):
        TraceEvent.objects.create(run=run, seq=seq, kind=kind, payload=payload)

    assert run_grade_scores(run=run) == {1: 0.8, 2: None, 3: None}
