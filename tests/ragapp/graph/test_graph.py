"""The whole graph with scripted fake models, end to end through the database."""

import pytest

from ragapp.graph.context import GraphLimits
from ragapp.models import Chunk, QueryRun, TraceEvent
from ragapp.runs.runner import execute_run
from ragapp.services import run_create

pytestmark = pytest.mark.django_db

LIMITS = GraphLimits(top_k=2)


def kinds(run) -> list[str]:
    return list(TraceEvent.objects.filter(run=run).order_by("seq").values_list("kind", flat=True))


def payloads(run, kind) -> list[dict]:
    return [e.payload for e in TraceEvent.objects.filter(run=run, kind=kind).order_by("seq")]


def ask(question, models, **limits):
    run = run_create(query=question)
    execute_run(run, models=models, limits=GraphLimits(**{"top_k": 2, **limits}))
    run.refresh_from_db()
    return run


def second_hit_text(question, models) -> str:
    """The text of the chunk that retrieval ranks second for `question`."""
    ranked = [d["chunk_id"] for d in payloads(ask(question, models), "retrieve")[0]["documents"]]
    return Chunk.objects.get(pk=ranked[1]).text


def test_answered_directly(knowledge_base, models, script):
    script.relevance = lambda question, doc: 0.9 if "beta" in doc.lower() else 0.1
    run = ask("How do I start the beta service?", models)

    assert kinds(run) == [
        "retrieve",
        "grade",
        "grade",
        "grade_docs",
        "generate",
        "grade_answer",
        "answer",
        "done",
    ]
    assert list(TraceEvent.objects.filter(run=run).values_list("seq", flat=True)) == list(
        range(1, 9)
    )
    assert run.status == QueryRun.Status.ANSWERED
    assert run.answer.startswith("According to the documentation")
    assert run.faithfulness_score == pytest.approx(0.95)
    assert run.hallucination_risk == "low"
    assert (run.iteration_count, run.correction_count) == (1, 0)
    sources = run.response_metadata["sources"]
    assert sources and {s["source_path"] for s in sources} == {"docs/beta.md"}
    assert sources[0]["n"] == 1 and sources[0]["cited"] is True
    assert run.response_metadata["tokens"]["fake-chat"]["calls"] == 4  # 2 grades, generate, judge
    assert set(run.response_metadata["node_ms"]) == {
        "retrieve",
        "grade_docs",
        "generate",
        "grade_answer",
    }
    assert run.response_metadata["settings"]["top_k"] == 2
    grade_events = payloads(run, "grade")
    assert [g["index"] for g in grade_events] == [1, 2] and grade_events[0]["total"] == 2
    assert run.started_at and run.finished_at and run.error == ""


def test_answered_after_broadening_and_original_query_never_changes(knowledge_base, models, script):
    question = "alpha 2.3 installer prefix"
    script.relevance = lambda q, doc: 0.9 if "port 9000" in doc else 0.0
    script.broaden = lambda original, query: "beta service port"
    script.generate = lambda q, docs: f"Answering: {q} [1]"
    run = ask(question, models)

    assert kinds(run)[:7] == [
        "retrieve",
        "grade",
        "grade",
        "grade_docs",
        "broaden",
        "retrieve",
        "grade",
    ]
    broaden = payloads(run, "broaden")[0]
    assert (broaden["old_query"], broaden["new_query"]) == (question, "beta service port")
    retrieves = payloads(run, "retrieve")
    assert [r["query"] for r in retrieves] == [question, "beta service port"]
    assert run.query == question
    assert run.status == QueryRun.Status.ANSWERED
    assert run.iteration_count == 2
    assert run.answer == f"Answering: {question} [1]"  # generate answers the original question


def test_force_pass_on_the_third_retrieval_gives_the_fallback_without_a_model_call(
    knowledge_base, models, script
):
    script.relevance = lambda q, doc: 0.0
    run = ask("What is the refund policy for enterprise customers?", models)

    assert kinds(run).count("retrieve") == 3
    assert kinds(run).count("broaden") == 2
    assert kinds(run)[-3:] == ["generate", "answer", "done"]
    assert payloads(run, "generate")[0]["fallback"] is True
    assert "generate" not in script.calls and "AnswerFaithfulness" not in script.calls
    assert run.status == QueryRun.Status.REFUSED
    assert run.answer.startswith("I could not find relevant documentation")
    assert run.response_metadata["refusal_reason"] == "no_relevant_documents"
    assert run.iteration_count == 3


def test_with_one_retrieval_nothing_relevant_is_refused_without_broadening(
    knowledge_base, models, script
):
    script.relevance = lambda q, doc: 0.0
    run = ask("What is the refund policy for enterprise customers?", models, max_retrievals=1)

    assert kinds(run) == ["retrieve", "grade", "grade", "grade_docs", "generate", "answer", "done"]
    assert "broaden" not in script.calls and "generate" not in script.calls
    assert run.status == QueryRun.Status.REFUSED
    assert run.response_metadata["refusal_reason"] == "no_relevant_documents"
    assert run.iteration_count == 1
    assert run.response_metadata["settings"]["max_retrievals"] == 1


