#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
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
#    contrib/get-ucx-src.sh: it fetches nothing and touches no apt source;
#  - what does not fit stops it, naming what: a UCX older than 1.13 or newer
#    than 1.23, a source tree of another version, a ucx_info of another
#    version;
#  - with no ucx_info under pkg-config's prefix it takes the PATH's.
# The stand-in ucx_info is the real one with lines filtered out of -b, or
# with another version; the stand-in pkg-config is the real one with
# another version or prefix for ucx-uct.
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
# fake_pkg_config DIR VERSION PREFIX: a pkg-config in DIR that says VERSION
# and PREFIX for ucx-uct (empty: the real answer) and the rest as is.
real_pkg_config=$(command -v pkg-config)
fake_pkg_config() {
    mkdir -p "$1"
    cat >"$1/pkg-config" <<SH
#!/bin/sh
case " \$* " in
*" --modversion ucx-uct "*) [ -n "$2" ] && { echo "$2"; exit 0; } ;;
*" --variable=prefix ucx-uct "*) [ -n "$3" ] && { echo "$3"; exit 0; } ;;
esac
exec "$real_pkg_config" "\$@"
SH
    chmod +x "$1/pkg-config"
}
# stops NAME WHAT PATTERN [configure args...]: configure in $SRM_LOG/NAME
# must fail with an error matching PATTERN.
stops() {
    local name=$1 what=$2 pattern=$3 dir=$SRM_LOG/$1
    shift 3
    if (cd "$dir" && "$SRM_SRCDIR/configure" "$@" >configure.out 2>&1); then
        srm_fail "$what: configure went on"
    elif grep -Eq "error: .*$pattern" "$dir/configure.out"; then
        srm_pass "$what: configure stops: $(grep -m 1 -o 'error: .*' "$dir/configure.out" | cut -c1-110)"
    else
        srm_fail "$what: $(tail -n 2 "$dir/configure.out")"
    fi
}
for v in 1.12.1 1.24.0 2.0.0; do
    rm -rf "$SRM_LOG/ucx-$v" && fake_pkg_config "$SRM_LOG/ucx-$v" "$v" ""
    stops "ucx-$v" "UCX $v" "UCX $v found; ucx-srm builds with UCX 1.13 to 1.23" \
        --with-ucx-src="$ucx_src" PKG_CONFIG="$SRM_LOG/ucx-$v/pkg-config"
done

installed=$("$real_pkg_config" --modversion ucx-uct)
other_tree=$SRM_LOG/other-tree/ucx
rm -rf "$SRM_LOG/other-tree" && mkdir -p "$other_tree/src/uct/base"
touch "$other_tree/src/uct/base/uct_iface.h"
printf 'define([ucx_ver_major], 1)\ndefine([ucx_ver_minor], 99)\ndefine([ucx_ver_patch], 0)\n' \
    >"$other_tree/configure.ac"
stops other-tree "a source tree of UCX 1.99.0" \
    "version 1.99.0 but the installed UCX is $installed" --with-ucx-src="$other_tree"

rm -rf "$SRM_LOG/other-info" && mkdir -p "$SRM_LOG/other-info"
printf '#!/bin/sh\necho "# Library version: 1.99.0"\n' >"$SRM_LOG/other-info/ucx_info"
chmod +x "$SRM_LOG/other-info/ucx_info"
stops other-info "a ucx_info of UCX 1.99.0" "is UCX 1.99.0, pkg-config found $installed" \
    --with-ucx-src="$ucx_src" UCX_INFO="$SRM_LOG/other-info/ucx_info"

# pkg-config's prefix without bin/ucx_info: the PATH's is taken.
dir=$SRM_LOG/path-info
rm -rf "$dir" && mkdir -p "$dir/bin" "$dir/empty-prefix"
fake_pkg_config "$dir" "" "$dir/empty-prefix"
ln -s "$ucx_info" "$dir/bin/ucx_info"
if (cd "$dir" && env -u UCX_INFO PATH="$dir/bin:$PATH" "$SRM_SRCDIR/configure" \
        --with-ucx-src="$ucx_src" PKG_CONFIG="$dir/pkg-config" >configure.out 2>&1) &&
   grep -qxF "UCX_INFO = $dir/bin/ucx_info" "$dir/Makefile"; then
    srm_pass "no ucx_info under pkg-config's prefix: the PATH's is taken"
else
    srm_fail "no ucx_info under pkg-config's prefix: $(grep -m1 '^UCX_INFO' "$dir/Makefile" 2>/dev/null) $(tail -n 2 "$dir/configure.out")"
fi
srm_done
