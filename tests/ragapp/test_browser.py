"""The portal in a real headless Chromium (Debian's package), driven by Playwright."""

import os
import re
import shutil
from pathlib import Path

import pytest
from django.conf import settings

pytestmark = pytest.mark.django_db(transaction=True)

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
ARTIFACTS = Path(settings.BASE_DIR) / "tests" / "artifacts"


@pytest.fixture
def browser():
    if not Path(CHROMIUM).exists():
        if os.environ.get("CI"):
            pytest.fail("chromium is not installed; .ci/run installs Debian's chromium package")
        pytest.skip("Debian's chromium is not installed (apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM,
            headless=True,
            # No sandbox as root; no background traffic: this machine has no network.
            args=[
                "--no-sandbox",
                "--disable-gpu",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--no-first-run",
            ],
        )
        yield browser
        browser.close()


def sign_in(page, server: str) -> None:
    page.goto(f"{server}/")
    page.fill("#id_username", "alice")
    page.fill("#id_password", "pw-alice-123")
    # Wait for the Ask page's load event, not only its form: the form is in the DOM before the
    # script at the end of the page runs, and a shortcut pressed in between reaches no listener.
    with page.expect_navigation(wait_until="load"):
        page.click("button[type=submit]")


def ask_on_a_desktop(browser, server: str, question: str):
    """A desktop-sized page, signed in, that has just asked `question`."""
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    sign_in(page, server)
    page.fill("#id_query", question)
    page.click("form.card button[type=submit]")
    return page


# Each model call takes a second, so the run is still going when the page first looks, even on
# a busy machine: a run that ended before the page loaded would show its trace from the database.
@pytest.mark.parametrize("server", [{"RAG_FAKE_CHAT_DELAY_MS": "1000"}], indirect=True)
def test_ask_watch_the_trace_live_then_replay(server, browser):
    page = browser.new_page()
    sign_in(page, server)
    page.fill("#id_query", "How do I restart the worker?")
    page.click("form.card button[type=submit]")

    # The trace appears line by line while the (slowed) fake model works, then the answer.
    page.wait_for_selector("#trace li.kind-retrieve", timeout=20_000)
    first_lines = page.locator("#trace li").count()
    page.wait_for_selector("#trace li.kind-done", timeout=30_000)
    assert page.locator("#trace li").count() > first_lines  # lines kept arriving: live
    page.wait_for_selector(".answer-card .badge-faithful", timeout=10_000)
    assert "systemctl restart worker" in page.inner_text("#answer")
    assert page.locator(".sources li a").count() >= 1
    assert "grading document 1 of" in page.inner_text("#trace")
    seqs = page.eval_on_selector_all("#trace li", "els => els.map(e => Number(e.dataset.seq))")
    assert seqs == list(range(1, len(seqs) + 1))  # every event once, in order

    page.click("text=replay")
    page.wait_for_selector("#replay-all")
    page.click("#replay-all")
    assert page.locator("#trace li").count() == len(seqs)
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "replay.png"), full_page=True)


def test_a_refusal_still_shows_the_closest_passages(server, browser):
    page = ask_on_a_desktop(
        browser, server, "How do I configure SAML single sign-on for the billing portal?"
    )

    page.wait_for_selector(".answer-card.refused", timeout=60_000)
    answer = page.inner_text("#answer")
    assert "Closest passages" in answer and "not an answer" in answer
    passages = page.locator(".passages li")
    assert 1 <= passages.count() <= 3
    assert page.locator(".passages li a").first.get_attribute("href").startswith("/chunks/")
    shown = page.inner_text(".passages .source-path")
    assert shown.endswith("ops.md") and not shown.startswith("/"), shown  # not the server's path
    # The query was broadened twice and the one chunk came back each time: graded once.
    summary = page.inner_text("#trace-summary")
    assert summary.startswith("1 document graded, 0 kept · no relevant documents · "), summary
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "refusal-passages.png"), full_page=True)
    page.set_viewport_size({"width": 390, "height": 844})
    page.screenshot(path=str(ARTIFACTS / "refusal-passages-phone.png"), full_page=True)