def test_refined_once_then_answered(knowledge_base, models, script):
    scores = iter([0.5, 0.9])
    script.relevance = lambda q, doc: 1.0
    script.faithfulness = lambda answer, docs: next(scores)
    run = ask("How do beta logs rotate?", models)

    assert kinds(run)[-6:] == [
        "generate",
        "grade_answer",
        "refine",
        "grade_answer",
        "answer",
        "done",
    ]
    assert run.status == QueryRun.Status.ANSWERED
    assert run.correction_count == 1
    assert run.answer.endswith("(refined)")
    assert run.response_metadata["refined"] is True
    assert payloads(run, "grade_answer")[1]["after_refinement"] is True


def test_still_unfaithful_after_refinement_is_refused_with_the_reason(
    knowledge_base, models, script
):
    script.relevance = lambda q, doc: 1.0
    script.faithfulness = lambda answer, docs: 0.3
    run = ask("How do beta logs rotate?", models)

    assert kinds(run).count("refine") == 1
    assert kinds(run).count("grade_answer") == 2
    assert run.status == QueryRun.Status.REFUSED
    assert run.response_metadata["refusal_reason"] == "unfaithful"
    assert run.answer.startswith("I can't give a reliable answer")
    if models.faithfulness_method == "structured":  # only structured judges name the claims
        assert "an unsupported claim" in run.answer
    assert run.response_metadata["draft_answer"].endswith("(refined)")
    answer_event = payloads(run, "answer")[0]
    assert answer_event["status"] == "refused" and answer_event["sources"] == []


def test_invalid_grader_output_is_retried_once_then_the_run_fails_cleanly(
    knowledge_base, models, script
):
    script.invalid_output_for = {"DocumentRelevance"}
    run = ask("How do I start the beta service?", models)

    assert kinds(run) == ["retrieve", "error", "done"]
    # Each document graded was tried exactly twice (once the first fails, documents still
    # waiting for a worker are cancelled, so one or both were graded).
    assert script.calls.count("DocumentRelevance") in (2, 4)
    assert run.status == QueryRun.Status.FAILED
    assert "twice" in run.error and "grade_docs" in run.error
    assert payloads(run, "error")[0]["message"] == run.error
    assert payloads(run, "done")[0]["status"] == "failed"
    assert run.answer == "" and run.finished_at is not None


def test_grading_runs_concurrently_but_events_stay_in_document_order(
    knowledge_base, models, script
):
    script.relevance = lambda q, doc: 0.9
    run = ask("beta alpha gamma", models, top_k=5, grade_concurrency=3)
    indexes = [p["index"] for p in payloads(run, "grade")]
    assert indexes == [1, 2, 3, 4, 5]


def test_documents_that_passed_before_broadening_are_kept(knowledge_base, models, script):
    script.relevance = lambda q, doc: 0.9 if ("installer" in doc or "9000" in doc) else 0.0
    script.broaden = lambda original, query: "beta serve port"
    run = ask("alpha installer prefix", models, min_relevant_docs=2)

    summaries = payloads(run, "grade_docs")
    assert [(s["passed"], s["kept_overall"]) for s in summaries] == [(1, 1), (1, 2)]
    assert run.status == QueryRun.Status.ANSWERED
    cited = {s["source_path"] for s in run.response_metadata["sources"]}
    assert cited == {"docs/alpha.md", "docs/beta.md"}


def test_the_embedding_prefilter_rejects_distant_chunks_without_a_model_call(
    knowledge_base, models, script
):
    script.relevance = lambda question, doc: 0.9  # the judge would pass anything it is shown
    run = ask("How do I start the beta service?", models, prefilter_similarity=0.99)

    grades = payloads(run, "grade")
    assert grades and all(g["prefiltered"] and not g["passed"] for g in grades)
    assert grades[0]["score"] == 0 and "below the pre-filter 0.99" in grades[0]["reasoning"]
    assert not any("relevance" in call.lower() for call in script.calls)
    assert run.status == QueryRun.Status.REFUSED  # nothing passed: the honest fallback

    kept = ask("How do I start the beta service?", models, prefilter_similarity=0.0)
    assert not any(g["prefiltered"] for g in payloads(kept, "grade"))
    assert kept.status == QueryRun.Status.ANSWERED


@pytest.mark.parametrize("models", ["structured"], indirect=True)
def test_the_risk_veto_decides_whether_a_high_risk_overrules_a_passing_score(
    knowledge_base, models, script
):
    script.relevance = lambda question, doc: 0.9 if "beta" in doc.lower() else 0.1
    script.risk = lambda score: "high"  # a judge whose risk field contradicts its score

    vetoed = ask("How do I start the beta service?", models, risk_veto=True)
    scored = ask("How do I start the beta service?", models, risk_veto=False)

    assert vetoed.status == QueryRun.Status.REFUSED
    assert payloads(vetoed, "grade_answer")[0]["faithful"] is False
    assert scored.status == QueryRun.Status.ANSWERED
    assert payloads(scored, "grade_answer")[0]["faithful"] is True


