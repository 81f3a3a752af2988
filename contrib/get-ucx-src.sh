#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# get-ucx-src.sh - fetch the Debian source of the installed UCX version.
set -euo pipefail

PROG=${0##*/}
SOURCES_FILE=/etc/apt/sources.list.d/srm-deb-src.sources
KEYRING=/usr/share/keyrings/debian-archive-keyring.gpg
# The suite this system installs from (its first plain "deb" source:
# bookworm, trixie, sid), else os-release's codename; SRM_DEBIAN_SUITE wins.
system_suite() {
    local suite
    # shellcheck disable=SC2016  # $(...) here is apt's format syntax
    suite=$(apt-get indextargets --no-release-info \
                --format '$(TARGET_OF) $(RELEASE)' 2>/dev/null |
            awk '$1 == "deb" && $2 !~ /-/ { print $2; exit }')
    if [ -z "$suite" ] && [ -r /etc/os-release ]; then
        suite=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
    fi
    echo "${suite:-bookworm}"
}
SUITE=${SRM_DEBIAN_SUITE:-$(system_suite)}

usage() {
    cat <<USAGE
NAME
    $PROG - obtain the UCX source tree matching the installed UCX

SYNOPSIS
    $PROG [-h|--help] DESTDIR

DESCRIPTION
    Determines the installed UCX version with 'pkg-config --modversion
    ucx-uct' and puts the matching source tree, taken from Debian's 'ucx'
    source package (Debian patches applied), into DESTDIR (created if
    needed).  On success the absolute path of the extracted tree's top
    directory (the one containing src/uct and configure.ac) is the only
    line printed on standard output; progress messages go to standard
    error.

    If DESTDIR (or a directory directly below it) already holds a UCX tree
    of the installed version, that path is printed and nothing is
    downloaded.

    Otherwise, as root:
      1. If apt has no deb-src source for suite '$SUITE' configured, writes
         $SOURCES_FILE
         (Types: deb-src, URIs: http://deb.debian.org/debian, Suites:
         $SUITE, Components: main, Signed-By: $KEYRING).
      2. Runs 'apt-get update'.
      3. Runs 'apt-get source ucx=VERSION' in DESTDIR, VERSION being the
         Debian version of the installed libucx package (e.g. 1.13.1-1);
         if that fails, plain 'apt-get source ucx'.
      4. Reads ucx_ver_major/minor/patch from the extracted configure.ac
         and fails, naming both versions, if they differ from the
         installed version.

OPTIONS
    -h, --help   Show this help and exit.

ENVIRONMENT
    UCX_VERSION       Use this version instead of asking pkg-config.
    SRM_DEBIAN_SUITE  The suite for the deb-src source (default: the one
                      this system installs from, now '$SUITE').

EXIT STATUS
    0  tree present; its path printed
    1  download failed, or the source version differs from the installed one
    2  usage error, UCX not installed, or not root when a download is needed

EXAMPLES
    ucx_src=\$(contrib/get-ucx-src.sh /var/tmp/ucx-src)
    ls "\$ucx_src/src/uct"
USAGE
}

log() { echo "$PROG: $*" >&2; }
die() { echo "$PROG: error: $1" >&2; exit "${2:-1}"; }

dest=
while [ $# -gt 0 ]; do
    case "$1" in
        -h|--help) usage; exit 0 ;;
        --) shift; break ;;
        -*) echo "$PROG: unknown option: $1 (see --help)" >&2; exit 2 ;;
        *) break ;;
    esac
