#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# test_service: the site's agent as a service (issue 30, item 4).
# 1. The unit `make install` puts in place passes `systemd-analyze verify`
#    (its ExecStart an absolute path to the installed srmd, its man pages
#    found), runs as the srmd system user of the installed sysusers.d file
#    with LimitMEMLOCK=infinity, an EnvironmentFile and Type=notify.
# 2. srmd speaks the notify protocol: READY=1 (with a STATUS) once it
#    serves its socket, STOPPING=1 on SIGTERM.
# 3. Without UCX_SRM_SOCKET a process uses the site's agent on @srmd when
#    one of root or of the srmd user serves it, else its own per-user
#    agent, and says which (UCX_LOG_LEVEL=info); an agent of another user
#    on @srmd is ignored with a warning, never used, and so is a listener
#    that never accepts (its queue full: a blocking connect hung there). In
#    a network namespace of its own, so that no agent of the machine is
#    touched.
#
if [ -z "${SRM_SERVICE_NETNS:-}" ] && [ "$(id -u)" = 0 ] &&
   command -v unshare >/dev/null 2>&1; then
    SRM_SERVICE_NETNS=1 exec unshare --net -- bash "$0" "$@"
fi
. "$(dirname "$0")/lib.sh"

[ "$(id -u)" = 0 ] || srm_skip "needs root (a network namespace of its own, processes of other users)"
srm_require_cmd setpriv python3 ucx_info
[ -x /usr/bin/python3 ] || srm_skip "no /usr/bin/python3 for nobody to run (Debian's python3 package)"
ip link set lo up 2>/dev/null

dir=$(mktemp -d /tmp/srm-service.XXXXXX)
chmod 755 "$dir"
created_user=0
on_exit() {
    srm_cleanup
    [ "$created_user" = 1 ] && userdel srmd 2>/dev/null
    rm -rf "$dir"
}
trap on_exit EXIT

# --- 1. the installed unit --------------------------------------------------
srm_make_install || srm_done
unit=$dest$prefix/lib/systemd/system/srmd.service
if grep -qx "ExecStart=$prefix/bin/srmd --any-user --socket srmd" "$unit" &&
   grep -qx 'Type=notify' "$unit" && grep -qx 'User=srmd' "$unit" &&
   grep -qx 'LimitMEMLOCK=infinity' "$unit" &&
   grep -qx "EnvironmentFile=-$prefix/etc/default/srmd" "$unit" &&
   [ -s "$dest$prefix/etc/default/srmd" ] &&
   grep -q '^u srmd ' "$dest$prefix/lib/sysusers.d/srmd.conf"; then
    srm_pass "the unit runs $prefix/bin/srmd as user srmd (sysusers.d), Type=notify, LimitMEMLOCK=infinity, settings from $prefix/etc/default/srmd"
else
    srm_fail "the installed unit or its files are not as expected:"
    sed 's/^/    | /' "$unit"
fi
if srm_missing_cmd systemd-analyze >/dev/null; then
    srm_log "*** systemd-analyze not found: the unit was NOT verified ***"
    srm_fail "systemd-analyze missing (Debian's systemd package has it)"
else
    # The unit names installed paths; under DESTDIR they live below $dest.
    sed "s|$prefix/|$dest$prefix/|g" "$unit" > "$dir/srmd.service"
    if MANPATH=$dest$prefix/share/man systemd-analyze verify \
            "$dir/srmd.service" >"$SRM_LOG/verify.log" 2>&1; then
        srm_pass "systemd-analyze verify passes (binary and man pages found)"
    else
        srm_fail "systemd-analyze verify:"
        srm_show_log "$SRM_LOG/verify.log"
    fi
fi

# --- 2. the notify protocol ---------------------------------------------------
notify=$dir/notify.sock
python3 - "$notify" >"$SRM_LOG/notify.txt" 2>&1 <<'PY' &
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1])
s.settimeout(30)
while True:
    msg = s.recv(4096).decode()
    print(msg.replace("\n", " | "), flush=True)
    if "STOPPING=1" in msg:
        break
PY
listener=$!
srm_track "$listener"
for _ in $(seq 50); do [ -S "$notify" ] && break; sleep 0.1; done
NOTIFY_SOCKET=$notify srm_agent_start
ready_seen=0
for _ in $(seq 50); do
    grep -q 'READY=1' "$SRM_LOG/notify.txt" && { ready_seen=1; break; }
    sleep 0.1
done
if [ "$ready_seen" = 1 ] &&
   grep -q "STATUS=serving @$UCX_SRM_SOCKET" "$SRM_LOG/notify.txt"; then
    srm_pass "srmd says READY=1 and its STATUS once it serves @$UCX_SRM_SOCKET"
else
    srm_fail "no READY=1 from srmd: $(cat "$SRM_LOG/notify.txt")"
fi
srm_agent_stop
srm_wait_pid "$listener" 5
if grep -q 'STOPPING=1' "$SRM_LOG/notify.txt"; then
    srm_pass "srmd says STOPPING=1 on SIGTERM"
else
    srm_fail "no STOPPING=1 after SIGTERM: $(cat "$SRM_LOG/notify.txt")"
fi
srm_kill_pid "$listener"