def test_answers_cite_the_shared_blocks_numbers_and_use_only_what_passed(
    knowledge_base, models, script
):
    # The first hit fails grading and the second passes: both are in the documents block every
    # prompt shares, and the answer may use only [2].
    question = "Which port does the beta service listen on?"
    second = second_hit_text(question, models)
    script.relevance = lambda q, doc: 0.9 if doc == second else 0.0
    seen = []
    script.generate = lambda q, docs: seen.append(docs) or "It is in the documents [2]."
    run = ask(question, models)

    generate = payloads(run, "generate")[0]
    assert generate["usable"] == [2]
    assert seen[-1] == [second]  # only the usable document was offered
    assert run.status == QueryRun.Status.ANSWERED
    sources = run.response_metadata["sources"]
    assert [(s["n"], s["cited"]) for s in sources] == [(2, True)]


def test_with_the_retrieval_gate_the_best_verdict_passes_every_chunk_the_judge_read(
    knowledge_base, models, script
):
    # The first hit fails its own verdict and the second passes: with RAG_RELEVANCE_GATE
    # "retrieval" both pass, and the trace says why the first did.
    question = "Which port does the beta service listen on?"
    second = second_hit_text(question, models)
    script.relevance = lambda q, doc: 0.9 if doc == second else 0.1
    seen = []
    script.generate = lambda q, docs: seen.append(docs) or "It listens on 9000 [1]."
    run = ask(question, models, relevance_gate="retrieval", relevance_threshold=0.5)

    grades = payloads(run, "grade")
    assert [(g["score"], g["passed"]) for g in grades] == [(0.1, True), (0.9, True)]
    assert "passed with its retrieval, whose best verdict (0.90)" in grades[0]["reasoning"]
    assert payloads(run, "generate")[0]["usable"] == [1, 2]
    assert len(seen[-1]) == 2
    assert run.status == QueryRun.Status.ANSWERED

    # Per document (the seed's grader), the same verdicts keep only the second.
    alone = ask(question, models, relevance_gate="document", relevance_threshold=0.5)
    assert [g["passed"] for g in payloads(alone, "grade")] == [False, True]
    assert payloads(alone, "generate")[0]["usable"] == [2]


@pytest.mark.parametrize("models", ["logprobs"], indirect=True)
def test_with_the_retrieval_gate_the_yes_no_judge_stops_at_the_first_passing_verdict(
    knowledge_base, models, script
):
    script.relevance = lambda q, doc: 0.9  # the first verdict passes, and decides
    run = ask("Which port does the beta service listen on?", models, relevance_gate="retrieval")

    grades = payloads(run, "grade")
    assert [(g["score"], g["passed"]) for g in grades] == [(0.9, True), (None, True)]
    assert grades[1]["reasoning"].startswith("not asked: a chunk ranked above it passed first")
    assert "passed with its retrieval, whose best verdict (0.90)" in grades[1]["reasoning"]
    assert script.calls.count("DocumentRelevance") == 1  # one verdict, not two
    assert payloads(run, "generate")[0]["usable"] == [1, 2]
    assert run.status == QueryRun.Status.ANSWERED


def test_with_the_retrieval_gate_no_passing_verdict_still_passes_nothing(
    knowledge_base, models, script
):
    script.relevance = lambda q, doc: 0.3  # under the threshold everywhere
    run = ask(
        "What is the refund policy for enterprise customers?",
        models,
        relevance_gate="retrieval",
        relevance_threshold=0.5,
    )

    assert not any(g["passed"] for g in payloads(run, "grade"))
    assert run.response_metadata["refusal_reason"] == "no_relevant_documents"


def test_with_the_retrieval_gate_a_prefiltered_chunk_stays_out(knowledge_base, models, script):
    question = "How do I start the beta service?"
    ranked = payloads(ask(question, models), "retrieve")[0]["documents"]
    floor = (ranked[0]["similarity"] + ranked[1]["similarity"]) / 2  # between the two hits
    script.relevance = lambda q, doc: 0.9
    run = ask(question, models, relevance_gate="retrieval", prefilter_similarity=floor)

    grades = payloads(run, "grade")
    assert [(g["prefiltered"], g["passed"]) for g in grades] == [(False, True), (True, False)]


def test_an_answer_that_says_the_documents_do_not_cover_it_is_refused_with_passages(
    knowledge_base, models, script
):
    script.relevance = lambda q, doc: 1.0
    script.generate = lambda q, docs: "The provided documents do not mention SAML at all."
    run = ask("How do I set up SAML for the beta service?", models)

    assert kinds(run)[-4:] == ["generate", "grade_answer", "answer", "done"]
    assert payloads(run, "grade_answer")[0]["declined"] is True
    assert "refine" not in script.calls and "AnswerFaithfulness" not in script.calls
    assert run.status == QueryRun.Status.REFUSED
    assert run.faithfulness_score is None and run.hallucination_risk == ""
    meta = run.response_metadata
    assert meta["refusal_reason"] == "not_in_documents"
    assert run.answer.startswith("The documentation I found does not answer this question")
    assert meta["draft_answer"] == "The provided documents do not mention SAML at all."
    assert meta["sources"] == [] and 1 <= len(meta["passages"]) <= 3
    assert all(p["excerpt"] and p["relevance"] == 1.0 for p in meta["passages"])
    assert payloads(run, "answer")[0]["passages"] == meta["passages"]


