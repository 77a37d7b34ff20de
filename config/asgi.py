"""ASGI entry point (uvicorn config.asgi:application)."""

import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
application = get_asgi_application()

# Heartbeats for the runs this process executes, and the sweep that fails runs lost elsewhere.
from ragapp.runs.liveness import start_monitor  # noqa: E402  (needs the app registry loaded above)

start_monitor()
