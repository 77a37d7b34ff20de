"""Runs in a given state, for tests of what shows them (pages, API, access), not of the graph.

Also users with a known password, hashed once per password.
"""

import functools

from django.conf import settings
from django.contrib.auth.hashers import make_password

from ragapp.models import QueryRun, TraceEvent
from ragapp.services import run_create, run_finish, run_start


def password_hash(password: str) -> str:
    """`password` hashed by the hasher in use, once per session.

    PBKDF2 takes about a second on a slow two-core machine; a fixture that made three users a
    test cost seconds each time. The hash is as real as create_user's: sign-in still checks it.
    """
    return _hashed(password, settings.PASSWORD_HASHERS[0])


@functools.cache
def _hashed(password: str, hasher: str) -> str:
    # Keyed by the hasher too: a test that sets PASSWORD_HASHERS gets a hash its hasher reads.
    return make_password(password)


def user_with_password(user_model, username: str, password: str, **extra):
    """A user who can sign in with `password` (through the login form or a Client)."""
    return user_model.objects.create(username=username, password=password_hash(password), **extra)


def finish(run: QueryRun, *, status: str = "answered", answer: str = "a", metadata=None):
    """Finish a running run as the runner would, with a fixed verdict (faithful, low risk)."""
    return run_finish(
        run=run,
        status=status,
        answer=answer,
        faithfulness_score=0.9,
        hallucination_risk="low",
        iteration_count=1,
        correction_count=0,
        response_metadata={} if metadata is None else metadata,
    )


def finished_run(
    *,
    owner=None,
    query: str = "q",
    status: str = "answered",
    answer: str = "a",
    metadata=None,
    retrieve: dict | None = None,
    done: bool = False,
    thread=None,
) -> QueryRun:
    """A finished run (answered unless `status` says refused) with a `retrieve` event (payload
    `retrieve`), and `done` if asked; in `thread` if given, else in a new one."""
    run = run_start(run=run_create(query=query, owner=owner, thread=thread))
    TraceEvent.objects.create(
        run=run, seq=1, kind="retrieve", node="retrieve", payload=retrieve or {}
    )
    finish(run, status=status, answer=answer, metadata=metadata)
    if done:
        TraceEvent.objects.create(run=run, seq=2, kind="done", payload={"status": status})
    return run
