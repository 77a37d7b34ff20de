"""Every way of executing a run heartbeats, so another process's sweeper never takes it for lost.

`manage.py ask` and `eval_rag` used to call the runner without the heartbeat that only the
executor added: a web process or worker sharing the database then failed such a run after
RAG_RUN_STALE_SECONDS, and the runner's next event collided with the sweeper's on its sequence
number. Here a real second process sweeps with a stale time far shorter than the run.
"""

import os
import subprocess
import sys
import time
from io import StringIO

import pytest
from django.conf import settings as django_settings
from django.core.management import call_command

from ragapp.models import QueryRun
from ragapp.providers.chat import clear_chat_models_cache
from ragapp.runs import liveness
from tests.ragapp.live_server import shared_database_url

pytestmark = pytest.mark.django_db(transaction=True)

STALE_S = 1.0
BEAT_S = 0.2

SWEEPER = """
import sys, time
import django
django.setup()
from ragapp.runs.liveness import start_monitor
start_monitor()
print("sweeping", flush=True)
sys.stdin.read()  # until the test closes stdin
"""


@pytest.fixture
def sweeper():
    """Another process that sweeps the test database every BEAT_S, with a stale time of STALE_S."""
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "DATABASE_URL": shared_database_url(),
        "RAG_RUN_HEARTBEAT_SECONDS": str(BEAT_S),
        "RAG_RUN_STALE_SECONDS": str(STALE_S),
    }
    process = subprocess.Popen(
        [sys.executable, "-c", SWEEPER],
        cwd=django_settings.BASE_DIR,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stdout.readline().strip() == "sweeping", process.stderr.read()
    yield process
    process.stdin.close()
    process.terminate()
    process.wait(timeout=20)


@pytest.fixture
def short_heartbeat(settings):
    """This process beats every BEAT_S: a monitor built for the test, then the default again."""
    settings.RAG_RUN_HEARTBEAT_SECONDS = BEAT_S
    liveness.reset_monitor()
    yield
    liveness.reset_monitor()


@pytest.fixture
def slow_fake_chat(settings, fake_chat):
    """The fake model, slowed so one run lasts several stale periods."""
    settings.RAG_FAKE_CHAT_DELAY_MS = 1500  # each call outlasts the stale time
    clear_chat_models_cache()
    yield
    clear_chat_models_cache()


def test_a_run_from_ask_outlives_another_process_sweeping(
    tmp_path, short_heartbeat, slow_fake_chat, sweeper
):
    (tmp_path / "guide.md").write_text(
        "# Guide\n\n## Restart\n\nRestart the worker with `systemctl restart worker`.\n"
    )
    call_command("ingest_docs", str(tmp_path), stdout=StringIO(), stderr=StringIO())
    started = time.monotonic()
    call_command("ask", "How do I restart the worker?", stdout=StringIO())
    lasted = time.monotonic() - started

    run = QueryRun.objects.get()
    kinds = list(run.events.order_by("seq").values_list("kind", flat=True))
    assert lasted > 3 * STALE_S  # the sweeper had every chance to take the run for lost
    assert run.status == QueryRun.Status.ANSWERED, run.error
    assert kinds.count("done") == 1 and kinds[-1] == "done"
    assert "error" not in kinds
    assert sweeper.poll() is None  # the sweeper itself is still running, and said nothing wrong