def test_a_chunk_found_again_after_broadening_is_not_judged_again(knowledge_base, models, script):
    script.relevance = lambda q, doc: 0.0
    script.broaden = lambda original, query: query  # the same search, the same chunks
    run = ask("What is the refund policy for enterprise customers?", models)

    assert kinds(run).count("retrieve") == 3 and kinds(run).count("grade") == 6
    assert script.calls.count("DocumentRelevance") == 2  # the two chunks, once each
    assert run.response_metadata["refusal_reason"] == "no_relevant_documents"


@pytest.mark.parametrize("models", ["logprobs"], indirect=True)
@pytest.mark.parametrize(
    ("weakest", "faithful", "risk"),
    [(0.3, False, "high"), (0.4, True, "medium"), (0.7, True, "low")],
)
def test_the_claims_checks_risk_agrees_with_its_verdict(
    knowledge_base, models, script, weakest, faithful, risk
):
    from dataclasses import replace

    claims = replace(models, faithfulness_method="claims")
    script.relevance = lambda q, doc: 1.0
    script.faithfulness = lambda claim, docs: weakest
    script.generate = lambda q, docs: "Beta logs rotate daily at midnight."
    run = ask("How do beta logs rotate?", claims, answer_confidence_threshold=0.35)

    grade = payloads(run, "grade_answer")[0]
    assert (grade["faithful"], grade["hallucination_risk"]) == (faithful, risk)
    if faithful:  # an answer that is shown is never labelled high risk
        assert run.status == QueryRun.Status.ANSWERED and run.hallucination_risk == risk


def claims_judging(models, script, doubted: str):
    """`models` with the claims check, whose judge doubts (P 0.1) each claim holding `doubted`
    and states every other (P 0.9); and the list of the claims it is asked about, in order."""
    from dataclasses import replace

    judged = []

    def support(claim, docs):
        judged.append(claim)
        return 0.1 if doubted in claim else 0.9

    script.relevance = lambda q, doc: 1.0
    script.faithfulness = support
    return replace(models, faithfulness_method="claims"), judged


@pytest.mark.parametrize("models", ["logprobs"], indirect=True)
def test_the_claims_check_vetoes_a_missing_specific_and_judges_each_sentence(
    knowledge_base, models, script
):
    claims, judged = claims_judging(models, script, doubted="every hour")
    script.generate = lambda q, docs: (
        "Beta logs rotate daily at midnight. Old logs are compressed every hour afterwards."
    )
    run = ask("How do beta logs rotate?", claims, answer_confidence_threshold=0.35)

    first, second = payloads(run, "grade_answer")
    assert first["faithful"] is False and first["hallucination_risk"] == "high"
    assert first["problematic_claims"] == ["Old logs are compressed every hour afterwards."]
    # Refinement cuts the flagged sentence out, with no model call.
    refine = payloads(run, "refine")[0]
    assert refine["method"] == "prune" and "refine" not in script.calls
    assert run.answer == "Beta logs rotate daily at midnight."
    assert second["faithful"] is True and run.status == QueryRun.Status.ANSWERED
    assert run.hallucination_risk == second["hallucination_risk"] == "low"
    # The second check took the first's verdict on the sentence left: asked once each.
    assert judged == [
        "Beta logs rotate daily at midnight.",
        "Old logs are compressed every hour afterwards.",
    ]
    # A specific that no document holds fails the answer without asking the model.
    judged.clear()
    script.generate = lambda q, docs: "Set BETA_ROTATE_HOURS to 6 to rotate beta logs."
    run = ask("How do beta logs rotate?", claims, answer_confidence_threshold=0.35)
    assert run.status == QueryRun.Status.REFUSED and judged == []
    grade = payloads(run, "grade_answer")[0]
    assert grade["faithfulness_score"] == 0.0
    assert "beta_rotate_hours does not appear in the documents" in grade["problematic_claims"]


