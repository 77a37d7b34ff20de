"""Portal pages. Thin: validate, call a service or selector, render."""

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.core.paginator import Paginator
from django.http import Http404, HttpResponseBadRequest, HttpResponseForbidden, JsonResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods

from ingestion.services import source_path_for
from ragapp.forms import AskForm, FeedbackForm, FollowUpForm, HistoryFilterForm
from ragapp.graph.prompts import listed
from ragapp.models import QueryRun, Thread
from ragapp.rendering import render_markdown, render_plain
from ragapp.runs.submit import RunLimitReached, run_submit
from ragapp.selectors import (
    chunk_get,
    chunks_by_id,
    database_status,
    example_questions,
    feedback_get,
    recent_runs,
    run_events_list,
    run_grade_scores,
    run_is_finished,
    run_opens_its_thread,
    run_visible_to,
    runs_visible_to,
    thread_runs,
    threads_owned_by,
    threads_search,
    threads_visible_to,
)
from ragapp.services import feedback_submit
from ragapp.trace.kinds import kind_labels
from ragapp.trace.redaction import error_for
from ragapp.trace.stream import event_message, follow_run, release_connection


def healthz(request):
    """Liveness and database reachability, for load balancers and the run script.

    The status code and `status` are for anyone; which database error it was is for signed-in
    users only (GET /api/rag has the full detail).
    """
    database = database_status()
    healthy = database["status"] == "ok"
    body = {"status": "ok" if healthy else "error"}
    if request.user.is_authenticated:
        body["database"] = "ok" if healthy else database["error"]
    return JsonResponse(body, status=200 if healthy else 503)


def run_events(request, run_id):
    """The run's live trace as Server-Sent Events; resumable with Last-Event-ID (a seq)."""
    if not request.user.is_authenticated:
        return HttpResponseForbidden("Sign in to follow a run.")
    run = runs_visible_to(user=request.user).filter(pk=run_id).first()
    if run is None:
        release_connection()
        raise Http404("No such run.")  # another user's run does not exist, as far as you know
    # The page renders the events so far and passes lastEventId; the stream ends after `done`.
    return follow_run(request, run)


@login_required
@require_http_methods(["GET", "POST"])
def ask(request):
    """The question box, example questions and the user's recent runs; POST starts a run."""
    form = AskForm(request.POST or None)
    status = 200
    if request.method == "POST" and form.is_valid():
        try:
            run = run_submit(
                query=form.cleaned_data["query"],
                owner=request.user,
                fresh=form.cleaned_data["fresh"],
            )
        except RunLimitReached as exc:
            form.add_error("query", str(exc))  # the question stays in the box for later
            status = 429
        else:
            return redirect("run-detail", run_id=run.pk)
    return render(
        request,
        "ragapp/ask.html",
        {"form": form, "examples": example_questions(), "runs": recent_runs(user=request.user)},
        status=400 if status == 200 and form.errors else status,
    )


@login_required
@require_http_methods(["POST"])
def thread_ask(request, thread_id):
    """A follow-up posted under an answer: a new run in the same thread, then its live page.

    Only the thread's owner may post into it (staff read others' threads, never add to them);
    anyone else gets a 404, as for a thread that does not exist. A question that is refused
    comes back on the Ask page, as a follow-up of this thread, with its message.
    """
    thread = threads_owned_by(user=request.user).filter(pk=thread_id).first()
    if thread is None:
        raise Http404("No such thread.")
    form = FollowUpForm(request.POST)
    status = 400
    if form.is_valid():
        try:
            run = run_submit(query=form.cleaned_data["query"], owner=request.user, thread=thread)
        except RunLimitReached as exc:
            form.add_error("query", str(exc))
            status = 429
        else:
            return redirect("run-detail", run_id=run.pk)
    return render(
        request,
        "ragapp/ask.html",
        {"form": form, "thread": thread, "runs": recent_runs(user=request.user)},
        status=status,
    )


def _visible_thread(request, thread_id) -> Thread:
    thread = threads_visible_to(user=request.user).filter(pk=thread_id).first()
    if thread is None:
        raise Http404("No such thread.")  # another user's thread does not exist, for you
    return thread


