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
    # The versions ucx_srm/common/srm_ucx_compat.h knows.
    AS_CASE([$UCX_VERSION],
        [1.1[[3-8]].*], [],
        [AC_MSG_ERROR([UCX $UCX_VERSION found; ucx-srm builds with UCX 1.13 to 1.18 (ucx_srm/common/srm_ucx_compat.h)])])

    AC_ARG_WITH([ucx-src],
        [AS_HELP_STRING([--with-ucx-src=DIR],
            [UCX source tree of the installed version (default: fetched with contrib/get-ucx-src.sh into .ucx-src)])],
        [], [with_ucx_src=fetch])

    AS_IF([test "x$with_ucx_src" = xfetch], [
        AC_MSG_NOTICE([no --with-ucx-src: fetching UCX $UCX_VERSION source with contrib/get-ucx-src.sh])
        with_ucx_src=$("$srcdir/contrib/get-ucx-src.sh" "$(pwd)/.ucx-src" | tail -n 1) ||
            AC_MSG_ERROR([could not obtain the UCX source tree; pass --with-ucx-src=DIR])
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

    # Where the installed libucs lives: UCX looks for modules in ./ucx next to it.
    srm_ucx_libdir=$($PKG_CONFIG --variable=libdir ucx-uct)
    srm_ucx_moduledir="$srm_ucx_libdir/ucx"
    AC_SUBST([srm_ucx_moduledir])
    AC_DEFINE_UNQUOTED([SRM_UCX_VERSION], ["$UCX_VERSION"], [UCX version built against])
])
