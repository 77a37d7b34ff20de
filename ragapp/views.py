"""Portal pages."""

from django.db import connection
from django.http import JsonResponse


def healthz(request):
    """Liveness and database reachability, for load balancers and the run script."""
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
        database = "ok"
    except Exception as exc:
        return JsonResponse({"status": "error", "database": type(exc).__name__}, status=503)
    return JsonResponse({"status": "ok", "database": database})
