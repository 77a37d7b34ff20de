"""Portal pages."""

from django.db import connection
from django.http import Http404, HttpResponseForbidden, JsonResponse
from django_eventstream.views import events

from ragapp.eventstream import channel_for
from ragapp.selectors import run_visible_to


def healthz(request):
    """Liveness and database reachability, for load balancers and the run script."""
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
        database = "ok"
    except Exception as exc:
        return JsonResponse({"status": "error", "database": type(exc).__name__}, status=503)
    return JsonResponse({"status": "ok", "database": database})


def run_events(request, run_id):
    """The run's live trace as Server-Sent Events; resumable with Last-Event-ID (a seq)."""
    if not request.user.is_authenticated:
        return HttpResponseForbidden("Sign in to follow a run.")
    if not run_visible_to(user=request.user, run_id=run_id):
        raise Http404("No such run.")  # another user's run does not exist, as far as you know
    return events(request, channels=[channel_for(run_id)])
