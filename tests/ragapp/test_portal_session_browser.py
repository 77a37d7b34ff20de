"""A whole session in the portal, in a real headless Chromium, checked by axe-core on every page.

Sign in; ask with Ctrl+Enter; watch the trace stream; see the status change and the answer lead;
open a source preview; copy the answer; give thumbs-down with a comment; find the run in History
and replay it. Each page is saved as a screenshot at desktop and phone size in tests/artifacts/,
and axe-core (axe-playwright-python ships it) finds no serious or critical violation on it, in
the light and the dark colour scheme.
"""

import re

import pytest
from axe_playwright_python.sync_playwright import Axe

from ragapp.models import Feedback, QueryRun
from tests.ragapp.live_server import server  # noqa: F401  (a fixture)
from tests.ragapp.test_browser import browser  # noqa: F401  (a fixture)
from tests.ragapp.test_portal_browser import (
    ANSWER_BEFORE_TRACE,
    DESKTOP,
    PHONE,
    QUESTION,
    RUN_URL,
    assert_fits_the_screen,
    orm,
    screenshot,
)

pytestmark = pytest.mark.django_db(transaction=True)

AXE = Axe()

# The focus ring of the element with focus, as the browser draws it.
FOCUS_RING = """() => { const s = getComputedStyle(document.activeElement);
    return [s.outlineStyle, parseFloat(s.outlineWidth)]; }"""


def assert_accessible(page, name: str) -> None:
    """axe-core finds no serious or critical violation on the page, in light and dark."""
    for scheme in ("light", "dark"):
        page.emulate_media(color_scheme=scheme)
        violations = AXE.run(page).response["violations"]
        serious = [v for v in violations if v["impact"] in ("serious", "critical")]
        assert not serious, f"{name} ({scheme}): " + "; ".join(
            f"{v['id']} ({v['impact']}): {v['help']} at {[n['target'] for n in v['nodes'][:3]]}"
            for v in serious
        )
    page.emulate_media(color_scheme="light")


def look(page, name: str) -> None:
    """Screenshots at desktop and phone size (nothing wider than a phone), then back to desktop."""
    screenshot(page, f"session-{name}-desktop", DESKTOP)
    screenshot(page, f"session-{name}-phone", PHONE)
    assert_fits_the_screen(page)
    page.set_viewport_size(DESKTOP)


def tab_to(page, locator) -> None:
    """Move the focus to `locator` with the Tab key, as a keyboard user does (from the element
    before it), so the browser shows the focus as it does for them."""
    locator.focus()
    page.keyboard.press("Shift+Tab")
    page.keyboard.press("Tab")
    assert locator.evaluate("e => e === document.activeElement")


def assert_focus_visible(page) -> None:
    style, width = page.evaluate(FOCUS_RING)
    assert style != "none" and width >= 2, f"no visible focus: {style} {width}"


