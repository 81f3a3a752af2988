#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# test_two_users: srm on a node shared by two users, root and nobody.
# 1. An impostor: nobody runs an srmd on the socket name root's processes
#    use. Root's module refuses it before sending a byte, naming the uid,
#    and srm is not offered.
# 2. Memory: root's agent serves every user (--any-user, as the site's
#    service does). A process of root allocates srm md memory and its
#    packed key reaches a process of nobody (leaked). Nobody's PUT and
#    GET with that key, and with guessed tokens, are refused, nobody's
#    port is dropped for guessing, and root's memory is unchanged. The
#    same probe run as root, the owner's user, does write it: the probe
#    itself works.
# The probe is srm_rma_probe.c, built here against the build's module.
#
. "$(dirname "$0")/lib.sh"

[ "$(id -u)" = 0 ] || srm_skip "needs root to run processes as another user (nobody)"
srm_require_cmd setpriv cc pkg-config ucx_info
id nobody >/dev/null 2>&1 || srm_skip "no user nobody to be the second user"

# Everything nobody runs or reads lives in one world-readable directory:
# the build tree's own path may not be open to other users.
dir=$(mktemp -d /tmp/srm-two-users.XXXXXX)
chmod 755 "$dir"
trap 'srm_cleanup; rm -rf "$dir"' EXIT
cp "$SRM_MODULE" "$dir/libuct_srm.so.0"
cp "$SRM_SRMD" "$dir/srmd"
# shellcheck disable=SC2046
if ! cc -O1 -o "$dir/srm_rma_probe" "$SRM_SYSTEM_DIR/srm_rma_probe.c" \
        -I"$SRM_SRCDIR" $(pkg-config --cflags ucx-uct) \
        "$SRM_BUILD_DIR/.libs/libsrm_common.a" \
        $(pkg-config --libs ucx-uct ucx-ucs) 2>"$SRM_LOG/probe-build.log"; then
    srm_show_log "$SRM_LOG/probe-build.log"
    srm_fail "cannot build srm_rma_probe"
    srm_done