@pytest.mark.parametrize("models", ["logprobs"], indirect=True)
def test_the_answer_check_never_asks_what_cannot_change_its_verdict(knowledge_base, models, script):
    claims, judged = claims_judging(models, script, doubted="hourly")
    script.generate = lambda q, docs: (
        "Beta logs rotate hourly by default. They are kept for a week. Old ones are compressed."
    )
    run = ask("How do beta logs rotate?", claims, answer_confidence_threshold=0.35)

    # Pruning cuts an answer whose opening is doubted to nothing: the later sentences could not
    # change that, so they were not asked about, and the unchanged draft is not checked again.
    assert judged == ["Beta logs rotate hourly by default."]
    assert kinds(run)[-5:] == ["generate", "grade_answer", "refine", "answer", "done"]
    check = payloads(run, "grade_answer")[0]
    assert check["problematic_claims"] == ["Beta logs rotate hourly by default."]
    assert "the other 2 not judged" in check["reasoning"]
    refine = payloads(run, "refine")[0]
    assert refine["unrevised"] is True and refine["after_chars"] == 0
    assert run.status == QueryRun.Status.REFUSED
    assert run.response_metadata["refusal_reason"] == "unfaithful"
    assert run.response_metadata["refined"] is True
    assert run.response_metadata["draft_answer"].startswith("Beta logs rotate hourly")

    # A doubted sentence after a stated opening is judged with the rest, pruned, and the
    # shorter answer checked again: its sentences were judged over the same documents already,
    # so the second check takes those verdicts and asks the model nothing.
    judged.clear()
    script.generate = lambda q, docs: (
        "Beta logs rotate daily. They are kept for a week. Old ones are compressed hourly."
    )
    run = ask("How do beta logs rotate?", claims, answer_confidence_threshold=0.35)
    assert judged == [
        "Beta logs rotate daily.",
        "They are kept for a week.",
        "Old ones are compressed hourly.",
    ]
    assert payloads(run, "refine")[0]["unrevised"] is False
    first, second = payloads(run, "grade_answer")
    assert "recalled" not in first["reasoning"] and "earlier check" not in first["reasoning"]
    assert second["reasoning"].endswith("; 2 of them as the run's earlier check judged them")
    assert second["faithful"] is True and second["faithfulness_score"] == pytest.approx(0.9)
    assert run.status == QueryRun.Status.ANSWERED
    assert run.answer == "Beta logs rotate daily. They are kept for a week."


DOUBT = {
    "relevance_gate": "retrieval",
    "relevance_threshold": 0.35,
    "relevance_doubt_floor": 0.2,
    "doubtful_answer_threshold": 0.5,
    "answer_confidence_threshold": 0.35,
}


@pytest.mark.parametrize("models", ["logprobs"], indirect=True)
def test_a_doubtful_retrieval_is_answered_only_past_the_stricter_check(
    knowledge_base, models, script
):
    claims, judged = claims_judging(models, script, doubted="hourly")
    script.relevance = lambda q, doc: 0.3  # under the threshold, above the doubt floor
    script.generate = lambda q, docs: "Beta logs rotate daily [1]. They are kept for a week [1]."
    run = ask("How do beta logs rotate?", claims, **DOUBT)

    # Not refused at the gate: every chunk passed as doubtful, and the answer was checked at 0.5.
    assert run.status == QueryRun.Status.ANSWERED
    assert payloads(run, "grade_docs")[0]["doubtful"] is True
    grades = payloads(run, "grade")
    assert all(g["passed"] and g["score"] == 0.3 for g in grades)
    assert "passed as doubtful: the retrieval's best verdict (0.30)" in grades[0]["reasoning"]
    check = payloads(run, "grade_answer")[0]
    assert check["threshold"] == 0.5 and check["faithful"] is True
    assert run.response_metadata["settings"]["relevance_doubt_floor"] == 0.2
    # Its opening was judged as soon as it was written, and the check took that verdict.
    assert judged == ["Beta logs rotate daily.", "They are kept for a week."]
    assert payloads(run, "generate")[0]["opening_doubted"] is False

    # Under the floor the gate refuses, as without it, and nothing is written.
    script.relevance = lambda q, doc: 0.1
    run = ask("How do beta logs rotate?", claims, **DOUBT)
    assert run.status == QueryRun.Status.REFUSED
    assert run.response_metadata["refusal_reason"] == "no_relevant_documents"
    assert payloads(run, "grade_docs")[0]["doubtful"] is False

    # With the floor off (the default for the seed's per-document grader), 0.3 is refused too.
    script.relevance = lambda q, doc: 0.3
    run = ask("How do beta logs rotate?", claims, **{**DOUBT, "relevance_doubt_floor": 0.0})
    assert run.response_metadata["refusal_reason"] == "no_relevant_documents"


@pytest.mark.parametrize("models", ["logprobs"], indirect=True)
def test_a_doubtful_retrieval_stops_writing_at_a_doubted_opening(knowledge_base, models, script):
    claims, judged = claims_judging(models, script, doubted="never")
    script.faithfulness = lambda claim, docs: judged.append(claim) or 0.45
    sentences = ["Beta logs rotate daily [1].", "They are kept for a week [1].", "Then gone [1]."]
    script.generate = lambda q, docs: " ".join(sentences)

    # A verdict of 0.45 passes the usual threshold of 0.35 ...
    script.relevance = lambda q, doc: 0.9
    run = ask("How do beta logs rotate?", claims, **DOUBT)
    assert run.status == QueryRun.Status.ANSWERED
    assert payloads(run, "grade_docs")[0]["doubtful"] is False

    # ... but not a doubtful retrieval's 0.5. The writer was stopped once its opening was
    # written (the second sentence's first word read), and the opening was refused alone.
    judged.clear()
    script.relevance = lambda q, doc: 0.3
    run = ask("How do beta logs rotate?", claims, **DOUBT)
    assert run.status == QueryRun.Status.REFUSED
    assert run.response_metadata["refusal_reason"] == "unfaithful"
    assert script.streamed[-1] == len(sentences[0].split()) + 1
    generate = payloads(run, "generate")[0]
    assert generate["opening_doubted"] is True and generate["stopped_past_judged"] is False
    assert run.response_metadata["draft_answer"] == sentences[0]
    assert judged == ["Beta logs rotate daily."]  # asked once: the check took that verdict
    assert payloads(run, "refine")[0]["unrevised"] is True


