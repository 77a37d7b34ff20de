"""bench/claim_signals.py: an answer's claims with the documents each one cites."""


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
