#
# SRM_CHECK_GTEST: googletest for `make check` (Debian: libgtest-dev).
#
AC_DEFUN([SRM_CHECK_GTEST], [
    AC_LANG_PUSH([C++])
    have_gtest=no
    srm_save_LIBS=$LIBS
    LIBS="$LIBS -lgtest -pthread"
    AC_MSG_CHECKING([for googletest])
    AC_LINK_IFELSE([AC_LANG_PROGRAM([[#include <gtest/gtest.h>]],
                                    [[testing::InitGoogleTest();]])],
                   [have_gtest=yes])
    AC_MSG_RESULT([$have_gtest])
    LIBS=$srm_save_LIBS
    AC_LANG_POP([C++])
    AM_CONDITIONAL([HAVE_GTEST], [test "x$have_gtest" = xyes])
])
