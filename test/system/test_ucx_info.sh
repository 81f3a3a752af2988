#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# test_ucx_info: UCX sees the srm module.
#  - `srm-run ucx_info -d` (the wrapper alone, no LD_PRELOAD of ours) lists
#    "Transport: srm" on the device its agent uses (UCX_SRM_DEVICES=lo: "lo";
#    none: "node"), as `srmctl device` names it;
#  - a UCX_NET_DEVICES that leaves that device out gets one warning saying
#    what to add;
#  - in a process whose UCP says it is another UCX minor version (a stand-in
#    library), the module registers nothing and says which versions differ,
#    also when UCP is not loaded yet as the module's constructor runs (a
#    program of UCT alone, with the stand-in as the libucp.so.0 beside its
#    libuct);
#  - `ucx_info -c -f` with the module loaded lists UCX_SRM_POLL and
#    UCX_SRM_SOCKET, each with its doc string.
#
. "$(dirname "$0")/lib.sh"

srm_require_cmd ucx_info
[ -x "$SRM_RUN" ] || srm_skip "srm-run wrapper not found at $SRM_RUN"

# ucx_info -d opens the srm iface, which needs an agent: use our own.
srm_agent_start || { srm_fail "cannot start srmd"; srm_done; }
export UCX_SRM_AGENT=never

# --- ucx_info -d through srm-run ------------------------------------------
out=$SRM_LOG/ucx_info-d.log
env -u LD_PRELOAD SRM_MODULE="$SRM_MODULE" "$SRM_RUN" ucx_info -d >"$out" 2>&1
rc=$?
if [ $rc -ne 0 ]; then
    srm_fail "srm-run ucx_info -d exited $rc"
    srm_show_log "$out"
elif grep -q '^# *Transport: srm$' "$out"; then
    srm_pass "srm-run ucx_info -d lists Transport: srm"
    dev=$(srm_uct_device)
    if grep -A1 '^# *Transport: srm$' "$out" | grep -q "Device: $dev\$"; then
        srm_pass "the srm transport has device $dev (srmctl device)"
    else
        srm_fail "Transport: srm is not followed by Device: $dev"
        grep -A3 '^# *Transport: srm$' "$out" | sed 's/^/    | /'
    fi
else
    srm_fail "srm-run ucx_info -d does not list Transport: srm"
    grep -i 'srm\|Transport:' "$out" | head -20 | sed 's/^/    | /'
fi

