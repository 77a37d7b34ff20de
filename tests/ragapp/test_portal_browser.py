"""The portal's run page, ask page and history in a real headless Chromium, as a user meets them.

Each test drives the real server (tests/ragapp/live_server.py, fake models) with Debian's
Chromium, waits for what the user would see (never for a time) and saves screenshots under
tests/artifacts/ at desktop and phone size.
"""

import re
from concurrent.futures import ThreadPoolExecutor

import pytest
from django.contrib.auth import get_user_model
from django.db import connection

from ragapp.models import Chunk, Document, Feedback, QueryRun, TraceEvent
from ragapp.services import run_create, run_start
from tests.ragapp.factories import finish
from tests.ragapp.live_server import server  # noqa: F401  (a fixture)
from tests.ragapp.test_browser import ARTIFACTS, browser, sign_in  # noqa: F401  (browser: a fixture)

pytestmark = pytest.mark.django_db(transaction=True)

DESKTOP = {"width": 1280, "height": 900}
PHONE = {"width": 390, "height": 844}
RUN_URL = re.compile(r"/runs/[0-9a-f-]{36}/$")
# Long enough to overflow a phone many times over, with nowhere a browser would break a line.
LONG = "ragapp.graph.nodes.GradeDocumentsNodeWithAnExtremelyLongUnbrokenIdentifier_" * 2
QUESTION = "How do I restart the worker?"
LIVE = pytest.mark.parametrize("server", [{"RAG_FAKE_CHAT_DELAY_MS": "1000"}], indirect=True)


def ask(page, server: str, question: str) -> str:  # noqa: F811
    """Submit `question` on the Ask page; the URL of the run page it lands on."""
    page.goto(f"{server}/")
    page.fill("#id_query", question)
    page.click("form.card button[type=submit]")
    page.wait_for_url(RUN_URL)
    return page.url


def wait_for_live_answer(page) -> None:
    page.wait_for_selector("#trace li.kind-done", timeout=60_000)
    page.wait_for_selector("#answer .answer-card", timeout=10_000)


def screenshot(page, name: str, viewport: dict) -> None:
    page.set_viewport_size(viewport)
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)


def screenshots(page, name: str) -> None:
    """The page at desktop and then at phone size (which it is left at)."""
    screenshot(page, f"{name}-desktop", DESKTOP)
    screenshot(page, f"{name}-phone", PHONE)


def alice():
    return get_user_model().objects.get(username="alice")


def orm(read_or_write, *args):
    """Call `read_or_write` (database work) in a thread of its own, and return what it returns.

    Playwright's sync API runs an event loop in the test's thread, where Django refuses database
    calls; the thread's connection is closed after, so none is left open on the test database.
    """

    def call():
        try:
            return read_or_write(*args)
        finally:
            connection.close()

    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(call).result()


# 1. The status follows the trace.


# One run at a time, each model call 1.5 s: the second question waits behind the first.
@pytest.mark.parametrize(
    "server", [{"RAG_FAKE_CHAT_DELAY_MS": "1500", "RAG_MAX_CONCURRENT_RUNS": "1"}], indirect=True
)
def test_the_status_of_a_run_opened_while_queued_follows_its_trace(server, browser):  # noqa: F811
    page = browser.new_page(viewport=DESKTOP)
    sign_in(page, server)
    ask(page, server, "How do I restart the worker first?")
    ask(page, server, QUESTION)
    assert page.inner_text("#run-status") == "Queued"  # rendered while the first run worked

    page.wait_for_selector("#run-status.status-running:has-text('Running')", timeout=30_000)
    page.wait_for_selector("#trace li.kind-done", timeout=60_000)
    page.wait_for_selector("#run-status.status-answered:has-text('Answered')", timeout=10_000)


# 2. The feedback form after a live run, with CSRF, and still without JavaScript.


