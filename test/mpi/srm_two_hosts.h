/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * For the 4-rank MPI tests that need ranks 0,1 on one host and 2,3 on
 * another: gathers the host names and says whether the placement is right.
 */
#ifndef SRM_TWO_HOSTS_H
#define SRM_TWO_HOSTS_H

#include <mpi.h>
#include <stdio.h>
#include <string.h>

/* 0 if ranks 0,1 share a host and 2,3 share another; names[] filled. */
static int srm_two_hosts(const char *prog, int rank,
                         char names[4][MPI_MAX_PROCESSOR_NAME])
{
    char name[MPI_MAX_PROCESSOR_NAME];
    int len;

    memset(name, 0, sizeof(name));
    MPI_Get_processor_name(name, &len);
    MPI_Allgather(name, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, names,
                  MPI_MAX_PROCESSOR_NAME, MPI_CHAR, MPI_COMM_WORLD);
    if (strcmp(names[0], names[1]) || strcmp(names[2], names[3]) ||
        !strcmp(names[0], names[2])) {
        if (rank == 0) {
            printf("%s: FAILED (placement %s %s %s %s: want ranks 0,1 on one "
                   "host and 2,3 on another)\n", prog, names[0], names[1],
                   names[2], names[3]);
        }
        return -1;
    }
    return 0;
}

#endif
