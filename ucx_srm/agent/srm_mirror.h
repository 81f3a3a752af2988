/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A buffer whose pages are mapped twice, back to back: the byte at
 * base[size + i] is the byte at base[i]. A channel keeps its outgoing
 * stream in one, each byte at its stream offset modulo size, so that any
 * run of up to size bytes is one contiguous range wherever it starts. The
 * stream then never moves: nothing is compacted when the tail reaches the
 * end (a copy of everything unacknowledged, every time), and a queue pair
 * can send from it in place while the stream goes on around what it posted.
 */
#ifndef SRM_MIRROR_H
#define SRM_MIRROR_H

#include <ucs/type/status.h>

#include <stddef.h>
#include <stdint.h>

typedef struct srm_mirror {
    uint8_t *base; /* 2 * size bytes of address space; NULL: none */
    size_t  size;  /* a power of two and a multiple of the page size */
} srm_mirror_t;

/* A mirror of at least min_size bytes (rounded up to a power of two and to
 * the page size). UCS_ERR_EXCEEDS_LIMIT over SRM_MIRROR_MAX_SIZE,
 * UCS_ERR_NO_MEMORY when the system refuses (errno says why). */
ucs_status_t srm_mirror_create(srm_mirror_t *mirror, size_t min_size);

/* Unmaps it (nothing if it has none) and leaves it empty. */
void srm_mirror_destroy(srm_mirror_t *mirror);

/* Where the byte of stream offset `offset` is; the size bytes from there
 * are contiguous. */
static inline uint8_t *srm_mirror_at(const srm_mirror_t *mirror,
                                     uint64_t offset)
{
    return mirror->base + (offset & (mirror->size - 1));
}

#endif
