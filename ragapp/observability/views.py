"""GET /metrics: the Prometheus text format, for a scraper named by token or network only."""

from __future__ import annotations

import hmac
import ipaddress

from django.conf import settings
from django.db.models import Count
from django.http import HttpResponse
from django.views.decorators.http import require_GET
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from prometheus_client.core import GaugeMetricFamily

from ragapp.models import QueryRun
from ragapp.observability import metrics


@require_GET
def metrics_view(request):
    """The metrics of every process of this host (multi-process mode) or of this process."""
    refusal = _refusal(request)
    if refusal is not None:
        return refusal
    registry = metrics.registry_to_expose(QueueDepthCollector())
    return HttpResponse(generate_latest(registry), content_type=CONTENT_TYPE_LATEST)


def _refusal(request) -> HttpResponse | None:
    """None when the scraper may read the metrics, else the response that says no."""
    token, networks = settings.RAG_METRICS_TOKEN, settings.RAG_METRICS_ALLOWED_NETWORKS
    if not token and not networks:
        # Off until an operator names who may scrape: 404, as if there were no such page.
        return HttpResponse("Not found\n", status=404, content_type="text/plain")
    if networks and _peer_in(request, networks):
        return None
    if token:
        scheme, _, given = request.headers.get("Authorization", "").partition(" ")
        if scheme.lower() == "bearer" and hmac.compare_digest(given.strip(), token):
            return None
        response = HttpResponse("A bearer token is required\n", status=401)
        response["WWW-Authenticate"] = 'Bearer realm="metrics"'
        return response
    return HttpResponse("Forbidden\n", status=403, content_type="text/plain")


def _peer_in(request, networks) -> bool:
    # The socket's peer, never X-Forwarded-For: a client could name any address there.
    # Prometheus scrapes each process directly, not through the load balancer.
    try:
        address = ipaddress.ip_address(request.META.get("REMOTE_ADDR", ""))
    except ValueError:
        return False
    return any(address in network for network in networks)


class QueueDepthCollector:
    """The executor's queue depth, read from the database when scraped.

    The queued runs in the database are the queue, whichever executor serves it (threads or
    Celery), so every process reports the same, whole figure; no process has to count it.
    """

    HELP = "Runs queued and not yet started (the queued runs in the database)."
    # Also from the database: the per-process in-progress gauge loses a worker whose processes
    # this host cannot see (a container of its own, docs/operations.md); this one never does.
    RUNNING_HELP = "Runs whose status is running in the database, whichever process runs them."

    def describe(self):
        return [
            GaugeMetricFamily(metrics.QUEUE_DEPTH_NAME, self.HELP),
            GaugeMetricFamily(metrics.RUNNING_NAME, self.RUNNING_HELP),
        ]

    def collect(self):
        counts = dict(
            QueryRun.objects.filter(status__in=[QueryRun.Status.QUEUED, QueryRun.Status.RUNNING])
            .values("status")
            .annotate(n=Count("pk"))
            .values_list("status", "n")
        )
        family = GaugeMetricFamily(metrics.QUEUE_DEPTH_NAME, self.HELP)
        family.add_metric([], counts.get(QueryRun.Status.QUEUED, 0))
        yield family
        running = GaugeMetricFamily(metrics.RUNNING_NAME, self.RUNNING_HELP)
        running.add_metric([], counts.get(QueryRun.Status.RUNNING, 0))
        yield running
