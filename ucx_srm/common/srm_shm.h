/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The shared segment of one client port: a control block, the client's TX
 * rings (grouped by destination node) and its RX ring, in one memfd that the
 * agent creates, seals and passes to the client.
 */
#ifndef SRM_SHM_H
#define SRM_SHM_H

#include "srm_address.h"
#include "srm_ring.h"

#include <stdint.h>

#define SRM_SHM_MAGIC        0x53524d53u /* "SRMS" */
#define SRM_SHM_VERSION      4u
#define SRM_SHM_MAX_TX_RINGS 16u
#define SRM_SHM_ALIGN        4096u
#define SRM_SHM_MAX_NODES    1024u /* remote nodes one client can name */

/* Wakeup flags; each in its own line so the two sides do not bounce it. */
typedef struct srm_shm_flag {
    uint32_t value;
    uint8_t          pad[SRM_CACHE_LINE - sizeof(uint32_t)];
} srm_shm_flag_t;

typedef enum {
    SRM_SHM_NODE_OK     = 0,
    SRM_SHM_NODE_FAILED = 1, /* unreachable: every ep to it reports failure */
    SRM_SHM_NODE_GONE   = 2, /* its agent left cleanly: sends to it fail */
} srm_shm_node_state_t;

typedef struct srm_shm_node {
    uint64_t        node_id;
    srm_wire_addr_t wire[SRM_WIRE_PATHS];
    uint16_t        valid;  /* client: entry filled in */
    uint16_t        state;  /* agent: srm_shm_node_state_t */
} srm_shm_node_t;

typedef struct srm_shm_ctl {
    uint32_t          magic;
    uint32_t          version;
    uint32_t          num_tx_rings;
    uint32_t          reserved;
    uint64_t          tx_ring_size;
    uint64_t          rx_ring_size;
    uint8_t           pad[SRM_CACHE_LINE - 32];

    /* Set by the agent before it sleeps: the next producer rings the doorbell. */
    srm_shm_flag_t    agent_sleeping;
    /* Set by the client when it arms its event fd. */
    srm_shm_flag_t    client_sleeping;
    /* Set by the agent while frames wait for room in this client's RX ring. */
    srm_shm_flag_t    rx_space_wanted;
    /* Set by the client while sends wait (pending) for room in a TX ring. */
    srm_shm_flag_t    tx_space_wanted;
    /* Set by the agent after it changed the state of a node table entry. */
    srm_shm_flag_t    nodes_changed;

    srm_ring_shared_t tx[SRM_SHM_MAX_TX_RINGS];
    srm_ring_shared_t rx;

    /*
     * The client's names for remote nodes: frame dst_node indexes this
     * table (entry 0 unused: this node). The client fills an entry before
     * the first frame that uses it; the agent reads it once and validates.
     */
    srm_shm_node_t    nodes[SRM_SHM_MAX_NODES];

    /*
     * Next per-port seq to each node of the table, for a client granted
     * that node's direct lane: the client and the agent both number its
     * frames, each under the lane's lock (srm_lane_shared.h).
     */
    uint32_t          node_seq[SRM_SHM_MAX_NODES];
} srm_shm_ctl_t;

typedef struct srm_shm_layout {
    uint32_t num_tx_rings;
    uint64_t tx_ring_size;
    uint64_t rx_ring_size;
    uint64_t tx_offset[SRM_SHM_MAX_TX_RINGS];
    uint64_t rx_offset;
    uint64_t total_size;
} srm_shm_layout_t;

/*
 * Computes where everything lives; both sides compute it from the same three
 * numbers. Returns -1 (errno EINVAL) if a size is not a power of two or is
 * out of range.
 */
int srm_shm_layout_init(srm_shm_layout_t *layout, uint32_t num_tx_rings,
                        uint64_t tx_ring_size, uint64_t rx_ring_size);

/* Agent: a sealed memfd of the layout's size with the control block set up. */
int srm_shm_create(const srm_shm_layout_t *layout, const char *name,
                   int *fd_p, void **addr_p);

/*
 * 0 if fd is sealed against shrinking and holds at least min_size bytes:
 * a mapping of anything else can lose its pages to whoever holds the fd
 * (SIGBUS on the next access). -1 with errno EPROTO otherwise.
 */
int srm_fd_check_sealed(int fd, uint64_t min_size);

/* Client: maps a segment the agent passed and checks its seals and header. */
int srm_shm_map(const srm_shm_layout_t *layout, int fd, void **addr_p);

void srm_shm_unmap(const srm_shm_layout_t *layout, void *addr);

/*
 * The lost-wakeup-free doorbell (docs/design.md): the waker publishes its
 * work first, then a full fence, then reads the flag; only the one that
 * flips it from 1 to 0 signals, so one wakeup costs at most one write.
 * The sleeper stores the flag, full fence, re-checks for work, then sleeps.
 */
/* srm_shm_flag_take for a caller that fenced since its last store. */
static inline int srm_shm_flag_take_fenced(srm_shm_flag_t *flag)
{
    return (srm_load_relaxed(&flag->value) != 0) &&
           (srm_exchange(&flag->value, 0) != 0);
}

static inline int srm_shm_flag_take(srm_shm_flag_t *flag)
{
    srm_fence();
    return srm_shm_flag_take_fenced(flag);
}

static inline void srm_shm_flag_raise(srm_shm_flag_t *flag)
{
    srm_store_relaxed(&flag->value, 1);
    srm_fence();
}

static inline void srm_shm_flag_clear(srm_shm_flag_t *flag)
{
    srm_store_relaxed(&flag->value, 0);
}

#endif
