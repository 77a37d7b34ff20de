#!/usr/bin/env bash
# Build the Django 3.2 documentation corpus for the evaluation harness.
#
# Downloads Debian's python-django-doc package (no install, no root needed), extracts it, and
# copies its HTML documentation tree into a target directory, without the Sphinx assets
# (_static, _sources, _images), the rendered source code (_modules) and the generated index and
# search pages.
#
# Usage: bench/corpora/fetch_django_docs.sh [TARGET_DIR]   (default: /work/corpora/django-3.2)
# Environment: DJANGO_DOC_PACKAGE (default python-django-doc); DJANGO_DOC_VERSION pins a version
# (e.g. 3:3.2.25-0+deb12u7) when the apt lists offer it.
set -euo pipefail

PACKAGE="${DJANGO_DOC_PACKAGE:-python-django-doc}"
VERSION="${DJANGO_DOC_VERSION:-}"
TARGET="${1:-/work/corpora/django-3.2}"
HTML_DIR="usr/share/doc/${PACKAGE}/html"

# Left out of the copy: directories anywhere below html/ and files at its top level.
EXCLUDED_DIRS=(_static _sources _images _modules)
EXCLUDED_FILES=(genindex.html search.html py-modindex.html searchindex.js)

WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
# shellcheck source=bench/corpora/_deb.sh
source "$(dirname "${BASH_SOURCE[0]}")/_deb.sh"
fetch_deb "$PACKAGE" "$VERSION" "$WORK"
SRC="$WORK/root/$HTML_DIR"
[ -d "$SRC" ] || { echo "error: $HTML_DIR not found in $(basename "$DEB")" >&2; exit 1; }

# Drop the excluded parts from the extracted tree, then copy what is left as a whole.
for d in "${EXCLUDED_DIRS[@]}"; do
    find "$SRC" -depth -type d -name "$d" -exec rm -rf {} +
done
for f in "${EXCLUDED_FILES[@]}"; do
    rm -f "$SRC/$f"
done

# Deterministic file list (C collation), relative to html/.
mapfile -t FILES < <(cd "$SRC" && find . -type f -printf '%P\n' | LC_ALL=C sort)
[ "${#FILES[@]}" -gt 0 ] || { echo "error: nothing left to copy in $HTML_DIR" >&2; exit 1; }

# Replace the target's HTML pages (in all subdirectories) so that a rebuild never keeps pages
# from an older package; then copy the tree, keeping its layout (ref/, topics/, howto/, ...).
mkdir -p "$TARGET"
find "$TARGET" -type f -name '*.html' -delete
find "$TARGET" -mindepth 1 -type d -empty -delete
cp -a "$SRC/." "$TARGET/"
# The package's Debian copyright file and a manifest, as dotfiles (ingestion skips dotfiles).
cp -p "$WORK/root/usr/share/doc/${PACKAGE}/copyright" "$TARGET/.copyright"
{
    echo "package: $PACKAGE"
    echo "version: $PKG_VERSION"
    echo "source: $HTML_DIR"
    echo "excluded: ${EXCLUDED_DIRS[*]} ${EXCLUDED_FILES[*]}"
    echo "files: ${#FILES[@]}"
    printf '%s\n' "${FILES[@]}"
} > "$TARGET/.manifest"

HTML_COUNT="$(printf '%s\n' "${FILES[@]}" | grep -c '\.html$' || true)"
BYTES="$(cd "$TARGET" && cat "${FILES[@]}" | wc -c)"
echo "Copied ${#FILES[@]} files (${HTML_COUNT} HTML, $(( BYTES / 1024 )) KiB) from ${PACKAGE} ${PKG_VERSION} to ${TARGET}"
