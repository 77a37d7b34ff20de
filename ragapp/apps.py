from django.apps import AppConfig
from django.conf import settings


class RagappConfig(AppConfig):
    name = "ragapp"
    verbose_name = "Documentation assistant"

    def ready(self):
        # OpenTelemetry, when an OTLP endpoint is configured (every process: web, worker, CLI).
        from ragapp.observability import tracing

        tracing.configure()
        if getattr(settings, "EVENTSTREAM_REDIS", None):
            from ragapp.trace.redis_relay import install

            install(settings.EVENTSTREAM_REDIS)
