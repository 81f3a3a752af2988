#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# test_license: the tree says under which license it is, in LICENSE
# (BSD-3-Clause) and in an SPDX line within the first three lines of every
# source file git tracks (C, C++, shell, awk, m4, automake, configure,
# templates), so that a packager can tell without reading each file.
# Documents and benchmark results (docs/, *.md, NEWS) are not checked.
#
. "$(dirname "$0")/lib.sh"

srm_require_cmd git
TAG='SPDX-License-Identifier: BSD-3-Clause'

git -C "$SRM_SRCDIR" rev-parse --git-dir >/dev/null 2>&1 ||
    srm_skip "$SRM_SRCDIR is not a git checkout: which files are the tree's is unknown, the SPDX lines were NOT checked"

if [ -s "$SRM_SRCDIR/LICENSE" ] &&
   grep -q '^BSD 3-Clause License$' "$SRM_SRCDIR/LICENSE" &&
   grep -q 'Neither the name of the copyright holder' "$SRM_SRCDIR/LICENSE"; then
    srm_pass "LICENSE is the BSD 3-Clause license"
else
    srm_fail "LICENSE is missing or is not the BSD 3-Clause license"
fi

if grep -q '^License: BSD-3-Clause$' "$SRM_SRCDIR/debian/copyright" 2>/dev/null; then
    srm_pass "debian/copyright says BSD-3-Clause"
else
    srm_fail "debian/copyright is missing or does not say BSD-3-Clause"
fi

missing=()
checked=0
while IFS= read -r f; do
    case $f in
    docs/*|*.md|NEWS|LICENSE|.gitignore) continue ;;
    # Debian's formats: debian/copyright is itself the license statement
    # (BSD-3-Clause for Files: *), the others hold no comments.
    debian/changelog|debian/control|debian/copyright|debian/source/format)
        continue ;;
    esac
    [ -f "$SRM_SRCDIR/$f" ] || continue
    # binary files (pictures) carry no comment
    grep -Iq . "$SRM_SRCDIR/$f" 2>/dev/null || continue
    checked=$((checked + 1))
    head -n 3 "$SRM_SRCDIR/$f" | grep -qF "$TAG" || missing+=("$f")
done < <(git -C "$SRM_SRCDIR" ls-files)

if [ "${#missing[@]}" -eq 0 ] && [ "$checked" -gt 100 ]; then
    srm_pass "all $checked source files carry '$TAG' in their first three lines"
else
    srm_fail "${#missing[@]} of $checked source files lack '$TAG' in their first three lines:"
    printf '    %s\n' "${missing[@]:0:40}"
fi
srm_done
