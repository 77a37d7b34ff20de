"""The metric functions on hand-made cases."""

import pytest

from ragapp.evaluation.metrics import (
    fact_present,
    facts_accuracy,
    percentile,
    recall_at_k,
    reciprocal_rank,
    refusal_scores,
    source_matches,
)
from ragapp.evaluation.report import compare


@pytest.mark.parametrize(
    ("fact", "answer", "found"),
    [
        ("RAG_TOP_K", "Set rag_top_k to 8.", True),  # any letter case
        ("manage.py ingest_docs", "run manage.py\n   ingest_docs --prune", True),  # whitespace
        ("10", "It retries 10 times.", True),
        ("10", "It retries 100 times.", False),  # numbers are whole tokens
        ("10", "The limit is 210.", False),
        ("10", "Version 10.5 added it.", False),
        ("10", "Version 1.10 added it.", False),
        ("10", "(10)", True),
        ("0.75", "The threshold is 0.75.", True),  # a sentence's full stop is not a decimal
        ("0.75", "The threshold is 0.755", False),
        ("4,000", "at most 4000 characters", True),  # digit groups are the same number
        ("4000", "at most 4,000 characters", True),
        ("--prune", "Use ingest_docs --prune.", True),
        ("prune", "Use ingest_docs --prune.", True),  # words may sit inside longer tokens
        ("GIN index", "a gin  index", True),
        ("", "anything", False),
        ("port 9000", "port 90001", False),
        # An option is a whole token: not the start of a longer one, nor a short one in a long.
        ("-subj", "Pass -subject instead.", False),
        ("-subj", "Pass -subj '/CN=a'.", True),
        ("-t", "pg_restore --table=orders", False),
        ("-t", "pg_restore -t orders", True),
        ("-1", "Set it to -10.", False),
        ("-1", "Set it to -1.5 first.", False),
        ("-1", "Set it to -1.", True),
        # A dash between a letter and a digit may be there or not, on either side.
        ("SHA1", "It uses SHA-1 by default.", True),
        ("SHA256", "Use sha256.", True),
        ("AES-256-CBC", "openssl enc -aes256-cbc", True),
        ("scram-sha-256", "method scram-sha256", True),
        ("SHA1", "It uses SHA-12.", False),
        ("SHA1", "It uses SHA-256.", False),
        # Alternatives: any one of them.
        (("-t", "--table"), "pg_restore --table=orders", True),
        (("-noenc", "-nodes"), "openssl req -new -nodes", True),
        (("-noenc", "-nodes"), "openssl req -new", False),
    ],
)
def test_fact_matching(fact, answer, found):
    assert fact_present(fact, answer) is found


def test_a_fact_with_alternatives_is_named_by_all_of_them():
    from ragapp.evaluation.metrics import fact_label

    assert fact_label(("-t", "--table")) == "-t or --table" and fact_label("-t") == "-t"


def test_all_facts_must_be_present():
    assert facts_accuracy(["--reembed", "ingest_docs"], "Run ingest_docs --reembed.")
    assert not facts_accuracy(["--reembed", "ingest_docs"], "Run ingest_docs --full.")
    assert facts_accuracy([], "anything")


def test_sources_match_by_file_name_or_path_suffix():
    assert source_matches("docs/ingestion.md", "ingestion.md")
    assert source_matches("/srv/pg/html/sql-vacuum.html", "sql-vacuum.html")
    assert source_matches("docs/ingestion.md", "docs/ingestion.md")
    assert not source_matches("docs/reingestion.md", "ingestion.md")
    assert not source_matches("docs/ingestion.md.bak", "ingestion.md")


def test_recall_at_k_counts_a_question_once_any_expected_source_is_in_the_top_k():
    ranked = ["d/a.md", "d/b.md", "d/c.md", "d/a.md", "d/e.md", "d/f.md"]
    assert recall_at_k(ranked, ["c.md"], 3) == 1.0
    assert recall_at_k(ranked, ["f.md"], 5) == 0.0
    assert recall_at_k(ranked, ["f.md"], 6) == 1.0
    assert recall_at_k(ranked, ["x.md", "e.md"], 5) == 1.0  # either file holds the answer
    assert recall_at_k(ranked, [], 5) == 0.0


def test_reciprocal_rank_is_of_the_first_expected_chunk_within_ten():
    ranked = [f"d/{n}.md" for n in "abcdefghijkl"]
    assert reciprocal_rank(ranked, ["a.md"]) == 1.0
    assert reciprocal_rank(ranked, ["d.md", "b.md"]) == 0.5
    assert reciprocal_rank(ranked, ["j.md"]) == pytest.approx(0.1)
    assert reciprocal_rank(ranked, ["k.md"]) == 0.0  # rank 11 is beyond @10


def test_refusal_precision_recall_and_false_refusals():
    # (answerable, refused)
    outcomes = [
        (False, True),  # right refusal
        (False, True),  # right refusal
        (False, False),  # answered what the docs do not cover
        (True, True),  # false refusal
        (True, False),
        (True, False),
        (True, False),
    ]
    scores = refusal_scores(outcomes)
    assert scores["precision"] == pytest.approx(2 / 3)
    assert scores["recall"] == pytest.approx(2 / 3)
    assert scores["false_refusal_rate"] == pytest.approx(1 / 4)
    assert (scores["refused"], scores["unanswerable"], scores["answerable"]) == (3, 3, 4)
    nothing_refused = refusal_scores([(True, False), (False, False)])
    assert nothing_refused["precision"] is None and nothing_refused["recall"] == 0.0


def test_percentiles_interpolate():
    assert percentile([1, 2, 3, 4], 50) == 2.5
    assert percentile([10], 95) == 10
    assert percentile([], 50) is None
    assert percentile([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11], 95) == pytest.approx(10.5)


def test_comparing_reports_gives_deltas_and_which_way_is_better():
    old = {
        "k": 5,
        "retrieval": {"recall_at_5": 0.8, "mrr_at_10": 0.7},
        "refusal": {"false_refusal_rate": 0.2},
        "latency": {"run_ms": {"p50": 40_000}},
    }
    new = {
        "k": 5,
        "retrieval": {"recall_at_5": 0.9, "mrr_at_10": 0.6},
        "refusal": {"false_refusal_rate": 0.1},
        "latency": {"run_ms": {"p50": 30_000}},
        "answers": {"fact_accuracy": 0.7},
    }
    rows = {row["metric"]: row for row in compare(new, old)}
    assert rows["recall@k"]["delta"] == pytest.approx(0.1) and rows["recall@k"]["better"]
    assert rows["MRR@10"]["better"] is False
    assert rows["false refusals"]["better"] is True  # fewer is better
    assert rows["run p50 s"]["old"] == 40 and rows["run p50 s"]["better"] is True
    assert rows["fact accuracy"]["old"] is None and rows["fact accuracy"]["delta"] is None
    assert "cost USD" not in rows  # measured in neither
