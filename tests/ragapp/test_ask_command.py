"""`manage.py ask` prints the live trace, then the answer with its verdict and sources."""

from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from ragapp.models import QueryRun

pytestmark = pytest.mark.django_db


# Events are published after their rows commit; a real transaction lets that happen here.
@pytest.mark.django_db(transaction=True)
def test_ask_prints_trace_answer_and_sources(tmp_path, fake_chat):
    (tmp_path / "guide.md").write_text(
        "# Guide\n\n## Restart\n\nRestart the worker with `systemctl restart worker`.\n"
    )
    call_command("ingest_docs", str(tmp_path), stdout=StringIO(), stderr=StringIO())
    out = StringIO()
    call_command("ask", "How do I restart the worker?", stdout=out)
    text = out.getvalue()
    lines = text.splitlines()
    assert lines[0].startswith("[ 1] retrieve #1: 1 documents for 'How do I restart the worker?'")
    assert "grading document 1 of 1 ... relevance" in text
    assert "[ 7] done (answered)" in text
    assert "systemctl restart worker" in text
    assert "Verdict: answered, faithfulness 0.95, risk low" in text
    assert "  [1] " in text and "guide.md > Guide > Restart" in text
    assert QueryRun.objects.get().status == QueryRun.Status.ANSWERED


def test_ask_rejects_an_empty_question(fake_chat):
    with pytest.raises(CommandError, match="empty"):
        call_command("ask", "   ", stdout=StringIO())