@LIVE
def test_the_feedback_form_appears_when_a_live_run_finishes(server, browser):  # noqa: F811
    page = browser.new_page(viewport=DESKTOP)
    sign_in(page, server)
    run_url = ask(page, server, QUESTION)
    assert not page.locator("form[action$='/feedback/']").count()  # the run is still going
    wait_for_live_answer(page)

    form = page.locator("#answer form[action$='/feedback/']")
    form.wait_for(timeout=10_000)
    assert form.locator("input[name=csrfmiddlewaretoken]").get_attribute("value")
    page.evaluate("window.notReloaded = true")  # gone if the page reloads
    # One click rates; the comment box comes after, and is sent the same way.
    page.get_by_role("button", name="Helpful", exact=True).click()
    page.wait_for_selector("#feedback [role=status]:has-text('Thanks for the feedback.')")
    assert orm(lambda: Feedback.objects.get().rating) == 1
    page.fill("#feedback textarea[name=comment]", "Clear steps.")
    page.click("#feedback button:has-text('Send comment')")
    page.wait_for_function("document.querySelector('#feedback textarea').value === 'Clear steps.'")
    page.wait_for_selector("#feedback [role=status]:has-text('Thanks for the feedback.')")
    assert page.evaluate("window.notReloaded") is True and page.url == run_url
    feedback = orm(lambda: Feedback.objects.select_related("user").get())
    assert (feedback.rating, feedback.comment, feedback.user.username) == (
        1,
        "Clear steps.",
        "alice",
    )
    # Changed later: the other thumb replaces the rating and keeps the comment.
    page.get_by_role("button", name="Not helpful", exact=True).click()
    page.wait_for_selector("#feedback .thumb-down[aria-pressed=true]")
    assert orm(lambda: (Feedback.objects.get().rating, Feedback.objects.get().comment)) == (
        -1,
        "Clear steps.",
    )


def test_feedback_is_sent_without_javascript(server, browser):  # noqa: F811
    run = orm(finished_run_with_long_identifiers)
    context = browser.new_context(java_script_enabled=False, viewport=DESKTOP)
    page = context.new_page()
    sign_in(page, server)
    page.goto(f"{server}/runs/{run.pk}/")
    assert "Set" in page.inner_text("#answer .answer-body")  # the answer is in the page itself
    page.get_by_role("button", name="Not helpful", exact=True).click()
    page.wait_for_selector("[role=status]:has-text('Thanks for the feedback.')")
    assert orm(lambda: Feedback.objects.get(run=run).rating) == -1
    # The page came back with the rating shown and the comment box.
    assert page.locator(".thumb-down[aria-pressed=true]").count() == 1
    page.fill("textarea[name=comment]", "The flag is wrong.")
    page.click("button:has-text('Send comment')")
    page.wait_for_selector("[role=status]:has-text('Thanks for the feedback.')")
    feedback = orm(lambda: Feedback.objects.get(run=run))
    assert (feedback.rating, feedback.comment) == (-1, "The flag is wrong.")
    context.close()


# 3. Ctrl+Enter, or Cmd+Enter on a Mac, submits the question.


@pytest.mark.parametrize("shortcut", ["Control+Enter", "Meta+Enter"])
def test_the_keyboard_shortcut_submits_the_question(server, browser, shortcut):  # noqa: F811
    page = browser.new_page(viewport=DESKTOP)
    sign_in(page, server)
    page.fill("#id_query", QUESTION)
    page.press("#id_query", shortcut)
    page.wait_for_url(RUN_URL, timeout=10_000)
    assert orm(lambda: QueryRun.objects.get().query) == QUESTION  # as typed: no newline added


def test_a_plain_enter_still_starts_a_new_line(server, browser):  # noqa: F811
    page = browser.new_page(viewport=DESKTOP)
    sign_in(page, server)
    page.fill("#id_query", "First line")
    page.press("#id_query", "Enter")
    page.keyboard.type("second line")
    assert page.input_value("#id_query") == "First line\nsecond line"
    assert not orm(QueryRun.objects.exists)


# 4. On a phone: the header on one row, nothing wider than the screen.


