#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# test_deb_package: the Debian package a site installs (issue 30, item 3).
# 1. `dpkg-buildpackage -b` builds ucx-srm_*.deb from a copy of this tree
#    (its debian/), with Depends pinned to the exact libucx0 it was built
#    against, the module in UCX's module directory, and no .la or .so
#    development links;
# 2. lintian reports no error;
# 3. in a clean Debian root of this machine's suite (a fresh debootstrap
#    --variant=minbase), apt installs it with its dependencies: the srmd
#    user exists, `man srmd` finds the page, `systemd-analyze verify`
#    accepts the unit, and ucx_perftest (tag_lat, then tag_bw) runs over
#    srm with the packaged files only (srm-run, the module, srmd), in a
#    network namespace of its own;
# 4. `apt-get purge` removes every file it installed, /etc/default/srmd
#    too.
#
# srm-test-timeout: 900
. "$(dirname "$0")/lib.sh"

[ "$(id -u)" = 0 ] || srm_skip "needs root (debootstrap, chroot, mounts)"
srm_require_cmd dpkg-buildpackage dh lintian debootstrap
unset LD_PRELOAD UCX_SRM_SOCKET UCX_SRM_AGENT_PATH

work=$(mktemp -d /tmp/srm-deb.XXXXXX)
roots=$work/roots
on_exit() {
    srm_cleanup
    # debian-chroot.sh unmounts what it mounted; never delete through a
    # mount that is somehow left.
    if [ -n "$(findmnt -rn -o TARGET | grep -F "$work/")" ]; then
        srm_log "cleanup: mounts left under $work; NOT deleting it"
    else
        rm -rf "$work"
    fi
}
trap on_exit EXIT

# --- 1. build ---------------------------------------------------------------
src=$work/ucx-srm
mkdir -p "$src"
if git -C "$SRM_SRCDIR" rev-parse --git-dir >/dev/null 2>&1; then
    (cd "$SRM_SRCDIR" && git ls-files -co --exclude-standard | tar -cf - -T -) |
        tar -xf - -C "$src"
else
    (cd "$SRM_SRCDIR" && tar --exclude='./build*' -cf - .) | tar -xf - -C "$src"
fi
ucx_src=$(ls -d "$SRM_BUILD_DIR"/.ucx-src/ucx-*/ 2>/dev/null | head -n 1)
if ! (cd "$src" && SRM_UCX_SRC=${ucx_src%/} dpkg-buildpackage -b -us -uc) \
        >"$SRM_LOG/build.log" 2>&1; then
    srm_fail "dpkg-buildpackage -b failed"
    srm_show_log "$SRM_LOG/build.log" 25
    srm_done
fi
deb=$(ls "$work"/ucx-srm_*.deb)
ucx_version=$(dpkg-query -W -f='${Version}' libucx0)
depends=$(dpkg-deb -f "$deb" Depends)
contents=$(dpkg-deb -c "$deb" | awk '{print $6}')
moduledir=/usr/lib/$(dpkg-architecture -qDEB_HOST_MULTIARCH)/ucx
if echo "$depends" | grep -qF "libucx0 (= $ucx_version)" &&
   echo "$contents" | grep -qx ".$moduledir/libuct_srm.so.0.0.0" &&
   ! echo "$contents" | grep -q 'libuct_srm\.la$\|libuct_srm\.so$'; then
    srm_pass "built $(basename "$deb"): Depends libucx0 (= $ucx_version), module in $moduledir"
else
    srm_fail "the package is not as expected: Depends: $depends"
    echo "$contents" | sed 's/^/    | /'
fi

# --- 2. lintian ---------------------------------------------------------------
lintian "$work"/ucx-srm_*.changes >"$SRM_LOG/lintian.log" 2>&1
if grep -q '^E:' "$SRM_LOG/lintian.log"; then
    srm_fail "lintian reports errors:"
    grep '^E:' "$SRM_LOG/lintian.log" | sed 's/^/    | /'
