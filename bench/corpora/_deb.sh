# shellcheck shell=bash
# Shared by the fetch_*_docs.sh scripts (sourced, not run): download one Debian package with
# `apt-get download` (no install, no root needed) and extract it.
#
# fetch_deb PACKAGE VERSION WORK: downloads PACKAGE (at VERSION, if not empty) into WORK,
# extracts it to WORK/root, and sets DEB (the .deb's path) and PKG_VERSION. Exits with a clear
# message when apt's lists are missing or stale.
fetch_deb() {
    local package="$1" version="$2" work="$3"
    if ! apt-cache show "$package" >/dev/null 2>&1; then
        echo "error: apt knows no package '$package'. The apt package lists are missing or stale:" >&2
        echo "       run 'sudo apt-get update' (as root: 'apt-get update') once, then run this script again." >&2
        exit 1
    fi
    echo "Downloading ${package}${version:+=$version} ..."
    local apt_opts=()
    # As root, apt tries to drop to the _apt user, which cannot write into a private temp dir.
    [ "$(id -u)" -eq 0 ] && apt_opts+=(-o APT::Sandbox::User=root)
    if ! (cd "$work" && apt-get "${apt_opts[@]}" -q download "${package}${version:+=$version}"); then
        echo "error: 'apt-get download ${package}' failed. If apt says it cannot find the package or a" >&2
        echo "       file on the mirror (404), the package lists are stale: run 'sudo apt-get update'." >&2
        exit 1
    fi
    DEB="$(find "$work" -maxdepth 1 -name '*.deb' | head -n 1)"
    [ -n "$DEB" ] || { echo "error: no .deb was downloaded" >&2; exit 1; }
    # shellcheck disable=SC2034  # read by the sourcing script
    PKG_VERSION="$(dpkg-deb -f "$DEB" Version)"
    dpkg-deb -x "$DEB" "$work/root"
}