# The device follows UCX_SRM_DEVICES; a UCX_NET_DEVICES without it is said.
for spec in lo:lo none:node; do
    devices=${spec%%:*} want=${spec#*:}
    got=$(UCX_SRM_DEVICES=$devices srm_uct_device)
    listed=$(env -u LD_PRELOAD UCX_SRM_DEVICES=$devices SRM_MODULE="$SRM_MODULE" \
             "$SRM_RUN" ucx_info -d 2>&1 | grep -A1 '^# *Transport: srm$' |
             sed -n 's/.*Device: *//p')
    if [ "$got" = "$want" ] && [ "$listed" = "$want" ]; then
        srm_pass "UCX_SRM_DEVICES=$devices: srm's device is $want (srmctl device, ucx_info -d)"
    else
        srm_fail "UCX_SRM_DEVICES=$devices: srmctl device says '$got', ucx_info -d '$listed', want '$want'"
    fi
done
warn=$(env -u LD_PRELOAD UCX_SRM_DEVICES=lo UCX_TLS=srm UCX_NET_DEVICES=eth9 \
       SRM_MODULE="$SRM_MODULE" "$SRM_RUN" ucx_info -d 2>&1 |
       grep -c "UCX_NET_DEVICES=eth9 leaves out srm's device 'lo'.*add lo")
if [ "$warn" = 1 ]; then
    srm_pass "UCX_NET_DEVICES=eth9 with UCX_TLS=srm: one warning naming srm's device lo"
else
    srm_fail "UCX_NET_DEVICES=eth9 with UCX_TLS=srm: $warn warnings naming srm's device (want 1)"
fi

# The wrapper's --print-env must name the module: the preload before UCX
# 1.22, the directory UCX scans (UCX_PLUGIN_PATH) from 1.22.
penv=$(env -u LD_PRELOAD -u UCX_PLUGIN_PATH SRM_MODULE="$SRM_MODULE" \
       "$SRM_RUN" --print-env 2>&1)
if grep -qxF "LD_PRELOAD=$SRM_MODULE" <<<"$penv" ||
   grep -qxF "UCX_PLUGIN_PATH=$(dirname "$SRM_MODULE")" <<<"$penv"; then
    srm_pass "srm-run --print-env names $SRM_MODULE: $(head -n 1 <<<"$penv")"
else
    srm_fail "srm-run --print-env names neither the module nor its directory: $penv"
fi

# --- the module in another UCX minor version registers nothing -----------
# A UCP that says it is UCX 1.99, preloaded first, stands in for one.
fake=$SRM_LOG/libfake_ucp_version.so
printf '%s\n' 'void ucp_get_version(unsigned *major, unsigned *minor,' \
    '                     unsigned *release)' \
    '{ *major = 1; *minor = 99; *release = 0; }' >"$SRM_LOG/fake_ucp_version.c"
built=$(sed -n 's/^#define SRM_UCX_VERSION "\([0-9]*\.[0-9]*\).*"$/\1/p' \
        "$SRM_BUILD_DIR/config.h" 2>/dev/null)
if ! cc -shared -fPIC -o "$fake" "$SRM_LOG/fake_ucp_version.c"; then
    srm_fail "cannot build the stand-in UCP of UCX 1.99 (cc)"
else
    out=$(env LD_PRELOAD="$fake $SRM_MODULE" ucx_info -d 2>&1)
    rc=$?
    if [ "$rc" = 0 ] && ! grep -q '^# *Transport: srm$' <<<"$out" &&
       grep -q '^# *Transport: tcp$' <<<"$out" &&
       grep -q "^srm: built for UCX ${built:-[0-9.]*} but this process runs UCX 1.99: the srm transport is not registered" <<<"$out"; then
        srm_pass "in a process of UCX 1.99 the module built for UCX $built registers nothing and says so; UCX runs on"
    else
        srm_fail "the module built for UCX ${built:-?} in a process of UCX 1.99: exit $rc"
        grep -E 'srm|Transport: tcp' <<<"$out" | head -6 | sed 's/^/    | /'
    fi
fi

# --- ... also when UCP is loaded only after the module ---------------------
# A preloaded module runs before a consumer opens UCP (Open MPI's pml ucx
# does so late): a program of UCT alone stands in for that moment. Its
# libraries come from a directory of links to this UCX's own, where
# libucp.so.0 is the stand-in of UCX 1.99: the UCP beside the running
# libuct must be the one asked.
late=$SRM_LOG/late-ucp
mkdir -p "$late"
printf '%s\n' '#include <uct/api/uct.h>' '#include <stdio.h>' \
    'int main(void)' '{' \
    '    uct_component_attr_t attr = {.field_mask = UCT_COMPONENT_ATTR_FIELD_NAME};' \
    '    uct_component_h *components;' '    unsigned i, count;' '' \
    '    if (uct_query_components(&components, &count) != UCS_OK) {' \
    '        return 1;' '    }' \
    '    for (i = 0; i < count; i++) {' \
    '        if (uct_component_query(components[i], &attr) == UCS_OK) {' \
    '            printf("component %s\n", attr.name);' '        }' '    }' \
    '    uct_release_component_list(components);' '    return 0;' '}' \
    >"$late/uct_components.c"
ucx_cflags=$(sed -n 's/^UCX_CFLAGS = //p' "$SRM_BUILD_DIR/Makefile" 2>/dev/null)
ucx_libs=$(sed -n 's/^UCX_LIBS = //p' "$SRM_BUILD_DIR/Makefile" 2>/dev/null)
for lib in libuct.so.0 libucs.so.0 libucm.so.0; do
    real=$(ldd "$SRM_MODULE" | awk -v l="$lib" '$1 == l { print $3 }')
    [ -n "$real" ] && ln -sf "$real" "$late/$lib"
done
# shellcheck disable=SC2086
if ! cc -o "$late/uct_components" "$late/uct_components.c" $ucx_cflags \
        ${ucx_libs:--luct -lucs} >"$late/cc.log" 2>&1 ||
   ! cc -shared -fPIC -Wl,-soname,libucp.so.0 -o "$late/libucp.so.0" \
        "$SRM_LOG/fake_ucp_version.c" >>"$late/cc.log" 2>&1; then
    srm_fail "cannot build the UCT-only program or the stand-in libucp.so.0 (cc)"
    srm_show_log "$late/cc.log"
else
    own=$(env LD_PRELOAD="$SRM_MODULE" "$late/uct_components" 2>&1)
    other=$(env LD_PRELOAD="$SRM_MODULE" LD_LIBRARY_PATH="$late" \
            "$late/uct_components" 2>&1)
    if grep -q '^component srm$' <<<"$own" && ! grep -q '^srm:' <<<"$own"; then
        srm_pass "a program of UCT alone, UCP not loaded, this UCX: srm registers"
    else
        srm_fail "a program of UCT alone, UCP not loaded, this UCX: $own"
    fi
    if ! grep -q '^component srm$' <<<"$other" &&
       grep -q '^component self$' <<<"$other" &&
       grep -q "^srm: built for UCX ${built:-[0-9.]*} but this process runs UCX 1.99" <<<"$other"; then
        srm_pass "the same next to a libucp of UCX 1.99: srm registers nothing and says so"
    else
        srm_fail "the same next to a libucp of UCX 1.99 (the module must ask the UCP beside libuct): $other"
    fi
fi

# --- ucx_info -c -f with the module ---------------------------------------
cfg=$SRM_LOG/ucx_info-cf.log
ucx_info -c -f >"$cfg" 2>&1
rc=$?
[ $rc -eq 0 ] || srm_fail "ucx_info -c -f exited $rc"

# The comment block right above "VAR=value", without the syntax/inherits
# lines and blank comment lines: the doc string.
doc_of() {
    awk -v var="$1" '
        /^#/ { blk = blk "\n" $0; next }
        index($0, var "=") == 1 { print blk; found = 1; exit }
        { blk = "" }
        END { exit !found }' "$cfg" |
    grep -v -e '^# *syntax:' -e '^# *inherits:' -e '^#[[:space:]]*$' -e '^$'
}

check_var() {
    local var=$1 want=$2 doc

    if ! grep -q "^$var=" "$cfg"; then
        srm_fail "ucx_info -c -f does not list $var"
        return
    fi
    doc=$(doc_of "$var")
    if [ -z "$doc" ]; then
        srm_fail "$var has no doc string"
        grep -B8 "^$var=" "$cfg" | sed 's/^/    | /'
    elif ! printf '%s\n' "$doc" | grep -qi "$want"; then
        srm_fail "$var's doc string does not mention '$want':"
        printf '%s\n' "$doc" | sed 's/^/    | /'
    else
        srm_pass "$var=$(grep "^$var=" "$cfg" | cut -d= -f2-) documented:" \
                 "$(printf '%s\n' "$doc" | head -n1 | sed 's/^# *//')"
    fi
}

check_var UCX_SRM_POLL "wait"
check_var UCX_SRM_SOCKET "socket"

# The agent reads the same settings: srmd --config lists UCX_SRM_POLL too.
if "$SRM_SRMD" --config 2>&1 | grep -q 'UCX_SRM_POLL'; then
    srm_pass "srmd --config lists UCX_SRM_POLL"
else
    srm_fail "srmd --config does not list UCX_SRM_POLL"
fi

srm_agent_stop || srm_fail "srmd did not stop cleanly (exit $?)"
srm_done
