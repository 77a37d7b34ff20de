"""Walk the paths given to `ingest_docs` and sort what is found into files, skips and failures."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from ingestion.loaders import detect_format


@dataclass(frozen=True)
class Found:
    """A path met during discovery: a loadable file (`format` set) or a reason it is not."""

    path: Path
    format: str | None = None
    skip_reason: str = ""  # not a failure: unsupported type, symlink loop, link out of the tree
    error: str = ""  # a failure: path does not exist, cannot be read


def discover(roots: list[Path]) -> Iterator[Found]:
    """Yield every file under `roots` once, following symlinks but never around a loop.

    A symlink met inside a directory root is followed only when its target resolves inside that
    root: a link such as `notes.txt -> /app/.data/secret_key` would otherwise publish the file
    it points to. A root itself is followed wherever it points, because the owner named it.
    """
    seen_files: set[Path] = set()
    for root in roots:
        if not os.path.lexists(root):
            yield Found(root, error="path does not exist")
        elif root.is_dir():
            yield from _walk(root, seen_files)
        else:
            found = _classify(root, seen_files)
            if found is not None:
                yield found


def _walk(root: Path, seen_files: set[Path]) -> Iterator[Found]:
    boundary = root.resolve()
    visited_dirs: set[tuple[int, int]] = set()
    errors: list[OSError] = []
    for dirpath, dirnames, filenames in os.walk(root, followlinks=True, onerror=errors.append):
        here = Path(dirpath)
        key = _inode(here)
        if key in visited_dirs:
            dirnames.clear()
            yield Found(here, skip_reason="symlink loop: this directory was already visited")
            continue
        visited_dirs.add(key)
        kept_dirs = []
        for name in sorted(d for d in dirnames if not d.startswith(".")):
            escape = _escaping_link(here / name, boundary)
            if escape is None:
                kept_dirs.append(name)
            else:
                yield escape  # and os.walk never descends into it
        dirnames[:] = kept_dirs
        for name in sorted(filenames):
            if name.startswith("."):
                continue
            found = _escaping_link(here / name, boundary) or _classify(here / name, seen_files)
            if found is not None:
                yield found
        while errors:
            error = errors.pop()
            yield Found(Path(error.filename or dirpath), error=f"cannot list: {error.strerror}")


def _escaping_link(path: Path, boundary: Path) -> Found | None:
    """A skip for `path` when it is a symlink whose target resolves outside `boundary`.

    Only links are checked: the walk never enters a directory link that leaves the tree, so
    a plain entry below an accepted directory is inside the tree too.
    """
    if not path.is_symlink():
        return None
    try:
        target = path.resolve()
    except (OSError, RuntimeError):  # a cycle or an unreadable link: `_classify` reports it
        return None
    if target.is_relative_to(boundary):
        return None
    return Found(
        path, skip_reason=f"symlink to {target}, outside the ingested directory {boundary}"
    )


def _classify(path: Path, seen_files: set[Path]) -> Found | None:
    fmt = detect_format(path)
    if fmt is None:
        return Found(path, skip_reason="unsupported file type")
    try:
        resolved = path.resolve(strict=True)
        mode = resolved.stat().st_mode
    except FileNotFoundError:
        return Found(path, error="broken symlink")
    except RuntimeError:  # resolve() on a symlink cycle
        return Found(path, error="symlink loop")
    except OSError as exc:
        return Found(path, error=f"cannot read: {exc.strerror}")
    if not stat.S_ISREG(mode):
        return Found(path, skip_reason="not a regular file")
    if resolved in seen_files:
        return None  # the same file reached twice (two roots, or a symlink): ingest it once
    seen_files.add(resolved)
    return Found(path, format=fmt)


def _inode(path: Path) -> tuple[int, int]:
    info = path.stat()
    return info.st_dev, info.st_ino
