"""`manage.py ingest_docs` as the ingestion tests call it: its report, or its failure."""

from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError


def ingest(*args: str) -> str:
    """Run ingest_docs with `args`; its report (stdout)."""
    out = StringIO()
    call_command("ingest_docs", *args, stdout=out, stderr=StringIO())
    return out.getvalue()


def ingest_failing(*args: str) -> tuple[str, str]:
    """Run ingest_docs with `args`, which must fail; its report and the error's message."""
    out = StringIO()
    with pytest.raises(CommandError) as excinfo:
        call_command("ingest_docs", *args, stdout=out, stderr=StringIO())
    return out.getvalue(), str(excinfo.value)
