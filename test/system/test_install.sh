#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# test_install: `make install` puts everything where the README says, and
# the installed pieces work together: the module with hidden symbols, srmd
# and srmctl, srm-run pointing at the installed module and agent, the
# pkg-config file, the systemd unit and the man pages.
#
. "$(dirname "$0")/lib.sh"

srm_require_cmd make
srm_require_cmd pkg-config
[ -f "$SRM_BUILD_DIR/Makefile" ] || srm_skip "no Makefile in $SRM_BUILD_DIR (not a build tree)"

srm_make_install || srm_done
root=$dest$prefix
# PREFIX/lib/ucx, or from UCX 1.22 that UCX's own module directory
moduledir=$(make -s -C "$SRM_BUILD_DIR" --no-print-directory \
            --eval 'srm-moduledir: ; @echo $(srmmoduledir)' srm-moduledir)
module=$dest$moduledir/libuct_srm.so.0

for f in "$root/bin/srmd" "$root/bin/srmctl" "$root/bin/srm-run" "$module" \
         "$root/lib/pkgconfig/ucx-srm.pc" \
         "$root/lib/systemd/system/srmd.service" \
         "$root/share/ucx-srm/openmpi-mca-params.conf" \
         "$root/share/man/man1/srm-run.1" "$root/share/man/man7/ucx-srm.7" \
         "$root/share/man/man8/srmd.8" "$root/share/man/man8/srmctl.8"; do
    if [ -e "$f" ]; then
        srm_pass "installed ${f#$dest}"
    else
        srm_fail "make install did not install ${f#$dest}"
    fi
done

exported=$(nm -D --defined-only "$module" 2>/dev/null |
           awk '$2 ~ /^[TDB]$/ && $3 !~ /^_/ {print $3}')
if [ -z "$exported" ]; then
    srm_pass "the module exports no symbols (built with -fvisibility=hidden)"
else
    srm_fail "the module exports: $(echo $exported | head -c 200)"
fi

# Under DESTDIR the module is not at its configured path: name it, and check
# that srm-run hands it to UCX (a preload, or from UCX 1.22 its directory)
# and starts the srmd of the configured bindir.
env=$(env -u LD_PRELOAD -u UCX_PLUGIN_PATH -u UCX_SRM_AGENT_PATH \
      SRM_MODULE="$module" "$root/bin/srm-run" --print-env)
if echo "$env" | grep -qx "LD_PRELOAD=$module\|UCX_PLUGIN_PATH=${module%/*}" &&
   echo "$env" | grep -q "^UCX_SRM_AGENT_PATH=$prefix/bin/srmd$"; then
    srm_pass "srm-run hands UCX the module and points at the installed srmd"
else
    srm_fail "srm-run --print-env: $env"
fi

if PKG_CONFIG_PATH="$root/lib/pkgconfig" pkg-config --exists ucx-srm; then
    srm_pass "pkg-config finds ucx-srm (moduledir $(PKG_CONFIG_PATH="$root/lib/pkgconfig" pkg-config --variable=moduledir ucx-srm))"
else
    srm_fail "pkg-config does not accept the installed ucx-srm.pc"
fi

# `man srmd` finds the installed page, whose FILES name installed paths.
if MANPATH="$root/share/man" man -w srmd 2>/dev/null | grep -q "^$root/share/man/man8/srmd.8" &&
   grep -q "$prefix/lib/systemd/system/srmd.service" "$root/share/man/man8/srmd.8"; then
    srm_pass "man srmd finds the installed page, which names the installed unit"
else
    srm_fail "man -w srmd with MANPATH=$root/share/man: $(MANPATH="$root/share/man" man -w srmd 2>&1)"
fi

# The installed module and agent carry traffic (paths under DESTDIR).
export UCX_SRM_AGENT_PATH="$root/bin/srmd"
out=$SRM_LOG/ucx_info.log
env -u LD_PRELOAD SRM_MODULE="$module" \
    UCX_SRM_IDLE_TIMEOUT=1s "$root/bin/srm-run" ucx_info -d >"$out" 2>&1
if grep -q '^# *Transport: srm$' "$out"; then
    srm_pass "the installed module, through srm-run, starts the installed srmd"
else
    srm_fail "installed srm-run ucx_info -d does not list srm"
    srm_show_log "$out"
fi
srm_done
