#
# SRM_CHECK_MPI: mpicc, for the MPI correctness program in test/mpi.
#
AC_DEFUN([SRM_CHECK_MPI], [
    AC_PATH_PROG([MPICC], [mpicc], [no])
    AS_IF([test "x$MPICC" != xno], [have_mpi=yes], [have_mpi=no])
    AM_CONDITIONAL([HAVE_MPI], [test "x$have_mpi" = xyes])
])
