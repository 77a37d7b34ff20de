"""Under the Content-Security-Policy, in a real Chromium: the pages work and nothing is refused.

A policy that is too strict breaks pages silently (a script or style just does not load), so
this drives them as a user would and collects Chromium's CSP refusals from the console.
"""

import pytest

from tests.ragapp.live_server import server  # noqa: F401  (a fixture)
from tests.ragapp.test_browser import browser, sign_in  # noqa: F401  (browser: a fixture)

pytestmark = pytest.mark.django_db(transaction=True)

# Refused on purpose, as no request may leave for another site: the Google web fonts redoc.html
# links (Redoc falls back to local fonts) and the Redocly logo in Redoc's sidebar.
EXPECTED_REFUSALS = ("https://fonts.googleapis.com/", "https://cdn.redoc.ly/")


@pytest.fixture
def page_and_refusals(browser):  # noqa: F811
    page = browser.new_page()
    refusals = []

    def on_console(message):
        if "Content Security Policy" in message.text and not any(
            expected in message.text for expected in EXPECTED_REFUSALS
        ):
            refusals.append(f"{page.url}: {message.text}")

    page.on("console", on_console)
    return page, refusals


def test_the_portal_works_with_nothing_refused(server, page_and_refusals):  # noqa: F811
    page, refusals = page_and_refusals
    sign_in(page, server)

    # static/ragapp/ask.js: an example question fills the box.
    example = page.locator("button.example").first
    question = example.get_attribute("data-question")
    example.click()
    assert page.input_value("#id_query") == question

    # The run page: its data in json_script tags, the eventsource scripts and trace.js.
    page.click("form.card button[type=submit]")
    page.wait_for_selector("#trace li.kind-done", timeout=30_000)
    page.wait_for_selector(".answer-card", timeout=10_000)

    page.goto(f"{server}/history/")
    page.goto(f"{server}/admin/")  # alice is not staff: the admin's sign-in page
    page.wait_for_selector("#login-form")
    assert not refusals, refusals


def test_the_api_docs_render_with_nothing_refused(server, page_and_refusals):  # noqa: F811
    page, refusals = page_and_refusals
    sign_in(page, server)

    page.goto(f"{server}/api/docs/")
    page.wait_for_selector(".swagger-ui .info .title:has-text('Documentation assistant API')")
    page.wait_for_selector(".swagger-ui .opblock", timeout=20_000)  # the schema was loaded

    page.goto(f"{server}/api/redoc/")
    page.wait_for_selector("h1:has-text('Documentation assistant API')", timeout=20_000)
    page.wait_for_selector("h2:has-text('Ask a question: the run starts at once')")
    assert not refusals, refusals
