"""The nodes. Each is `(state, runtime) -> partial state`; models and services come injected.

Every node emits its trace events through the run's emitter and records its own duration.
"""

from __future__ import annotations

import re
import time
from contextlib import contextmanager
from dataclasses import replace

from django.db import close_old_connections
from langchain_core.runnables.config import ContextThreadPoolExecutor
from langgraph.runtime import Runtime

from ragapp.graph import prompts
from ragapp.graph.context import GraphContext, GraphLimits
from ragapp.graph.drafts import draft_of, repeating, unwrapped
from ragapp.graph.excerpts import EXCERPT_COMPANIONS, focused
from ragapp.graph.grounding import (
    answer_pieces,
    declines,
    judged_part,
    opening_claim,
    piece_claim,
    prune,
    supporting,
    withholds_its_answer,
    written_past_judged,
)
from ragapp.graph.hypothesis import search_text, write_hypothesis
from ragapp.graph.judges import (
    describe_problem,
    judge_faithfulness,
    judge_relevance,
    support_text,
    text_call,
    text_reply,
    unsupported_specifics,
)
from ragapp.graph.state import AnswerGrade, DocGrade, RAGState, RetrievedDoc, usable_numbers
from ragapp.retrieval.coverage import UNKNOWN_NAMES_REASON, technical_names
from ragapp.trace.kinds import EventKind
from ragapp.trace.redaction import public_message


@contextmanager
def _timed(ctx: GraphContext, node: str):
    ctx.check_deadline(node)  # every step starts within the run's time, or not at all
    started = time.perf_counter()
    timing = {"ms": 0.0}
    try:
        yield timing
    finally:
        timing["ms"] = (time.perf_counter() - started) * 1000
        ctx.timings[node] = ctx.timings.get(node, 0.0) + timing["ms"]


def condense(state: RAGState, runtime: Runtime[GraphContext]) -> RAGState:
    """Rewrite a follow-up and the thread's earlier turns into one standalone question.

    Only a run with earlier turns comes here (the router skips it otherwise). Everything after
    works on the standalone question: retrieval, grading, the answer and its check. If the model
    fails or writes nothing usable, the follow-up is used as asked, and the trace says why.
    """
    ctx = runtime.context
    followup = state["original_query"]
    turns = state.get("history", [])
    reason = ""
    with _timed(ctx, "condense") as timing:
        try:
            reply = text_call(
                ctx.models.broadener,
                prompts.condense_messages(turns, followup),
                usage=ctx.usage,
                max_tokens=CONDENSE_MAX_TOKENS,
            )
        except Exception as exc:  # any failure of this one call: the follow-up still gets answered
            # The trace is read by the run's owner: no server address or path in it.
            reply, reason = "", f"the model failed ({public_message(describe_problem(exc))})"
    standalone = _first_line(reply)
    if not standalone and not reason:
        reason = "the model wrote no question"
    elif standalone and _same_question(standalone, [question for question, _ in turns]):
        # A small model sometimes answers with the earlier question itself, which drops the
        # follow-up's own need. Both together still name what the follow-up is about.
        reason = "the model repeated an earlier question: asked as that question and the follow-up"
        standalone = f"{turns[-1][0]} {followup}"
    elif standalone and _same_question(standalone, [followup]) and _POINTING.search(followup):
        # Unchanged although it points back ("the first one", "it"): the reference was not
        # resolved, so the words it points to are missing; the earlier question supplies them.
        reason = "the model left a reference unresolved: asked with the earlier question before it"
        standalone = f"{turns[-1][0]} {followup}"
    ctx.emitter.emit(
        EventKind.CONDENSE,
        {
            "original_question": followup,
            "standalone_question": standalone or followup,
            "turns": len(turns),
            "fallback": not standalone,  # the follow-up is used as asked
            "reason": reason,
            "duration_ms": round(timing["ms"], 1),
        },
        node="condense",
        duration_ms=timing["ms"],
    )
    question = standalone or followup
    return {"query": question, "original_query": question, "asked_query": followup}


