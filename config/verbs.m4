dnl SPDX-License-Identifier: BSD-3-Clause
#
# SRM_CHECK_VERBS: rdma-core's libibverbs for the verbs wire (optional).
#
AC_DEFUN([SRM_CHECK_VERBS], [
    AC_ARG_WITH([verbs], [AS_HELP_STRING([--without-verbs], [build without the verbs wire])],
                [], [with_verbs=check])
    have_verbs=no
    AS_IF([test "x$with_verbs" != xno], [
        AC_CHECK_HEADER([infiniband/verbs.h],
            [AC_CHECK_LIB([ibverbs], [ibv_open_device], [have_verbs=yes])])
        AS_IF([test "x$with_verbs" = xyes -a "x$have_verbs" = xno],
              [AC_MSG_ERROR([--with-verbs given but libibverbs was not found (install libibverbs-dev)])])
    ])
    AS_IF([test "x$have_verbs" = xyes], [
        AC_DEFINE([HAVE_VERBS], [1], [libibverbs is available])
        VERBS_LIBS=-libverbs
        AC_CHECK_DECLS([IBV_QPT_XRC_SEND, ibv_import_pd], [], [], [[#include <infiniband/verbs.h>]])
    ])
    AC_SUBST([VERBS_LIBS])
    AM_CONDITIONAL([HAVE_VERBS], [test "x$have_verbs" = xyes])

    # XRC's verbs objects (domain, per-client SRQ, TGT and INI queue pairs)
    # carry no frames yet: built only when asked for (docs/verbs.md).
    AC_ARG_ENABLE([xrc], [AS_HELP_STRING([--enable-xrc],
                  [build the XRC objects of the verbs wire (experimental: they carry no frames yet)])],
                  [], [enable_xrc=no])
    AS_IF([test "x$enable_xrc" = xyes], [
        AS_IF([test "x$have_verbs" != xyes],
              [AC_MSG_ERROR([--enable-xrc needs the verbs wire (libibverbs-dev)])])
        AS_IF([test "x$ac_cv_have_decl_IBV_QPT_XRC_SEND" != xyes],
              [AC_MSG_ERROR([--enable-xrc: this libibverbs has no XRC verbs (IBV_QPT_XRC_SEND)])])
        AC_DEFINE([ENABLE_XRC], [1], [the verbs wire's XRC objects are built])
    ])
    AM_CONDITIONAL([ENABLE_XRC], [test "x$enable_xrc" = xyes])
])