# --- 3. which agent a process uses --------------------------------------------
cp "$SRM_MODULE" "$dir/libuct_srm.so.0"
cp "$SRM_SRMD" "$dir/srmd"
cp "$SRM_SRMCTL" "$dir/srmctl"
chmod 755 "$dir"/*
unset UCX_SRM_SOCKET

# as USER, "ucx_info -d" with srm; its log in $SRM_LOG/NAME.log
open_srm() {
    local user=$1 name=$2
    setpriv --reuid="$user" --regid="$(id -g "$user")" --clear-groups \
        env LD_PRELOAD="$dir/libuct_srm.so.0" UCX_SRM_AGENT_PATH="$dir/srmd" \
            UCX_SRM_DEVICES=none UCX_SRM_IDLE_TIMEOUT=1s UCX_LOG_LEVEL=info \
            TMPDIR="$dir" HOME="$dir" ucx_info -d >"$SRM_LOG/$name.log" 2>&1
}

# a per-user agent a process started: stop it by its PID
stop_own_agent() {
    local pid
    pid=$(env -u LD_PRELOAD "$dir/srmctl" -s "srmd.$(id -u "$1")" -t 1 status --json 2>/dev/null |
          srm_json_get .agent.pid)
    [ -n "$pid" ] && kill -TERM "$pid" 2>/dev/null && srm_wait_pid "$pid" 5
}

# an agent on @srmd, run as USER
start_site() {
    setpriv --reuid="$1" --regid="$(id -g "$1")" --clear-groups \
        env UCX_SRM_DEVICES=none "$dir/srmd" --any-user --socket srmd \
        >"$SRM_LOG/site-$1.log" 2>&1 &
    SITE_PID=$!
    srm_track "$SITE_PID"
    for _ in $(seq 50); do
        env -u LD_PRELOAD "$dir/srmctl" -s srmd -t 1 ping >/dev/null 2>&1 &&
            return 0
        sleep 0.1
    done
    srm_fail "the agent of $1 on @srmd did not come up"
    srm_show_log "$SRM_LOG/site-$1.log"
    return 1
}

# check NAME PATTERN WHAT: the log of NAME matches PATTERN
check() {
    if grep -q "$2" "$SRM_LOG/$1.log" && grep -q 'Transport: srm' "$SRM_LOG/$1.log"; then
        srm_pass "$3"
    else
        srm_fail "$3: not so"
        srm_show_log "$SRM_LOG/$1.log" 8
    fi
}

open_srm root no-site
check no-site "attached to this user's own node agent @srmd.0" \
    "no site agent: a process starts and uses its own agent @srmd.0"
stop_own_agent root

if start_site root; then
    open_srm root site-root
    check site-root "attached to the site's node agent @srmd" \
        "a process uses the site's agent of root on @srmd"
    srm_kill_pid "$SITE_PID"
fi

if ! id srmd >/dev/null 2>&1; then
    useradd --system --no-create-home --home-dir /nonexistent \
        --shell /usr/sbin/nologin srmd && created_user=1
fi
if id srmd >/dev/null 2>&1 && start_site srmd; then
    open_srm root site-user-root
    check site-user-root "attached to the site's node agent @srmd" \
        "root's process uses the site's agent run by the srmd system user"
    open_srm nobody site-user-nobody
    check site-user-nobody "attached to the site's node agent @srmd" \
        "nobody's process uses the site's agent run by the srmd system user"
    srm_kill_pid "$SITE_PID"
else
    srm_fail "no srmd system user to run the site's agent as"
fi

# A listener of nobody's on @srmd that never accepts, its queue full: a
# blocking connect there would hang every process that opens srm.
setpriv --reuid=nobody --regid=nogroup --clear-groups /usr/bin/python3 -c '
import socket, sys, time
srv = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
srv.bind("\0srmd")
srv.listen(0)
held = []
for _ in range(4):
    c = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    c.setblocking(False)
    try:
        c.connect("\0srmd")
    except BlockingIOError:
        break
    held.append(c)
print("full", flush=True)
time.sleep(120)' >"$SRM_LOG/full.log" 2>&1 &
full=$!
srm_track "$full"
for _ in $(seq 50); do grep -q full "$SRM_LOG/full.log" && break; sleep 0.1; done
SECONDS=0
timeout 30 bash -c "$(declare -f open_srm); dir='$dir' SRM_LOG='$SRM_LOG' open_srm root full-queue"
took=$SECONDS
if grep -q "takes no connection" "$SRM_LOG/full-queue.log" &&
   grep -q "attached to this user's own node agent @srmd.0" "$SRM_LOG/full-queue.log"; then
    srm_pass "a listener on @srmd that accepts nothing is passed over in $took s (own agent used)"
else
    srm_fail "with a full, never-accepting @srmd a process took $took s (30: hung)"
    srm_show_log "$SRM_LOG/full-queue.log" 5
fi
stop_own_agent root
srm_kill_pid "$full"

if start_site nobody; then
    open_srm root squatted
    check squatted "held by uid $(id -u nobody), neither root nor the srmd user: ignoring it" \
        "an agent of nobody on @srmd is ignored with a warning"
    check squatted "attached to this user's own node agent @srmd.0" \
        "... and the process uses its own agent instead"
    stop_own_agent root
    srm_kill_pid "$SITE_PID"
fi
srm_done
