"""deploy/grafana-dashboard.json is valid JSON and queries only metrics the product exports."""

import io
import json
import re

import pytest

from deploy.topology import ROOT
from ragapp.runs.runner import execute_run
from ragapp.services import run_create
from tests.ragapp.observability.conftest import scrape

DASHBOARD = ROOT / "deploy" / "grafana-dashboard.json"


def dashboard_metrics() -> set[str]:
    dashboard = json.loads(DASHBOARD.read_text())
    exprs = [target["expr"] for panel in dashboard["panels"] for target in panel["targets"]]
    return {name for expr in exprs for name in re.findall(r"\b(rag_[a-z_]+)", expr)}


@pytest.mark.django_db(transaction=True)
def test_every_metric_on_the_dashboard_is_exported(
    client, metrics_token, knowledge_base, fake_chat, tmp_path
):
    from django.core.management import call_command

    (tmp_path / "a.md").write_text("# A\n\nAlpha restarts with `alpha restart`.\n")
    call_command("ingest_docs", str(tmp_path), stdout=io.StringIO())
    execute_run(run_create(query="How do I start the beta service?"))
    exported = {name for name, _ in scrape(client)}

    used = dashboard_metrics()
    assert len(used) >= 12  # the pattern still finds the queries
    assert used <= exported, sorted(used - exported)
