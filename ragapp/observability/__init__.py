"""Operations: Prometheus metrics, structured logs, OpenTelemetry traces, LangSmith's switch.

See docs/operations.md. Nothing here imports the ORM except `views.py` (the /metrics endpoint),
so the graph can be instrumented and still run without a database.
"""
