"""`manage.py eval_rag GOLDEN.jsonl`: measure retrieval, answers and refusals on a golden set."""

from __future__ import annotations

import json
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from django.utils import timezone
from tqdm import tqdm

from ragapp.evaluation.golden import GoldenFileError, load_golden, sample_items
from ragapp.evaluation.harness import evaluate, settings_snapshot
from ragapp.evaluation.html import render_html
from ragapp.evaluation.machine import describe_machine, machine_line
from ragapp.evaluation.report import aggregate, compare, fmt, headline
from ragapp.evaluation.resume import ResumeError, Resumption, resume_plan
from ragapp.models import Chunk, Evaluation
from ragapp.selectors import EmbeddingMismatchError, knowledge_base_version, pending_migrations
from ragapp.services import evaluation_create, evaluation_finish, runs_fail_lost

DEFAULT_K = 5


class Command(BaseCommand):
    help = (
        "Evaluate the assistant on a golden set (JSONL): retrieval recall@k and MRR@10, fact "
        "accuracy, refusals, faithfulness, latency and tokens. Writes report.json and "
        "report.html; --compare shows the change against an earlier report.json."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "golden",
            type=Path,
            nargs="?",
            help="The golden set, one JSON object per line (not with --resume).",
        )
        parser.add_argument(
            "--retrieval-only",
            action="store_true",
            help="Only measure retrieval (no chat model; seconds).",
        )
        parser.add_argument("--k", type=int, help=f"k of recall@k (default {DEFAULT_K}).")
        parser.add_argument("--limit", type=int, help="Only the first N questions.")
        parser.add_argument(
            "--sample",
            type=int,
            help="Only N questions: every unanswerable one, then answerable ones spread evenly.",
        )
        parser.add_argument("--name", help="A name for this evaluation (default: the file name).")
        parser.add_argument(
            "--output",
            type=Path,
            help="Folder for report.json and report.html "
            "(default: RAG_DATA_DIR/evaluations/<name>-<time>).",
        )
        parser.add_argument(
            "--compare", type=Path, metavar="REPORT.json", help="Show deltas against this report."
        )
        parser.add_argument(
            "--min-recall",
            type=float,
            help="Exit with status 1 when recall@k is below this (for CI).",
        )
        parser.add_argument(
            "--resume",
            metavar="ID",
            help="Finish the evaluation ID (or 'last', the newest unfinished one) that stopped: "
            "read back its finished runs and ask only the questions without one, with the same "
            "settings and knowledge base.",
        )

    def handle(self, *args, golden, retrieval_only, k, limit, sample, name, output, **options):
        if any(n is not None and n < 1 for n in (k, limit, sample)):
            raise CommandError("--k, --limit and --sample must be at least 1.")
        baseline = self._baseline(options["compare"])
        resume = options["resume"]
        if resume and (golden or retrieval_only or k or limit or sample or name):
            raise CommandError(
                "--resume takes the golden set, the mode, --k, --limit, --sample and --name from "
                "the evaluation it finishes: give none of them."
            )
        if not resume and golden is None:
            raise CommandError("Name a golden set (JSONL), or --resume an evaluation.")
        items = None if resume else self._items(golden, limit, sample)
        if pending := pending_migrations():
            raise CommandError(
                f"The database is missing {len(pending)} migration(s) ({', '.join(pending)}): "
                "run `uv run python manage.py migrate` first."
            )
        if not Chunk.objects.exists():
            raise CommandError(
                "The knowledge base is empty: ingest the corpus of this golden set first "
                "(`uv run python manage.py ingest_docs PATH`)."
            )
        plan = self._resumed(resume) if resume else None
        name = plan.evaluation.name if plan else name or golden.stem
        # Made before the first question, and before a new evaluation is recorded: a folder that
        # cannot be written must not cost an hour of answers, nor leave an evaluation behind.
        folder = output or (
            Path(settings.RAG_DATA_DIR)
            / "evaluations"
            / f"{name}-{timezone.now().strftime('%Y%m%d-%H%M%S')}"
        )
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise CommandError(f"Cannot write the report to {folder}: {exc}") from None
        if plan is None:
            plan = self._started(golden, items, k or DEFAULT_K, name, retrieval_only)
        evaluation, items, k = plan.evaluation, plan.items, plan.k
        full = evaluation.mode == Evaluation.Mode.FULL
        self.stdout.write(
            self._opening(evaluation, len(items), len(plan.settled) if resume else None)
        )
        results = self._measure(plan, options["verbosity"])
        meta = {
            "name": name,
            "golden": evaluation.golden_path,
            "evaluation_id": str(evaluation.pk),
            "created_at": timezone.now().isoformat(),
            "settings": settings_snapshot(),
            "machine": describe_machine(),  # latencies mean little without it
        }
        if resume:  # the runs read back ran in an earlier sitting, perhaps on another machine
            meta["resumed"] = {
                "questions": len(plan.settled),
                "machine_then": evaluation.selection.get("machine"),
            }
        report = aggregate(results, k=k, full=full, meta=meta)
        (folder / "report.json").write_text(json.dumps(report, indent=1, default=str))
        (folder / "report.html").write_text(render_html(report))
        evaluation_finish(evaluation=evaluation, questions=len(results), report=report)
        self._print(report, baseline)
        self.stdout.write(f"\nReport: {folder / 'report.json'}\n        {folder / 'report.html'}")
        self._check_floor(report, k, options["min_recall"])

    def _started(self, golden: Path, items: list, k: int, name: str, retrieval_only) -> Resumption:
        """A new evaluation, recording what --resume needs to finish it."""
        evaluation = evaluation_create(
            name=name,
            golden_path=str(golden.resolve()),  # resumable from another directory
            mode="retrieval" if retrieval_only else "full",
            settings=settings_snapshot(),
            selection={
                "k": k,
                "ids": [item.id for item in items],
                "machine": describe_machine(),
            },
        )
        return Resumption(evaluation=evaluation, items=items, settled={}, k=k)

    def _resumed(self, ref: str) -> Resumption:
        # A run whose process died stays `running` until some process sweeps it; this one may.
        runs_fail_lost()
        try:
            return resume_plan(
                ref, settings_now=settings_snapshot(), kb_version=knowledge_base_version()
            )
        except ResumeError as exc:
            raise CommandError(str(exc)) from None

    def _measure(self, plan: Resumption, verbosity: int) -> list:
        """Every question of `plan`, with a progress bar on a terminal."""
        evaluation, items, k = plan.evaluation, plan.items, plan.k
        bar = tqdm(
            total=len(items),
            desc=evaluation.name,
            unit="q",
            file=self.stderr._out,
            disable=not self.stderr.isatty() or verbosity == 0,
            dynamic_ncols=True,
        )
        recalled, measured = [], []

        def progress(result):
            measured.append(result.id)  # a disabled bar counts nothing
            if result.answerable:
                recalled.append(result.recall_at_k)
            bar.update(1)
            postfix = {f"recall@{k}": f"{sum(recalled) / max(len(recalled), 1):.2f}"}
            if result.status:
                postfix["last"] = result.status
            bar.set_postfix(postfix)

        try:
            return evaluate(
                items,
                evaluation=evaluation,
                k=k,
                full=evaluation.mode == Evaluation.Mode.FULL,
                on_result=progress,
                settled=plan.settled,
            )
        except EmbeddingMismatchError as exc:
            raise CommandError(str(exc)) from None
        except KeyboardInterrupt:
            raise CommandError(
                f"Stopped after {len(measured)} of {len(items)} questions. "
                f"Finish it with `uv run python manage.py eval_rag --resume {evaluation.pk}`."
            ) from None
        finally:
            bar.close()

    def _items(self, golden: Path, limit: int | None, sample: int | None) -> list:
        try:
            items = load_golden(golden)
        except GoldenFileError as exc:
            raise CommandError(str(exc)) from None
        items = items[:limit] if limit else items
        return sample_items(items, sample) if sample else items

    def _opening(self, evaluation: Evaluation, questions: int, settled: int | None) -> str:
        """The first line: the evaluation's id, which --resume needs if this process stops."""
        if settled is not None:
            return (
                f"Resuming evaluation {evaluation.pk} ({evaluation.name}): {settled} of "
                f"{questions} questions read back from their runs, {questions - settled} to ask."
            )
        return (
            f"Evaluation {evaluation.pk} ({evaluation.name}): {questions} questions. If it "
            f"stops, `eval_rag --resume {evaluation.pk}` finishes it."
        )

    def _baseline(self, path: Path | None) -> dict | None:
        if path is None:
            return None
        try:
            return json.loads(path.read_text())
        except (OSError, ValueError) as exc:
            raise CommandError(f"Cannot read the report to compare with, {path}: {exc}") from None

    def _print(self, report: dict, baseline: dict | None) -> None:
        self.stdout.write(
            f"{report['questions']} questions ({report['answerable']} answerable), "
            f"{report['mode']} evaluation"
        )
        if machine := report.get("machine"):
            self.stdout.write(f"  {machine_line(machine)}")
        if baseline is None:
            for label, value in headline(report):
                self.stdout.write(f"  {label:<22} {fmt(value):>10}")
        else:
            if baseline.get("k") != report["k"]:
                self.stdout.write(
                    f"  note: the earlier report used k={baseline.get('k')}, this one k="
                    f"{report['k']}; recall@k is not comparable"
                )
            self.stdout.write(f"  {'metric':<22} {'before':>10} {'now':>10} {'change':>10}")
            for row in compare(report, baseline):
                mark = {True: "  better", False: "  worse", None: ""}[row["better"]]
                delta = "-" if row["delta"] is None else f"{row['delta']:+.3f}"
                self.stdout.write(
                    f"  {row['metric']:<22} {fmt(row['old']):>10} {fmt(row['new']):>10} "
                    f"{delta:>10}{mark}"
                )
        misses = report["retrieval"]["misses"]
        if misses:
            self.stdout.write(f"  not retrieved at k={report['k']}: {', '.join(misses)}")

    def _check_floor(self, report: dict, k: int, floor: float | None) -> None:
        recall = report["retrieval"][f"recall_at_{k}"]
        if floor is not None and (recall is None or recall < floor):
            raise CommandError(f"recall@{k} is {fmt(recall)}, below the floor of {floor}.")