# A question, not an essay: the 1.5B model otherwise sometimes goes on to answer it.
CONDENSE_MAX_TOKENS = 80


# Words with which a follow-up points back at the conversation.
_POINTING = re.compile(
    r"\b(?:it|its|this|these|those|them|they|there|the (?:first|second|last|other) one|"
    r"the former|the latter)\b",
    re.IGNORECASE,
)


def _same_question(text: str, earlier: list[str]) -> bool:
    """Whether `text` is one of the `earlier` questions, ignoring case, spacing and punctuation."""

    def key(question: str) -> str:
        return " ".join(re.findall(r"\w+", question.casefold()))

    return key(text) in {key(question) for question in earlier}


def retrieve(state: RAGState, runtime: Runtime[GraphContext]) -> RAGState:
    """Fetch the top-k chunks for the current (possibly broadened) query.

    The first retrieval may search with a passage the model writes for the question as well
    (RAG_HYDE, graph/hypothesis.py); a broadened search is already the model's rewording.
    """
    ctx = runtime.context
    iteration = state.get("iteration_count", 0) + 1
    unknown = state.get("unknown_names", [])
    with _timed(ctx, "retrieve") as lookup:
        if iteration == 1 and ctx.limits.refuse_unknown_names:
            # The question is the same in every retrieval: one lookup per run.
            unknown = ctx.retriever.never_mentioned(technical_names(state["original_query"]))
    passage, problem, writing = "", "", {"ms": 0.0}
    # A question naming what no chunk holds is refused whatever is found: no passage is written.
    hyde = iteration == 1 and ctx.limits.hyde and not unknown
    if hyde:
        with _timed(ctx, "hypothesize") as writing:
            passage, problem = write_hypothesis(
                ctx.models.broadener, state["query"], usage=ctx.usage
            )
    with _timed(ctx, "retrieve") as timing:
        excerpts = bool(ctx.limits.excerpt_chars)
        docs = ctx.retriever.search(
            search_text(state["query"], passage),
            k=ctx.limits.top_k,
            companions=EXCERPT_COMPANIONS if excerpts else 0,
        )
        if excerpts:
            # The first hit stays whole: it holds the answer most often (MRR@10 0.86 on this
            # documentation), and cutting it cost the most facts (docs/evaluation.md).
            docs = focused(
                docs,
                state["original_query"],
                ctx.retriever.embeddings,
                budget=ctx.limits.excerpt_chars,
                whole=1,
            )
    ms = lookup["ms"] + timing["ms"]
    written = (
        {
            # What the search used besides the question; never shown to a judge or the writer.
            "hypothesis": passage,
            "hypothesis_ms": round(writing["ms"], 1),
            "hypothesis_problem": problem,  # why there is none: the question was searched alone
        }
        if hyde
        else {}
    )
    ctx.emitter.emit(
        EventKind.RETRIEVE,
        {
            "query": state["query"],
            "iteration": iteration,
            "mode": ctx.retriever.mode,
            "docs_found": len(docs),
            "documents": [doc.summary() for doc in docs],
            # How many of them the model is shown as excerpts (RAG_EXCERPT_CHARS).
            "excerpted": sum(bool(doc.excerpt) for doc in docs),
            # Names in the question that no chunk of the knowledge base holds: the run is refused.
            "unknown_names": unknown,
            **written,
            "duration_ms": round(ms, 1),
        },
        node="retrieve",
        duration_ms=ms,
    )
    found = {"documents": docs, "iteration_count": 1, "unknown_names": unknown}
    return {**found, "search_passage": passage} if iteration == 1 else found


