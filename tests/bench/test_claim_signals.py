"""bench/claim_signals.py: claims and their citations, the sample, pointing, the AUC."""

import pytest


def test_a_citation_after_the_full_stop_goes_back_to_its_own_sentence(load_bench):
    bench = load_bench("claim_signals")
    answer = (
        "The server listens on port 8000 by default. [2] "
        "Set `RAG_TOP_K` to change the hits [1][3].\n"
        "This is stated in [2].\n```bash\nrag serve --port 1\n```\nIt is fast."
    )
    assert bench.cited_claims(answer) == [
        ("The server listens on port 8000 by default.", [2]),
        ("Set `RAG_TOP_K` to change the hits.", [1, 3]),
    ]


def test_a_sample_per_origin_takes_the_first_answers_of_each_label(load_bench):
    bench = load_bench("claim_signals")
    items = [
        {"id": "a1", "origin": "A", "faithful": True},
        {"id": "a2", "origin": "A", "faithful": False},
        {"id": "a3", "origin": "A", "faithful": True},
        {"id": "b1", "faithful": False},  # hand-written: no origin
        {"id": "b2", "faithful": False},
    ]
    assert [i["id"] for i in bench.per_origin(items, 1)] == ["a1", "a2", "b1"]


def test_pointing_reads_one_minus_the_share_of_zero_among_the_digits(load_bench):
    import math

    from langchain_core.messages import AIMessage

    from ragapp.graph.context import Usage

    bench = load_bench("claim_signals")

    class Server:
        """What a llama.cpp server returns for a one-token reply with its top tokens."""

        def __init__(self, top):
            self.top = top

        def bind(self, **_):
            return self

        def invoke(self, _messages):
            top = [{"token": t, "logprob": math.log(p)} for t, p in self.top]
            return AIMessage(
                "", response_metadata={"logprobs": {"content": [{"top_logprobs": top}]}}
            )

    # "7" is no document of three, and "The" no digit: neither counts.
    server = Server([("1", 0.4), (" 0", 0.2), ("2", 0.2), ("The", 0.1), ("7", 0.1)])
    assert bench.point_probability(server, [], 3, usage=Usage()) == pytest.approx(0.75)
    assert bench.point_probability(Server([("The", 0.9)]), [], 3, usage=Usage()) is None


def test_the_auc_counts_a_veto_lowest_and_an_answer_without_claims_highest(load_bench):
    bench = load_bench("claim_signals")
    rule = bench.RULES["min p_docs"]
    rows = [
        {"faithful": True, "veto": False, "claims": [{"p_docs": 0.6}]},
        {"faithful": True, "veto": False, "claims": []},
        {"faithful": False, "veto": True, "claims": [{"p_docs": 0.9}]},
        {"faithful": False, "veto": False, "claims": [{"p_docs": 0.7}]},
    ]
    # Faithful over unfaithful: 0.6 beats the veto but not 0.7; no claims beats both: 3 of 4.
    assert bench.auc(rows, rule) == 0.75
