"""Content-Security-Policy: every page forbids inline script, and no page needs one."""

import re
from pathlib import Path

import pytest
from django.conf import settings
from django.test import Client

from tests.ragapp.factories import finished_run

pytestmark = pytest.mark.django_db

TEMPLATES = Path(settings.BASE_DIR) / "templates"
# A <script> tag and what it holds: group 1 its attributes, group 2 its body.
SCRIPT = re.compile(r"<script\b([^>]*)>(.*?)</script>", re.DOTALL | re.IGNORECASE)


def policy(response) -> dict[str, list[str]]:
    header = response.headers["Content-Security-Policy"]
    directives = (part.split() for part in header.split(";") if part.strip())
    return {name: values for name, *values in directives}


def inline_scripts(html: str) -> list[str]:
    """Script tags that would run code written in the page: no src, not JSON data."""
    return [
        body.strip()[:80]
        for attributes, body in SCRIPT.findall(html)
        if "src=" not in attributes and 'type="application/json"' not in attributes
    ]


@pytest.fixture
def member(django_user_model) -> Client:
    client = Client()
    client.force_login(django_user_model.objects.create_user("member", password="pw-member-1"))
    return client


def test_the_policy_allows_this_sites_files_only_and_no_inline_script_or_style(client):
    csp = policy(client.get("/accounts/login/"))
    assert csp["default-src"] == ["'self'"]
    assert csp["script-src"] == ["'self'"]  # no 'unsafe-inline', no 'unsafe-eval', no CDN
    assert csp["style-src"] == ["'self'"]
    assert csp["object-src"] == ["'none'"] and csp["base-uri"] == ["'none'"]
    assert csp["frame-ancestors"] == ["'none'"]


def test_every_portal_page_is_sent_with_the_policy(member, django_user_model):
    run = finished_run(owner=django_user_model.objects.get(username="member"), done=True)
    pages = ["/", f"/runs/{run.pk}/", f"/runs/{run.pk}/replay/", "/history/", "/admin/login/"]
    for url in pages:
        response = member.get(url, follow=True)
        assert response.status_code == 200, url
        assert "'unsafe-inline'" not in response.headers["Content-Security-Policy"], url
        assert not inline_scripts(response.content.decode()), url


def test_the_ask_page_loads_its_script_from_a_file(member):
    html = member.get("/").content.decode()
    assert '<script src="/static/ragapp/ask.js"></script>' in html
    assert member.get("/static/ragapp/ask.js").status_code == 200


def test_no_template_has_an_inline_script():
    found = {
        str(path.relative_to(TEMPLATES)): inline_scripts(path.read_text())
        for path in TEMPLATES.rglob("*.html")
    }
    assert len(found) >= 5  # the templates were found
    offending = {name: scripts for name, scripts in found.items() if scripts}
    assert not offending, f"inline <script> in templates (move it to static/): {offending}"


def test_no_template_has_an_inline_style():
    # style-src is 'self' only: a style="" attribute or a <style> block would be ignored.
    offending = [
        str(path.relative_to(TEMPLATES))
        for path in TEMPLATES.rglob("*.html")
        if re.search(r"\sstyle=|<style\b", path.read_text(), re.IGNORECASE)
    ]
    assert not offending, offending
