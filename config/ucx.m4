dnl SPDX-License-Identifier: BSD-3-Clause
#
# SRM_CHECK_UCX: finds the installed UCX with pkg-config and the matching UCX
# source tree, whose internal headers (uct/base, ucs/debug, ...) a transport
# needs but Debian does not install. The tree must be the same version as the
# library: UCX has no run-time check of a module's ABI.
#
AC_DEFUN([SRM_CHECK_UCX], [
    PKG_CHECK_MODULES([UCX], [ucx-uct], [],
        [AC_MSG_ERROR([UCX not found by pkg-config (ucx-uct); install libucx-dev (contrib/install-deps.sh)])])
    UCX_VERSION=$($PKG_CONFIG --modversion ucx-uct)
    # A UCX outside /usr: its headers' own warnings are not ours either.
    UCX_CFLAGS=$(echo " $UCX_CFLAGS" | sed 's/ -I */ -isystem /g')
    # The versions ucx_srm/common/srm_ucx_compat.h knows.
    AS_CASE([$UCX_VERSION],
        [1.1[[3-9]].*|1.2[[0-3]].*], [],
        [AC_MSG_ERROR([UCX $UCX_VERSION found; ucx-srm builds with UCX 1.13 to 1.23 (ucx_srm/common/srm_ucx_compat.h)])])

    # configure fetches nothing: contrib/get-ucx-src.sh does (contrib/build.sh
    # calls it), into .ucx-src of the build directory, where this looks.
    AC_ARG_WITH([ucx-src],
        [AS_HELP_STRING([--with-ucx-src=DIR],
            [UCX source tree of the installed version (default: the one contrib/get-ucx-src.sh put in .ucx-src of the build directory)])],
        [], [with_ucx_src=look])

    AS_IF([test "x$with_ucx_src" = xlook], [
        for srm_dir in .ucx-src .ucx-src/ucx-$UCX_VERSION .ucx-src/*; do
            AS_IF([test -f "$srm_dir/src/uct/base/uct_iface.h"],
                  [with_ucx_src=$srm_dir; break])
        done
        AS_IF([test "x$with_ucx_src" = xlook],
              [AC_MSG_ERROR([no UCX source tree: srm builds against UCX's internal headers, so it needs the source of the installed UCX $UCX_VERSION. Fetch it with $srcdir/contrib/get-ucx-src.sh .ucx-src (Debian's source package; contrib/build.sh does this for you), or pass --with-ucx-src=DIR for a tree of your own])])
    ])
    AS_IF([test ! -f "$with_ucx_src/src/uct/base/uct_iface.h"],
          [AC_MSG_ERROR([$with_ucx_src is not a UCX source tree (no src/uct/base/uct_iface.h)])])

    AC_MSG_CHECKING([version of the UCX source tree])
    srm_src_ver=$(for part in major minor patch; do
                      sed -n "s/^def@&t@ine(.ucx_ver_$part., *\([[0-9]]*\)).*/\1/p" \
                          "$with_ucx_src/configure.ac"
                  done | paste -sd.)
    AC_MSG_RESULT([$srm_src_ver])
    AS_IF([test "x$srm_src_ver" != "x$UCX_VERSION"],
          [AC_MSG_ERROR([UCX source tree $with_ucx_src is version $srm_src_ver but the installed UCX is $UCX_VERSION; they must match])])

    UCX_SRC_DIR=$(cd "$with_ucx_src" && pwd)
    # As system headers: their own warnings (UCX 1.18's compiler_def.h
    # under -Wsign-compare) are not ours to fail on.
    UCX_SRC_CPPFLAGS="-isystem $UCX_SRC_DIR/src"
    AC_SUBST([UCX_VERSION])
    AC_SUBST([UCX_SRC_DIR])
    AC_SUBST([UCX_SRC_CPPFLAGS])

    # The internal headers size several structures by macros of UCX's own
    # config.h, which is not installed; ucx_info -b prints them. The
    # ucx_info must be the installed library's (test/gtest/test_abi.cc
    # checks the sizes against it at run time). "@%:@" is m4's "#". Without
    # LD_PRELOAD: a module preloaded for another UCX would stop it. UCX
    # leaves ENABLE_ASSERT undefined, not 0, when built without assertions
    # (its release builds), and its headers test whether it is defined.
    AC_ARG_VAR([UCX_INFO], [ucx_info of the installed UCX (default: PREFIX/bin/ucx_info of pkg-config's ucx-uct, else the PATH's)])
    AS_IF([test -z "$UCX_INFO"], [
        UCX_INFO="$($PKG_CONFIG --variable=prefix ucx-uct)/bin/ucx_info"
        AS_IF([test -x "$UCX_INFO"], [], [UCX_INFO=
                                           AC_PATH_PROG([UCX_INFO], [ucx_info])])
    ])
    AS_IF([test -z "$UCX_INFO" || test ! -x "$UCX_INFO"],
          [AC_MSG_ERROR([ucx_info of UCX $UCX_VERSION not found (install ucx-utils, or pass UCX_INFO=PATH): it tells how UCX was built])])
    srm_info_ver=$(env -u LD_PRELOAD "$UCX_INFO" -v | sed -n 's/^@%:@ *\(Library \)*[[Vv]]ersion:* *\([[0-9.]]*\).*/\2/p' | head -n 1)
    AS_IF([test "x$srm_info_ver" != "x$UCX_VERSION"],
          [AC_MSG_ERROR([$UCX_INFO is UCX ${srm_info_ver:-of unknown version}, pkg-config found $UCX_VERSION; pass the matching one as UCX_INFO=PATH])])
    for srm_macro in ENABLE_ASSERT ENABLE_PARAMS_CHECK ENABLE_DEBUG_DATA \
                     ENABLE_MT NVALGRIND UCS_MAX_LOG_LEVEL; do
        AC_MSG_CHECKING([UCX's $srm_macro])
        srm_value=$(env -u LD_PRELOAD "$UCX_INFO" -b | awk -v m="$srm_macro" '$[]1 == "@%:@define" && $[]2 == m { print $[]3; exit }')
        AS_IF([test -z "$srm_value"],
              [AS_CASE([$srm_macro],
                  [ENABLE_ASSERT], [AC_MSG_RESULT([not defined])
                                    continue],
                  [NVALGRIND], [srm_value=1],
                  [UCS_MAX_LOG_LEVEL], [srm_value=UCS_LOG_LEVEL_TRACE_POLL],
                  [AC_MSG_ERROR([$UCX_INFO -b does not say $srm_macro])])])
        AC_MSG_RESULT([$srm_value])
        AC_DEFINE_UNQUOTED([$srm_macro], [$srm_value])
    done
    AH_TEMPLATE([ENABLE_ASSERT], [UCX ABI: assertions compiled in])
    AH_TEMPLATE([ENABLE_PARAMS_CHECK], [UCX ABI: parameter checks])
    AH_TEMPLATE([ENABLE_DEBUG_DATA], [UCX ABI: debug data in objects])
    AH_TEMPLATE([ENABLE_MT], [UCX ABI: multi-threading support])
    AH_TEMPLATE([NVALGRIND], [UCX ABI: no valgrind annotations])
    AH_TEMPLATE([UCS_MAX_LOG_LEVEL], [UCX ABI: highest log level compiled in])

    # Where the installed libucs lives: UCX looks for modules in ./ucx next
    # to it, and from 1.22 loads any libuct_<name> it finds there.
    srm_ucx_libdir=$($PKG_CONFIG --variable=libdir ucx-uct)
    srm_ucx_moduledir="$srm_ucx_libdir/ucx"
    AC_SUBST([srm_ucx_moduledir])
    # From 1.22 the default is UCX's own directory, unless a --prefix was
    # given that does not hold it: an install of one's own (a home
    # directory, distcheck) stays in its prefix, and srm-run points
    # UCX_PLUGIN_PATH at it.
    AC_ARG_WITH([moduledir],
        [AS_HELP_STRING([--with-moduledir=DIR],
            [where make install puts libuct_srm (default: with UCX 1.22 and later, the installed UCX's module directory, which it scans, unless --prefix names another tree; else LIBDIR/ucx, from where srm-run loads it)])],
        [srmmoduledir=$with_moduledir],
        [srmmoduledir='${libdir}/ucx'
         AS_CASE([$UCX_VERSION],
            [1.1[[3-9]].*|1.2[[01]].*], [],
            [AS_CASE([$prefix],
                [NONE], [srmmoduledir=$srm_ucx_moduledir],
                [# compared as physical paths too: a prefix may be a
                 # symlink to UCX's tree, or UCX's libdir may be one
                 srm_prefix_phys=$(cd "$prefix" 2>/dev/null && pwd -P)
                 srm_ucx_libdir_phys=$(cd "$srm_ucx_libdir" 2>/dev/null && pwd -P)
                 AS_CASE([$srm_ucx_moduledir],
                    ["$prefix"/*], [srmmoduledir=$srm_ucx_moduledir],
                    [AS_IF([test -n "$srm_prefix_phys"],
                        [AS_CASE([$srm_ucx_libdir_phys/],
                            ["$srm_prefix_phys"/*],
                            [srmmoduledir=$srm_ucx_moduledir])])])])])])
    AC_SUBST([srmmoduledir])
    AC_DEFINE_UNQUOTED([SRM_UCX_VERSION], ["$UCX_VERSION"], [UCX version built against])
])
