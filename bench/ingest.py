"""Ingestion throughput: the whole `ingest_docs` pipeline against the raw embedder, same chunks.

Prints chunks/s for the pipeline (load, chunk, embed, write to PostgreSQL with the HNSW index)
next to the raw local embedder on exactly the same chunk texts, measured in the same run, and the
ratio (target >= 0.8). Then times a second run over the unchanged tree as a fraction of the first
(target <= 5%).

    uv run python bench/ingest.py            # ~2.2 MB of Markdown (several minutes on 2 cores)
    uv run python bench/ingest.py --mb 0.3   # a quick look
    uv run python bench/ingest.py --mb 0.3 --pdf gnuplot.pdf   # and a PDF manual, the same way

With --pdf, the same comparison is made for one PDF file (docs/ingestion.md, "PDF and Word").
"""

from __future__ import annotations

import argparse
import io
import json
import shutil
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _django import throwaway_django
from corpus import build_corpus


def main() -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, default=2.2, help="corpus size in MB (default 2.2)")
    parser.add_argument("--json", type=Path, help="also write the figures here (bench/all.py)")
    parser.add_argument("--pdf", type=Path, help="also measure this PDF file against the embedder")
    args = parser.parse_args()

    with throwaway_django(RAG_EMBEDDING_PROVIDER="local") as work:
        from django.conf import settings
        from django.core.management import call_command

        from ingestion.chunking import chunk_document
        from ingestion.loaders import load_document
        from ragapp.models import Chunk
        from ragapp.providers.local_embeddings import LocalOnnxEmbeddings
        from ragapp.retrieval.vector import embedding_text

        corpus = work / "corpus"
        files, size = build_corpus(corpus, min_bytes=int(args.mb * 1_000_000))
        print(f"corpus: {files} Markdown files, {size / 1e6:.2f} MB")

        texts = []
        for path in sorted(corpus.iterdir()):
            loaded = load_document(path, max_bytes=settings.RAG_MAX_FILE_BYTES)
            for chunk in chunk_document(
                loaded.text,
                title=loaded.title,
                chunk_size=settings.RAG_CHUNK_SIZE,
                chunk_overlap=settings.RAG_CHUNK_OVERLAP,
            ):
                texts.append(embedding_text(heading_path=chunk.heading_path, text=chunk.text))

        raw = LocalOnnxEmbeddings(batch_size=settings.RAG_EMBEDDING_BATCH_SIZE)
        raw.embed_documents(texts[:16])  # load the model outside the timing, as the pipeline's is
        started = time.perf_counter()
        raw.embed_documents(texts)
        raw_seconds = time.perf_counter() - started

        from ragapp.providers import get_embeddings

        get_embeddings().embed_documents(texts[:16])  # same warm-up for the pipeline's model
        started = time.perf_counter()
        call_command("ingest_docs", str(corpus), stdout=io.StringIO(), stderr=io.StringIO())
        first_seconds = time.perf_counter() - started
        stored = Chunk.objects.count()

        started = time.perf_counter()
        out = io.StringIO()
        call_command("ingest_docs", str(corpus), stdout=out, stderr=io.StringIO())
        second_seconds = time.perf_counter() - started
        assert "0 chunks embedded" in out.getvalue(), out.getvalue()
        # The same process and database: Django cannot be set up twice in one process.
        pdf_figures = _pdf(args.pdf, work) if args.pdf else None

    raw_rate = len(texts) / raw_seconds
    pipeline_rate = stored / first_seconds
    result = {
        "chunks": stored,
        "raw_embedder_chunks_per_s": round(raw_rate, 2),
        "pipeline_chunks_per_s": round(pipeline_rate, 2),
        "pipeline_over_raw": round(pipeline_rate / raw_rate, 3),
        "first_run_s": round(first_seconds, 2),
        "unchanged_rerun_s": round(second_seconds, 3),
        "rerun_fraction": round(second_seconds / first_seconds, 4),
    }
    assert stored == len(texts), (stored, len(texts))
    print(f"chunks:                      {stored}")
    print(f"raw embedder:                {raw_rate:8.2f} chunks/s  ({raw_seconds:.1f} s)")
    print(f"ingest_docs pipeline:        {pipeline_rate:8.2f} chunks/s  ({first_seconds:.1f} s)")
    print(f"pipeline / raw:              {result['pipeline_over_raw']:8.3f}   (target >= 0.8)")
    print(
        f"unchanged re-run:            {second_seconds:8.3f} s = "
        f"{100 * result['rerun_fraction']:.2f}% of the first run   (target <= 5%)"
    )
    if pdf_figures:
        result["pdf"] = pdf_figures
    if args.json:
        args.json.write_text(json.dumps(result))
    return result


def _pdf(pdf: Path, work: Path) -> dict:
    """The pipeline on one PDF (text extraction included) against the raw embedder."""
    from django.conf import settings
    from django.core.management import call_command

    from ingestion.loaders import load_document
    from ingestion.services import document_chunks
    from ragapp.models import Chunk
    from ragapp.providers import get_embeddings
    from ragapp.providers.local_embeddings import LocalOnnxEmbeddings
    from ragapp.retrieval.vector import embedding_text

    tree = work / "pdf"
    tree.mkdir()
    shutil.copy(pdf, tree / pdf.name)  # a link out of the tree would be skipped, by design
    settings.RAG_MAX_FILE_BYTES = max(settings.RAG_MAX_FILE_BYTES, pdf.stat().st_size)
    started = time.perf_counter()
    loaded = load_document(pdf, max_bytes=settings.RAG_MAX_FILE_BYTES)
    extract_seconds = time.perf_counter() - started
    texts = [
        embedding_text(heading_path=c.heading_path, text=c.text) for c in document_chunks(loaded)
    ]
    raw = LocalOnnxEmbeddings(batch_size=settings.RAG_EMBEDDING_BATCH_SIZE)
    raw.embed_documents(texts[:16])
    started = time.perf_counter()
    raw.embed_documents(texts)
    raw_seconds = time.perf_counter() - started
    get_embeddings().embed_documents(texts[:16])
    started = time.perf_counter()
    call_command("ingest_docs", str(tree), stdout=io.StringIO(), stderr=io.StringIO())
    seconds = time.perf_counter() - started
    stored = Chunk.objects.filter(document__format="pdf").count()
    figures = {
        "pages": len(loaded.pages),
        "chunks": stored,
        "text_extraction_s": round(extract_seconds, 2),
        "raw_embedder_chunks_per_s": round(len(texts) / raw_seconds, 2),
        "pipeline_chunks_per_s": round(stored / seconds, 2),
        "pipeline_over_raw": round((stored / seconds) / (len(texts) / raw_seconds), 3),
        "pipeline_pages_per_s": round(len(loaded.pages) / seconds, 2),
    }
    print(f"PDF {pdf.name}: {figures['pages']} pages, {stored} chunks")
    print(f"  text extraction:           {extract_seconds:8.2f} s")
    print(f"  raw embedder:              {figures['raw_embedder_chunks_per_s']:8.2f} chunks/s")
    print(f"  ingest_docs pipeline:      {figures['pipeline_chunks_per_s']:8.2f} chunks/s")
    print(f"  pipeline / raw:            {figures['pipeline_over_raw']:8.3f}   (target >= 0.8)")
    return figures


if __name__ == "__main__":
    main()
