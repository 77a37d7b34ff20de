"""`manage.py ingest_docs PATH...`: bring the knowledge base in line with a documentation tree."""

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from ingestion.progress import IngestProgress
from ingestion.publishing import BaseUrlError, base_url_clean
from ingestion.report import Outcome
from ingestion.services import ingest_paths
from ragapp.providers import get_embeddings
from ragapp.selectors import EmbeddingMismatchError
from ragapp.services.index import ReembedIncompleteError, embedding_index_reembed


class Command(BaseCommand):
    help = (
        "Ingest Markdown, reStructuredText, HTML, text (also .gz), PDF and Word files into the "
        "knowledge base. Incremental: unchanged files are skipped, changed files replaced "
        "atomically."
    )

    def add_arguments(self, parser):
        parser.add_argument("paths", nargs="*", type=Path, help="files or directories")
        parser.add_argument("--full", action="store_true", help="re-chunk and re-embed every file")
        parser.add_argument(
            "--prune", action="store_true", help="delete documents under PATHs whose files are gone"
        )
        parser.add_argument(
            "--dry-run", action="store_true", help="report what would change, change nothing"
        )
        parser.add_argument(
            "--reembed",
            action="store_true",
            help="re-embed every stored chunk with the configured embedding model",
        )
        parser.add_argument(
            "--base-url",
            default="",
            metavar="URL",
            help="where the PATHs are published; sources then link to their pages (kept)",
        )

    def handle(self, *args, paths, full, prune, dry_run, reembed, base_url, **options):
        if base_url:
            try:  # before anything is read: a typo must not ingest a tree with broken links
                base_url = base_url_clean(base_url)
            except BaseUrlError as exc:
                raise CommandError(str(exc)) from None
            if not paths:
                raise CommandError("--base-url needs the PATH(s) that are published there.")
        embeddings = get_embeddings()
        if reembed and dry_run:
            raise CommandError("--dry-run cannot be combined with --reembed.")
        if reembed:
            self._reembed(embeddings)
            if not paths:
                return
        if not paths:
            raise CommandError("Give at least one file or directory to ingest (or --reembed).")
        self.stdout.write(f"Embedding model: {embeddings.model_id}")
        progress = IngestProgress(stream=self.stderr._out, verbosity=options["verbosity"])
        try:
            report = ingest_paths(
                paths=paths,
                embeddings=embeddings,
                full=full,
                prune=prune,
                dry_run=dry_run,
                base_url=base_url,
                observer=progress.observer(),
            )
        except EmbeddingMismatchError as exc:
            raise CommandError(str(exc)) from None
        finally:
            progress.close()
        self._summarise(report)
        if report.failed:
            raise CommandError(f"{len(report.failed)} file(s) failed; see above.")

    def _reembed(self, embeddings):
        self.stdout.write(f"Re-embedding every chunk with {embeddings.model_id} ...")
        try:
            count = embedding_index_reembed(embeddings=embeddings)
        except ReembedIncompleteError as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(self.style.SUCCESS(f"Re-embedded {count} chunks."))

    def _summarise(self, report):
        for result in report.results:
            if result.outcome in (Outcome.FAILED, Outcome.SKIPPED) and result.detail:
                style = self.style.ERROR if result.outcome is Outcome.FAILED else self.style.WARNING
                self.stdout.write(
                    style(f"{result.outcome.value:>8}  {result.path}: {result.detail}")
                )
        if report.dry_run:
            for result in report.results:
                if result.url:
                    self.stdout.write(f"{result.outcome.value:>8}  {result.path} -> {result.url}")
        counts = report.counts()
        prefix = "Dry run, would be: " if report.dry_run else ""
        summary = ", ".join(f"{counts[o]} {o.value}" for o in Outcome)
        rate = report.chunks_embedded / report.seconds if report.seconds else 0.0
        self.stdout.write(
            f"{prefix}{summary}. {report.chunks_embedded} chunks embedded in "
            f"{report.seconds:.1f}s ({rate:.1f} chunks/s)."
        )
