#!/usr/bin/env bash
# Build the OpenSSL 3.0 command-line manual corpus for the evaluation harness.
#
# Downloads Debian's `openssl` package (for its manual pages) and `mandoc` (to render them as
# HTML), both without installing anything or needing root, and writes one HTML page per manual
# page into a target directory: every regular page of section 1 (`openssl`, its subcommands such
# as `openssl-req` and `openssl-x509`, the shared option pages, `CA.pl`) and section 5 (`config`,
# `x509v3_config`, `fips_config`). Left out: the aliases (`req.1ssl` and the like are symlinks to
# the same pages) and section 7 (the library's algorithm and provider reference).
#
# It is a corpus of command-line manual pages like Git's, from another field, so the answer
# check can be tuned on flags and synopses while Git stays held out (docs/evaluation.md).
#
# Usage: bench/corpora/fetch_openssl_docs.sh [TARGET_DIR]   (default: /work/corpora/openssl-3.0)
# Environment: OPENSSL_VERSION pins the openssl package's version when the apt lists offer it.
set -euo pipefail

VERSION="${OPENSSL_VERSION:-}"
TARGET="${1:-/work/corpora/openssl-3.0}"

WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
# shellcheck source=bench/corpora/_deb.sh
source "$(dirname "${BASH_SOURCE[0]}")/_deb.sh"
mkdir -p "$WORK/mandoc" "$WORK/openssl"
fetch_deb mandoc "" "$WORK/mandoc"
MANDOC="$WORK/mandoc/root/usr/bin/mandoc"
fetch_deb openssl "$VERSION" "$WORK/openssl"
OPENSSL_VERSION_FOUND="$PKG_VERSION"
MAN="$WORK/openssl/root/usr/share/man"
[ -x "$MANDOC" ] || { echo "error: mandoc not found in the mandoc package" >&2; exit 1; }
[ -f "$MAN/man1/openssl-req.1ssl.gz" ] || { echo "error: man1/openssl-req.1ssl.gz not in the openssl package" >&2; exit 1; }

# Regular files only (the aliases are symlinks), sorted in the C collation.
mapfile -t FILES < <(cd "$MAN" && find man1 man5 -type f -name '*ssl.gz' | LC_ALL=C sort)
[ "${#FILES[@]}" -gt 0 ] || { echo "error: no manual page found" >&2; exit 1; }

mkdir -p "$TARGET"
find "$TARGET" -type f -name '*.html' -delete
for f in "${FILES[@]}"; do
    name="$(basename "$f" .gz)"          # openssl-req.1ssl
    page="${name%.*}"                    # openssl-req
    "$MANDOC" -Thtml -Ostyle=none "$MAN/$f" > "$TARGET/$page.html"
done
cp -p "$WORK/openssl/root/usr/share/doc/openssl/copyright" "$TARGET/.copyright"
{
    echo "package: openssl"
    echo "version: $OPENSSL_VERSION_FOUND"
    echo "source: usr/share/man/man1, man5 (rendered with mandoc -Thtml)"
    echo "files: ${#FILES[@]}"
    printf '%s\n' "${FILES[@]}"
} > "$TARGET/.manifest"

BYTES="$(cd "$TARGET" && cat ./*.html | wc -c)"
echo "Wrote ${#FILES[@]} pages (${BYTES} bytes) of openssl ${OPENSSL_VERSION_FOUND} to ${TARGET}"
