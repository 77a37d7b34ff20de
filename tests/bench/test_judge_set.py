"""bench/judge_set.jsonl, the labelled set behind the judges' figures, holds what it claims to.

docs/evaluation.md quotes catch and pass rates on this set; they mean something only while every
item is well formed and labelled, ids are unique (a rerun's records are joined on them), and the
answer check's items keep the composition the answer-quality issue asks for: at least 80
answers, at least 40 of each label, and at least half of them drafts the local model wrote on
third-party documentation.
"""

import json
from collections import Counter
from pathlib import Path

import pytest

SET = Path(__file__).resolve().parents[2] / "bench" / "judge_set.jsonl"
THIRD_PARTY = ("postgresql15", "openssl30", "django32")


@pytest.fixture(scope="module")
def items() -> list[dict]:
    return [json.loads(line) for line in SET.read_text().splitlines() if line.strip()]


def test_every_item_is_well_formed_and_labelled(items):
    for item in items:
        assert item["kind"] in {"relevance", "faithfulness"}, item["id"]
        assert item["question"].strip(), item["id"]
        assert item["note"].strip(), f"{item['id']}: a label says why"
        if item["kind"] == "relevance":
            assert isinstance(item["relevant"], bool), item["id"]
            assert item["document"].strip(), item["id"]
        else:
            assert isinstance(item["faithful"], bool), f"{item['id']}: not labelled"
            assert item["answer"].strip(), item["id"]
            documents = item["documents"]
            assert documents and all(isinstance(d, str) and d.strip() for d in documents)


def test_ids_are_unique(items):
    counts = Counter(item["id"] for item in items)
    assert [name for name, n in counts.items() if n > 1] == []


def test_the_answer_checks_items_keep_their_composition(items):
    answers = [item for item in items if item["kind"] == "faithfulness"]
    labels = Counter(item["faithful"] for item in answers)
    # Drafts as the model wrote them: not the ones with a detail changed by hand ("local 1.5B
    # draft with one planted error, ...").
    drafts = [
        item
        for item in answers
        if item.get("origin", "").startswith("local 1.5B draft, ")
        and item["origin"].endswith(THIRD_PARTY + tuple(f"{s} (held out)" for s in THIRD_PARTY))
    ]
    assert len(answers) >= 80
    assert labels[True] >= 40 and labels[False] >= 40
    assert len(drafts) * 2 >= len(answers)