def grade_docs(state: RAGState, runtime: Runtime[GraphContext]) -> RAGState:
    """Judge each document's relevance to the original question.

    The documents the judge reads become the shared documents block of every later prompt of
    this retrieval (`context_documents`): the latest hits that were not pre-filtered, then the
    documents kept from earlier retrievals.
    """
    ctx = runtime.context
    docs = state.get("documents", [])
    question = state["original_query"]  # relevance to what was asked, not to the search string
    earlier = state.get("filtered_documents", [])
    floor = ctx.limits.prefilter_similarity
    judged = [doc for doc in docs if not (floor and doc.similarity < floor)]
    judged_ids = {doc.chunk_id for doc in judged}
    context = judged + [doc for doc in earlier if doc.chunk_id not in judged_ids]
    # A chunk judged in an earlier retrieval of this run keeps its verdict: the question is the
    # same, and a broadened search often finds the same chunks again.
    seen = dict(state.get("seen_grades", {}))
    by_retrieval = ctx.limits.relevance_gate == "retrieval"
    unknown = state.get("unknown_names", [])
    with _timed(ctx, "grade_docs") as timing:
        # A question about a name the knowledge base never mentions: no passage can answer it,
        # however near it is, and the judge is not asked.
        new = [] if unknown else [n for n, doc in enumerate(judged, 1) if doc.chunk_id not in seen]
        seen.update(_judge_all(ctx, question, context, new, first_pass_decides=by_retrieval))
    grades = [
        _never_mentioned(doc, unknown)
        if unknown
        else seen[doc.chunk_id]
        if doc.chunk_id in seen
        else _not_asked(doc)
        if doc.chunk_id in judged_ids
        else _prefiltered(doc, floor)
        for doc in docs
    ]
    doubtful = False
    if by_retrieval:
        grades = _gated_by_retrieval(grades, ctx.limits.relevance_threshold)
        if not any(grade.passed for grade in grades):
            grades = _doubtful(grades, ctx.limits.relevance_doubt_floor)
            doubtful = any(grade.passed for grade in grades)
    for number, grade in enumerate(grades, 1):
        ctx.emitter.emit(
            EventKind.GRADE,
            {
                "index": number,
                "total": len(grades),
                "document": grade.doc.summary(),
                "score": None if grade.score is None else round(grade.score, 3),
                "relevant": grade.relevant,
                "passed": grade.passed,
                "reasoning": grade.reasoning,
                "threshold": ctx.limits.relevance_threshold,
                "prefiltered": grade.prefiltered,
            },
            node="grade_docs",
        )
    # Documents that passed in an earlier retrieval stay: broadening widens the evidence, it
    # does not throw away what was already found relevant.
    kept = {doc.chunk_id: doc for doc in earlier}
    for grade in grades:
        if grade.passed:
            kept.setdefault(grade.doc.chunk_id, grade.doc)
    passed = list(kept.values())
    ctx.emitter.emit(
        EventKind.GRADE_DOCS,
        {
            "passed": sum(g.passed for g in grades),
            "total": len(grades),
            "kept_overall": len(passed),
            # No verdict passed, but the best reached RAG_RELEVANCE_DOUBT_FLOOR: the chunks are
            # used, and the answer is held to the doubtful threshold.
            "doubtful": doubtful,
            "duration_ms": round(timing["ms"], 1),
        },
        node="grade_docs",
        duration_ms=timing["ms"],
    )
    return {
        "grades": grades,
        "filtered_documents": passed,
        "context_documents": context,
        "seen_grades": seen,
        "doubtful_retrieval": doubtful,
    }


def _gated_by_retrieval(grades: list[DocGrade], threshold: float) -> list[DocGrade]:
    """Every judged chunk passes when the retrieval's best verdict does (RAG_RELEVANCE_GATE).

    The verdict then says whether these hits answer the question, which a small model's P(yes)
    tells well, and not which of them does, which it hardly tells: the retrieval rank does that
    better, and the answer check still holds the answer to what the chunks state.
    """
    best = max(
        (g for g in grades if g.passed and g.score is not None), key=lambda g: g.score, default=None
    )
    if best is None:
        return grades
    return [
        g
        if g.passed or g.prefiltered
        else replace(
            g,
            passed=True,
            reasoning=f"{g.reasoning}; passed with its retrieval, whose best verdict "
            f"({best.score:.2f}) reached the threshold {threshold:.2f}",
        )
        for g in grades
    ]


