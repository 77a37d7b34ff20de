"""A repeated question in a real headless Chromium: answered at once, said to be answered earlier,
with a link to the earlier run and a button for a fresh answer; axe-core on the page.

Screenshots at desktop and phone size go to tests/artifacts/reuse-*.png.
"""

import pytest

from ragapp.models import QueryRun
from tests.ragapp.live_server import server  # noqa: F401  (a fixture)
from tests.ragapp.test_browser import browser, sign_in  # noqa: F401  (browser: a fixture)
from tests.ragapp.test_portal_browser import (
    DESKTOP,
    PHONE,
    QUESTION,
    ask,
    assert_fits_the_screen,
    orm,
    screenshot,
    wait_for_live_answer,
)
from tests.ragapp.test_portal_session_browser import assert_accessible

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.mark.parametrize("server", [{"RAG_REUSE": "exact"}], indirect=True)
def test_a_repeated_question_is_answered_earlier_with_a_way_to_a_fresh_answer(
    server,  # noqa: F811
    browser,  # noqa: F811
):
    page = browser.new_page(viewport=DESKTOP)
    sign_in(page, server)
    first_url = ask(page, server, QUESTION)
    wait_for_live_answer(page)

    second_url = ask(page, server, QUESTION)

    assert second_url != first_url
    page.wait_for_selector("#answer .answer-card")
    assert page.locator(".badge-reused").inner_text() == "answered earlier"
    earlier = page.locator(".answered-earlier")
    assert "Answered earlier" in earlier.inner_text()
    assert earlier.locator("a").get_attribute("href") == first_url.removeprefix(server)
    assert earlier.locator("button", has_text="Fresh answer").is_visible()
    assert_accessible(page, "reused answer")
    screenshot(page, "reuse-answered-earlier-desktop", DESKTOP)
    screenshot(page, "reuse-answered-earlier-phone", PHONE)
    assert_fits_the_screen(page)
    page.set_viewport_size(DESKTOP)

    # The button asks again with reuse bypassed: a third run, through the graph.
    earlier.locator("button", has_text="Fresh answer").click()
    page.wait_for_url(lambda url: url not in (first_url, second_url) and "/runs/" in url)
    wait_for_live_answer(page)
    runs = orm(lambda: list(QueryRun.objects.order_by("created_at")))
    assert [run.reused_from_id for run in runs] == [None, runs[0].pk, None]
