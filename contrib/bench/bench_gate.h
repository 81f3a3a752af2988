/*
 * bench_gate.h - where an MPI benchmark rank waits for its job's turn.
 *
 * eval.sh --smoke runs its experiments at the same time and lets only one
 * job busy-poll at a time (turn_take in lib.sh).  Starting an Open MPI job
 * (mpirun, the orted daemons, MPI_Init) takes most of a second and does not
 * busy-poll, so it need not wait for the turn: the harness locks a gate
 * file, starts the job with the file named in SRM_BENCH_GATE, and unlocks
 * it when the job's turn comes.  A rank calls bench_gate_wait() right after
 * MPI_Init: it appends one byte to the file (the harness takes the turn
 * once every rank has) and sleeps in flock() until the gate opens.
 * Without SRM_BENCH_GATE (every measured run) it returns at once.
 */
#ifndef SRM_BENCH_GATE_H
#define SRM_BENCH_GATE_H

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

static inline void bench_gate_wait(const char *prog)
{
    const char *path = getenv("SRM_BENCH_GATE");
    int fd, ret;

    if ((path == NULL) || (path[0] == '\0')) {
        return;
    }
    fd = open(path, O_WRONLY | O_APPEND | O_CLOEXEC);
    if ((fd < 0) || (write(fd, ".", 1) != 1)) {
        /* Only the schedule suffers: the run itself is still correct. */
        fprintf(stderr, "%s: warning: cannot write to SRM_BENCH_GATE %s "
                "(%s); not waiting for the turn\n", prog, path,
                strerror(errno));
        if (fd >= 0) {
            close(fd);
        }
        return;
    }
    do {
        ret = flock(fd, LOCK_SH);
    } while ((ret < 0) && (errno == EINTR));
    if (ret < 0) {
        fprintf(stderr, "%s: warning: cannot lock SRM_BENCH_GATE %s (%s); "
                "not waiting for the turn\n", prog, path, strerror(errno));
    }
    close(fd);
}

#endif