def _doubtful(grades: list[DocGrade], floor: float) -> list[DocGrade]:
    """Every judged chunk passes, as doubtful, when the retrieval's best verdict reaches `floor`.

    A small judge's P(yes) is partly the question's own (docs/evaluation.md, stop 61): some
    answerable questions draw 0.2-0.35 whatever the chunks hold, and refusing at the gate then
    refuses answers the chunks do give. Such a retrieval is used, and what protects an
    unanswerable question is the stricter answer check that a doubtful run gets instead.
    """
    best = max((g.score for g in grades if g.score is not None), default=None)
    if not floor or best is None or best < floor:
        return grades
    return [
        g
        if g.prefiltered
        else replace(
            g,
            passed=True,
            reasoning=f"{g.reasoning}; passed as doubtful: the retrieval's best verdict "
            f"({best:.2f}) reached the doubt floor {floor:.2f}",
        )
        for g in grades
    ]


def _not_asked(doc: RetrievedDoc) -> DocGrade:
    # With the retrieval gate, the first passing verdict decides for every chunk, so the judge
    # is not asked about the chunks ranked after it: each verdict is a model call.
    return DocGrade(
        doc=doc,
        score=None,
        relevant=False,
        reasoning="not asked: a chunk ranked above it passed first",
        passed=False,
    )


def _judge_all(
    ctx: GraphContext,
    question: str,
    context: list[RetrievedDoc],
    numbers: list[int],
    *,
    first_pass_decides: bool = False,
) -> dict[int, DocGrade]:
    """Verdicts on documents `numbers` of `context` (their [n]), by chunk id.

    `first_pass_decides` (the retrieval gate): the yes/no judge goes down the ranking and stops
    at the first verdict that passes, which decides for the whole retrieval.
    """
    if ctx.models.relevance_method == "logprobs":
        # One slot reads the shared prefix once; every verdict after the first is a short tail
        # over the cached documents, so asking them one by one costs no more than at once.
        grades = []
        for n in numbers:
            grades.append(_grade_one(ctx, question, context, n))
            if first_pass_decides and grades[-1].passed:
                break
    elif numbers:
        workers = max(1, min(ctx.limits.grade_concurrency, len(numbers)))
        # Each verdict runs in a copy of this thread's context: its model call reports to the
        # run's callbacks, its span nests under this node's and its log lines name the run.
        with ContextThreadPoolExecutor(max_workers=workers) as pool:
            grades = list(pool.map(lambda n: _in_pool(ctx, question, context, n), numbers))
    else:
        grades = []
    return {grade.doc.chunk_id: grade for grade in grades}


def _in_pool(ctx: GraphContext, question: str, context: list[RetrievedDoc], n: int) -> DocGrade:
    try:
        return _grade_one(ctx, question, context, n)
    finally:
        close_old_connections()  # a pool thread's connection must not leak


def _never_mentioned(doc: RetrievedDoc, names: list[str]) -> DocGrade:
    named = prompts.listed(names)
    return DocGrade(
        doc=doc,
        score=None,
        relevant=False,
        reasoning=f"{UNKNOWN_NAMES_REASON} {named}, which no document in the knowledge base "
        "mentions",
        passed=False,
    )


def _prefiltered(doc: RetrievedDoc, floor: float) -> DocGrade:
    # A model call costs seconds on a CPU; a chunk this far from the question in embedding
    # space was never judged relevant on the golden sets (docs/evaluation.md).
    return DocGrade(
        doc=doc,
        score=0.0,
        relevant=False,
        reasoning=f"cosine similarity {doc.similarity:.2f} is below the pre-filter {floor:.2f}",
        passed=False,
        prefiltered=True,
    )


