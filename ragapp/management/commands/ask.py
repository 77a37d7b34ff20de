"""`manage.py ask "question"`: run one question and watch the trace as it happens."""

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from ragapp.runs.runner import execute_run
from ragapp.services import run_create
from ragapp.trace.text import describe


class Command(BaseCommand):
    help = (
        "Ask the assistant one question: prints the reasoning trace live, then the answer, its "
        "verdict and sources. The run is stored like any other."
    )

    def add_arguments(self, parser):
        parser.add_argument("question")

    def handle(self, *args, question, **options):
        try:
            run = run_create(query=question)
        except ValidationError as exc:
            raise CommandError(" ".join(exc.messages)) from None

        def show(event):
            self.stdout.write(f"[{event.seq:>2}] {describe(event.kind, event.payload)}")
            self.stdout.flush()

        execute_run(run, subscribers=[show])
        run.refresh_from_db()
        self.stdout.write("")
        if run.status == run.Status.FAILED:
            raise CommandError(f"The run failed: {run.error}")
        self.stdout.write(run.answer)
        self.stdout.write("")
        meta = run.response_metadata
        if run.faithfulness_score is not None:
            refined = ", refined" if meta.get("refined") else ""
            self.stdout.write(
                f"Verdict: {run.status}, faithfulness {run.faithfulness_score:.2f}, "
                f"risk {run.hallucination_risk}{refined}"
            )
        else:
            self.stdout.write(f"Verdict: {run.status} ({meta.get('refusal_reason', '')})")
        for source in meta.get("sources", []):
            self.stdout.write(
                f"  [{source['n']}] {_where(source)} > {source['heading_path']} "
                f"(similarity {source['similarity']:.2f})"
            )
        if passages := meta.get("passages"):
            self.stdout.write("Closest passages (what the search found, not an answer):")
            for passage in passages:
                self.stdout.write(
                    f"  - {_where(passage)} > {passage['heading_path']} "
                    f"(relevance {passage['relevance']:.2f})\n    {passage['excerpt']}"
                )
        tokens = sum(t["input"] + t["output"] for t in meta.get("tokens", {}).values())
        self.stdout.write(f"{meta.get('total_ms', 0) / 1000:.1f} s, {tokens} tokens, run {run.pk}")


def _where(source: dict) -> str:
    """The published page when the source has one, else its path relative to its ingest root."""
    return source.get("url") or source["source_path"]
