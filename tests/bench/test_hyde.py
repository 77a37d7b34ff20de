"""bench/hyde.py measures the first search with and without the passage, in one run."""

import json
import sys

import pytest

pytestmark = pytest.mark.django_db

PASSAGE = "To bring it up, run beta serve: the beta service then listens on port 9000."


def test_the_passage_finds_what_the_question_alone_misses(
    tmp_path, knowledge_base, fake_chat, settings, monkeypatch, load_bench
):
    from ragapp.providers import fake_chat as fake_module

    scripted = fake_module.FakeScript(hypothesize=lambda question: PASSAGE)
    monkeypatch.setattr(
        fake_module, "fake_chat_model", lambda name: fake_module.FakeChatModel(script=scripted)
    )
    settings.RAG_TOP_K = 1  # what the model is shown: the first hit alone
    golden = tmp_path / "golden.jsonl"
    item = {"id": "w", "question": "How do I launch the module that answers requests?"}
    item |= {"answerable": True, "sources": ["beta.md"], "facts": ["9000"]}
    golden.write_text(json.dumps(item) + "\n")
    out = tmp_path / "hyde.json"
    monkeypatch.setattr(sys, "argv", ["hyde.py", str(golden), "--json", str(out)])

    result = load_bench("hyde").main()

    assert json.loads(out.read_text()) == result
    assert result["passages"] == {"w": PASSAGE} and result["no_passage"] == 0
    alone, together = result["question_alone"], result["with_passage"]
    assert alone["facts_shown"] == 0 and together["facts_shown"] == 1
    assert alone["mrr_at_10"] < 1.0 and together["mrr_at_10"] == 1.0
    assert result["ratio"]["mrr_at_10"] == pytest.approx(1.0 / alone["mrr_at_10"], abs=0.01)
    assert result["ratio"]["facts_shown"] is None  # nothing shown without it: no ratio
