"""Where ingested files are published: ingest roots, their base URLs, and each page's link.

`ingest_docs PATH --base-url URL` records URL for the root PATH; later runs on PATH, or on a
path under it, keep using it. A file's page is the base URL plus its path relative to the root,
with suffixes mapped (`RAG_URL_SUFFIX_MAP`, `.md`/`.rst` to `.html` by default); a chunk adds the
anchor of its section heading (`RAG_URL_ANCHOR_STYLE`) or, in a PDF, `#page=N`.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from urllib.parse import quote, urljoin, urlsplit

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import URLValidator

from ingestion.loaders.detection import without_gz
from ragapp.models import IngestRoot

ANCHOR_STYLES = ("github", "mkdocs", "sphinx", "none")


class BaseUrlError(ValueError):
    """A --base-url that cannot be a published site's address; str() says why."""


def base_url_clean(url: str) -> str:
    """`url` as a base for relative links (ending in "/"), or BaseUrlError with the reason."""
    url = url.strip()
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https"):
        raise BaseUrlError(f"--base-url must start with http:// or https://, not {url!r}")
    try:
        URLValidator(schemes=["http", "https"])(url)
    except ValidationError:
        raise BaseUrlError(f"--base-url {url!r} is not a valid URL") from None
    if parts.query or parts.fragment:
        raise BaseUrlError(f"--base-url {url!r} must not have a query (?) or a fragment (#)")
    return url if url.endswith("/") else url + "/"


def page_url(base_url: str, relative_path: str) -> str:
    """The published page of a file at `relative_path` under a root published at `base_url`."""
    path = without_gz(relative_path)
    suffix = PurePosixPath(path).suffix
    mapped = settings.RAG_URL_SUFFIX_MAP.get(suffix.lower())
    if suffix and mapped is not None:  # "" drops the suffix, "/" makes a directory-style URL
        path = path[: -len(suffix)] + mapped
    return urljoin(base_url, quote(path))


def own_url(declared: str, page: str) -> str:
    """A page's own `url:` or canonical link, resolved against `page`; "" unless http(s).

    The link is followed by every reader of an answer, so a `javascript:` or `data:` address
    written into a page must never become one.
    """
    url = urljoin(page, declared.strip()) if page else declared.strip()
    parts = urlsplit(url)
    return url if parts.scheme in ("http", "https") and parts.netloc else ""


def heading_anchor(heading: str, style: str | None = None) -> str:
    """The id a site generator gives `heading`, in `style` (default RAG_URL_ANCHOR_STYLE)."""
    style = style or settings.RAG_URL_ANCHOR_STYLE
    if style == "github":  # GitHub, GitLab, markdown-it-anchor: Unicode letters are kept
        text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
        return text.replace(" ", "-")
    if style == "asciidoctor":  # Asciidoctor and Antora: idprefix and idseparator both "_"
        text = re.sub(r"<[^>]+>|&#?\w+;|[^\w\-. ]+", "", heading.strip().lower())
        return "_" + re.sub(r"[ .-]+", "_", text).strip("_")
    ascii_text = unicodedata.normalize("NFKD", heading).encode("ascii", "ignore").decode()
    if style == "mkdocs":  # Python-Markdown's toc extension, MkDocs' default
        text = re.sub(r"[^\w\s-]", "", ascii_text).strip().lower()
        return re.sub(r"[-\s]+", "-", text)
    if style == "sphinx":  # docutils' make_id, which Sphinx uses for section ids
        text = "-".join(re.split(r"[^a-z0-9]+", ascii_text.lower()))
        return re.sub(r"^[-0-9]+|-+$", "", text)
    return ""


@dataclass(frozen=True)
class Root:
    """An ingest root as this run uses it: its key, its base URL, and its row once saved."""

    key: str
    base_url: str
    row: IngestRoot | None = None

    def relative(self, source_path: str) -> str:
        """`source_path` relative to this root (a file given alone keeps its name)."""
        prefix = self.key.rstrip("/") + "/"
        return source_path[len(prefix) :] if source_path.startswith(prefix) else source_path


def roots_for(paths: list[Path], *, base_url: str, key_for, save: bool) -> list[tuple[Path, Root]]:
    """The ingest root of each path given to ingest_docs, recording `base_url` when given.

    A path under a root already recorded belongs to it and keeps its base URL, so
    `ingest_docs docs/api` after `ingest_docs docs --base-url ...` still links. A file given
    alone is rooted at its folder. With `save` false (a dry run) nothing is written.
    """
    known = {row.path: row for row in IngestRoot.objects.all()}
    out = []
    for path in paths:
        key = key_for(path if path.is_dir() or not path.exists() else path.parent)
        row = known.get(key) or _enclosing(known, key)
        if base_url and (row is None or row.path != key or row.base_url != base_url):
            if row is not None and row.path == key:
                row.base_url = base_url
            else:
                row = IngestRoot(path=key, base_url=base_url)
            if save:
                row.save()
                known[key] = row
        elif row is None:
            row = IngestRoot(path=key)
            if save:
                row.save()
                known[key] = row
        out.append((path, Root(key=row.path, base_url=row.base_url, row=row if save else None)))
    return out


def _enclosing(known: dict[str, IngestRoot], key: str) -> IngestRoot | None:
    parents = [path for path in known if key.startswith(path.rstrip("/") + "/")]
    return known[max(parents, key=len)] if parents else None
