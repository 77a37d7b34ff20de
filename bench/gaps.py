"""The gaps page at 10,000 runs: how long grouping and the whole page take, warm and cold.

Makes RUNS gap runs (refused, failed, or rated unhelpful) over TOPICS questions asked in several
wordings, with the packaged embedding model, then times:

- cold: embedding every distinct question once (what the first page view after a flood of new
  questions pays; later views embed only new wordings);
- warm: `gaps_find` alone, and the whole staff page over HTTP (Django's test client), each the
  median of 5 (target < 1 s).

    uv run python bench/gaps.py               # 10,000 runs
    uv run python bench/gaps.py --runs 2000   # a quick look
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _django import throwaway_django

SUBJECTS = [
    "SAML single sign-on",
    "a Helm chart",
    "the Slack integration",
    "the enterprise price",
    "LDAP groups",
    "a Windows installer",
    "the audit log export",
    "two-factor sign-in",
    "a dark theme",
    "the Terraform provider",
    "webhooks",
    "an offline mode",
    "SCIM provisioning",
    "the mobile app",
    "a read-only replica",
    "custom roles",
    "GDPR data deletion",
    "IPv6",
    "the Jira plugin",
    "a backup schedule",
    "S3 storage",
    "rate limits per team",
    "SOC 2 reports",
    "the GraphQL API",
    "Azure AD",
    "a status page",
    "data residency in the EU",
    "PDF export",
]
WORDINGS = [
    "How do I set up {s}?",
    "Is there {s}?",
    "Does it support {s}?",
    "{s} configuration",
    "Where is the documentation for {s}?",
    "Can I use {s} with it?",
    "how to enable {s}",
]


def main() -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10_000)
    parser.add_argument("--topics", type=int, default=400, help="distinct subjects asked about")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args()

    with throwaway_django(RAG_EMBEDDING_PROVIDER="local"):
        from django.contrib.auth import get_user_model
        from django.test import Client
        from django.urls import reverse
        from django.utils import timezone

        from ragapp.gaps import gap_runs, gaps_find
        from ragapp.models import QueryRun, Thread
        from ragapp.providers import get_embeddings
        from ragapp.services.gaps import question_vectors_ensure

        rng = random.Random(16)
        subjects = [f"{rng.choice(SUBJECTS)} on plan {n}" for n in range(args.topics)]
        start = timezone.now() - dt.timedelta(days=90)
        passage = {"title": "Deployment", "source_path": "deploy.md", "url": ""}
        queries = [rng.choice(WORDINGS).format(s=rng.choice(subjects)) for _ in range(args.runs)]
        threads = Thread.objects.bulk_create(
            [Thread(title=query[:200]) for query in queries], batch_size=2000
        )
        QueryRun.objects.bulk_create(
            [
                QueryRun(
                    query=queries[n],
                    thread=threads[n],
                    status=rng.choice(["refused", "refused", "failed"]),
                    response_metadata={
                        "refusal_reason": rng.choice(["no_relevant_documents", "unfaithful"]),
                        "passages": [passage],
                    },
                    created_at=start + dt.timedelta(minutes=13 * n),
                )
                for n in range(args.runs)
            ],
            batch_size=2000,
        )
        embeddings = get_embeddings()
        questions = [row["query"] for row in gap_runs()]
        started = time.perf_counter()
        embedded = question_vectors_ensure(questions=questions, embeddings=embeddings)
        cold = time.perf_counter() - started

        def timed(fn) -> float:
            times = []
            for _ in range(5):
                started = time.perf_counter()
                fn()
                times.append(time.perf_counter() - started)
            return statistics.median(times)

        gaps = gaps_find(model_id=embeddings.model_id)
        # The baseline, in the same run: one plain read of what the page is built from, the
        # refused and failed runs' ids and questions. The ratio is what grouping costs on top.
        gap_rows = QueryRun.objects.filter(status__in=["refused", "failed"])
        base_s = timed(lambda: list(gap_rows.values_list("id", "query")))
        find_s = timed(lambda: gaps_find(model_id=embeddings.model_id))
        staff = get_user_model().objects.create(username="staff", is_staff=True)
        client = Client(HTTP_HOST="localhost")
        client.force_login(staff)
        assert client.get(reverse("gaps")).status_code == 200
        page_s = timed(lambda: client.get(reverse("gaps")))

    result = {
        "runs": args.runs,
        "distinct_questions_embedded": embedded,
        "groups": len(gaps),
        "cold_embedding_s": round(cold, 2),
        "baseline_read_s": round(base_s, 3),
        "gaps_find_s": round(find_s, 3),
        "page_s": round(page_s, 3),
        "page_ratio_to_baseline": round(page_s / base_s, 1),
    }
    print(f"{args.runs} gap runs, {embedded} distinct questions, {len(gaps)} groups")
    print(f"cold: embedding the questions once   {cold:8.2f} s")
    print(f"baseline: reading the runs' questions {base_s:7.3f} s")
    print(f"warm: gaps_find (median of 5)        {find_s:8.3f} s")
    print(
        f"warm: the whole page (median of 5)   {page_s:8.3f} s   (target < 1 s; "
        f"{page_s / base_s:.1f}x the baseline)"
    )
    if args.json:
        args.json.write_text(json.dumps(result))
    return result


if __name__ == "__main__":
    main()