def source_summary() -> dict:
    """A trace event's summary of the knowledge base's first chunk, as `retrieve` writes one."""
    document = Document.objects.get()
    chunk = Chunk.objects.filter(document=document).first()
    return {
        "chunk_id": chunk.pk,
        "document_id": document.pk,
        "title": "Operations",
        "heading_path": "Ops",
        "source_path": "docs/ops.md",
        "similarity": 0.8,
    }


def finished_run_with_long_identifiers() -> QueryRun:
    """Alice's answered run whose question, trace, answer and source carry LONG."""
    source = {
        **source_summary(),
        "title": f"Title {LONG}",
        "heading_path": f"Ops > {LONG}",
        "source_path": f"/srv/{LONG}/docs/{LONG}.md",
        "similarity": 0.83,
    }
    run = run_start(run=run_create(query=f"Why does {LONG} fail?", owner=alice()))
    events = [
        ("retrieve", {"iteration": 1, "docs_found": 1, "query": LONG, "duration_ms": 12}),
        ("grade", {"index": 1, "total": 1, "score": 0.83, "passed": True, "document": source}),
        ("grade_docs", {"passed": 1, "total": 1, "duration_ms": 3}),
        ("generate", {"fallback": False, "sources": [source], "duration_ms": 900}),
        (
            "grade_answer",
            {"faithful": True, "faithfulness_score": 0.9, "hallucination_risk": "low"},
        ),
        ("answer", {"status": "answered"}),
    ]
    for seq, (kind, payload) in enumerate(events, 1):
        TraceEvent.objects.create(run=run, seq=seq, kind=kind, payload=payload)
    answer = f"Set `{LONG}` in the configuration [1].\n\n```\n{LONG} --restart\n```"
    metadata = {"sources": [{"n": 1, **source}], "total_ms": 950, "models": {}}
    run = finish(run, answer=answer, metadata=metadata)
    done = {"status": "answered"}
    TraceEvent.objects.create(run=run, seq=len(events) + 1, kind="done", payload=done)
    return run


WIDER_THAN_THE_SCREEN = """() => [...document.querySelectorAll("body *")]
    .filter(e => e.getBoundingClientRect().right > window.innerWidth + 0.5)
    .map(e => e.tagName.toLowerCase() + "." + e.className)"""


def assert_fits_the_screen(page) -> None:
    width = page.evaluate("[document.documentElement.scrollWidth, window.innerWidth]")
    too_wide = page.evaluate(WIDER_THAN_THE_SCREEN)
    assert width[0] <= width[1], f"{page.url}: {width}, too wide: {too_wide}"


def assert_header_on_one_row(page) -> None:
    brand = page.locator("header.top .brand").bounding_box()
    link = page.locator("header.top nav a").first.bounding_box()
    assert brand["height"] <= link["height"] * 1.5, "the brand wraps onto two lines"
    for item in page.locator("header.top nav > a, header.top nav button").all():
        box = item.bounding_box()
        middle = box["y"] + box["height"] / 2
        assert brand["y"] <= middle <= brand["y"] + brand["height"], "a link wraps under the brand"


def test_on_a_phone_the_header_keeps_the_brand_and_links_on_one_row(server, browser):  # noqa: F811
    page = browser.new_page(viewport=PHONE)
    sign_in(page, server)
    for path in ("/", "/history/"):
        page.goto(f"{server}{path}")
        assert_header_on_one_row(page)


def open_ask_with_a_long_question(page, server, run):  # noqa: F811
    page.goto(f"{server}/")  # the run's question is in "Your recent questions"
    page.fill("#id_query", LONG)


def open_run_with_its_trace_unfolded(page, server, run):  # noqa: F811
    page.goto(f"{server}/runs/{run.pk}/")
    page.wait_for_selector("#trace li.kind-done", state="attached")
    if page.locator("#trace-fold").count():
        page.click("#trace-fold > summary")  # the trace's lines, laid out
    page.wait_for_selector("#trace li.kind-grade")
    page.wait_for_selector("#answer .answer-card")


