"""Writes. Each function is `<entity>_<action>` with keyword-only arguments."""

from ragapp.services.evaluations import evaluation_create, evaluation_finish
from ragapp.services.index import embedding_index_prepare, embedding_index_reembed
from ragapp.services.runs import (
    IllegalTransition,
    feedback_submit,
    run_abort,
    run_answer_reused,
    run_create,
    run_fail,
    run_finish,
    run_start,
    runs_fail_lost,
    runs_heartbeat,
)

__all__ = [
    "IllegalTransition",
    "embedding_index_prepare",
    "embedding_index_reembed",
    "evaluation_create",
    "evaluation_finish",
    "feedback_submit",
    "run_abort",
    "run_answer_reused",
    "run_create",
    "run_fail",
    "run_finish",
    "run_start",
    "runs_fail_lost",
    "runs_heartbeat",
]
