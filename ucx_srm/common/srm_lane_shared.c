/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The direct lane's shared memory and its lock (srm_lane_shared.h).
 */
#define _GNU_SOURCE
#include "srm_lane_shared.h"
#include "srm_shm.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define SRM_LANE_SPIN_NS 50000L /* the agent spins this long for the lock */

static int srm_lane_init_lock(srm_lane_t *lane)
{
    pthread_mutexattr_t attr;
    int ret;

    ret = pthread_mutexattr_init(&attr);
    if (ret != 0) {
        return ret;
    }
    ret = pthread_mutexattr_setpshared(&attr, PTHREAD_PROCESS_SHARED);
    if (ret == 0) {
        ret = pthread_mutexattr_setrobust(&attr, PTHREAD_MUTEX_ROBUST);
    }
    if (ret == 0) {
        ret = pthread_mutex_init(&lane->lock, &attr);
    }
    pthread_mutexattr_destroy(&attr);
    return ret;
}

static size_t srm_lane_bytes(uint32_t log_size)
{
    return sizeof(srm_lane_t) + log_size;
}

int srm_lane_create(const char *name, uint32_t log_size, int *fd_p,
                    srm_lane_t **lane_p)
{
    const int seals = F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL;
    size_t size     = srm_lane_bytes(log_size);
    srm_lane_t *lane;
    int fd, ret;

    fd = memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (fd < 0) {
        return -1;
    }
    if ((ftruncate(fd, (off_t)size) != 0) ||
        (fcntl(fd, F_ADD_SEALS, seals) != 0)) {
        goto err_close;
    }
    lane = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (lane == MAP_FAILED) {
        goto err_close;
    }
    ret = srm_lane_init_lock(lane);
    if (ret != 0) {
        munmap(lane, size);
        errno = ret;
        goto err_close;
    }
    lane->version  = SRM_LANE_VERSION;
    lane->log_size = log_size;
    lane->room     = log_size;
    srm_store_release(&lane->magic, SRM_LANE_MAGIC);
    *fd_p   = fd;
    *lane_p = lane;
    return 0;

err_close:
    ret = errno;
    close(fd);
    errno = ret;
    return -1;
}

int srm_lane_map(int fd, srm_lane_t **lane_p, uint32_t *log_size_p)
{
    srm_lane_t *lane;
    struct stat st;
    uint32_t log_size;

    if ((srm_fd_check_sealed(fd, sizeof(*lane)) != 0) ||
        (fstat(fd, &st) != 0)) {
        return -1;
    } else if ((size_t)st.st_size > srm_lane_bytes(SRM_LANE_BULK_LOG_SIZE)) {
        errno = EPROTO;
        return -1;
    }
    lane = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED,
                fd, 0);
    if (lane == MAP_FAILED) {
        return -1;
    }
    log_size = srm_load_relaxed(&lane->log_size);
    if ((srm_load_acquire(&lane->magic) != SRM_LANE_MAGIC) ||
        (lane->version != SRM_LANE_VERSION) ||
        (srm_lane_bytes(log_size) != (size_t)st.st_size)) {
        munmap(lane, (size_t)st.st_size);
        errno = EPROTO;
        return -1;
    }
    *lane_p     = lane;
    *log_size_p = log_size;
    return 0;
}

void srm_lane_unmap(srm_lane_t *lane, uint32_t log_size)
{
    munmap(lane, srm_lane_bytes(log_size));
}

static int srm_lane_lock_result(srm_lane_t *lane, int ret)
{
    if (ret == 0) {
        return 0;
    } else if (ret == EOWNERDEAD) {
        pthread_mutex_consistent(&lane->lock);
        srm_store_relaxed(&lane->open, 0);
        lane->owner_died = 1;
        return 1;
    }
    errno = ret;
    return -1;
}

int srm_lane_trylock(srm_lane_t *lane)
{
    return srm_lane_lock_result(lane, pthread_mutex_trylock(&lane->lock));
}

int srm_lane_lock_timed(srm_lane_t *lane, int timeout_ms)
{
    struct timespec deadline, now;
    int ret;

    /* Clients hold it for a system call or two, and take no new turn
     * while the agent waits: waiting for one in the futex would cost the
     * agent a wakeup, which is dearer than spinning. */
    srm_store_relaxed(&lane->agent_waits, 1);
    srm_fence();
    clock_gettime(CLOCK_MONOTONIC, &deadline);
    do {
        ret = pthread_mutex_trylock(&lane->lock);
        if (ret != EBUSY) {
            srm_store_relaxed(&lane->agent_waits, 0);
            return srm_lane_lock_result(lane, ret);
        }
        clock_gettime(CLOCK_MONOTONIC, &now);
    } while (((now.tv_sec - deadline.tv_sec) * 1000000000L +
              (now.tv_nsec - deadline.tv_nsec)) < SRM_LANE_SPIN_NS);

    clock_gettime(CLOCK_REALTIME, &deadline); /* timedlock's clock */
    deadline.tv_sec  += timeout_ms / 1000;
    deadline.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
    if (deadline.tv_nsec >= 1000000000L) {
        deadline.tv_sec  += 1;
        deadline.tv_nsec -= 1000000000L;
    }
    ret = pthread_mutex_timedlock(&lane->lock, &deadline);
    srm_store_relaxed(&lane->agent_waits, 0);
    return srm_lane_lock_result(lane, ret);
}