@pytest.mark.parametrize("models", ["logprobs"], indirect=True)
def test_with_the_claims_check_an_answer_is_cut_after_the_last_claim_it_judges(
    knowledge_base, models, script
):
    from dataclasses import replace

    from ragapp.graph.grounding import MAX_CLAIMS

    claims = replace(models, faithfulness_method="claims")
    script.relevance = lambda q, doc: 1.0
    judged = []
    script.faithfulness = lambda claim, docs: judged.append(claim) or 0.9
    sentences = [f"Beta logs rotate in step number {n} [1]." for n in range(1, MAX_CLAIMS + 3)]
    script.generate = lambda q, docs: " ".join(sentences)
    run = ask("How do beta logs rotate?", claims, answer_confidence_threshold=0.35)

    # Every sentence shown was judged; what came after the sixth was cut before the check.
    assert run.status == QueryRun.Status.ANSWERED
    assert run.answer == " ".join(sentences[:MAX_CLAIMS])
    assert len(judged) == MAX_CLAIMS
    generate = payloads(run, "generate")[0]
    # The writer was stopped once the seventh claim was finished (the eighth's first word read):
    # nothing it wrote after that could have been shown.
    words = len(" ".join(sentences[: MAX_CLAIMS + 1]).split()) + 1
    assert script.streamed == [words]
    assert generate["stopped_past_judged"] is True and generate["stopped_repeating"] is False
    assert generate["unjudged_cut_chars"] == len(" ".join(sentences[: MAX_CLAIMS + 1])) + len(
        " Beta"
    ) - len(run.answer)
    assert generate["answer_chars"] == len(run.answer)


def test_chunks_after_the_first_are_shown_as_excerpts(
    knowledge_base, models, script, fake_embeddings
):
    from ragapp.graph.excerpts import GAP
    from tests.ragapp.graph.stored import add_chunk

    # Its filler keeps it far from the question, so it is never the first hit.
    long_text = (
        "Unrelated filler about colours and themes of the portal. " * 6
        + "The beta service keeps seven vault copies."
    )
    add_chunk("docs/vault.md", long_text, fake_embeddings, title="Vault")
    script.relevance = lambda q, doc: 1.0
    seen = []
    script.generate = lambda q, docs: seen.append(docs) or "It starts with beta serve [1]."
    run = ask("How do I start the beta service?", models, top_k=6, excerpt_chars=120)

    retrieve = payloads(run, "retrieve")[0]
    ranked = [d["chunk_id"] for d in retrieve["documents"]]
    texts = [Chunk.objects.get(pk=pk).text for pk in ranked]
    assert len(ranked) == 6 and texts[0] != long_text
    assert retrieve["excerpted"] == 1  # the only chunk over 120 characters
    assert texts[0] in seen[-1]  # the first hit is shown whole
    assert long_text not in seen[-1]
    (shown,) = [d for d in seen[-1] if "vault copies" in d]
    assert len(shown) <= 120 and GAP in shown
    assert "The beta service keeps seven vault copies." in shown
    assert run.status == QueryRun.Status.ANSWERED


def test_an_answer_is_capped_and_cut_where_the_model_starts_repeating_itself(
    knowledge_base, models, script
):
    script.relevance = lambda q, doc: 1.0
    loop = "\n".join(["Beta starts with beta serve [1].", "It listens on port 9000 [1]."] * 4)
    script.generate = lambda q, docs: loop
    run = ask("How do I start the beta service?", models, answer_max_tokens=200)

    assert script.answer_caps == [200]
    assert run.answer == "Beta starts with beta serve [1].\nIt listens on port 9000 [1]."
    generate = payloads(run, "generate")[0]
    # The reply was read only until its first copy was finished: the next line's first word.
    assert generate["stopped_repeating"] is True and generate["capped"] is False
    assert script.streamed == [len("Beta starts with beta serve [1].".split()) * 2 + 7]
    assert generate["repetition_cut_chars"] == len("\nBeta starts with beta serve [1].\nIt")
    assert generate["answer_chars"] == len(run.answer)
    # Its output tokens are counted from the stream: the server's report never came.
    assert run.response_metadata["tokens"]["fake-chat"]["output"] >= script.streamed[0]


