"""bench/where_facts_end.py places each answerable question's facts against what its writer read.

The largest loss on every golden set is an answer whose facts were never in front of the writer
(docs/evaluation.md, stops 64-68); where they were instead decides which lever can help: the
excerpt, another chunk of a page already found, or a page the search missed.
"""

import json
import sys
from io import StringIO

import pytest
from django.core.management import call_command

pytestmark = pytest.mark.django_db

# Each question finds beta.md's first chunk first (the port); its facts are placed from there.
ITEMS = [
    ("shown", "Which port does the beta service listen on?", ["9000"], "docs/beta.md"),
    ("another chunk of a found page", "Which port does beta serve listen on?",
     ["seven days"], "docs/beta.md"),
    ("source page not found", "On which port does the beta service listen?",
     ["monthly"], "docs/gamma.md"),
    ("on no one page", "Which port will the beta service listen on?",
     ["port 1234"], "docs/beta.md"),
]  # fmt: skip


def test_each_question_is_placed_where_its_facts_are_and_crossed_with_its_outcome(
    tmp_path, knowledge_base, fake_chat, settings, monkeypatch, load_bench
):
    settings.RAG_TOP_K = 1  # the writer reads the first hit alone
    golden = tmp_path / "golden.jsonl"
    lines = [
        {"id": where, "question": q, "answerable": True, "sources": [src], "facts": facts}
        for where, q, facts, src in ITEMS
    ]
    unanswerable = {"id": "u", "question": "What is delta?", "answerable": False}
    lines.append(unanswerable | {"sources": [], "facts": []})
    golden.write_text("".join(json.dumps(line) + "\n" for line in lines))
    call_command(
        "eval_rag", str(golden), "--name", "placed", "--output", str(tmp_path / "report"),
        stdout=StringIO(), stderr=StringIO(),
    )  # fmt: skip
    out = tmp_path / "placed.json"
    argv = ["where_facts_end.py", str(golden), "placed", "--json", str(out)]
    monkeypatch.setattr(sys, "argv", argv)

    result = load_bench("where_facts_end").main()

    assert json.loads(out.read_text()) == result
    rows = {row["id"]: row for row in result["rows"]}
    assert set(rows) == {where for where, *_ in ITEMS}  # answerable questions only
    assert {name: row["where"] for name, row in rows.items()} == {name: name for name in rows}
    assert result["shown"] == 1 and result["answerable"] == 4
    # The fake writer answers from the first hit: right where its facts were shown, else wrong.
    assert rows["shown"]["outcome"] == "right"
    assert all(row["outcome"] == "wrong" for name, row in rows.items() if name != "shown")
    assert result["table"]["shown"]["right"] == 1
    assert result["table"]["source page not found"]["wrong"] == 1
    # gamma.md's chunk is among the hits ranked after the one shown: re-ranking could show it.
    assert rows["source page not found"]["ranks_6_10_show"] is True
    assert rows["on no one page"]["ranks_6_10_show"] is False
    assert result["rerank_ceiling"] == 1


def test_an_evaluation_that_is_not_there_is_said(tmp_path, knowledge_base, monkeypatch, load_bench):
    golden = tmp_path / "golden.jsonl"
    golden.write_text("")
    monkeypatch.setattr(sys, "argv", ["where_facts_end.py", str(golden), "nowhere"])

    with pytest.raises(SystemExit, match="No evaluation called 'nowhere'"):
        load_bench("where_facts_end").main()


def test_a_fact_the_excerpt_left_out_is_placed_as_cut_by_it(
    tmp_path, knowledge_base, fake_chat, settings, monkeypatch, load_bench
):
    settings.RAG_TOP_K = 1
    # With excerpts (the local default) the first hit is shown whole with what fits of its
    # page's next chunk; at 20 characters none of "Beta logs rotate daily; keep seven days." does.
    settings.RAG_EXCERPT_CHARS = 20
    golden = tmp_path / "golden.jsonl"
    item = {"id": "cut", "question": "Which port does the beta service listen on?"}
    item |= {"answerable": True, "sources": ["docs/beta.md"], "facts": ["seven days"]}
    golden.write_text(json.dumps(item) + "\n")
    call_command(
        "eval_rag", str(golden), "--name", "cut", "--output", str(tmp_path / "report"),
        stdout=StringIO(), stderr=StringIO(),
    )  # fmt: skip
    monkeypatch.setattr(sys, "argv", ["where_facts_end.py", str(golden), "cut"])

    [row] = load_bench("where_facts_end").main()["rows"]

    assert row["where"] == "cut by the excerpt"
