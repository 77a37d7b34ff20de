"""The errors load_document raises, shared by every step that can refuse a file."""


class LoadError(Exception):
    """A file that cannot be loaded; str() is a human-readable reason."""


class EmptyDocumentError(LoadError):
    """A readable file with no text in it: nothing to ingest, but nothing wrong either."""
