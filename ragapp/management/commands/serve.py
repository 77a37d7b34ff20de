"""`manage.py serve`: set up and run the product in one command."""

import ipaddress

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError

from ragapp.selectors import knowledge_base_stats


class Command(BaseCommand):
    help = (
        "Migrate the database, ingest the bundled docs/ when the knowledge base is empty, then "
        "serve the app with uvicorn (ASGI). Uses the embedded PostgreSQL unless DATABASE_URL is "
        "set."
    )

    def add_arguments(self, parser):
        parser.add_argument("--host", default="127.0.0.1")
        parser.add_argument("--port", type=int, default=8000)
        parser.add_argument("--workers", type=int, default=1, help="uvicorn worker processes")
        parser.add_argument(
            "--no-ingest", action="store_true", help="never ingest docs/, even into an empty index"
        )

    def execute(self, *args, **options):
        # A debug page shows settings and code to whoever can make a request fail, so it is for
        # this machine's own browser only. Checked before the system checks, which already open
        # the database: a refused start has started nothing.
        if settings.DEBUG and not is_loopback(options["host"]):
            raise CommandError(
                f"DJANGO_DEBUG is true: serve only binds 127.0.0.1, ::1 or localhost then, not "
                f"{options['host']!r}. Unset DJANGO_DEBUG to serve on other addresses."
            )
        return super().execute(*args, **options)

    def handle(self, *args, host, port, workers, no_ingest, **options):
        call_command("migrate", interactive=False, verbosity=max(options["verbosity"] - 1, 0))
        stats = knowledge_base_stats()
        if stats["chunks"] == 0 and not no_ingest:
            self.stdout.write(f"The knowledge base is empty: ingesting {settings.RAG_DOCS_DIR}")
            call_command("ingest_docs", str(settings.RAG_DOCS_DIR))
        else:
            self.stdout.write(
                f"Knowledge base: {stats['documents']} documents, {stats['chunks']} chunks "
                f"({stats['embedding_model']})."
            )
        if not get_user_model().objects.filter(is_superuser=True).exists():
            self.stdout.write(
                self.style.WARNING(
                    "No admin account yet: create one with `uv run manage.py createsuperuser`."
                )
            )
        if workers > 1 and not settings.RAG_REDIS_URL:
            self.stdout.write(
                self.style.WARNING(
                    "--workers > 1 without RAG_REDIS_URL: a live trace only streams from the "
                    "process that executes its run. Set RAG_REDIS_URL (docs/deployment.md)."
                )
            )
        self.stdout.write(f"Serving on http://{host}:{port}/ (admin at /admin/)")
        self.stdout.write(
            "Debug mode is on (DJANGO_DEBUG=true): error pages show code and settings."
            if settings.DEBUG
            else "Debug mode is off (DJANGO_DEBUG=true shows detailed error pages, on loopback)."
        )
        import uvicorn

        uvicorn.run(
            "config.asgi:application",
            host=host,
            port=port,
            workers=workers,
            log_level=settings.LOGGING["root"]["level"].lower(),
            lifespan="off",
        )


def is_loopback(host: str) -> bool:
    """Whether `host` (a --host value) is an address only this machine can reach."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:  # a host name other than localhost: it may resolve to anything
        return False