def open_replay_to_the_end(page, server, run):  # noqa: F811
    page.goto(f"{server}/runs/{run.pk}/replay/")
    page.click("#replay-all")
    page.wait_for_selector("#answer .answer-card")


def open_history(page, server, run):  # noqa: F811
    page.goto(f"{server}/history/")


def open_a_source_chunk(page, server, run):  # noqa: F811
    open_run_with_its_trace_unfolded(page, server, run)
    page.click("#answer .sources a")
    page.wait_for_selector("main .card")


@pytest.mark.parametrize(
    "name, open_page",
    [
        ("ask", open_ask_with_a_long_question),
        ("run-long-identifiers", open_run_with_its_trace_unfolded),
        ("replay-long-identifiers", open_replay_to_the_end),
        ("history", open_history),
        ("chunk", open_a_source_chunk),
    ],
)
def test_on_a_phone_nothing_is_wider_than_the_screen(server, browser, name, open_page):  # noqa: F811
    run = orm(finished_run_with_long_identifiers)
    page = browser.new_page(viewport=PHONE)
    sign_in(page, server)
    open_page(page, server, run)
    assert_fits_the_screen(page)
    screenshots(page, name)


ANSWER_BEFORE_TRACE = """() => Boolean(document.querySelector("#answer")
    .compareDocumentPosition(document.querySelector("#trace-fold"))
    & Node.DOCUMENT_POSITION_FOLLOWING)"""


# 5. Short source paths, with the stored one in a title; and the answer block's other parts.


@LIVE
def test_a_finished_live_run_leads_with_its_answer(server, browser):  # noqa: F811
    context = browser.new_context(
        viewport=DESKTOP, permissions=["clipboard-read", "clipboard-write"]
    )
    page = context.new_page()
    sign_in(page, server)
    run_url = ask(page, server, QUESTION)
    wait_for_live_answer(page)
    stored_path = orm(
        lambda: Document.objects.get().source_path
    )  # absolute: the docs are in a temp folder
    assert stored_path.startswith("/") and stored_path.endswith("/docs/ops.md")

    # Live, the trace the user watched stays open; its summary line is written; the answer,
    # above it, is pointed to.
    summary = re.compile(r"^1 document graded, 1 kept · answer checked: faithful · [\d.]+ s$")
    assert summary.match(page.inner_text("#trace-summary"))
    assert page.locator("#trace-fold").get_attribute("open") is not None
    page.wait_for_selector("#answer-ready a[href='#answer']")

    # Sources and trace lines show a short path, never the server's directories. (Which short
    # path the run records, relative to its ingest root or the last parts, is ingestion's.)
    path = page.locator("#answer .sources .source-path")
    shown = path.inner_text()
    assert shown.endswith("ops.md") and not shown.startswith("/"), shown
    grade_line = page.locator("#trace li.kind-grade")
    assert f"— {shown} \u203a Ops > Restart" in grade_line.inner_text()
    assert stored_path not in page.inner_text("main")

    # Relevance as a word and a bar, not decimals: the word is the bar's band.
    relevance = page.locator("#answer .sources .relevance")
    score = float(relevance.locator("meter").get_attribute("value"))
    band = "high" if score >= 0.7 else "medium" if score >= 0.4 else "low"
    assert relevance.inner_text().strip() == f"{band} relevance"
    assert not re.search(r"relevance \d", page.inner_text("#answer .sources"))

    # A citation scrolls to its source and highlights it.
    page.click("#answer .answer-body a[href='#source-1']")
    page.wait_for_selector("#source-1:target")
    background = page.eval_on_selector("#source-1", "e => getComputedStyle(e).backgroundColor")
    assert background == "rgb(254, 249, 195)"

    # Copy answer (Markdown with its source lines) and copy link.
    page.click("#answer button:has-text('Copy answer')")
    page.wait_for_selector("#answer .copy-status:has-text('Copied.')")
    copied = page.evaluate("navigator.clipboard.readText()")
    chunk_url = f"{server}/chunks/{orm(lambda: Chunk.objects.get().pk)}/"
    assert copied.startswith("According to the documentation, Restart the worker with")
    assert copied.endswith(f"Sources:\n\n- [1] [Ops — Ops > Restart]({chunk_url}) · {shown}")
    page.click("button:has-text('Copy link')")
    page.wait_for_selector(".meta .copy-status:has-text('Copied.')")
    assert page.evaluate("navigator.clipboard.readText()") == run_url
    screenshots(page, "run-live-finished")

    # Opened again once finished: the answer first, the trace folded to its summary line.
    page.set_viewport_size(DESKTOP)
    page.goto(run_url)
    page.wait_for_selector("#trace li.kind-done", state="attached")
    assert page.evaluate(ANSWER_BEFORE_TRACE)
    assert page.locator("#trace-fold").get_attribute("open") is None
    assert summary.match(page.inner_text("#trace-summary"))
    assert not page.locator("#trace li.kind-grade").is_visible()
    screenshots(page, "run-finished")
    page.click("#trace-fold > summary")
    page.wait_for_selector("#trace li.kind-grade")
    assert page.locator("#trace li").count() == orm(TraceEvent.objects.count)
    assert page.locator("#trace li.kind-done").is_visible()
    screenshots(page, "run-finished-trace-open")

    # Replay keeps the trace open and brings the answer after it, without the feedback form.
    page.goto(f"{run_url}replay/")
    page.click("#replay-all")
    page.wait_for_selector("#answer .answer-card")
    assert page.locator("#trace-fold").get_attribute("open") is not None
    assert not page.locator("#answer form").count()
    screenshots(page, "replay")
    context.close()


