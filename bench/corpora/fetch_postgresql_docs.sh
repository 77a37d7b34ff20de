#!/usr/bin/env bash
# Build the PostgreSQL 15 documentation corpus for the evaluation harness.
#
# Downloads Debian's postgresql-doc-15 package (no install, no root needed), extracts it, and
# copies a deterministic subset of its HTML manual (the pages a support engineer would query)
# into a target directory.
#
# Usage: bench/corpora/fetch_postgresql_docs.sh [TARGET_DIR]   (default: /work/corpora/postgresql-15)
# Environment: PG_DOC_PACKAGE (default postgresql-doc-15); PG_DOC_VERSION pins a version
# (e.g. 15.20-0+deb12u1) when the apt lists offer it.
set -euo pipefail

PACKAGE="${PG_DOC_PACKAGE:-postgresql-doc-15}"
VERSION="${PG_DOC_VERSION:-}"
TARGET="${1:-/work/corpora/postgresql-15}"
HTML_DIR="usr/share/doc/${PACKAGE}/html"

# Filename patterns (shell globs, matched against the base names in html/). Order does not
# matter: the result is the sorted, de-duplicated union.
PATTERNS=(
    # Reference: SQL commands, client and server applications
    'sql-*.html' 'app-*.html'
    'pgupgrade.html' 'pgarchivecleanup.html' 'pgbench.html' 'pgtestfsync.html' 'pgwaldump.html'
    # Server setup and operation (the "Server Setup and Operation" chapter)
    'runtime.html' 'postgres-user.html' 'creating-cluster.html' 'server-start.html'
    'kernel-resources.html' 'server-shutdown.html' 'upgrading.html'
    'preventing-server-spoofing.html' 'encryption-options.html' 'ssl-tcp.html'
    'gssapi-enc.html' 'ssh-tunnels.html'
    # Server configuration
    'runtime-config*.html' 'config-setting.html'
    # Client authentication
    'client-authentication*.html' 'auth-*.html' 'sasl-authentication.html'
    'gssapi-auth.html' 'sspi-auth.html'
    # Roles
    'user-manag.html' 'database-roles.html' 'role-*.html' 'predefined-roles.html'
    # Backup and restore
    'backup*.html' 'continuous-archiving.html'
    # Routine maintenance (vacuum, reindex, log files)
    'maintenance.html' 'routine-*.html' 'logfile-maintenance.html'
    # Indexes
    'indexes*.html'
    # High availability, replication
    'high-availability.html' 'different-replication-solutions.html' 'warm-standby*.html'
    'hot-standby.html' 'logical-replication*.html'
    # Monitoring and disk usage
    'monitoring*.html' 'progress-reporting.html' 'disk-usage.html' 'diskusage.html'
    'disk-full.html'
    # WAL, reliability
    'wal*.html' 'checksums.html'
    # Performance tips
    'performance-tips.html' 'using-explain.html' 'populate.html' 'non-durability.html'
    # The manual's license
    'legalnotice.html'
)

WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
# shellcheck source=bench/corpora/_deb.sh
source "$(dirname "${BASH_SOURCE[0]}")/_deb.sh"
fetch_deb "$PACKAGE" "$VERSION" "$WORK"
SRC="$WORK/root/$HTML_DIR"
[ -d "$SRC" ] || { echo "error: $HTML_DIR not found in $(basename "$DEB")" >&2; exit 1; }

# Deterministic selection: the sorted union of all pattern matches (C collation).
mapfile -t FILES < <(
    cd "$SRC"
    for pattern in "${PATTERNS[@]}"; do
        compgen -G "$pattern" || true
    done | LC_ALL=C sort -u
)
[ "${#FILES[@]}" -gt 0 ] || { echo "error: no page matched the patterns" >&2; exit 1; }

# Replace the target's HTML pages so that a rebuild never keeps pages from an older selection.
mkdir -p "$TARGET"
find "$TARGET" -maxdepth 1 -type f -name '*.html' -delete
for f in "${FILES[@]}"; do
    cp -p "$SRC/$f" "$TARGET/$f"
done
# The package's Debian copyright file and a manifest, as dotfiles (ingestion skips dotfiles).
cp -p "$WORK/root/usr/share/doc/${PACKAGE}/copyright" "$TARGET/.copyright"
{
    echo "package: $PACKAGE"
    echo "version: $PKG_VERSION"
    echo "source: $HTML_DIR"
    echo "files: ${#FILES[@]}"
    printf '%s\n' "${FILES[@]}"
} > "$TARGET/.manifest"

BYTES="$(cd "$TARGET" && cat "${FILES[@]}" | wc -c)"
echo "Copied ${#FILES[@]} HTML files ($(( BYTES / 1024 )) KiB) from ${PACKAGE} ${PKG_VERSION} to ${TARGET}"