@login_required
def thread_detail(request, thread_id):
    """A thread's runs in the order they were asked, each linked to its page and its replay."""
    thread = _visible_thread(request, thread_id)
    runs = thread_runs(thread=thread)
    # Its owner may go on from here too, once the latest run has finished (as under an answer).
    can_follow_up = thread.owner_id == request.user.pk and bool(runs) and run_is_finished(runs[-1])
    return render(
        request,
        "ragapp/thread.html",
        {
            "thread": thread,
            "runs": [(run, _standalone_question(run)) for run in runs],
            "follow_up_form": FollowUpForm() if can_follow_up else None,
        },
    )


@login_required
def thread_replay(request, thread_id):
    """Every run of a thread replayed one after another, by the run page's own script."""
    thread = _visible_thread(request, thread_id)
    runs = thread_runs(thread=thread)
    turns = [
        {
            "run": str(run.pk),
            "answer_url": reverse("run-answer", args=[run.pk]) + "?replay=1",
            "events": [event_message(event) for event in run_events_list(run=run)],
        }
        for run in runs
    ]
    return render(
        request,
        "ragapp/thread_replay.html",
        {
            "thread": thread,
            "runs": runs,
            "turns": turns,
            "event_kinds": kind_labels(),
            "status_labels": dict(QueryRun.Status.choices),
            "docs_root": docs_root_key(),
        },
    )


def _standalone_question(run: QueryRun) -> str:
    """The question a follow-up was answered as, when `condense` changed it; else empty."""
    standalone = (run.response_metadata or {}).get("standalone_question") or ""
    return standalone if standalone != run.query else ""


def _visible_run(request, run_id) -> QueryRun:
    run = runs_visible_to(user=request.user).filter(pk=run_id).first()
    if run is None:
        raise Http404("No such run.")
    return run


@login_required
def run_detail(request, run_id):
    """A run's trace so far (rendered by the same script that then follows it live).

    A finished run's answer and feedback form are in the page itself, so they lead the page and
    work without JavaScript; a run still going gets them from `run_answer` when it finishes.
    """
    run = _visible_run(request, run_id)
    context = _trace_page_context(run)
    finished = run_is_finished(run)
    if finished:
        context.update(_answer_context(request, run, with_feedback=True))
    trace = context["trace"]
    last_seq = trace[-1]["seq"] if trace else 0
    return render(
        request,
        "ragapp/run.html",
        {**context, "finished": finished, "last_seq": last_seq, "replay": False},
    )


@login_required
def run_replay(request, run_id):
    """A past run's trace re-animated at its original pace, by the live page's own script."""
    run = _visible_run(request, run_id)
    return render(request, "ragapp/run.html", {**_trace_page_context(run), "replay": True})


def _trace_page_context(run: QueryRun) -> dict:
    """What static/ragapp/trace.js needs on the run and replay pages, and the run's thread."""
    return {
        "run": run,
        "thread": run.thread,
        "opens_thread": run_opens_its_thread(run=run),
        "standalone_question": _standalone_question(run),
        "trace": [event_message(event) for event in run_events_list(run=run)],
        "event_kinds": kind_labels(),
        "status_labels": dict(QueryRun.Status.choices),  # the status follows the trace
        "docs_root": docs_root_key(),  # trace lines show paths as the answer block does
    }


@login_required
@require_http_methods(["POST"])
def run_feedback(request, run_id):
    """Thumbs up/down with an optional comment on a finished run.

    A plain form POST comes back to the run page; static/ragapp/feedback.js posts the same form
    with `X-Requested-With: fetch` and gets the feedback block back, so the page stays put.
    """
    run = _visible_run(request, run_id)
    form = FeedbackForm(request.POST)
    if not form.is_valid():
        return render(request, "ragapp/_feedback_errors.html", {"form": form}, status=400)
    try:
        feedback = feedback_submit(run=run, user=request.user, **form.cleaned_data)
    except ValidationError as exc:
        return HttpResponseBadRequest(" ".join(exc.messages))
    if request.headers.get("X-Requested-With") == "fetch":
        context = _feedback_context(run, feedback)
        return render(request, "ragapp/_feedback.html", {**context, "thanks": True})
    messages.success(request, "Thanks for the feedback.")
    return redirect("run-detail", run_id=run.pk)


