"""A chunk stored straight into the knowledge base, for graph tests that need one text exactly."""

from ragapp.models import Chunk, Document


def add_chunk(path: str, text: str, fake_embeddings, *, title: str = "Gamma") -> Chunk:
    """A one-chunk document stored as is: not through ingestion (no chunking, no cleaning)."""
    document = Document.objects.create(
        source_path=path, title=title, format="markdown", content_hash=path, size_bytes=1
    )
    return Chunk.objects.create(
        document=document,
        ordinal=0,
        text=text,
        heading_path=title,
        embedding=fake_embeddings.embed_query(f"{title}\n\n{text}"),
    )
