"""A terminal progress bar for ingestion: files done, chunks embedded, chunks per second."""

from __future__ import annotations

import time

from tqdm import tqdm

from ingestion.report import FileResult
from ingestion.services import IngestObserver


class IngestProgress:
    """Drives a tqdm bar from ingestion callbacks; silent when the stream is not a terminal."""

    def __init__(self, *, stream, verbosity: int = 1):
        enabled = verbosity > 0 and hasattr(stream, "isatty") and stream.isatty()
        self._bar = tqdm(
            desc="files", unit="file", file=stream, disable=not enabled, dynamic_ncols=True
        )
        self._chunks = 0
        self._started = time.perf_counter()

    def observer(self) -> IngestObserver:
        """Callbacks to hand to `ingest_paths`."""
        return IngestObserver(on_file=self._on_file, on_embedded=self._on_embedded)

    def _on_file(self, result: FileResult) -> None:
        self._bar.update(1)
        self._refresh()

    def _on_embedded(self, count: int) -> None:
        self._chunks += count
        self._refresh()

    def _refresh(self) -> None:
        elapsed = max(time.perf_counter() - self._started, 1e-9)
        self._bar.set_postfix(chunks=self._chunks, chunks_per_s=f"{self._chunks / elapsed:.1f}")

    def close(self) -> None:
        """Finish the bar."""
        self._bar.close()
