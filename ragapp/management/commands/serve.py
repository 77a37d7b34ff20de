"""`manage.py serve`: set up and run the product in one command."""

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.core.management.base import BaseCommand

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
        import uvicorn

        uvicorn.run(
            "config.asgi:application",
            host=host,
            port=port,
            workers=workers,
            log_level=settings.LOGGING["root"]["level"].lower(),
            lifespan="off",
        )