fi
chmod 755 "$dir"/*

as_nobody() { setpriv --reuid=nobody --regid=nogroup --clear-groups -- "$@"; }
# Agents without a wire: every peer is on this node.
export UCX_SRM_DEVICES=none

# --- 1. an impostor agent ------------------------------------------------
name=srm-impostor-$$
# setpriv itself, not the function: $! must be the agent's own PID (a
# function in the background is a subshell, and killing it left the
# agent running).
setpriv --reuid=nobody --regid=nogroup --clear-groups -- \
    "$dir/srmd" -s "$name" >"$SRM_LOG/impostor.log" 2>&1 &
impostor=$!
srm_track "$impostor"
for _ in $(seq 1 50); do
    as_nobody env -u LD_PRELOAD "$SRM_SRMCTL" -s "$name" -t 1 ping \
        >/dev/null 2>&1 && break
    sleep 0.1
done
UCX_SRM_SOCKET=$name UCX_SRM_AGENT=never LD_PRELOAD=$dir/libuct_srm.so.0 \
    ucx_info -d >"$SRM_LOG/impostor-ucx_info.log" 2>&1
refusal=$(grep -m1 "is held by uid $(id -u nobody) (nobody)" "$SRM_LOG/impostor-ucx_info.log")
if [ -n "$refusal" ] &&
   grep -A6 '^# *Transport: srm$' "$SRM_LOG/impostor-ucx_info.log" |
       grep -q 'failed to open interface'; then
    srm_pass "root's module refuses nobody's agent on @$name, and offers no srm: ${refusal#*srm: }"
else
    srm_fail "root's module did not refuse nobody's agent on @$name"
    srm_show_log "$SRM_LOG/impostor-ucx_info.log" 8
fi
if grep -q "attached port" "$SRM_LOG/impostor.log"; then
    srm_fail "the impostor saw root's process attach"
    srm_show_log "$SRM_LOG/impostor.log" 5
fi
srm_kill_pid "$impostor"
srm_untrack "$impostor"
if as_nobody env -u LD_PRELOAD "$SRM_SRMCTL" -s "$name" -t 1 ping >/dev/null 2>&1; then
    srm_fail "the impostor agent still answers on @$name after it was killed"
fi

# --- 2. another user's memory ---------------------------------------------
export UCX_SRM_MEM_ALLOC=y UCX_SRM_AGENT=never
srm_agent_start --any-user || { srm_fail "cannot start srmd --any-user"; srm_done; }

# probe_round NAME WHO: a victim of root, an attacker run by WHO (as_nobody
# or env); sets VICTIM_RC and leaves NAME's logs.
probe_round() {
    local name=$1 keys=$dir/$1 victim
    shift
    mkdir -m 755 "$keys"
    LD_PRELOAD=$dir/libuct_srm.so.0 "$dir/srm_rma_probe" victim "$keys" \
        >"$SRM_LOG/$name-victim.log" 2>&1 &
    victim=$!
    srm_track "$victim"
    for _ in $(seq 1 100); do
        [ -e "$keys/key" ] && break
        sleep 0.1
    done
    "$@" LD_PRELOAD="$dir/libuct_srm.so.0" timeout 60 \
        "$dir/srm_rma_probe" attacker "$keys" >"$SRM_LOG/$name-attacker.log" 2>&1
    ATTACKER_RC=$?
    touch "$keys/done"
    srm_wait_pid "$victim" 30
    wait "$victim"
    VICTIM_RC=$?
    srm_untrack "$victim"
}

probe_round control env
if [ "$ATTACKER_RC" = 0 ] &&
   grep -q '^put key-as-given: Success$' "$SRM_LOG/control-attacker.log" &&
   [ "$VICTIM_RC" = 3 ]; then
    srm_pass "control: a process of root, the owner's user, writes the memory with the key"
else
    srm_fail "control: root's own PUT with the key did not write the memory (attacker exit $ATTACKER_RC, victim exit $VICTIM_RC)"
    srm_show_log "$SRM_LOG/control-attacker.log" 6
    srm_show_log "$SRM_LOG/control-victim.log" 3
fi

probe_round nobody as_nobody env
log=$SRM_LOG/nobody-attacker.log
if [ "$ATTACKER_RC" != 0 ] || ! grep -q '^attacker: done$' "$log"; then
    srm_fail "nobody's probe did not run to its end (exit $ATTACKER_RC)"
    srm_show_log "$log" 8
else
    for try in "put key-as-given" "get key-as-given"; do
        line=$(grep -m1 "^$try: " "$log")
        if [ -n "$line" ] && [[ $line != *": Success"* ]] &&
           [[ $line != *leaked* ]]; then
            srm_pass "nobody's $try with root's key is refused: ${line#*: }"
        else
            srm_fail "nobody's $try with root's key: ${line:-no line}"
        fi
    done
    if grep '^[a-z]* token-guessed: ' "$log" | grep -q 'Success\|leaked'; then
        srm_fail "a guessed token reached root's memory"
        grep 'token-guessed' "$log" | sed 's/^/    | /'
    else
        srm_pass "$(grep -c 'token-guessed' "$log") guesses of the token reached nothing"
    fi
    if grep -q '^attacker: dropped by the agent' "$log"; then
        srm_pass "nobody's port was dropped: $(grep -m1 '^attacker: dropped' "$log")"
    else
        srm_fail "nobody's port was never dropped for its refused keys"
    fi
fi
if [ "$VICTIM_RC" = 0 ]; then
    srm_pass "root's memory is unchanged after nobody's tries"
else
    srm_fail "root's victim says: $(tail -n 1 "$SRM_LOG/nobody-victim.log") (exit $VICTIM_RC)"
fi
if grep -q "uid $(id -u nobody)): RMA to region .* refused: the memory of another user" "$SRM_AGENT_LOG"; then
    srm_pass "the agent logged why: $(grep -m1 -o "RMA to region .* refused: the memory of another user" "$SRM_AGENT_LOG")"
else
    srm_fail "the agent's log does not say it refused nobody's key"
    srm_show_log "$SRM_AGENT_LOG" 10
fi
srm_done