# Each model call takes a second, so the trace is seen arriving line by line.
@pytest.mark.parametrize("server", [{"RAG_FAKE_CHAT_DELAY_MS": "1000"}], indirect=True)
def test_a_whole_session_from_sign_in_to_replay(server, browser):  # noqa: F811
    context = browser.new_context(
        viewport=DESKTOP, permissions=["clipboard-read", "clipboard-write"]
    )
    page = context.new_page()

    # Sign in (from the keyboard).
    page.goto(f"{server}/")
    page.wait_for_selector("#id_username")
    assert_accessible(page, "sign-in")
    look(page, "sign-in")
    page.fill("#id_username", "alice")
    page.fill("#id_password", "pw-alice-123")
    page.press("#id_password", "Enter")
    page.wait_for_selector("#id_query")

    # Ask with Ctrl+Enter; the suggestions are questions made from the docs' headings.
    suggestions = page.locator("button.example").all_inner_texts()
    assert suggestions and all(s.endswith("?") for s in suggestions), suggestions
    assert not any("What does the documentation say" in s for s in suggestions)
    assert_accessible(page, "ask")
    look(page, "ask")
    page.fill("#id_query", QUESTION)
    page.press("#id_query", "Control+Enter")
    page.wait_for_url(RUN_URL)
    run_url = page.url

    # The trace streams, announced politely; the status follows it.
    assert page.get_attribute("#trace", "aria-live") == "polite"
    page.wait_for_selector("#trace li.kind-retrieve", timeout=20_000)
    first_lines = page.locator("#trace li").count()
    page.wait_for_selector("#run-status:has-text('Running')", timeout=20_000)
    assert_accessible(page, "run (live)")
    look(page, "run-live")
    page.wait_for_selector("#trace li.kind-done", timeout=60_000)
    assert page.locator("#trace li").count() > first_lines
    page.wait_for_selector("#run-status.status-answered:has-text('Answered')", timeout=10_000)
    # The grading reads in words, with the score as its bar's tooltip.
    grade = page.locator("#trace li.kind-grade").first
    assert re.search(r"… (high|medium|low) relevance, (kept|filtered out) — ", grade.inner_text())
    assert not re.search(r"relevance \d", page.inner_text("#trace"))
    assert re.fullmatch(r"relevance \d\.\d\d", grade.locator("meter").get_attribute("title"))

    # The answer leads.
    page.wait_for_selector("#answer .answer-card .badge-faithful", timeout=10_000)
    assert page.evaluate(ANSWER_BEFORE_TRACE)
    assert "systemctl restart worker" in page.inner_text("#answer .answer-body")

    # A source opens a preview of its chunk in place, from the keyboard.
    summary = page.locator("#answer .source-preview > summary").first
    tab_to(page, summary)
    assert_focus_visible(page)
    page.keyboard.press("Enter")
    preview = page.locator("#answer .source-preview .preview-body").first
    preview.wait_for()
    assert "Ops \u203a Restart" in preview.inner_text()
    assert "systemctl restart worker" in preview.inner_text()

    # Copy the answer.
    page.click("#answer button:has-text('Copy answer')")
    page.wait_for_selector("#answer .copy-status:has-text('Copied.')")
    copied = page.evaluate("navigator.clipboard.readText()")
    assert "systemctl restart worker" in copied and "\n\nSources:\n\n- [1] [Ops" in copied
    look(page, "run-answered-preview-open")

    # Thumbs down in one keypress, then a comment: no page reload.
    page.evaluate("window.notReloaded = true")
    thumb = page.get_by_role("button", name="Not helpful", exact=True)
    tab_to(page, thumb)
    assert_focus_visible(page)
    page.keyboard.press("Enter")
    comment = page.locator("#feedback textarea[name=comment]")
    comment.wait_for()
    page.wait_for_function("document.activeElement.name === 'comment'")  # typed into at once
    page.keyboard.type("The unit name is wrong.")
    page.click("#feedback button:has-text('Send comment')")
    page.wait_for_function(
        "document.querySelector('#feedback textarea').value === 'The unit name is wrong.'"
    )
    page.wait_for_selector("#feedback [role=status]:has-text('Thanks for the feedback.')")
    assert page.evaluate("window.notReloaded") is True
    feedback = orm(lambda: Feedback.objects.get())
    assert (feedback.rating, feedback.comment) == (-1, "The unit name is wrong.")
    assert_accessible(page, "run (answered, feedback given)")
    look(page, "run-feedback-given")

    # Opened again: the answer first, the trace folded, the feedback as given.
    page.goto(run_url)
    assert page.locator("#trace-fold").get_attribute("open") is None
    assert page.locator(".thumb-down[aria-pressed=true]").count() == 1
    assert_accessible(page, "run (finished)")
    look(page, "run-finished")
    page.emulate_media(color_scheme="dark")  # the system's dark mode, followed
    background = page.evaluate("getComputedStyle(document.body).backgroundColor")
    assert background == "rgb(11, 15, 23)", background
    look(page, "run-finished-dark")
    page.emulate_media(color_scheme="light")

    # Find the run in History (the filters on one row at desktop width) and replay it.
    page.click("header nav a:has-text('History')")
    page.wait_for_selector("table.history")
    fields = page.locator(".filters label, .filters button").all()
    tops = {round(field.bounding_box()["y"] + field.bounding_box()["height"]) for field in fields}
    assert len(tops) == 1, f"the filters wrap onto {len(tops)} rows at desktop width"
    assert_accessible(page, "history")
    look(page, "history")
    page.set_viewport_size(PHONE)
    page.reload()
    assert page.locator("#filters-fold").get_attribute("open") is None  # folded on a phone
    page.click("#filters-fold > summary")
    page.wait_for_selector("#id_q")
    page.set_viewport_size(DESKTOP)
    page.fill("#id_q", "restart the worker")
    # The search is a GET that loads a new page: wait for its results, not the old table's.
    with page.expect_navigation():
        page.press("#id_q", "Enter")
    page.wait_for_load_state()
    row = page.locator("table.history tbody tr", has_text=QUESTION)
    row.first.wait_for()
    assert row.count() == 1
    # History lists threads: its replay plays the thread, here of one run.
    row.locator("a:has-text('replay')").click()
    page.wait_for_selector("#replay-all")
    page.click("#replay-all")
    page.wait_for_selector(".thread-turn .answer .answer-card")
    run = orm(lambda: QueryRun.objects.get())
    assert page.locator(".thread-turn .trace li").count() == orm(lambda: run.events.count())
    assert_accessible(page, "replay")
    look(page, "replay")
    context.close()
