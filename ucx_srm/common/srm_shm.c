/* SPDX-License-Identifier: BSD-3-Clause */
#define _GNU_SOURCE
#include "srm_shm.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define SRM_SHM_MIN_RING (4u * 1024u)
#define SRM_SHM_MAX_RING (1ull << 30)

static int srm_shm_ring_size_valid(uint64_t size)
{
    return (size >= SRM_SHM_MIN_RING) && (size <= SRM_SHM_MAX_RING) &&
           ((size & (size - 1)) == 0);
}

static uint64_t srm_shm_align(uint64_t n)
{
    return (n + SRM_SHM_ALIGN - 1) & ~(uint64_t)(SRM_SHM_ALIGN - 1);
}

int srm_shm_layout_init(srm_shm_layout_t *layout, uint32_t num_tx_rings,
                        uint64_t tx_ring_size, uint64_t rx_ring_size)
{
    uint64_t offset;
    uint32_t i;

    if ((num_tx_rings == 0) || (num_tx_rings > SRM_SHM_MAX_TX_RINGS) ||
        !srm_shm_ring_size_valid(tx_ring_size) ||
        !srm_shm_ring_size_valid(rx_ring_size)) {
        errno = EINVAL;
        return -1;
    }

    memset(layout, 0, sizeof(*layout));
    layout->num_tx_rings = num_tx_rings;
    layout->tx_ring_size = tx_ring_size;
    layout->rx_ring_size = rx_ring_size;

    offset = srm_shm_align(sizeof(srm_shm_ctl_t));
    for (i = 0; i < num_tx_rings; ++i) {
        layout->tx_offset[i] = offset;
        offset              += tx_ring_size;
    }
    layout->rx_offset  = offset;
    layout->total_size = offset + rx_ring_size;
    return 0;
}

int srm_shm_create(const srm_shm_layout_t *layout, const char *name,
                   int *fd_p, void **addr_p)
{
    const int seals = F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL;
    srm_shm_ctl_t *ctl;
    void *addr;
    uint32_t i;
    int fd, saved;

    fd = memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (fd < 0) {
        return -1;
    }
    /* Sealed so that a client cannot shrink it under the agent (SIGBUS). */
    if ((ftruncate(fd, (off_t)layout->total_size) != 0) ||
        (fcntl(fd, F_ADD_SEALS, seals) != 0)) {
        goto err_close;
    }

    addr = mmap(NULL, layout->total_size, PROT_READ | PROT_WRITE, MAP_SHARED,
                fd, 0);
    if (addr == MAP_FAILED) {
        goto err_close;
    }

    ctl               = addr;
    ctl->magic        = SRM_SHM_MAGIC;
    ctl->version      = SRM_SHM_VERSION;
    ctl->num_tx_rings = layout->num_tx_rings;
    ctl->tx_ring_size = layout->tx_ring_size;
    ctl->rx_ring_size = layout->rx_ring_size;
    for (i = 0; i < layout->num_tx_rings; ++i) {
        srm_ring_shared_reset(&ctl->tx[i]);
    }
    srm_ring_shared_reset(&ctl->rx);

    *fd_p   = fd;
    *addr_p = addr;
    return 0;

err_close:
    saved = errno;
    close(fd);
    errno = saved;
    return -1;
}

int srm_fd_check_sealed(int fd, uint64_t min_size)
{
    struct stat st;
    int seals;

    seals = fcntl(fd, F_GET_SEALS);
    if ((seals < 0) || !(seals & F_SEAL_SHRINK) || (fstat(fd, &st) != 0) ||
        ((uint64_t)st.st_size < min_size)) {
        errno = EPROTO;
        return -1;
    }
    return 0;
}

int srm_shm_map(const srm_shm_layout_t *layout, int fd, void **addr_p)
{
    const srm_shm_ctl_t *ctl;
    void *addr;

    if (srm_fd_check_sealed(fd, layout->total_size) != 0) {
        return -1;
    }

    addr = mmap(NULL, layout->total_size, PROT_READ | PROT_WRITE, MAP_SHARED,
                fd, 0);
    if (addr == MAP_FAILED) {
        return -1;
    }

    ctl = addr;
    if ((ctl->magic != SRM_SHM_MAGIC) || (ctl->version != SRM_SHM_VERSION) ||
        (ctl->num_tx_rings != layout->num_tx_rings) ||
        (ctl->tx_ring_size != layout->tx_ring_size) ||
        (ctl->rx_ring_size != layout->rx_ring_size)) {
        munmap(addr, layout->total_size);
        errno = EPROTO;
        return -1;
    }

    *addr_p = addr;
    return 0;
}

void srm_shm_unmap(const srm_shm_layout_t *layout, void *addr)
{
    munmap(addr, layout->total_size);
}