def _feedback_context(run: QueryRun, feedback) -> dict:
    """The feedback block: the thumbs, and once rated, the rating given and the comment box."""
    initial = {"comment": feedback.comment} if feedback else {}
    return {"run": run, "feedback": feedback, "feedback_form": FeedbackForm(initial=initial)}


@login_required
def history(request):
    """The user's threads (everyone's for staff), last asked in first: paginated, and searchable
    and filterable by their runs (a thread is listed when one of its runs matches)."""
    form = HistoryFilterForm(request.GET or None)
    if not request.user.is_staff:
        del form.fields["evaluation"]  # only staff see runs they did not ask themselves
    filters = dict(form.cleaned_data) if form.is_valid() else {}
    # People's runs by default; the evaluation filter shows the evaluations' runs instead.
    evaluation = bool(filters.pop("evaluation", False))
    threads = threads_search(
        user=request.user, evaluation=evaluation, **{k: v for k, v in filters.items() if v}
    )
    page = Paginator(threads, 20).get_page(request.GET.get("page"))
    statuses, risks = dict(QueryRun.Status.choices), dict(QueryRun.Risk.choices)
    for thread in page:
        thread.latest_status_label = statuses.get(thread.latest_status, thread.latest_status)
        thread.latest_risk_label = risks.get(thread.latest_risk, "")
    query = request.GET.copy()
    query.pop("page", None)
    return render(
        request, "ragapp/history.html", {"form": form, "page": page, "query": query.urlencode()}
    )


@login_required
def chunk_detail(request, chunk_id):
    """One chunk of the knowledge base, as sanitized text, with where it comes from."""
    chunk = chunk_get(chunk_id=chunk_id)
    if chunk is None:
        raise Http404("No such chunk.")
    return render(
        request,
        "ragapp/chunk.html",
        {
            "chunk": chunk,
            "html": render_plain(chunk.text),
            "display_path": display_path(chunk.document.source_path),
        },
    )


@login_required
def run_answer(request, run_id):
    """The answer block of a run, as sanitized HTML (fetched by the live page when it finishes).

    It carries the feedback form, which the page could not have when it was rendered mid-run;
    replay asks with `?replay=1` and gets the answer alone, as replay never offered feedback.
    """
    run = _visible_run(request, run_id)
    with_feedback = run_is_finished(run) and not request.GET.get("replay")
    return render(
        request, "ragapp/_answer.html", _answer_context(request, run, with_feedback=with_feedback)
    )


# Why a run was refused, in one plain sentence each (the refusal reasons of ragapp/runs/runner.py).
# The claims an unfaithful draft made are in the trace, not here.
REFUSAL_SENTENCES = {
    "no_relevant_documents": "Nothing in the documentation was relevant enough to answer this.",
    "not_in_documents": "The passages found do not answer this question.",
    "unfaithful": (
        "The draft answer said things the documentation does not support, even after a "
        "revision, so it is withheld."
    ),
}
REFUSAL_LABELS = {
    "no_relevant_documents": "No relevant documentation",
    "not_in_documents": "Not in the documentation",
    "unfaithful": "Refused: not faithful",
}


def _answer_context(request, run: QueryRun, *, with_feedback: bool) -> dict:
    """What templates/ragapp/_answer.html needs to show a run's outcome."""
    meta = run.response_metadata or {}
    stored = meta.get("sources", []) + meta.get("passages", [])
    chunks = chunks_by_id(chunk_ids=[s["chunk_id"] for s in stored if s.get("chunk_id")])
    # A source's relevance is the grade its trace line shows, so the two agree (none for a chunk
    # the judge was not asked about); the search's similarity only where no grade was stored.
    graded = run_grade_scores(run=run) if meta.get("sources") else {}
    sources = [
        _for_display(
            s,
            score=graded.get(s.get("chunk_id"), s.get("similarity")),
            chunk=chunks.get(s.get("chunk_id")),
        )
        for s in meta.get("sources", [])
    ]
    passages = [_for_display(p, score=p.get("relevance")) for p in meta.get("passages", [])]
    reason = meta.get("refusal_reason") or "unfaithful"
    refusal = REFUSAL_SENTENCES.get(reason, REFUSAL_SENTENCES["unfaithful"])
    if meta.get("unknown_names"):
        # The question named what no page holds: say what, not only that nothing was relevant.
        refusal = f"The documentation does not mention {listed(meta['unknown_names'])}."
    refused = run.status == QueryRun.Status.REFUSED
    context = {
        "run": run,
        "error": error_for(request.user, run.error),
        "answer_html": render_markdown(run.answer, sources={s["n"] for s in sources}),
        "sources": sources,
        "passages": passages,
        "refusal_sentence": refusal,
        "refusal_label": REFUSAL_LABELS.get(reason, REFUSAL_LABELS["unfaithful"]),
        "copy_text": refusal if refused else answer_as_markdown(request, run.answer, sources),
        "meta": meta,
        "tokens": sum(
            t.get("input", 0) + t.get("output", 0) for t in meta.get("tokens", {}).values()
        ),
        "feedback_form": None,
        "answered_earlier": _answered_earlier(request, run),
    }
    if with_feedback:
        context.update(_feedback_context(run, feedback_get(run=run, user=request.user)))
        # Under a finished answer, its asker may go on in the same thread (never staff in
        # someone else's: they may read it, not add to it).
        if run.owner_id is not None and run.owner_id == request.user.pk:
            context["follow_up_form"] = FollowUpForm()
    return context


