#!/usr/bin/env bash
# Build the Git 2.39 documentation corpus for the evaluation harness.
#
# Downloads Debian's git-doc package (no install, no root needed), extracts it, and copies the
# user documentation of its HTML tree into a target directory: every manual page (git-*.html,
# git*.html: commands, guides, tutorials, file formats, protocols), the Git User's Manual,
# scalar(1), "Fighting regressions with git bisect" and the user howtos (howto/*.html).
# Left out: the AsciiDoc sources (*.txt), the developer documentation (technical/, the
# contribution guides, the maintainers' howtos), the generated howto index, index.html (a
# symlink to git.html) and two stub pages.
#
# Usage: bench/corpora/fetch_git_docs.sh [TARGET_DIR]   (default: /work/corpora/git-2.39)
# Environment: GIT_DOC_PACKAGE (default git-doc); GIT_DOC_VERSION pins a version
# (e.g. 1:2.39.5-0+deb12u3) when the apt lists offer it.
set -euo pipefail

PACKAGE="${GIT_DOC_PACKAGE:-git-doc}"
VERSION="${GIT_DOC_VERSION:-}"
TARGET="${1:-/work/corpora/git-2.39}"
DOC_DIR="usr/share/doc/${PACKAGE}"

# Filename patterns (shell globs, relative to the package's doc directory): the sorted union of
# their matches, less EXCLUDED, is the corpus.
PATTERNS=('*.html' 'howto/*.html')
EXCLUDED=(
    # A symlink to git.html, the generated list of howtos, and two stubs: "moved to
    # giteveryday(7)" and "this list of third-party tools has been retired"
    index.html howto-index.html everyday.html git-tools.html
    # For people who work on Git itself, not with it
    MyFirstContribution.html MyFirstObjectWalk.html ReviewingGuidelines.html
    SubmittingPatches.html ToolsForGit.html
    howto/coordinate-embargoed-releases.html howto/maintain-git.html howto/new-command.html
)

WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
# shellcheck source=bench/corpora/_deb.sh
source "$(dirname "${BASH_SOURCE[0]}")/_deb.sh"
fetch_deb "$PACKAGE" "$VERSION" "$WORK"
SRC="$WORK/root/$DOC_DIR"
[ -f "$SRC/git.html" ] || { echo "error: $DOC_DIR/git.html not found in $(basename "$DEB")" >&2; exit 1; }

# Deterministic selection: the sorted union of all pattern matches (C collation), regular files
# only, without the excluded ones.
mapfile -t FILES < <(
    cd "$SRC"
    for pattern in "${PATTERNS[@]}"; do
        compgen -G "$pattern" || true
    done | LC_ALL=C sort -u | while IFS= read -r f; do
        if [ ! -f "$f" ] || [ -L "$f" ]; then continue; fi
        for x in "${EXCLUDED[@]}"; do
            [ "$f" = "$x" ] && continue 2
        done
        printf '%s\n' "$f"
    done
)
[ "${#FILES[@]}" -gt 0 ] || { echo "error: no page matched the patterns" >&2; exit 1; }

# Replace the target's HTML pages (in all subdirectories) so that a rebuild never keeps pages
# from an older selection; then copy the pages, keeping the howto/ subdirectory.
mkdir -p "$TARGET"
find "$TARGET" -type f -name '*.html' -delete
find "$TARGET" -mindepth 1 -type d -empty -delete
for f in "${FILES[@]}"; do
    mkdir -p "$TARGET/$(dirname "$f")"
    cp -p "$SRC/$f" "$TARGET/$f"
done
# The package's Debian copyright file and a manifest, as dotfiles (ingestion skips dotfiles).
cp -p "$SRC/copyright" "$TARGET/.copyright"
{
    echo "package: $PACKAGE"
    echo "version: $PKG_VERSION"
    echo "source: $DOC_DIR"
    echo "patterns: ${PATTERNS[*]}"
    echo "excluded: ${EXCLUDED[*]}"
    echo "files: ${#FILES[@]}"
    printf '%s\n' "${FILES[@]}"
} > "$TARGET/.manifest"

BYTES="$(cd "$TARGET" && cat "${FILES[@]}" | wc -c)"
echo "Copied ${#FILES[@]} HTML files ($(( BYTES / 1024 )) KiB) from ${PACKAGE} ${PKG_VERSION} to ${TARGET}"
