"""What gets embedded for a chunk."""

from __future__ import annotations


def embedding_text(*, heading_path: str, text: str) -> str:
    """The embedder's input for a chunk: its heading path, then its text.

    The heading path carries the document title and section names, which are often the words a
    question uses while the chunk body only implies them.
    """
    return f"{heading_path}\n\n{text}" if heading_path else text
