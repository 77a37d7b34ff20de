"""`manage.py export_golden`: golden-set lines from the gaps and the answers rated helpful."""

import datetime as dt

from django.core.management.base import BaseCommand, CommandError

from ragapp.gaps import gap_runs
from ragapp.gaps_export import golden_jsonl, golden_lines
from ragapp.providers import get_embeddings
from ragapp.services.gaps import question_vectors_ensure


def _date(value: str) -> dt.date:
    try:
        return dt.date.fromisoformat(value)
    except ValueError:
        raise CommandError(f"Not a date (YYYY-MM-DD): {value!r}") from None


class Command(BaseCommand):
    help = (
        "Write golden-set lines (docs/evaluation.md): gap questions as unanswerable lines, runs "
        "rated helpful as answerable ones whose facts are left to fill in. Both without flags."
    )

    def add_arguments(self, parser):
        parser.add_argument("--gaps", action="store_true", help="the questions not answered")
        parser.add_argument("--helpful", action="store_true", help="the answers rated helpful")
        parser.add_argument("--since", type=_date, help="asked on or after (YYYY-MM-DD)")
        parser.add_argument("--until", type=_date, help="asked on or before (YYYY-MM-DD)")
        parser.add_argument("--output", "-o", help="write to this file instead of stdout")

    def handle(self, *args, gaps, helpful, since, until, output, **options):
        if since and until and since > until:
            raise CommandError("--since is after --until.")
        if not gaps and not helpful:
            gaps = helpful = True
        embeddings = get_embeddings()
        if gaps:
            rows = gap_runs(since=since, until=until)
            question_vectors_ensure(questions=[r["query"] for r in rows], embeddings=embeddings)
        text = golden_jsonl(
            golden_lines(
                model_id=embeddings.model_id, gaps=gaps, helpful=helpful, since=since, until=until
            )
        )
        if output:
            with open(output, "w", encoding="utf-8") as f:
                f.write(text)
            self.stderr.write(f"Wrote {text.count(chr(10))} line(s) to {output}")
        else:
            self.stdout.write(text, ending="")
