#!/usr/bin/env bash
# Build the Python 3.11 library reference corpus (a subset of its modules) for the evaluation
# harness: a second API reference, beside Node.js's, to tune on. Node.js is held out, so the
# checks an API reference needs (signatures, keyword arguments, dotted names) are tuned here.
#
# Downloads Debian's python3.11-doc package (no install, no root needed), extracts it, and copies
# the HTML pages of 51 standard library modules (usr/share/doc/python3.11/html/library/), chosen
# as the modules support questions name most: files and paths, processes, text, data formats,
# dates, concurrency, logging, testing. The rest of the library, the tutorial, the language
# reference and the assets are left out.
#
# Usage: bench/corpora/fetch_python_docs.sh [TARGET_DIR]   (default: /work/corpora/python-3.11)
# Environment: PYTHON_DOC_VERSION pins a version (e.g. 3.11.2-6+deb12u9) when the apt lists
# offer it.
set -euo pipefail

PACKAGE="python3.11-doc"
VERSION="${PYTHON_DOC_VERSION:-}"
TARGET="${1:-/work/corpora/python-3.11}"
DOC_DIR="usr/share/doc/python3.11/html/library"
MODULES=(
    argparse asyncio-queue asyncio-subprocess asyncio-task base64 bisect collections
    concurrent.futures configparser contextlib copy csv dataclasses datetime enum fnmatch
    functools glob gzip hashlib heapq http.client io itertools json logging logging.handlers
    os.path pathlib pickle random re secrets shutil signal sqlite3 statistics string
    subprocess tarfile tempfile textwrap threading time timeit unittest urllib.parse uuid venv
    zipfile zoneinfo
)

WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
# shellcheck source=bench/corpora/_deb.sh
source "$(dirname "${BASH_SOURCE[0]}")/_deb.sh"
fetch_deb "$PACKAGE" "$VERSION" "$WORK"
SRC="$WORK/root/$DOC_DIR"

FILES=()
for m in "${MODULES[@]}"; do
    [ -f "$SRC/$m.html" ] || { echo "error: $DOC_DIR/$m.html not found in $(basename "$DEB")" >&2; exit 1; }
    FILES+=("$m.html")
done

mkdir -p "$TARGET"
find "$TARGET" -type f -name '*.html' -delete
for f in "${FILES[@]}"; do
    cp -p "$SRC/$f" "$TARGET/$f"
done
# The package's Debian copyright file and a manifest, as dotfiles (ingestion skips dotfiles).
cp -p "$WORK/root/usr/share/doc/$PACKAGE/copyright" "$TARGET/.copyright"
{
    echo "package: $PACKAGE"
    echo "version: $PKG_VERSION"
    echo "source: $DOC_DIR"
    echo "files: ${#FILES[@]}"
    printf '%s\n' "${FILES[@]}"
} > "$TARGET/.manifest"

BYTES="$(cd "$TARGET" && cat "${FILES[@]}" | wc -c)"
echo "Copied ${#FILES[@]} HTML files ($(( BYTES / 1024 )) KiB) from ${PACKAGE} ${PKG_VERSION} to ${TARGET}"
