#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
#
# build.sh - install what ucx-srm needs and build it into build/ (idempotent).
# Used by run-tests.sh and run-main-job.sh; safe to run by hand.
#
set -euo pipefail

usage() {
    cat <<TXT
Usage: contrib/build.sh [--no-deps] [--build DIR]

Installs the Debian packages (contrib/install-deps.sh), regenerates the
build system (autogen.sh), fetches the installed UCX's source tree into
DIR/.ucx-src (contrib/get-ucx-src.sh), configures into DIR (default:
build/ at the top of the tree) and runs make. Reruns only redo what
changed.

  --no-deps    skip the package check
  --build DIR  build directory (also taken from SRM_BUILD_DIR)
  -h, --help   this text
TXT
}

top=$(cd "$(dirname "$0")/.." && pwd)
build=${SRM_BUILD_DIR:-$top/build}
deps=1
while [ $# -gt 0 ]; do
    case "$1" in
    --no-deps) deps=0; shift ;;
    --build) build=$2; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "build.sh: unknown option '$1'" >&2; usage >&2; exit 2 ;;
    esac
done

if [ "$deps" = 1 ]; then
    "$top/contrib/install-deps.sh"
fi

if [ ! -x "$top/configure" ] || [ "$top/configure.ac" -nt "$top/configure" ] \
   || [ -n "$(find "$top" -name Makefile.am -newer "$top/configure" -o \
              -name '*.m4' -path '*/config/*' -newer "$top/configure" -o \
              -name Makefile.inc -newer "$top/configure")" ]; then
    echo "== autogen"
    "$top/autogen.sh"
fi

mkdir -p "$build"
build=$(cd "$build" && pwd) # configure wants an absolute --prefix
cd "$build"
if [ ! -f Makefile ] || [ "$top/configure" -nt Makefile ]; then
    echo "== UCX source (contrib/get-ucx-src.sh)"
    ucx_src=$("$top/contrib/get-ucx-src.sh" "$build/.ucx-src" | tail -n 1)
    echo "== configure (build dir $build)"
    "$top/configure" --prefix="$build/install" --enable-silent-rules \
        --with-ucx-src="$ucx_src"
fi
echo "== make"
make -j"$(nproc)"
make -j"$(nproc)" test/gtest/gtest
echo "built: $build"
