/* SPDX-License-Identifier: BSD-3-Clause */
#define _GNU_SOURCE
#include "srm_mirror.h"

#include <errno.h>
#include <sys/mman.h>
#include <unistd.h>

#define SRM_MIRROR_MAX_SIZE (1ull << 32)

static size_t srm_mirror_round(size_t min_size)
{
    size_t size = (size_t)sysconf(_SC_PAGESIZE);

    while (size < min_size) {
        size <<= 1;
    }
    return size;
}

ucs_status_t srm_mirror_create(srm_mirror_t *mirror, size_t min_size)
{
    size_t size;
    uint8_t *base;
    void *half;
    int fd, saved, i;

    mirror->base = NULL;
    mirror->size = 0;
    if (min_size > SRM_MIRROR_MAX_SIZE) {
        errno = EINVAL;
        return UCS_ERR_EXCEEDS_LIMIT;
    }
    size = srm_mirror_round(min_size);
    fd   = memfd_create("srm-stream", MFD_CLOEXEC);
    if (fd < 0) {
        return UCS_ERR_NO_MEMORY;
    }
    /* Address space for both halves first, so that nothing else can be
     * mapped between them. */
    base = (ftruncate(fd, (off_t)size) == 0) ?
                   mmap(NULL, 2 * size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS,
                        -1, 0) :
                   MAP_FAILED;
    for (i = 0; (base != MAP_FAILED) && (i < 2); ++i) {
        half = mmap(base + i * size, size, PROT_READ | PROT_WRITE,
                    MAP_SHARED | MAP_FIXED, fd, 0);
        if (half == MAP_FAILED) {
            saved = errno;
            munmap(base, 2 * size);
            errno = saved;
            base  = MAP_FAILED;
        }
    }
    saved = errno;
    close(fd); /* the mappings keep the memory */
    if (base == MAP_FAILED) {
        errno = saved;
        return UCS_ERR_NO_MEMORY;
    }
    mirror->base = base;
    mirror->size = size;
    return UCS_OK;
}

void srm_mirror_destroy(srm_mirror_t *mirror)
{
    if (mirror->base != NULL) {
        munmap(mirror->base, 2 * mirror->size);
    }
    mirror->base = NULL;
    mirror->size = 0;
}
