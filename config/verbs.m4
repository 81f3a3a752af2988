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
])