def _grade_one(ctx: GraphContext, question: str, context: list[RetrievedDoc], n: int) -> DocGrade:
    ctx.check_deadline(f"grading document {n}")  # grading is the longest step: check per call
    verdict = judge_relevance(ctx.models, question, context, n, usage=ctx.usage)
    score = min(1.0, max(0.0, float(verdict.score)))
    return DocGrade(
        doc=context[n - 1],
        score=score,
        relevant=bool(verdict.relevant),
        reasoning=verdict.reasoning,
        passed=score >= ctx.limits.relevance_threshold,
    )


def read_on(state: RAGState, runtime: Runtime[GraphContext]) -> RAGState:
    """Give a refused answer one more try, from the found pages' chunks the writer did not read.

    The search finds the page that answers far more often than the chunk: in the evaluations of
    stop 68, the facts of 36 answerable questions were in another chunk of a page among the five
    hits, and of 28 more in the part of a hit its excerpt left out (docs/evaluation.md). When
    the answer check refuses an answer, or the writer says the documents do not hold one, the
    pages' RAG_READ_ON chunks nearest the search (question and passage) that were not shown
    whole become the documents, and the answer is written and checked again, as the first was.
    If no such chunk exists, the run is refused with the first check's verdict; if the second
    answer fails its check too, with the second's. The first draft is kept for the audit
    (`read_on_from`, the run's `first_draft_answer`), never shown.
    """
    ctx = runtime.context
    hits = state.get("documents", [])
    # The first hit is shown whole, and so is a short one; every other hit only as an excerpt.
    whole = [doc.chunk_id for n, doc in enumerate(hits) if n == 0 or not doc.excerpt]
    pages = list(dict.fromkeys(doc.document_id for doc in hits))
    with _timed(ctx, "read_on") as timing:
        docs = ctx.retriever.nearest_in(
            search_text(state["original_query"], state.get("search_passage", "")),
            pages,
            exclude=whole,
            k=ctx.limits.read_on,
        )
    ctx.emitter.emit(
        EventKind.RETRIEVE,
        {
            "query": state["query"],
            "iteration": state.get("iteration_count", 1),
            "mode": ctx.retriever.mode,
            "docs_found": len(docs),
            "documents": [doc.summary() for doc in docs],
            "excerpted": 0,
            # A second read of the pages already found, after a refusal; not a new search.
            "read_on": True,
            "duration_ms": round(timing["ms"], 1),
        },
        node="read_on",
        duration_ms=timing["ms"],
    )
    if not docs:
        return {"read_on_done": True}  # the refusal stands (routes.after_read_on)
    return {
        "context_documents": docs,
        "filtered_documents": docs,
        "generation": "",
        "answer_grade": None,
        "unrevised": False,
        "read_on_done": True,
        "refinements_before_read_on": state.get("correction_count", 0),
        "read_on_from": state.get("generation", ""),
    }


def broaden_query(state: RAGState, runtime: Runtime[GraphContext]) -> RAGState:
    """Rewrite the search query more broadly; the question being answered stays the same."""
    ctx = runtime.context
    old = state["query"]
    with _timed(ctx, "broaden_query") as timing:
        reply = text_call(
            ctx.models.broadener,
            prompts.broaden_messages(state["original_query"], old),
            usage=ctx.usage,
            max_tokens=BROADEN_MAX_TOKENS,
        )
    new = _first_line(reply) or old
    ctx.emitter.emit(
        EventKind.BROADEN,
        {
            "old_query": old,
            "new_query": new,
            "iteration": state.get("iteration_count", 0),
            "duration_ms": round(timing["ms"], 1),
        },
        node="broaden_query",
        duration_ms=timing["ms"],
    )
    return {"query": new}


BROADEN_MAX_TOKENS = 60