# 6. A refusal decided at the first check: the trace says why there was no second one.


def stored_refused_run(question: str, events: list[tuple[str, dict]]) -> QueryRun:
    """Alice's run refused as unfaithful, with `events` (then "done") as its stored trace."""
    run = run_start(run=run_create(query=question, owner=alice()))
    for seq, (kind, payload) in enumerate(events, 1):
        TraceEvent.objects.create(run=run, seq=seq, kind=kind, payload=payload)
    answer = "I can't give a reliable answer to this question."
    metadata = {"refusal_reason": "unfaithful", "total_ms": 1500, "models": {}, "passages": []}
    run = finish(run, status="refused", answer=answer, metadata=metadata)
    TraceEvent.objects.create(
        run=run, seq=len(events) + 1, kind="done", payload={"status": "refused"}
    )
    return run


def refused_run_pruned_to_nothing(doubtful: bool = False) -> QueryRun:
    """Alice's run whose doubted opening left nothing after pruning: refused, checked once.

    `doubtful`: no verdict reached the threshold, the retrieval passed as doubtful, and the
    writer was stopped at its opening, which the stricter check doubted.
    """
    source = {**source_summary(), "heading_path": "Ops > Restarting", "similarity": 0.8}
    opening = "The worker restarts itself every hour."
    score = 0.3 if doubtful else 0.8
    events = [
        ("retrieve", {"iteration": 1, "docs_found": 1, "query": "restart", "duration_ms": 12}),
        ("grade", {"index": 1, "total": 1, "score": score, "passed": True, "document": source}),
        ("grade_docs", {"passed": 1, "total": 1, "doubtful": doubtful, "duration_ms": 3}),
        (
            "generate",
            {
                "fallback": False,
                "sources": [source],
                "opening_doubted": doubtful,
                "duration_ms": 900,
            },
        ),
        (
            "grade_answer",
            {
                "faithful": False,
                "faithfulness_score": 0.2,
                "hallucination_risk": "high",
                "problematic_claims": [opening],
                "duration_ms": 600,
            },
        ),
        (
            "refine",
            {
                "problematic_claims": [opening],
                "method": "prune",
                "before_chars": 80,
                "after_chars": 0,
                "unrevised": True,
                "duration_ms": 0.1,
            },
        ),
        ("answer", {"status": "refused"}),
    ]
    return stored_refused_run("How often does the worker restart?", events)