@pytest.mark.parametrize("server", [{"RAG_REFUSE_UNKNOWN_NAMES": "true"}], indirect=True)
def test_a_question_naming_what_the_docs_never_mention_is_told_so(server, browser):
    page = ask_on_a_desktop(browser, server, "How do I configure SAML for the billing portal?")

    page.wait_for_selector(".answer-card.refused", timeout=60_000)
    answer = page.inner_text("#answer")
    assert "The documentation does not mention SAML" in answer, answer
    assert "Closest passages" in answer and page.locator(".passages li").count() >= 1
    trace = page.inner_text("#trace")
    assert "no document mentions SAML" in trace and "broaden" not in trace
    assert "not asked (the question names SAML, which no document" in trace
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "refusal-unknown-name.png"), full_page=True)
    page.set_viewport_size({"width": 390, "height": 844})
    page.screenshot(path=str(ARTIFACTS / "refusal-unknown-name-phone.png"), full_page=True)


@pytest.mark.parametrize("server", [{"RAG_HYDE": "true"}], indirect=True)
def test_the_trace_shows_the_passage_the_first_search_was_made_with(server, browser):
    # The fake model's passage is the question itself (providers/fake_chat.py).
    question = "How do I restart the worker?"
    page = ask_on_a_desktop(browser, server, question)

    page.wait_for_selector(".answer-card", timeout=60_000)
    if not page.locator("#trace-fold[open]").count():  # a finished run's trace starts folded
        page.click("#trace-fold > summary")
    line = page.locator("#trace li.kind-retrieve").inner_text()
    wrote = r"searched with a passage the model wrote for it in \d+ ms: "
    assert re.search(wrote + re.escape(f"\u201c{question}\u201d"), line), line
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "trace-hyde.png"), full_page=True)
    page.set_viewport_size({"width": 390, "height": 844})
    page.screenshot(path=str(ARTIFACTS / "trace-hyde-phone.png"), full_page=True)


@pytest.mark.parametrize("server", [{"RAG_RELEVANCE_JUDGE": "logprobs"}], indirect=True)
def test_the_trace_says_which_chunks_the_retrieval_gate_did_not_ask_about(
    server, browser, tmp_path
):
    from concurrent.futures import ThreadPoolExecutor
    from io import StringIO

    from django.core.management import call_command

    # A second document, so the retrieval has a chunk after the first one that passes.
    (tmp_path / "more").mkdir()
    (tmp_path / "more" / "billing.md").write_text("# Billing\n\nInvoices are sent monthly.\n")
    # Playwright's loop runs on this thread, where Django refuses database calls: ingest aside.
    with ThreadPoolExecutor(1) as pool:
        pool.submit(call_command, "ingest_docs", str(tmp_path / "more"), stdout=StringIO()).result()
    page = ask_on_a_desktop(browser, server, "How do I restart the worker?")

    page.wait_for_selector("#trace li.kind-done", timeout=60_000)
    grades = page.locator("#trace li.kind-grade")
    assert grades.count() == 2
    assert "relevance, kept" in grades.nth(0).inner_text()
    assert grades.nth(0).locator("meter").count() == 1
    second = grades.nth(1).inner_text()
    assert "not asked (a document ranked above passed first), kept" in second, second
    assert grades.nth(1).locator("meter").count() == 0  # no score, so no bar
    # The sources agree with the trace: a relevance for the first, none for the chunk not asked.
    sources = page.locator(".sources > li")
    assert sources.nth(0).locator(".relevance").count() == 1
    assert sources.nth(1).locator(".relevance").count() == 0
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "trace-not-asked.png"), full_page=True)
    page.set_viewport_size({"width": 390, "height": 844})
    page.screenshot(path=str(ARTIFACTS / "trace-not-asked-phone.png"), full_page=True)
