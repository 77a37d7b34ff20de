"""Find and verify model files shipped inside registry packages, without importing their code.

The packages come from third parties, so we only read their files: located through
`importlib.metadata`, checked against a pinned size and sha256 before anything loads them.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
from pathlib import Path

from django.core.exceptions import ImproperlyConfigured

_verified: set[Path] = set()


class ModelFileError(ImproperlyConfigured):
    """A packaged model file is missing or is not the file we pinned."""


def installed(distribution: str) -> importlib.metadata.Distribution:
    """The installed distribution called `distribution`, or a clear error saying how to get it."""
    try:
        return importlib.metadata.distribution(distribution)
    except importlib.metadata.PackageNotFoundError:
        raise ModelFileError(
            f"The package {distribution!r} is not installed; run `uv sync` to install it."
        ) from None


def packages_installed(distributions: list[str]) -> tuple[bool, str]:
    """Whether every one of `distributions` is installed, and if not, what to do about it."""
    try:
        for distribution in distributions:
            installed(distribution)
    except ModelFileError as exc:
        return False, str(exc)
    return True, ""


def packaged_file(distribution: str, relative_path: str) -> Path:
    """The installed path of `relative_path` inside the distribution `distribution`."""
    dist = installed(distribution)
    for entry in dist.files or ():
        if str(entry) == relative_path:
            return Path(dist.locate_file(entry))
    raise ModelFileError(f"The package {distribution!r} has no file {relative_path!r}.")


REINSTALL_HINT = "Reinstall the model packages with `uv sync --reinstall`."


def verify_file(path: Path, *, size: int, sha256: str) -> Path:
    """Check `path` against its pinned size and full sha256 (once per process); return it."""
    if path in _verified:
        return path
    actual_size = path.stat().st_size
    if actual_size != size:
        raise ModelFileError(
            f"{path} is {actual_size:,} bytes, expected {size:,}: refusing to load it. "
            f"{REINSTALL_HINT}"
        )
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while block := handle.read(8 << 20):
            digest.update(block)
    if digest.hexdigest() != sha256:
        raise ModelFileError(
            f"{path} has sha256 {digest.hexdigest()}, expected {sha256}: refusing to load it. "
            f"{REINSTALL_HINT}"
        )
    _verified.add(path)
    return path