def test_a_refusal_decided_at_the_first_check_says_so_in_its_trace(server, browser):  # noqa: F811
    run = orm(refused_run_pruned_to_nothing)
    page = browser.new_page(viewport=DESKTOP)
    sign_in(page, server)
    open_run_with_its_trace_unfolded(page, server, run)
    line = page.inner_text("#trace li.kind-refine")
    assert "refinement left nothing new to check: refused without a second check" in line
    assert page.locator("#trace li.kind-grade_answer").count() == 1
    screenshots(page, "run-refused-unrevised")
    assert_fits_the_screen(page)


def test_a_doubtful_retrieval_and_its_doubted_opening_are_said(server, browser):  # noqa: F811
    run = orm(refused_run_pruned_to_nothing, True)
    page = browser.new_page(viewport=DESKTOP)
    sign_in(page, server)
    open_run_with_its_trace_unfolded(page, server, run)
    grade_docs = page.inner_text("#trace li.kind-grade_docs")
    assert "passed as doubtful, so the answer is held to a stricter check" in grade_docs
    generate = page.inner_text("#trace li.kind-generate")
    assert "stopped at its opening claim, which the check doubted" in generate
    screenshots(page, "run-refused-doubtful")
    assert_fits_the_screen(page)


def run_that_read_on(tmp_path) -> QueryRun:
    """Alice's run, made by the real graph with scripted fake models, that read on and answered.

    The search finds the logs page by its first chunk, which does not say how logs rotate; the
    writer declines, and the page's other chunk, read on, holds the answer.
    """
    from io import StringIO

    from django.core.management import call_command

    from ragapp.graph.context import ChatModels, GraphLimits
    from ragapp.providers.fake_chat import FakeChatModel, FakeScript
    from ragapp.runs.runner import execute_run

    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "logs.md").write_text(
        "# Logs\n\n## Where\n\nThe service writes its logs to the journal.\n\n"
        "## Rotation\n\nLogs rotate daily.\n"
    )
    call_command("ingest_docs", str(tmp_path / "logs"), stdout=StringIO())
    script = FakeScript(
        relevance=lambda q, doc: 0.9 if "logs" in doc.lower() else 0.0,
        generate=lambda q, docs: (
            "Logs rotate daily [1]."
            if any("rotate daily" in doc for doc in docs)
            else "The documents do not mention how often logs rotate."
        ),
    )
    model = FakeChatModel(script=script)
    models = ChatModels(
        generator=model,
        grader=model,
        broadener=model,
        relevance_method="logprobs",
        faithfulness_method="claims",
        names={"generation": "fake-chat", "grading": "fake-chat", "broadening": "fake-chat"},
    )
    run = run_create(query="Where are the logs written, and how often?", owner=alice())
    execute_run(run, models=models, limits=GraphLimits(top_k=1, max_retrievals=1, read_on=4))
    run.refresh_from_db()
    return run


def test_a_run_that_read_on_after_a_refusal_says_so_in_its_trace(server, browser, tmp_path):  # noqa: F811
    run = orm(run_that_read_on, tmp_path)
    assert run.status == QueryRun.Status.ANSWERED, run.answer  # the graph read on, then answered
    page = browser.new_page(viewport=DESKTOP)
    sign_in(page, server)
    open_run_with_its_trace_unfolded(page, server, run)
    retrieves = page.locator("#trace li.kind-retrieve")
    assert retrieves.count() == 2
    second = retrieves.nth(1).inner_text()
    assert "read on: 1 more chunk of the pages found, after the answer was refused" in second
    assert "Logs rotate daily" in page.inner_text("#answer .answer-card")
    # No judge graded the chunk read on: its source shows no relevance (its search similarity
    # would read as a low verdict), as for a chunk the retrieval gate did not ask about.
    source = page.locator(".sources > li")
    assert source.count() == 1 and "Rotation" in source.inner_text()
    assert source.locator(".relevance").count() == 0
    screenshots(page, "run-read-on")
    assert_fits_the_screen(page)
