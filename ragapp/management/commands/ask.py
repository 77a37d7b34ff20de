"""`manage.py ask "question"`: run one question and watch the trace as it happens.

`--thread ID` or `--continue` asks it as a follow-up in an earlier thread of ask's.
"""

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from ragapp.models import Thread
from ragapp.runs.reuse import run_reuse
from ragapp.runs.runner import execute_run
from ragapp.selectors import thread_latest_asked
from ragapp.services import run_create
from ragapp.trace.text import describe


class Command(BaseCommand):
    help = (
        "Ask the assistant one question: prints the reasoning trace live, then the answer, its "
        "verdict and sources. The run is stored like any other. With --thread or --continue it "
        "is a follow-up, read with the thread's earlier questions and answers."
    )

    def add_arguments(self, parser):
        parser.add_argument("question")
        follow = parser.add_mutually_exclusive_group()
        follow.add_argument(
            "--thread", type=int, metavar="ID", help="Continue this thread (an id ask printed)."
        )
        follow.add_argument(
            "--continue",
            action="store_true",
            dest="continue_last",
            help="Continue the last thread asked in from the command line.",
        )
        parser.add_argument(
            "--fresh",
            action="store_true",
            help="Run the graph even if an earlier verified answer could be reused (RAG_REUSE).",
        )

    def handle(self, *args, question, thread, continue_last, fresh, **options):
        followed = self._thread(thread, continue_last)

        def show(event):
            self.stdout.write(f"[{event.seq:>2}] {describe(event.kind, event.payload)}")
            self.stdout.flush()

        try:
            # A repeated question may get its earlier verified answer at once (runs/reuse.py).
            run = None if fresh else run_reuse(query=question, thread=followed, subscribers=[show])
            if run is None:
                run = run_create(query=question, thread=followed)
        except ValidationError as exc:
            raise CommandError(" ".join(exc.messages)) from None
        if run.reused_from_id is None:
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
                # A chunk the judge was not asked about (the retrieval gate, a name no page
                # holds) has no relevance score.
                score = passage.get("relevance")
                relevance = "not judged" if score is None else f"relevance {score:.2f}"
                self.stdout.write(
                    f"  - {_where(passage)} > {passage['heading_path']} ({relevance})\n"
                    f"    {passage['excerpt']}"
                )
        tokens = sum(t["input"] + t["output"] for t in meta.get("tokens", {}).values())
        self.stdout.write(
            f"{meta.get('total_ms', 0) / 1000:.1f} s, {tokens} tokens, run {run.pk}, "
            f"thread {run.thread_id} (ask --continue to follow up)"
        )

    def _thread(self, thread_id: int | None, continue_last: bool) -> Thread | None:
        """The thread to continue, or None for a new one.

        ask's runs have no owner, so it continues only ownerless threads: the ones ask itself
        started. A thread someone asked in the portal or the API stays theirs.
        """
        if continue_last:
            thread = thread_latest_asked(user=None)
            if thread is None:
                raise CommandError("There is no thread to continue yet: ask without --continue.")
            return thread
        if thread_id is None:
            return None
        thread = Thread.objects.filter(pk=thread_id).first()
        if thread is None:
            raise CommandError(f"There is no thread {thread_id}.")
        if thread.owner_id is not None:
            raise CommandError(
                f"Thread {thread_id} belongs to a user of the portal or the API; ask continues "
                "only the threads it started."
            )
        return thread


def _where(source: dict) -> str:
    """The published page when the source has one, else its path relative to its ingest root."""
    return source.get("url") or source["source_path"]
