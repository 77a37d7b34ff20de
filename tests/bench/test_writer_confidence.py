"""bench/writer_confidence.py: the writer's first-token confidence per sentence, and the replay."""

import collections
import json
import math

import pytest

from tests.bench.test_export_drafts import evaluate


def tokens(*pieces):
    """Token records spelling `pieces`, each (text, probability)."""
    return [[text, math.log(p)] for text, p in pieces]


def test_each_sentence_gets_the_first_content_token_of_each_specific(load_bench):
    bench = load_bench("writer_confidence")
    reply = tokens(
        ("Set `", 0.9),
        ("RAG", 0.95),  # the backtick before it says nothing
        ("_TOP_K", 0.99),
        ("`. [", 0.8),
        ("1", 0.4),  # a citation is not a specific
        ("]", 0.9),
        (" The default is ", 0.9),
        ("3", 0.3),
        (".", 0.9),
    )
    text = "".join(t for t, _ in reply)
    found = bench.sentence_confidence(text, reply)
    assert [round(p, 2) for p in found["Set `RAG_TOP_K`."]] == [0.95]
    assert [round(p, 2) for p in found["The default is 3."]] == [0.3]


def test_tokens_that_do_not_spell_the_reply_give_no_signal(load_bench):
    bench = load_bench("writer_confidence")
    assert bench.sentence_confidence("Something else.", tokens(("The default is 5.", 0.9))) == {}


def row(**kw):
    draft = "The biggest file is 10 MiB. It applies to every file it reads."
    base = {
        "id": "q",
        "answerable": True,
        "facts": ["10 MiB"],
        "ended": "refused",
        "draft": draft,
        "checks": [
            {"ps": [0.32, 0.6], "flagged": ["The biggest file is 10 MiB."], "declined": False}
        ],
        "verdicts": {
            "The biggest file is 10 MiB.": 0.32,
            "It applies to every file it reads.": 0.6,
        },
        "confidence": {
            "The biggest file is 10 MiB.": [0.999],
            "It applies to every file it reads.": [],
        },
    }
    return base | kw


def test_the_replay_ends_a_run_as_the_product_did(load_bench):
    bench = load_bench("writer_confidence")
    # The opening is doubted: pruning leaves no answer, so the run is refused.
    assert bench.replay(row(), {}, collections.Counter()) == "refused"


def test_a_doubted_sentence_written_with_confident_specifics_is_kept_by_the_rescue(load_bench):
    bench = load_bench("writer_confidence")
    rule = {"rescue": 0.95, "floor": 0.2}
    assert bench.replay(row(), rule, collections.Counter()) == "right"
    # Under the floor, or with a guessed specific, it stays doubted.
    assert bench.replay(row(), {"rescue": 0.95, "floor": 0.4}, collections.Counter()) == "refused"
    guessed = row(confidence={"The biggest file is 10 MiB.": [0.5]})
    assert bench.replay(guessed, rule, collections.Counter()) == "refused"


def test_the_veto_cuts_a_sentence_holding_a_guessed_specific(load_bench):
    bench = load_bench("writer_confidence")
    answered = row(
        checks=[{"ps": [0.6, 0.6], "flagged": [], "declined": False}],
        verdicts={"The biggest file is 10 MiB.": 0.6, "It applies to every file it reads.": 0.6},
        ended="right",
    )
    assert bench.replay(answered, {}, collections.Counter()) == "right"
    guessed = answered | {"confidence": {"The biggest file is 10 MiB.": [0.3]}}
    assert bench.replay(guessed, {"veto": 0.4}, collections.Counter()) == "refused"


def test_a_claim_the_run_never_judged_counts_as_doubted_and_is_reported(load_bench):
    bench = load_bench("writer_confidence")
    unjudged = collections.Counter()
    assert bench.replay(row(verdicts={}), {}, unjudged) == "refused"
    assert unjudged["q"] == 2  # both sentences of the draft


@pytest.mark.django_db
def test_the_join_pairs_each_draft_with_its_run_and_says_when_drafts_are_missing(
    tmp_path, knowledge_base, fake_chat, load_bench
):
    bench = load_bench("writer_confidence")
    run = evaluate(tmp_path, "joined")
    assert run.status == "answered"
    golden = str(tmp_path / "golden.jsonl")
    recorded = tmp_path / "drafts.jsonl"
    # One recorded draft per run that wrote one, in the runs' order: here, the answer as written.
    recorded.write_text(json.dumps({"text": run.answer, "tokens": [[run.answer, 0.0]]}) + "\n")
    [joined] = bench.joined("joined", golden, recorded)
    assert joined["id"] == "p"
    assert joined["draft"] == run.answer.strip()
    assert "9000" in run.answer
    assert joined["ended"] == "right"  # scored on the golden facts, as eval_rag scores them
    assert joined["checks"], "the run's answer check is part of the row"

    # A file holding fewer drafts than the runs wrote (a run still going, the wrong file).
    recorded.write_text("")
    with pytest.raises(SystemExit, match="fewer drafts than joined's runs wrote"):
        bench.joined("joined", golden, recorded)