def test_a_reply_that_does_not_repeat_is_read_to_its_end(knowledge_base, models, script):
    script.relevance = lambda q, doc: 1.0
    answer = "Beta starts with beta serve [1]. It listens on port 9000 [1]."
    script.generate = lambda q, docs: answer
    run = ask("How do I start the beta service?", models)

    assert run.answer == answer
    assert script.streamed == [len(answer.split())]
    assert payloads(run, "generate")[0]["stopped_repeating"] is False


def test_an_answer_that_runs_into_its_cap_ends_at_its_last_whole_sentence(
    knowledge_base, models, script
):
    script.relevance = lambda q, doc: 1.0
    script.generate = lambda q, docs: (
        "Start it with beta serve [1]. It listens on port 9000 [1]. Its logs rotate every"
        " night and are kept for"
    )
    run = ask("How do I start the beta service?", models, answer_max_tokens=16)

    assert run.answer == "Start it with beta serve [1]. It listens on port 9000 [1]."
    generate = payloads(run, "generate")[0]
    assert generate["capped"] is True
    assert generate["unfinished_cut_chars"] == len(" Its logs rotate every")
    assert generate["answer_chars"] == len(run.answer)


def test_an_answer_that_ends_before_its_cap_is_not_cut(knowledge_base, models, script):
    script.relevance = lambda q, doc: 1.0
    script.generate = lambda q, docs: "Start it with beta serve [1]. It listens on"
    run = ask("How do I start the beta service?", models, answer_max_tokens=16)

    assert run.answer == "Start it with beta serve [1]. It listens on"
    assert payloads(run, "generate")[0]["capped"] is False


@pytest.mark.parametrize("models", ["logprobs"], indirect=True)
def test_the_answer_check_adds_the_passage_of_a_retrieved_page_that_holds_what_it_names(
    knowledge_base, models, script
):
    from dataclasses import replace

    lexical = replace(models, faithfulness_method="lexical")
    script.relevance = lambda q, doc: 1.0
    # Retrieval returns one chunk of beta.md; `daily` is only in the page's other chunk.
    script.generate = lambda q, docs: (
        "Start it with `beta serve` on port 9000 [1]. Its logs rotate `daily`."
    )
    run = ask("How do I start the beta service?", lexical, top_k=1)

    retrieved = payloads(run, "retrieve")[0]["documents"]
    assert [d["source_path"] for d in retrieved] == ["docs/beta.md"]
    grade = payloads(run, "grade_answer")[0]
    added = grade["supporting_documents"]
    assert [d["source_path"] for d in added] == ["docs/beta.md"]
    assert (
        Chunk.objects.get(pk=added[0]["chunk_id"]).text
        == "Beta logs rotate daily; keep seven days."
    )
    assert grade["faithful"] is True and grade["problematic_claims"] == []
    assert run.status == QueryRun.Status.ANSWERED
    # The reader sees the passage among the sources, numbered after the documents shown.
    sources = run.response_metadata["sources"]
    assert [(s["n"], s["chunk_id"]) for s in sources] == [
        (1, retrieved[0]["chunk_id"]),
        (2, added[0]["chunk_id"]),
    ]


@pytest.mark.parametrize("models", ["logprobs"], indirect=True)
def test_the_support_lookup_never_reads_a_page_retrieval_did_not_return(
    knowledge_base, models, script
):
    from dataclasses import replace

    lexical = replace(models, faithfulness_method="lexical")
    script.relevance = lambda q, doc: 1.0
    # `alpha.toml` is in the knowledge base, but on a page this question did not retrieve.
    script.generate = lambda q, docs: "Start it with `beta serve` [1], configured in `alpha.toml`."
    run = ask("How do I start the beta service?", lexical, top_k=1)

    grade = payloads(run, "grade_answer")[0]
    assert grade["supporting_documents"] == []
    assert grade["problematic_claims"] == ["alpha.toml does not appear in the documents"]
    assert run.status == QueryRun.Status.REFUSED


def test_a_question_naming_what_the_knowledge_base_never_mentions_is_refused_at_once(
    knowledge_base, models, script
):
    script.relevance = lambda q, doc: 1.0  # a judge asked would pass every chunk
    run = ask(
        "How do I start the beta service with --turbo over QUIC?", models, refuse_unknown_names=True
    )

    # Every chunk is near the question, but none can answer it: no judge, no broadening.
    assert kinds(run) == ["retrieve", "grade", "grade", "grade_docs", "generate", "answer", "done"]
    assert payloads(run, "retrieve")[0]["unknown_names"] == ["--turbo", "QUIC"]
    assert all(
        g["score"] is None and not g["passed"] and "names --turbo and QUIC" in g["reasoning"]
        for g in payloads(run, "grade")
    )
    assert script.calls == []
    assert run.status == QueryRun.Status.REFUSED
    assert run.answer.startswith("The documentation does not mention `--turbo` and `QUIC`")
    meta = run.response_metadata
    assert meta["refusal_reason"] == "no_relevant_documents" and meta["passages"]


