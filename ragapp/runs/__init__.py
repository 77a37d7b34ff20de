"""Executing runs: submit (create, then dispatch), executor (where), runner (how), liveness.

Data flows one way: `submit` creates the row and hands its id to the executor; the executor
(worker threads, or a Celery task sent by name) calls the runner; the runner heartbeats itself
through `liveness` while the graph runs. Nothing here is imported back by the services.
"""