done
[ $# -eq 1 ] || { echo "$PROG: expected exactly one argument, DESTDIR (see --help)" >&2; exit 2; }
dest=$1

installed=${UCX_VERSION:-}
if [ -z "$installed" ]; then
    installed=$(pkg-config --modversion ucx-uct 2>/dev/null) \
        || die "cannot get the UCX version: 'pkg-config --modversion ucx-uct' failed (is libucx-dev installed?)" 2
fi
[ -n "$installed" ] || die "empty UCX version from pkg-config" 2

# Print "major.minor.patch" read from the configure.ac of tree $1.
tree_version() {
    local ac=$1/configure.ac maj min pat
    [ -f "$ac" ] || return 1
    maj=$(sed -n 's/^define(\[ucx_ver_major\], *\([0-9][0-9]*\)).*/\1/p' "$ac" | head -n1)
    min=$(sed -n 's/^define(\[ucx_ver_minor\], *\([0-9][0-9]*\)).*/\1/p' "$ac" | head -n1)
    pat=$(sed -n 's/^define(\[ucx_ver_patch\], *\([0-9][0-9]*\)).*/\1/p' "$ac" | head -n1)
    [ -n "$maj" ] && [ -n "$min" ] && [ -n "$pat" ] || return 1
    echo "$maj.$min.$pat"
}

# Print the UCX trees (dirs with configure.ac and src/uct) at $1 or just below.
find_trees() {
    local d
    for d in "$1" "$1"/*/; do
        d=${d%/}
        if [ -d "$d/src/uct" ] && [ -f "$d/configure.ac" ]; then
            echo "$d"
        fi
    done
}

# Print a matching tree under $1 and return 0, or return 1.
matching_tree() {
    local t v
    while IFS= read -r t; do
        [ -n "$t" ] || continue
        v=$(tree_version "$t" || true)
        if [ "$v" = "$installed" ]; then
            (cd "$t" && pwd -P)
            return 0
        fi
    done < <(find_trees "$1")
    return 1
}

if [ -d "$dest" ] && matching_tree "$dest"; then
    log "UCX $installed source already in $dest; not downloading"
    exit 0
fi

[ "$(id -u)" -eq 0 ] || die "must run as root to configure apt and download the source" 2
command -v dpkg-source >/dev/null 2>&1 || die "dpkg-source not found (install dpkg-dev, see contrib/install-deps.sh)" 2

mkdir -p "$dest" || die "cannot create $dest" 2
dest=$(cd "$dest" && pwd -P)

# 1. deb-src for the suite.  Ask apt itself which targets are configured, so
# that one-line and deb822 sources in any file are taken into account.
# shellcheck disable=SC2016  # $(...) here is apt's format syntax
if apt-get indextargets --no-release-info --format '$(TARGET_OF) $(RELEASE)' 2>/dev/null \
        | grep -qx "deb-src $SUITE"; then
    log "a deb-src source for $SUITE is already configured"
else
    log "writing $SOURCES_FILE"
    cat > "$SOURCES_FILE" <<SRC
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: $SUITE
Components: main
Signed-By: $KEYRING
SRC
fi

# 2. update the package lists.
log "apt-get update"
apt-get update -q >&2 || die "apt-get update failed"

# 3. download and extract.
debver=
for p in libucx-dev libucx0 ucx-utils; do
    debver=$(dpkg-query -W -f='${source:Version}' "$p" 2>/dev/null || true)
    if [ -n "$debver" ] && [ "${debver%%-*}" = "$installed" ]; then
        break
    fi
    debver=
done

got=0
if [ -n "$debver" ]; then
    log "apt-get source ucx=$debver (into $dest)"
    if (cd "$dest" && apt-get source -q "ucx=$debver" >&2); then
        got=1
    else
        log "apt-get source ucx=$debver failed; trying the newest available"
    fi
fi
if [ "$got" -eq 0 ]; then
    log "apt-get source ucx (into $dest)"
    (cd "$dest" && apt-get source -q ucx >&2) || die "apt-get source ucx failed"
fi

# 4. verify.
if matching_tree "$dest"; then
    exit 0
fi
found=
while IFS= read -r t; do
    [ -n "$t" ] || continue
    found+="${found:+, }$t ($(tree_version "$t" || echo 'unknown version'))"
done < <(find_trees "$dest")
if [ -z "$found" ]; then
    die "no UCX source tree (with src/uct and configure.ac) found in $dest after apt-get source"
fi
die "version mismatch: installed UCX is $installed but the source in $dest is $found"