def _first_line(reply: str) -> str:
    """The query from a reply: its first non-empty line, without quotes or a label."""
    for line in reply.splitlines():
        line = line.strip().strip('"').strip("'").strip()
        if line.lower().startswith(("query:", "new query:")):
            line = line.split(":", 1)[1].strip().strip('"').strip()
        if line:
            return " ".join(line.split())[:300]
    return ""


def generate(state: RAGState, runtime: Runtime[GraphContext]) -> RAGState:
    """Answer the original question from the filtered documents only, or fall back honestly."""
    ctx = runtime.context
    docs = state.get("filtered_documents", [])
    if not docs:
        # Nothing relevant: a model would answer anyway, from thin air. It is not asked.
        ctx.emitter.emit(
            EventKind.GENERATE,
            {"fallback": True, "sources": [], "answer_chars": len(prompts.FALLBACK_ANSWER)},
            node="generate",
        )
        return {"generation": prompts.FALLBACK_ANSWER, "fallback": True}
    judging_claims = ctx.models.faithfulness_method == "claims"
    stop_when = _stop_writing if judging_claims else repeating
    if judging_claims and state.get("doubtful_retrieval"):
        stop_when = _OpeningWatch(ctx, state)
    with _timed(ctx, "generate") as timing:
        reply = text_reply(
            ctx.models.generator,
            prompts.generate_messages(
                state["original_query"],
                state["context_documents"],
                usable_numbers(state),
            ),
            usage=ctx.usage,
            max_tokens=ctx.limits.answer_max_tokens or None,
            # A loop is cut from the answer anyway: stop the model at its first copy instead of
            # letting it write copies to its token cap (up to 20 s of a run on two cores). So is
            # what follows the last claim the claims check judges: stop once a claim after it is
            # written. After a doubtful retrieval, stop at a doubted opening (`_OpeningWatch`).
            stop_when=stop_when,
        )
        opening_doubted = isinstance(stop_when, _OpeningWatch) and stop_when.doubted
        # Stopped at its doubted opening, the reply ends inside the next sentence: that goes.
        written, finished, kept = draft_of(reply.text, capped=reply.cut or opening_doubted)
        # The claims check judges the first MAX_CLAIMS claims: nothing after them is shown.
        answer = judged_part(kept) if judging_claims else kept
    stopped_repeating = reply.stopped and repeating(reply.text)
    ctx.emitter.emit(
        EventKind.GENERATE,
        {
            "fallback": False,
            "sources": [state["context_documents"][n - 1].summary() for n in usable_numbers(state)],
            "usable": usable_numbers(state),
            "answer_chars": len(answer),
            # Whether the reply ran into RAG_ANSWER_MAX_TOKENS, and the unfinished tail then cut.
            "capped": reply.cut,
            # Whether the reply was stopped while being written because it had begun to repeat,
            # or because it had written a claim after the last one the answer check judges.
            "stopped_repeating": stopped_repeating,
            "stopped_past_judged": reply.stopped and not (stopped_repeating or opening_doubted),
            # After a doubtful retrieval: the reply was stopped once its opening claim was written,
            # because the answer check doubted it (nothing after a doubted opening is shown).
            "opening_doubted": opening_doubted,
            "unfinished_cut_chars": len(written) - len(finished),
            # Characters cut because the model started repeating itself (repetition.py).
            "repetition_cut_chars": len(finished) - len(kept),
            # Characters after the last claim the answer check judges (grounding.judged_part).
            "unjudged_cut_chars": len(kept) - len(answer),
            "duration_ms": round(timing["ms"], 1),
        },
        node="generate",
        duration_ms=timing["ms"],
    )
    return {"generation": answer, "fallback": False}


def _stop_writing(text: str) -> bool:
    """Whether the writer can stop: nothing more it writes would be shown (claims check)."""
    return repeating(text) or written_past_judged(unwrapped(text))


