dnl SPDX-License-Identifier: BSD-3-Clause
#
# SRM_CHECK_MPI: mpicc, for the MPI correctness programs in test/mpi (built
# by the system tests) and the flags to build MPI + UCP tools with the
# normal compiler (automake has one CC per Makefile): MPI_CFLAGS and
# MPI_LIBS from the wrapper (Open MPI: --showme, MPICH: -compile-info),
# UCP_CFLAGS and UCP_LIBS from pkg-config (ucx). HAVE_MPI_TOOLS when all
# of it links.
#
AC_DEFUN([SRM_CHECK_MPI], [
    AC_PATH_PROG([MPICC], [mpicc], [no])
    AS_IF([test "x$MPICC" != xno], [have_mpi=yes], [have_mpi=no])
    AM_CONDITIONAL([HAVE_MPI], [test "x$have_mpi" = xyes])

    have_mpi_tools=no
    AS_IF([test "x$have_mpi" = xyes], [
        AC_MSG_CHECKING([the compile and link flags of $MPICC])
        AS_IF([MPI_CFLAGS=$("$MPICC" --showme:compile 2>/dev/null) &&
               MPI_LIBS=$("$MPICC" --showme:link 2>/dev/null)], [],
              [MPI_CFLAGS=$("$MPICC" -compile-info 2>/dev/null | cut -d' ' -f2-)
               MPI_LIBS=$("$MPICC" -link-info 2>/dev/null | cut -d' ' -f2-)])
        AC_MSG_RESULT([$MPI_CFLAGS $MPI_LIBS])
        PKG_CHECK_MODULES([UCP], [ucx], [
            UCP_CFLAGS=$(echo " $UCP_CFLAGS" | sed 's/ -I */ -isystem /g')
            srm_save_CFLAGS=$CFLAGS srm_save_LIBS=$LIBS
            CFLAGS="$CFLAGS $MPI_CFLAGS $UCP_CFLAGS"
            LIBS="$MPI_LIBS $UCP_LIBS $LIBS"
            AC_MSG_CHECKING([whether MPI and UCP programs link])
            AC_LINK_IFELSE([AC_LANG_PROGRAM([[#include <mpi.h>
#include <ucp/api/ucp.h>]], [[MPI_Init(0, 0); ucp_cleanup(0);]])],
                [have_mpi_tools=yes])
            AC_MSG_RESULT([$have_mpi_tools])
            CFLAGS=$srm_save_CFLAGS LIBS=$srm_save_LIBS
        ], [AC_MSG_WARN([no pkg-config ucx (libucx-dev): srm_flowgen is not built])])
    ])
    AC_SUBST([MPI_CFLAGS])
    AC_SUBST([MPI_LIBS])
    AM_CONDITIONAL([HAVE_MPI_TOOLS], [test "x$have_mpi_tools" = xyes])
])
