"""Plain text: already what the chunker reads, and with no markup to take a title from."""


def convert(text: str) -> tuple[str | None, str]:
    """(None, *text*): plain text has no title of its own and nothing to convert."""
    return None, text