class _OpeningWatch:
    """`_stop_writing`, and after a doubtful retrieval, a stop at a doubted opening claim.

    Pruning leaves nothing of an answer whose opening claim the check doubts (grounding.prune),
    so once the opening is written it is judged, at the doubtful threshold, while the writer goes
    on: doubted, the writer stops there, and the answer check judges the opening alone (taking
    the verdict given here, `GraphContext.claim_verdicts`, unless the check adds passages for a
    specific the opening names, which changes the prompt). A doubtful retrieval's answers are
    mostly refused so (docs/evaluation.md, stop 67), and their writing was the slowest part.
    """

    def __init__(self, ctx: GraphContext, state: RAGState):
        self.ctx, self.state = ctx, state
        self.judged = self.doubted = False

    def __call__(self, text: str) -> bool:
        if _stop_writing(text):
            return True
        if self.judged:
            return False
        written = unwrapped(text)
        finished = answer_pieces(written)[:-1]
        opening = opening_claim(written)
        if opening is None or not any(piece_claim(piece) for piece in finished):
            return False  # the opening is not written yet, or is code (judged with the rest)
        # The first finished claim: judged as the check will judge it (`answer_claims`'s form).
        self.judged = True
        grade = _grade_answer(self.ctx, {**self.state, "generation": opening})
        self.doubted = not grade.faithful
        return self.doubted


def grade_answer(state: RAGState, runtime: Runtime[GraphContext]) -> RAGState:
    """Judge whether every claim of the answer is supported by its sources."""
    ctx = runtime.context
    with _timed(ctx, "grade_answer") as timing:
        support = _supporting_passages(ctx, state)
        if support:
            # The passages that hold what the answer names join the documents, as usable ones:
            # the check reads them, and an answer shown lists them among its sources.
            state = {
                **state,
                "context_documents": [*state["context_documents"], *support],
                "filtered_documents": [*state.get("filtered_documents", []), *support],
            }
        grade = _grade_answer(ctx, state)
    ctx.emitter.emit(
        EventKind.GRADE_ANSWER,
        {
            "supporting_documents": [doc.summary() for doc in support],
            "faithfulness_score": round(grade.faithfulness_score, 3),
            "hallucination_risk": grade.hallucination_risk,
            "problematic_claims": grade.problematic_claims,
            "refinement_suggestion": grade.refinement_suggestion,
            "reasoning": grade.reasoning,
            "faithful": grade.faithful,
            "declined": grade.declined,
            "threshold": _answer_threshold(ctx.limits, state),
            "after_refinement": state.get("correction_count", 0) > 0,
            "duration_ms": round(timing["ms"], 1),
        },
        node="grade_answer",
        duration_ms=timing["ms"],
    )
    if support:
        return {
            "answer_grade": grade,
            "context_documents": state["context_documents"],
            "filtered_documents": state["filtered_documents"],
        }
    return {"answer_grade": grade}


# How many passages the answer check may add from the pages of the usable documents.
SUPPORT_PASSAGES = 2


def _supporting_passages(ctx: GraphContext, state: RAGState) -> list[RetrievedDoc]:
    """Passages of the usable documents' own pages that hold what the answer names and they lack.

    A manual page's options are spread over many chunks, and retrieval finds the page more often
    than the chunk that defines the option an answer uses (`openssl x509 -req -CAkey`, found on
    the x509 page, not in its chunk the search returned). Such an answer is not invented: the
    lookup adds at most SUPPORT_PASSAGES chunks of those pages that hold its missing specifics,
    so the check (and the reader, among the sources) sees them. A specific no page of theirs
    holds is still unsupported. Only for the checks that look for specifics (lexical, claims).
    """
    if ctx.models.faithfulness_method not in ("lexical", "claims") or declines(state["generation"]):
        return []
    docs = state["context_documents"]
    usable = [docs[n - 1] for n in usable_numbers(state)]
    terms = unsupported_specifics(state["original_query"], state["generation"], usable)
    if not terms:
        return []
    pages = list(dict.fromkeys(doc.document_id for doc in usable))
    candidates = ctx.retriever.mentioning(pages, terms, exclude=[doc.chunk_id for doc in docs])
    chosen = supporting(terms, [support_text(doc) for doc in candidates], limit=SUPPORT_PASSAGES)
    return [candidates[n] for n in chosen]


