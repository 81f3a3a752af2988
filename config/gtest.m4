dnl SPDX-License-Identifier: BSD-3-Clause
#
# SRM_CHECK_GTEST: googletest for `make check` (Debian: libgtest-dev), and
# the C++ standard it needs: C++14 (bookworm, trixie) or C++17 (sid's
# googletest 1.15 refuses anything older). GTEST_CXXSTD is that -std flag.
#
AC_DEFUN([SRM_CHECK_GTEST], [
    AC_LANG_PUSH([C++])
    have_gtest=no
    GTEST_CXXSTD=-std=c++14
    srm_save_LIBS=$LIBS srm_save_CXXFLAGS=$CXXFLAGS
    LIBS="$LIBS -lgtest -pthread"
    for srm_std in -std=c++14 -std=c++17; do
        AC_MSG_CHECKING([for googletest with $srm_std])
        CXXFLAGS="$srm_save_CXXFLAGS $srm_std"
        AC_LINK_IFELSE([AC_LANG_PROGRAM([[#include <gtest/gtest.h>]],
                                        [[testing::InitGoogleTest();]])],
                       [have_gtest=yes])
        AC_MSG_RESULT([$have_gtest])
        AS_IF([test "x$have_gtest" = xyes], [GTEST_CXXSTD=$srm_std; break])
    done
    LIBS=$srm_save_LIBS CXXFLAGS=$srm_save_CXXFLAGS
    AC_LANG_POP([C++])
    AC_SUBST([GTEST_CXXSTD])
    AM_CONDITIONAL([HAVE_GTEST], [test "x$have_gtest" = xyes])
])
