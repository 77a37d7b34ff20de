"""Portal pages. Thin: validate, call a service or selector, render."""

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.core.paginator import Paginator
from django.http import Http404, HttpResponseBadRequest, HttpResponseForbidden, JsonResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods

from ragapp.forms import AskForm, FeedbackForm, HistoryFilterForm
from ragapp.models import QueryRun
from ragapp.rendering import render_markdown, render_plain
from ragapp.runs.submit import RunLimitReached, run_submit
from ragapp.selectors import (
    chunk_get,
    database_status,
    example_questions,
    recent_runs,
    run_events_list,
    runs_search,
    runs_visible_to,
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
            run = run_submit(query=form.cleaned_data["query"], owner=request.user)
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


def _visible_run(request, run_id) -> QueryRun:
    run = runs_visible_to(user=request.user).filter(pk=run_id).first()
    if run is None:
        raise Http404("No such run.")
    return run


@login_required
def run_detail(request, run_id):
    """A run's trace so far (rendered by the same script that then follows it live)."""
    run = _visible_run(request, run_id)
    trace = [event_message(event) for event in run_events_list(run=run)]
    return render(
        request,
        "ragapp/run.html",
        {
            "run": run,
            "trace": trace,
            "event_kinds": kind_labels(),
            "last_seq": trace[-1]["seq"] if trace else 0,
            "feedback_form": FeedbackForm(),
            "replay": False,
        },
    )


@login_required
def run_replay(request, run_id):
    """A past run's trace re-animated at its original pace, by the live page's own script."""
    run = _visible_run(request, run_id)
    trace = [event_message(event) for event in run_events_list(run=run)]
    return render(
        request,
        "ragapp/run.html",
        {"run": run, "trace": trace, "event_kinds": kind_labels(), "replay": True},
    )


@login_required
@require_http_methods(["POST"])
def run_feedback(request, run_id):
    """Thumbs up/down with an optional comment on a finished run."""
    run = _visible_run(request, run_id)
    form = FeedbackForm(request.POST)
    if not form.is_valid():
        return render(request, "ragapp/_feedback_errors.html", {"form": form}, status=400)
    try:
        feedback_submit(run=run, user=request.user, **form.cleaned_data)
    except ValidationError as exc:
        return HttpResponseBadRequest(" ".join(exc.messages))
    messages.success(request, "Thanks for the feedback.")
    return redirect("run-detail", run_id=run.pk)


@login_required
def history(request):
    """The user's runs (everyone's for staff): searchable, filterable, paginated."""
    form = HistoryFilterForm(request.GET or None)
    filters = form.cleaned_data if form.is_valid() else {}
    runs = runs_search(user=request.user, **{k: v for k, v in filters.items() if v})
    page = Paginator(runs, 20).get_page(request.GET.get("page"))
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
    return render(request, "ragapp/chunk.html", {"chunk": chunk, "html": render_plain(chunk.text)})


@login_required
def run_answer(request, run_id):
    """The answer block of a finished run, as sanitized HTML (fetched by the live page)."""
    run = _visible_run(request, run_id)
    meta = run.response_metadata or {}
    sources = meta.get("sources", [])
    return render(
        request,
        "ragapp/_answer.html",
        {
            "run": run,
            "error": error_for(request.user, run.error),
            "answer_html": render_markdown(run.answer, sources={s["n"] for s in sources}),
            "sources": sources,
            "meta": meta,
            "tokens": sum(
                t.get("input", 0) + t.get("output", 0) for t in meta.get("tokens", {}).values()
            ),
        },
    )
