"""The Celery app (RAG_EXECUTOR=celery): `celery -A config worker --pool threads`.

Its settings are the CELERY_* names of config/settings.py; the broker is RAG_REDIS_URL. Workers
start the liveness monitor, so their runs heartbeat and runs lost by a dead worker are failed.
"""

import os

from celery import Celery
from celery.signals import worker_ready, worker_shutdown

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

# The one task: ragapp/tasks.py defines it, the executor sends it by this name.
EXECUTE_RUN_TASK = "ragapp.execute_run"

app = Celery("rag")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks(["ragapp"])


# The imports below are deferred: this module is loaded before Django's app registry is ready.


@worker_ready.connect
def _start_liveness(**kwargs):
    from ragapp.runs.liveness import start_monitor

    start_monitor()


@worker_shutdown.connect
def _stop_liveness(**kwargs):
    from ragapp.runs.liveness import get_monitor

    get_monitor().stop()
