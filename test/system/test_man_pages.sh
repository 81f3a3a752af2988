#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# test_man_pages: the man pages the build makes (srm-run(1), ucx-srm(7),
# srmd(8), srmctl(8)) render without a single groff or man warning, and
# ucx-srm(7) lists exactly the UCX_SRM_* settings the code reads: every
# one `srmd --config` prints, and every one `ucx_info -c -f` prints with
# the module loaded except UCX's generic interface settings (those it also
# prints for tcp, as UCX_TCP_*), and no other; docs/configuration.md, the
# overview, names each of them too.
#
. "$(dirname "$0")/lib.sh"

srm_require_cmd groff
srm_require_cmd man
mandir=$SRM_BUILD_DIR/docs/man
pages="srm-run.1 ucx-srm.7 srmd.8 srmctl.8"

for page in $pages; do
    file=$mandir/$page
    if [ ! -s "$file" ]; then
        srm_fail "$file was not built (make builds the man pages)"
        continue
    fi
    # -ww: every groff warning; man --warnings checks what man itself runs.
    warnings=$( { LC_ALL=C.UTF-8 groff -man -Tutf8 -ww -z "$file"
                  LC_ALL=C.UTF-8 MANWIDTH=80 man --warnings -l "$file" \
                      >"$SRM_LOG/$page.txt"; } 2>&1)
    if [ -n "$warnings" ]; then
        srm_fail "$page renders with warnings:"
        printf '%s\n' "$warnings" | head -n 20 | sed 's/^/    | /'
    elif ! grep -q '^NAME' "$SRM_LOG/$page.txt" ||
         [ "$(wc -l < "$SRM_LOG/$page.txt")" -lt 40 ]; then
        srm_fail "$page renders to $(wc -l < "$SRM_LOG/$page.txt") lines without a NAME section"
    else
        srm_pass "$page renders without warnings ($(wc -l < "$SRM_LOG/$page.txt") lines)"
    fi
done

# The settings the page documents: its bold UCX_SRM_ names at the start of
# a line in the SETTINGS section.
page_settings=$(sed -n '/^SETTINGS/,/^TROUBLESHOOTING/p' \
                    "$SRM_LOG/ucx-srm.7.txt" 2>/dev/null |
                grep -o '^ *UCX_SRM_[A-Z0-9_]*$' | tr -d ' ' | sort -u)
if [ "$(echo "$page_settings" | wc -w)" -lt 30 ]; then
    srm_fail "ucx-srm(7) lists $(echo "$page_settings" | wc -w) settings: the generator lost them"
fi

agent_settings=$(env -u UCX_SRM_SOCKET "$SRM_SRMD" --config 2>&1 |
                 grep -o '^UCX_SRM_[A-Z0-9_]*' | sort -u)
missing=$(comm -13 <(echo "$page_settings") <(echo "$agent_settings"))
if [ -n "$agent_settings" ] && [ -z "$missing" ]; then
    srm_pass "ucx-srm(7) lists all $(echo "$agent_settings" | wc -w) settings srmd --config prints"
else
    srm_fail "settings srmd --config prints that ucx-srm(7) lacks: ${missing:-(srmd printed none)}"
fi

undocumented=$(for s in $page_settings; do
                   grep -q "\`$s\`" "$SRM_SRCDIR/docs/configuration.md" || echo "$s"
               done)
if [ -z "$undocumented" ]; then
    srm_pass "docs/configuration.md names every setting of ucx-srm(7)"
else
    srm_fail "docs/configuration.md does not name: $(echo $undocumented)"
fi

if srm_missing_cmd ucx_info >/dev/null; then
    [ "$SRM_FAILURES" -eq 0 ] || srm_done
    srm_skip "ucx_info not found: the page's settings were checked against srmd only, NOT against the module's"
fi
info=$(LD_PRELOAD=$SRM_MODULE ucx_info -c -f 2>/dev/null)
generic=$(echo "$info" | grep -o '^UCX_TCP_[A-Z0-9_]*' | sed 's/^UCX_TCP_/UCX_SRM_/' | sort -u)
module_settings=$(comm -23 <(echo "$info" | grep -o '^UCX_SRM_[A-Z0-9_]*' | sort -u) \
                           <(echo "$generic"))
missing=$(comm -13 <(echo "$page_settings") <(echo "$module_settings"))
extra=$(comm -23 <(echo "$page_settings") <(echo "$module_settings"))
if [ "$(echo "$module_settings" | wc -w)" -ge 30 ] && [ -z "$missing" ] &&
   [ -z "$extra" ]; then
    srm_pass "ucx-srm(7) lists exactly the $(echo "$module_settings" | wc -w) srm settings ucx_info -c -f prints with the module"
else
    srm_fail "ucx-srm(7) against ucx_info -c -f: missing [$(echo $missing)], not read by the module [$(echo $extra)]"
fi
srm_done
