"""A thread in a real headless Chromium: ask, then a follow-up from under the answer, and see both
in one thread (the thread page, History, the thread's replay), with axe-core on every page.

Screenshots at desktop and phone size go to tests/artifacts/thread-*.png.
"""

import pytest

from ragapp.models import QueryRun, Thread
from tests.ragapp.live_server import server  # noqa: F401  (a fixture)
from tests.ragapp.test_browser import browser, sign_in  # noqa: F401  (browser: a fixture)
from tests.ragapp.test_portal_browser import (
    DESKTOP,
    PHONE,
    QUESTION,
    RUN_URL,
    ask,
    assert_fits_the_screen,
    orm,
    screenshot,
    wait_for_live_answer,
)
from tests.ragapp.test_portal_session_browser import assert_accessible

pytestmark = pytest.mark.django_db(transaction=True)

FOLLOW_UP = "and does the worker restart with systemctl?"


def look(page, name: str) -> None:
    """Screenshots at desktop and phone size (nothing wider than a phone), then back to desktop."""
    screenshot(page, f"thread-{name}-desktop", DESKTOP)
    screenshot(page, f"thread-{name}-phone", PHONE)
    assert_fits_the_screen(page)
    page.set_viewport_size(DESKTOP)


def test_a_question_then_a_follow_up_make_one_thread(server, browser):  # noqa: F811
    page = browser.new_page(viewport=DESKTOP)
    sign_in(page, server)
    first_url = ask(page, server, QUESTION)
    wait_for_live_answer(page)

    # The follow-up box arrived with the answer of the run watched live; Ctrl+Enter asks.
    box = page.locator("#follow-up textarea[name=query]")
    box.wait_for()
    assert_accessible(page, "run with the follow-up box")
    look(page, "run-follow-up-box")
    box.fill(FOLLOW_UP)
    box.press("Control+Enter")
    page.wait_for_url(lambda url: RUN_URL.search(url) is not None and url != first_url)

    # The new run streams live like any other, its first step making the question standalone.
    condense = page.locator("#trace li.kind-condense")
    condense.wait_for(timeout=30_000)
    assert f"made the follow-up standalone: “{FOLLOW_UP}” → “{FOLLOW_UP} (about: {QUESTION})”" in (
        condense.inner_text()
    )
    wait_for_live_answer(page)
    page.reload()  # rendered finished: the standalone question under the question
    assert page.inner_text(".standalone") == f"Answered as: {FOLLOW_UP} (about: {QUESTION})"
    assert_accessible(page, "follow-up run")
    look(page, "follow-up-run")

    # Both runs are in one thread: its page lists them in order.
    page.click(".thread-link a:has-text('How do I restart')")
    page.wait_for_selector(".thread-runs")
    questions = page.locator(".thread-run h2").all_inner_texts()
    assert questions == [QUESTION, FOLLOW_UP]
    assert page.locator(".thread-run .status-answered").count() == 2
    assert_accessible(page, "thread")
    look(page, "thread")
    thread = orm(lambda: Thread.objects.get())
    assert orm(lambda: [r.query for r in thread.runs.order_by("created_at")]) == questions

    # History shows one thread of two runs.
    page.click("header nav a:has-text('History')")
    rows = page.locator("table.history tbody tr")
    rows.first.wait_for()
    assert rows.count() == 1
    assert page.inner_text("table.history td[data-label=Runs]") == "2"
    assert QUESTION in rows.first.inner_text()
    assert_accessible(page, "history of threads")
    look(page, "history")

    # Replay the whole thread: each run's trace in turn, each with its answer.
    rows.first.locator("a:has-text('replay')").click()
    page.wait_for_selector("#replay-all")
    page.click("#replay-all")
    page.wait_for_selector(".thread-turn:nth-of-type(2) .answer .answer-card", timeout=20_000)
    page.wait_for_selector(".thread-turn .answer .answer-card >> nth=0")
    runs = orm(lambda: list(QueryRun.objects.order_by("created_at")))
    turns = page.locator(".thread-turn")
    assert turns.count() == 2
    for i, run in enumerate(runs):
        count = orm(lambda r=run: r.events.count())
        assert turns.nth(i).locator(".trace li").count() == count
    assert turns.nth(1).locator(".trace li").first.get_attribute("class") == "event kind-condense"
    assert_accessible(page, "thread replay")
    look(page, "replay")
    page.close()