else
    srm_pass "lintian: no errors ($(grep -c '^W:' "$SRM_LOG/lintian.log") warnings)"
fi

# --- 3. a clean root ----------------------------------------------------------
suite=$(. /etc/os-release && echo "$VERSION_CODENAME")
# In the root: install, look at it, run ucx_perftest over srm, purge.
cat > "$work/in-root.sh" <<'SH'
#!/bin/bash
set -u
deb=$1 moduledir=$2
step() { echo "== $*"; }
export DEBIAN_FRONTEND=noninteractive
step install
apt-get update -q >/dev/null || exit 10
apt-get install -y -q --no-install-recommends "$deb" ucx-utils man-db iproute2 \
    >/tmp/apt.log 2>&1 || { tail -20 /tmp/apt.log; exit 11; }
dpkg -L ucx-srm | sort > /tmp/files.txt
step user; id srmd || exit 12
step man; man -w srmd || exit 13
step verify
systemd-analyze verify /lib/systemd/system/srmd.service || exit 14
step perftest
# A network namespace of its own: loopback only, no agent of the host.
unshare --net bash -c '
    ip link set lo up || exit 1
    export UCX_TLS=srm UCX_SRM_DEVICES=lo UCX_SRM_IDLE_TIMEOUT=2s
    server=
    trap "[ -n \"\$server\" ] && kill \$server 2>/dev/null" EXIT
    for test in tag_lat tag_bw; do
        srm-run ucx_perftest -t $test -n 200 -s 65536 -p 13370 >/tmp/server.log 2>&1 &
        server=$!
        # the client retries until the server listens (a busy machine)
        for try in 1 2 3 4 5 6 7 8 9 10; do
            sleep 1
            srm-run ucx_perftest -t $test -n 200 -s 65536 -p 13370 127.0.0.1 \
                >/tmp/client.log 2>&1 && break
            grep -q "Connection refused" /tmp/client.log ||
                { cat /tmp/client.log /tmp/server.log; exit 1; }
        done
        wait $server || { cat /tmp/server.log; exit 1; }
        server=
        grep "Final:" /tmp/client.log || { cat /tmp/client.log; exit 1; }
        echo "perftest $test over srm: done"
    done
    pid=$(srmctl status --json 2>/dev/null | sed -n "s/.*\"pid\": *\([0-9]*\).*/\1/p" | head -n 1)
    [ -n "$pid" ] && kill "$pid"
    exit 0' || exit 15
step purge
apt-get purge -y -q ucx-srm >/tmp/purge.log 2>&1 || { cat /tmp/purge.log; exit 16; }
left=""
while read -r f; do
    [ -e "$f" ] && [ ! -d "$f" ] && left="$left $f"
done < /tmp/files.txt
[ -z "$left" ] || { echo "left after purge:$left"; exit 17; }
[ ! -e /etc/default/srmd ] || { echo "/etc/default/srmd left"; exit 17; }
echo "purged: nothing left"
SH
chmod +x "$work/in-root.sh"
mkdir -p "$roots"
if SRM_CHROOT_CACHE=$roots "$SRM_SRCDIR/contrib/debian-chroot.sh" \
        --suite "$suite" --deps none --bind "$work" -- \
        "$work/in-root.sh" "$deb" "$moduledir" >"$SRM_LOG/root.log" 2>&1; then
    srm_pass "in a clean $suite root: installed, srmd user made, man srmd, unit verified, ucx_perftest tag_lat and tag_bw over srm, purged without a trace"
else
    rc=$?
    srm_fail "in a clean $suite root: failed at step '$(grep '^== ' "$SRM_LOG/root.log" | tail -n 1 | cut -c4-)' (exit $rc)"
    srm_show_log "$SRM_LOG/root.log" 30
fi
grep -h "perftest .* over srm: done\|Final:" "$SRM_LOG/root.log" | sed 's/^/    /'
srm_done
