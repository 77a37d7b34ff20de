"""What one `ingest_docs` run did, file by file."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from enum import StrEnum


class Outcome(StrEnum):
    NEW = "new"
    UPDATED = "updated"
    UNCHANGED = "unchanged"
    SKIPPED = "skipped"
    FAILED = "failed"
    PRUNED = "pruned"


@dataclass(frozen=True)
class FileResult:
    """The outcome for one path, with the reason when it was skipped or failed."""

    path: str
    outcome: Outcome
    chunks: int = 0
    detail: str = ""
    url: str = ""  # where the document is published, when it is


@dataclass
class IngestReport:
    """All file results of a run, plus totals."""

    dry_run: bool = False
    results: list[FileResult] = field(default_factory=list)
    chunks_embedded: int = 0
    seconds: float = 0.0

    def counts(self) -> dict[Outcome, int]:
        """How many files ended in each outcome (every outcome present, zeros included)."""
        counter = Counter(result.outcome for result in self.results)
        return {outcome: counter.get(outcome, 0) for outcome in Outcome}

    @property
    def failed(self) -> list[FileResult]:
        """The results that failed."""
        return [r for r in self.results if r.outcome is Outcome.FAILED]