def _answer_threshold(limits: GraphLimits, state: RAGState) -> float:
    """The answer check's threshold for this run: the stricter one after a doubtful retrieval."""
    if state.get("doubtful_retrieval"):
        return limits.doubtful_answer_threshold
    return limits.answer_confidence_threshold


def _grade_answer(ctx: GraphContext, state: RAGState) -> AnswerGrade:
    if declines(state["generation"]):
        # "The documents do not cover this" is the honest answer the writer is asked for when
        # they do not: the run ends refused, with the closest passages shown (runner.py).
        return AnswerGrade(
            faithfulness_score=1.0,
            hallucination_risk="low",
            problematic_claims=[],
            refinement_suggestion="",
            reasoning=(
                "the answer cites a document for its answer but does not say what it states"
                if withholds_its_answer(state["generation"])
                else "the answer says the documents do not answer the question"
            ),
            faithful=False,
            declined=True,
        )
    verdict = judge_faithfulness(
        ctx.models,
        state["original_query"],
        state["generation"],
        state["context_documents"],
        usable_numbers(state),
        usage=ctx.usage,
        threshold=_answer_threshold(ctx.limits, state),
        memo=ctx.claim_verdicts,
    )
    score = min(1.0, max(0.0, float(verdict.faithfulness_score)))
    return AnswerGrade(
        faithfulness_score=score,
        hallucination_risk=verdict.hallucination_risk,
        problematic_claims=list(verdict.problematic_claims),
        refinement_suggestion=verdict.refinement_suggestion or "",
        reasoning=verdict.reasoning,
        # With the veto, a "high" risk next to a high score counts as not faithful. A judge
        # whose risk field is noise (the local 1.5B model says "high" even with score 1.0 and
        # "the documents clearly state") turns it off, and the score alone decides, as in the
        # design article.
        faithful=score >= _answer_threshold(ctx.limits, state)
        and not (ctx.limits.risk_veto and verdict.hallucination_risk == "high"),
    )


def refine_answer(state: RAGState, runtime: Runtime[GraphContext]) -> RAGState:
    """Rewrite the answer to drop or qualify the claims the grader flagged.

    After the claims check, which names the exact sentences the documents do not state (and the
    specifics no document holds), those sentences are cut out and nothing is rewritten: what is
    left was each judged stated, and a small model asked to rewrite tends to add new claims.
    Any other judge's verdict goes back to the generation model for a rewrite.
    """
    ctx = runtime.context
    grade = state["answer_grade"]
    before = state["generation"]
    pruning = ctx.models.faithfulness_method == "claims"
    with _timed(ctx, "refine_answer") as timing:
        if pruning:
            after = prune(before, grade.problematic_claims)
        else:
            after = unwrapped(
                text_call(
                    ctx.models.generator,
                    prompts.refine_messages(
                        state["original_query"],
                        before,
                        state["context_documents"],
                        grade.problematic_claims,
                        grade.refinement_suggestion,
                        usable_numbers(state),
                    ),
                    usage=ctx.usage,
                )
            )
    # Pruning that cuts everything (a doubted opening), or a revision that changes nothing, leaves
    # the answer the check just refused: checking it again would repeat that verdict.
    unrevised = not after.strip() or after == before
    ctx.emitter.emit(
        EventKind.REFINE,
        {
            "problematic_claims": grade.problematic_claims,
            "method": "prune" if pruning else "rewrite",
            "before_chars": len(before),
            "after_chars": len(after),
            "unrevised": unrevised,
            "duration_ms": round(timing["ms"], 1),
        },
        node="refine_answer",
        duration_ms=timing["ms"],
    )
    return {
        "generation": before if unrevised else after,
        "correction_count": 1,
        "unrevised": unrevised,
    }