def test_a_question_whose_names_the_knowledge_base_holds_is_answered_as_before(
    knowledge_base, models, script
):
    script.relevance = lambda question, doc: 0.9 if "beta" in doc.lower() else 0.1
    run = ask("Does `beta serve` take --prefix?", models, refuse_unknown_names=True)

    assert payloads(run, "retrieve")[0]["unknown_names"] == []
    assert "grade_answer" in kinds(run)


START_BETA = "How do I start the beta service?"


def _declines_unless(fact: str):
    """A writer that answers from the documents holding `fact`, and says they do not otherwise."""
    return lambda q, docs: (
        f"Beta logs {fact} [1]."
        if any(fact in doc for doc in docs)
        else "The documents do not mention how beta logs are kept."
    )


def test_a_declined_answer_is_written_again_from_the_found_pages_unread_chunks(
    knowledge_base, models, script
):
    script.relevance = lambda q, doc: 0.9 if "beta" in doc.lower() else 0.0
    script.generate = _declines_unless("rotate daily")
    run = ask(START_BETA, models, top_k=1, max_retrievals=1, read_on=4)

    first, second = payloads(run, "retrieve")
    # The search found the beta page by its setup chunk; the writer said it holds no answer.
    assert [d["source_path"] for d in first["documents"]] == ["docs/beta.md"]
    assert "rotate daily" not in Chunk.objects.get(pk=first["documents"][0]["chunk_id"]).text
    assert payloads(run, "grade_answer")[0]["declined"] is True
    # The second read: the page's other chunk (never another page), then written and checked.
    logs = Chunk.objects.get(text__contains="rotate daily")
    assert second["read_on"] is True and [d["chunk_id"] for d in second["documents"]] == [logs.pk]
    assert kinds(run)[-5:] == ["retrieve", "generate", "grade_answer", "answer", "done"]
    assert run.status == QueryRun.Status.ANSWERED
    assert run.answer == "Beta logs rotate daily [1]."
    assert [s["chunk_id"] for s in run.response_metadata["sources"]] == [logs.pk]
    assert "read_on" in run.response_metadata["node_ms"]
    # The refused first draft is kept for the audit (withheld from the API, like draft_answer).
    assert run.response_metadata["first_draft_answer"] == (
        "The documents do not mention how beta logs are kept."
    )

    # Off (RAG_READ_ON=0, the seed's design): the writer's refusal stands.
    run = ask(START_BETA, models, top_k=1, max_retrievals=1, read_on=0)
    assert run.status == QueryRun.Status.REFUSED
    assert run.response_metadata["refusal_reason"] == "not_in_documents"
    assert len(payloads(run, "retrieve")) == 1


def test_a_second_read_that_finds_no_unread_chunk_leaves_the_refusal(
    knowledge_base, models, script
):
    script.relevance = lambda q, doc: 0.9 if "beta" in doc.lower() else 0.0
    script.generate = _declines_unless("are archived")  # no chunk says so
    run = ask(START_BETA, models, top_k=1, max_retrievals=1, read_on=4)

    # The page's other chunk was read on, the writer declined again: one second read only.
    assert [e.get("read_on", False) for e in payloads(run, "retrieve")] == [False, True]
    assert [g["declined"] for g in payloads(run, "grade_answer")] == [True, True]
    assert run.status == QueryRun.Status.REFUSED
    assert run.response_metadata["refusal_reason"] == "not_in_documents"

    # Both of the page's chunks shown whole (two hits, no excerpts): nothing is left to read.
    run = ask("How do beta logs rotate and on which port?", models, top_k=2, read_on=4)
    first, second = payloads(run, "retrieve")
    assert {d["source_path"] for d in first["documents"]} == {"docs/beta.md"}
    assert second["read_on"] is True and second["docs_found"] == 0
    assert kinds(run)[-3:] == ["retrieve", "answer", "done"]
    assert run.response_metadata["refusal_reason"] == "not_in_documents"


def test_an_answer_that_only_cites_where_its_answer_is_is_not_shown(knowledge_base, models, script):
    """ "The way to start it is [1]." names a source and says nothing (docs-059, stop 70)."""
    script.relevance = lambda q, doc: 0.9 if "beta" in doc.lower() else 0.0
    script.generate = lambda q, docs: "The way to start the beta service is [1]."
    run = ask(START_BETA, models, top_k=1, max_retrievals=1, read_on=0)

    grade = payloads(run, "grade_answer")[0]
    assert grade["declined"] is True
    assert grade["reasoning"] == (
        "the answer cites a document for its answer but does not say what it states"
    )
    assert run.status == QueryRun.Status.REFUSED
    assert run.response_metadata["refusal_reason"] == "not_in_documents"
    assert "is [1]" not in run.answer

    # Reading on, the page's other chunk gets its chance to be said in words.
    script.generate = lambda q, docs: (
        "Beta logs rotate daily [1]."
        if any("rotate daily" in d for d in docs)
        else "The way to start the beta service is [1]."
    )
    run = ask(START_BETA, models, top_k=1, max_retrievals=1, read_on=4)
    assert run.status == QueryRun.Status.ANSWERED
    assert run.answer == "Beta logs rotate daily [1]."