def _answered_earlier(request, run: QueryRun) -> dict | None:
    """For a reused answer: the earlier run (linked only for who may open it), and whether the
    viewer may ask the question afresh (its asker only)."""
    if run.reused_from_id is None:
        return None
    return {
        "run_id": run.reused_from_id,
        "visible": run_visible_to(user=request.user, run_id=run.reused_from_id),
        "can_refresh": run.owner_id is not None and run.owner_id == request.user.pk,
    }


def answer_as_markdown(request, answer: str, sources: list[dict]) -> str:
    """The answer in Markdown with a line per source: what "Copy answer" puts on the clipboard.

    Each source links to its chunk by full URL, so the pasted text (a ticket, a chat) still
    leads to the passage.
    """
    lines = [
        f"- [{s['n']}] [{s.get('title', '')} — {s.get('heading_path', '')}]"
        f"({request.build_absolute_uri(reverse('chunk-detail', args=[s['chunk_id']]))})"
        f" · {s['display_path']}"
        for s in sources
    ]
    return (answer or "") + ("\n\nSources:\n\n" + "\n".join(lines) if lines else "")


def docs_root_key() -> str:
    """The documentation root (RAG_DOCS_DIR) as ingest_docs keys paths under it."""
    return source_path_for(settings.RAG_DOCS_DIR)


def display_path(source_path: str) -> str:
    """A document's path as the page shows it: short, and without the server's directories.

    Relative to the documentation root when the document lies under it, otherwise its last two
    parts (`/srv/docs/guide/install.md` reads `guide/install.md`). static/ragapp/trace.js does
    the same for the trace lines.
    """
    root = docs_root_key().rstrip("/")
    if root and source_path.startswith(root + "/"):
        return source_path[len(root) + 1 :]
    parts = [part for part in source_path.replace("\\", "/").split("/") if part]
    return "/".join(parts[-2:])


# Relevance in words, best first, with the lowest score each needs; anything lower is "low". The
# same marks are the <meter>'s `high` and `low` in _answer.html, so its colour and word agree.
RELEVANCE_WORDS = ((0.7, "high"), (0.4, "medium"))


def relevance_word(score: float | None) -> str:
    """A relevance score (0 to 1) as a word people can read at a glance."""
    if score is None:
        return "unknown"
    return next((word for floor, word in RELEVANCE_WORDS if score >= floor), "low")


def _for_display(item: dict, *, score: float | None, chunk=None) -> dict:
    """A stored source or passage with what the page shows added; the stored dict is untouched.

    With its chunk, a source also carries the chunk's text for the in-place preview, and the
    document's public link when ingestion recorded one (`url`, http or https only).
    """
    shown = {
        **item,
        "display_path": display_path(item.get("source_path", "")),
        "score": score,
        "relevance_word": relevance_word(score),
        "heading_trail": " \u203a ".join(p for p in item.get("heading_path", "").split(" > ") if p),
    }
    if chunk is not None:
        shown["preview_html"] = render_markdown(chunk.text)
        # `url` is recorded with a source when its document is published (ingestion/publishing.py).
        url = item.get("url") or getattr(chunk, "public_url", "") or ""
        shown["public_url"] = url if url.startswith(("https://", "http://")) else ""
    return shown
