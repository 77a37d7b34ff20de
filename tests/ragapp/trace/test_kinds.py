"""An event kind is declared once, in ragapp/trace/kinds.py; every place that names kinds follows.

The stream's listeners and the page's labels are derived from EventKind. The places that cannot
be derived (a payload schema, a trace-text line, the page script's line, a section of
docs/events.md) are checked here both ways: each declared kind is covered, and nothing covers a
kind that is not declared. A failure names the place to update and the kind.
"""

import json
import re
from pathlib import Path

import pytest
from django.test import Client
from django.urls import reverse

from ragapp.api.event_schemas import EVENT_SERIALIZERS, PAYLOADS
from ragapp.services import run_create
from ragapp.trace.kinds import EventKind, kind_labels
from ragapp.trace.text import DESCRIBERS

ROOT = Path(__file__).resolve().parents[3]
DECLARED = [kind.value for kind in EventKind]
KINDS = pytest.mark.parametrize("kind", list(EventKind), ids=str)


def _read(relative_path: str) -> str:
    return (ROOT / relative_path).read_text(encoding="utf-8")


def _undeclared(named) -> list[str]:
    return sorted({str(kind) for kind in named} - set(DECLARED))


# The declaration itself.


@KINDS
def test_every_kind_has_a_label(kind):
    assert kind.label.strip(), f"ragapp/trace/kinds.py: the event kind '{kind}' has no label"


# The API schemas: ragapp/api/event_schemas.py.


@KINDS
def test_every_kind_has_a_payload_schema(kind):
    assert kind in PAYLOADS, (
        f"ragapp/api/event_schemas.py: no payload schema for the event kind '{kind}' in PAYLOADS"
    )
    assert kind.value in EVENT_SERIALIZERS


def test_no_schema_for_an_undeclared_kind():
    assert not _undeclared(PAYLOADS), (
        f"ragapp/api/event_schemas.py: PAYLOADS has schemas for undeclared kinds "
        f"{_undeclared(PAYLOADS)}; declare them in ragapp/trace/kinds.py"
    )


# The trace text of `manage.py ask` and the admin: ragapp/trace/text.py.


@KINDS
def test_every_kind_has_a_trace_text_describer(kind):
    assert kind in DESCRIBERS, (
        f"ragapp/trace/text.py: no describer for the event kind '{kind}' in DESCRIBERS"
    )


def test_no_describer_for_an_undeclared_kind():
    assert not _undeclared(DESCRIBERS), (
        f"ragapp/trace/text.py: DESCRIBERS describes undeclared kinds {_undeclared(DESCRIBERS)}; "
        f"declare them in ragapp/trace/kinds.py"
    )


# The portal's run page: its template gets the kinds and labels, static/ragapp/trace.js renders.

PAGE_SCRIPT = "static/ragapp/trace.js"


def _script_cases() -> list[str]:
    """The kinds that describe() in the page script has a `case` for."""
    return re.findall(r'^\s*case "(\w+)":', _read(PAGE_SCRIPT), re.MULTILINE)


@pytest.mark.django_db
@pytest.mark.parametrize("page", ["run-detail", "run-replay"])
def test_the_run_page_gets_every_kind_with_its_label(users, page):
    run = run_create(query="How?", owner=users["owner"])
    client = Client()
    client.force_login(users["owner"])
    body = client.get(reverse(page, args=[run.pk])).content.decode()
    data = re.search(r'<script id="trace-kinds" type="application/json">(.*?)</script>', body, re.S)
    assert data, f"templates/ragapp/run.html: no #trace-kinds script on the {page} page"
    labels = json.loads(data.group(1))
    missing = [kind for kind in DECLARED if kind not in labels]
    assert not missing, f"templates/ragapp/run.html ({page}): no label for the kinds {missing}"
    assert labels == kind_labels()
    assert list(labels) == DECLARED  # the script subscribes in this order


@KINDS
def test_every_kind_is_rendered_by_the_page_script(kind):
    assert kind.value in _script_cases(), (
        f"{PAGE_SCRIPT}: describe() has no case for the event kind '{kind}'"
    )


def test_the_page_script_renders_no_undeclared_kind():
    assert not _undeclared(_script_cases()), (
        f"{PAGE_SCRIPT}: describe() renders undeclared kinds {_undeclared(_script_cases())}; "
        f"declare them in ragapp/trace/kinds.py"
    )


def test_the_page_styles_colour_no_undeclared_kind():
    # Not every kind needs a colour (done has none), but a colour for an unknown kind is stale.
    coloured = re.findall(r"\.kind-(\w+)", _read("static/ragapp/portal.css"))
    assert not _undeclared(coloured), (
        f"static/ragapp/portal.css: colours undeclared kinds {_undeclared(coloured)}"
    )


# The reference: docs/events.md has a row in "Event kinds at a glance" and a section per kind.

EVENTS_DOC = "docs/events.md"


def _doc_sections() -> list[str]:
    """The level-2 headings that name a kind: a bare lower-case identifier, like `## grade_docs`."""
    return re.findall(r"^## ([a-z][a-z_]*)$", _read(EVENTS_DOC), re.MULTILINE)


def _doc_glance_rows() -> list[str]:
    """The kinds in the first column of the "Event kinds at a glance" table."""
    section = _read(EVENTS_DOC).split("\n## Event kinds at a glance\n", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"^\| `(\w+)` \|", section, re.MULTILINE)


@KINDS
def test_every_kind_has_a_section_in_the_events_doc(kind):
    assert kind.value in _doc_sections(), f"{EVENTS_DOC}: no section for the event kind '{kind}'"
    assert kind.value in _doc_glance_rows(), (
        f"{EVENTS_DOC}: no row for the event kind '{kind}' in Event kinds at a glance"
    )


def test_the_events_doc_documents_no_undeclared_kind():
    documented = _doc_sections() + _doc_glance_rows()
    assert not _undeclared(documented), (
        f"{EVENTS_DOC}: documents undeclared kinds {_undeclared(documented)}"
    )


# The emitters: the graph's nodes, the runner and the run services.

EMITTERS = ["ragapp/graph", "ragapp/runs", "ragapp/services"]


@KINDS
def test_every_kind_is_emitted(kind):
    pattern = re.compile(rf"\bEventKind\.{kind.name}\b")
    emitted = any(
        pattern.search(path.read_text(encoding="utf-8"))
        for folder in EMITTERS
        for path in (ROOT / folder).rglob("*.py")
    )
    assert emitted, f"{' or '.join(EMITTERS)}: nothing emits the event kind '{kind}'"
