"""A file's bytes, gunzipped when its name ends in .gz, refused once over the size limit."""

import gzip
import zlib
from pathlib import Path

from ingestion.loaders.errors import LoadError

_READ_BLOCK = 1 << 16


def read_bytes(path: Path, max_bytes: int) -> bytes:
    """The content of *path* (decompressed for .gz); LoadError if unreadable or over *max_bytes*."""
    try:
        if path.name.lower().endswith(".gz"):
            return _gunzip(path, max_bytes)
        size = path.stat().st_size
        if size > max_bytes:
            raise LoadError(
                f"file is too large: {_size(size)} ({size:,} bytes), "
                f"over the limit of {_size(max_bytes)} ({max_bytes:,} bytes)"
            )
        with path.open("rb") as f:
            data = f.read(max_bytes + 1)  # the file may have grown since stat()
    except OSError as exc:
        raise LoadError(f"cannot read file: {exc.strerror or exc}") from exc
    if len(data) > max_bytes:
        raise LoadError(f"file is too large: over the limit of {_size(max_bytes)}")
    return data


def _gunzip(path: Path, max_bytes: int) -> bytes:
    # Streamed so that a small gzip bomb is refused after reading max_bytes, not after
    # inflating all of it into memory.
    out = bytearray()
    try:
        with gzip.open(path, "rb") as f:
            while block := f.read(_READ_BLOCK):
                out += block
                if len(out) > max_bytes:
                    raise LoadError(
                        f"file is too large: decompresses to more than the limit of "
                        f"{_size(max_bytes)} ({max_bytes:,} bytes)"
                    )
    except (gzip.BadGzipFile, EOFError, zlib.error) as exc:
        raise LoadError(f"corrupt gzip file: {exc}") from exc
    return bytes(out)


def _size(n: int) -> str:
    if n < 1024:
        return f"{n} bytes"
    value = n / 1024
    for unit in ("KiB", "MiB"):
        if value < 1024:
            return f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} GiB"
