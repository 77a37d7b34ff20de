#!/usr/bin/env bash
# Build the Node.js 18 API reference corpus for the evaluation harness: an API reference (modules,
# classes, methods with their signatures and options), the kind of documentation the other sets
# lack.
#
# Downloads Debian's nodejs-doc package (no install, no root needed), extracts it, and copies the
# HTML pages of its API reference (api/*.html): one page per module, plus the CLI options, the
# errors, the deprecations and the guides to ECMAScript modules, packages and addons.
# Left out: all.html (every page again, in one), index.html (a list of links), the pages'
# JSON and Markdown sources, and the assets.
#
# Usage: bench/corpora/fetch_nodejs_docs.sh [TARGET_DIR]   (default: /work/corpora/nodejs-18)
# Environment: NODEJS_DOC_VERSION pins a version (e.g. 18.20.4+dfsg-1~deb12u3) when the apt
# lists offer it.
set -euo pipefail

PACKAGE="nodejs-doc"
VERSION="${NODEJS_DOC_VERSION:-}"
TARGET="${1:-/work/corpora/nodejs-18}"
DOC_DIR="usr/share/doc/nodejs/api"
EXCLUDED=(all.html index.html)

WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
# shellcheck source=bench/corpora/_deb.sh
source "$(dirname "${BASH_SOURCE[0]}")/_deb.sh"
fetch_deb "$PACKAGE" "$VERSION" "$WORK"
SRC="$WORK/root/$DOC_DIR"
[ -f "$SRC/fs.html" ] || { echo "error: $DOC_DIR/fs.html not found in $(basename "$DEB")" >&2; exit 1; }

# Deterministic selection (C collation), regular files only, without the excluded ones.
mapfile -t FILES < <(
    cd "$SRC"
    compgen -G '*.html' | LC_ALL=C sort | while IFS= read -r f; do
        if [ ! -f "$f" ] || [ -L "$f" ]; then continue; fi
        for x in "${EXCLUDED[@]}"; do
            [ "$f" = "$x" ] && continue 2
        done
        printf '%s\n' "$f"
    done
)
[ "${#FILES[@]}" -gt 0 ] || { echo "error: no page matched" >&2; exit 1; }

mkdir -p "$TARGET"
find "$TARGET" -type f -name '*.html' -delete
for f in "${FILES[@]}"; do
    cp -p "$SRC/$f" "$TARGET/$f"
done
# The package's Debian copyright file and a manifest, as dotfiles (ingestion skips dotfiles).
cp -p "$WORK/root/usr/share/doc/nodejs-doc/copyright" "$TARGET/.copyright"
{
    echo "package: $PACKAGE"
    echo "version: $PKG_VERSION"
    echo "source: $DOC_DIR"
    echo "excluded: ${EXCLUDED[*]}"
    echo "files: ${#FILES[@]}"
    printf '%s\n' "${FILES[@]}"
} > "$TARGET/.manifest"

BYTES="$(cd "$TARGET" && cat "${FILES[@]}" | wc -c)"
echo "Copied ${#FILES[@]} HTML files ($(( BYTES / 1024 )) KiB) from ${PACKAGE} ${PKG_VERSION} to ${TARGET}"
