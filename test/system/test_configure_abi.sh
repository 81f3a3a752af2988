#!/bin/bash
#
# test_configure_abi: configure takes UCX's structure-sizing macros from the
# installed UCX's ucx_info -b:
#  - as that ucx_info says them (ENABLE_ASSERT, ENABLE_MT ... in config.h);
#  - a UCX built without assertions (its release builds) prints no
#    ENABLE_ASSERT line at all: configure then leaves it undefined, as UCX's
#    headers expect, instead of stopping (it stopped before);
#  - a ucx_info that names no ENABLE_MT stops configure, saying so;
#  - without --with-ucx-src configure takes the tree in .ucx-src of the
#    build directory, and with none there stops, naming
#    contrib/get-ucx-src.sh: it fetches nothing and touches no apt source.
# The stand-in ucx_info is the real one with lines filtered out of -b.
#
. "$(dirname "$0")/lib.sh"

ucx_src=$(sed -n 's/^UCX_SRC_DIR = //p' "$SRM_BUILD_DIR/Makefile")
ucx_info=$(sed -n 's/^UCX_INFO = //p' "$SRM_BUILD_DIR/Makefile")
[ -d "$ucx_src" ] || srm_skip "no UCX source tree in $SRM_BUILD_DIR/Makefile"
[ -x "$ucx_info" ] || srm_skip "no ucx_info in $SRM_BUILD_DIR/Makefile"

# configure_with NAME FILTER: configure in $SRM_LOG/NAME with a ucx_info
# whose -b output lacks the lines FILTER (a grep -E pattern) matches.
configure_with() {
    local dir=$SRM_LOG/$1 filter=$2
    rm -rf "$dir"
    mkdir -p "$dir"
    cat >"$dir/ucx_info" <<SH
#!/bin/sh
if [ "\$1" = -b ]; then
    "$ucx_info" -b | grep -Ev '$filter'
else
    exec "$ucx_info" "\$@"
fi
SH
    chmod +x "$dir/ucx_info"
    (cd "$dir" && "$SRM_SRCDIR/configure" --with-ucx-src="$ucx_src" \
        UCX_INFO="$dir/ucx_info" >configure.out 2>&1)
}

defined() { # MACRO CONFIG_H: the value config.h gives MACRO, or "undef"
    awk -v m="$1" '$1 == "#define" && $2 == m { print $3; f = 1; exit }
                   $2 == "#undef" && $3 == m { print "undef"; f = 1; exit }
                   END { if (!f) print "absent" }' "$2"
}

want_assert=$("$ucx_info" -b | awk '$1 == "#define" && $2 == "ENABLE_ASSERT" { print $3 }')
want_mt=$("$ucx_info" -b | awk '$1 == "#define" && $2 == "ENABLE_MT" { print $3 }')

if configure_with as-is '^$'; then
    got_assert=$(defined ENABLE_ASSERT "$SRM_LOG/as-is/config.h")
    got_mt=$(defined ENABLE_MT "$SRM_LOG/as-is/config.h")
    if [ "$got_assert" = "${want_assert:-undef}" ] && [ "$got_mt" = "$want_mt" ]; then
        srm_pass "config.h has ucx_info's ENABLE_ASSERT ($got_assert) and ENABLE_MT ($got_mt)"
    else
        srm_fail "config.h: ENABLE_ASSERT $got_assert ENABLE_MT $got_mt," \
                 "ucx_info -b: ${want_assert:-none} $want_mt"
    fi
else
    srm_fail "configure failed: $(tail -n 3 "$SRM_LOG/as-is/configure.out")"
fi

if configure_with no-assert 'define ENABLE_ASSERT'; then
    got=$(defined ENABLE_ASSERT "$SRM_LOG/no-assert/config.h")
    if [ "$got" = undef ]; then
        srm_pass "a UCX without assertions: ENABLE_ASSERT left undefined"
    else
        srm_fail "a UCX without assertions: ENABLE_ASSERT is $got in config.h"
    fi
else
    srm_fail "a UCX without assertions stops configure:" \
             "$(grep -m 1 'error:' "$SRM_LOG/no-assert/configure.out")"
fi

if configure_with no-mt 'define ENABLE_MT'; then
    srm_fail "a ucx_info without ENABLE_MT: configure went on"
elif grep -q 'does not say ENABLE_MT' "$SRM_LOG/no-mt/configure.out"; then
    srm_pass "a ucx_info without ENABLE_MT: configure stops, naming it"
else
    srm_fail "a ucx_info without ENABLE_MT: $(tail -n 2 "$SRM_LOG/no-mt/configure.out")"
fi
# configure fetches nothing: without --with-ucx-src it looks in .ucx-src of
# the build directory (where contrib/get-ucx-src.sh puts the tree) and,
# finding none, stops saying how to get one; it asked apt before.
plain() { # NAME: configure in $SRM_LOG/NAME without --with-ucx-src
    (cd "$SRM_LOG/$1" && "$SRM_SRCDIR/configure" >configure.out 2>&1)
}
apt_sources=$(ls -l --time-style=+%s.%N /etc/apt/sources.list.d 2>/dev/null | md5sum)
rm -rf "$SRM_LOG/no-src" && mkdir -p "$SRM_LOG/no-src"
if plain no-src; then
    srm_fail "configure without a UCX source tree went on"
elif grep -q 'error: no UCX source tree.*get-ucx-src.sh' "$SRM_LOG/no-src/configure.out" &&
     ! grep -q 'get-ucx-src.sh:' "$SRM_LOG/no-src/configure.out" &&
     [ "$(ls -l --time-style=+%s.%N /etc/apt/sources.list.d 2>/dev/null | md5sum)" = "$apt_sources" ]; then
    srm_pass "no UCX source tree: configure stops, naming contrib/get-ucx-src.sh, and runs nothing of apt's"
else
    srm_fail "no UCX source tree: $(grep -m 2 'get-ucx-src\|error' "$SRM_LOG/no-src/configure.out")"
fi
rm -rf "$SRM_LOG/dot-src" && mkdir -p "$SRM_LOG/dot-src/.ucx-src"
ln -s "$ucx_src" "$SRM_LOG/dot-src/.ucx-src/ucx-tree"
if plain dot-src &&
   grep -qxF "UCX_SRC_DIR = $(cd "$SRM_LOG/dot-src/.ucx-src/ucx-tree" && pwd)" \
       "$SRM_LOG/dot-src/Makefile"; then
    srm_pass "a tree in .ucx-src of the build directory: configure takes it"
else
    srm_fail "a tree in .ucx-src: $(tail -n 2 "$SRM_LOG/dot-src/configure.out")"
fi
srm_done
