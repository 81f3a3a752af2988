dnl SPDX-License-Identifier: BSD-3-Clause
#
# SRM_CHECK_HWLOC: hwloc tells the agent which cores are free to spin on.
#
AC_DEFUN([SRM_CHECK_HWLOC], [
    PKG_CHECK_MODULES([HWLOC], [hwloc >= 2.0], [have_hwloc=yes], [have_hwloc=no])
    AS_IF([test "x$have_hwloc" = xyes],
          [AC_DEFINE([HAVE_HWLOC], [1], [hwloc is available])])
    AM_CONDITIONAL([HAVE_HWLOC], [test "x$have_hwloc" = xyes])
])
