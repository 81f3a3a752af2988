/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The seam between the agent and a wire.
 *
 * A link between two agents always starts as a TCP connection: the
 * handshake goes on it whatever the wire. Once the link is ready its frames
 * go through its wire's ops: on tcp the same connection carries them, on
 * verbs a queue pair does and the connection only tells that the peer went
 * away. The agent asks a link's wire what it can do (the capability flags)
 * instead of looking at how the wire does it.
 */
#ifndef SRM_WIRE_H
#define SRM_WIRE_H

#include <ucx_srm/common/srm_frame.h>
#include <ucx_srm/common/srm_log.h>
#include <ucx_srm/wire/srm_wire_verbs.h>

#include <ucs/type/status.h>

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

typedef enum {
    /* One-sided reads and writes of the peer's registered memory. */
    SRM_WIRE_CAP_RDMA        = 1u << 0,
    /* The frames flow on the connection's socket, which clients may read
     * and write themselves (direct lanes). */
    SRM_WIRE_CAP_SHARED_FD   = 1u << 1,
    /* Input and room come as completions of a device, not as readiness
     * of the socket; one read may leave more to read. */
    SRM_WIRE_CAP_COMPLETIONS = 1u << 2,
    /* retransmits() counts the kernel's retransmitted segments. */
    SRM_WIRE_CAP_RETRANS     = 1u << 3,
    /* The wire has an endpoint of its own, connected in the handshake
     * after the peer is proven (connect()). */
    SRM_WIRE_CAP_ENDPOINT    = 1u << 4,
} srm_wire_cap_t;

/* One of a connection's own counters on its wire, for srmctl status. */
typedef struct srm_wire_counter {
    const char *name;
    uint64_t   value;
    int        names_object; /* a number naming something (a queue pair):
                                shown in hex */
} srm_wire_counter_t;

#define SRM_WIRE_COUNTERS_MAX 8

typedef struct srm_wire_conn {
    int            fd; /* the TCP connection */
    srm_wire_verbs_qp_t *qp; /* verbs: the queue pair, once made */
} srm_wire_conn_t;

/*
 * What can fail returns ucs_status_t, as everywhere in the agent (errno, where
 * the failure was a system call's, says more: logs print it with %m).
 * sendv and recvv move bytes and return how many (0: no room or nothing
 * now), or -1 with errno, as writev and readv do. Questions return 0 or 1.
 */
typedef struct srm_wire_ops {
    const char *name;
    unsigned   caps;       /* srm_wire_cap_t */
    uint8_t    hello_wire; /* how HELLO names it: SRM_HELLO_WIRE_* */

    /* The endpoint, made and left unconnected until the peer is proven;
     * `dev` is the path's device, `owner` what its events name. */
    ucs_status_t (*make)(srm_wire_conn_t *conn, srm_wire_verbs_dev_t *dev,
                         unsigned owner);
    /* What our HELLO says of the endpoint (zero without one). */
    void (*local)(const srm_wire_conn_t *conn, srm_hello_qp_t *info);
    ucs_status_t (*connect)(srm_wire_conn_t *conn,
                            const srm_hello_qp_t *peer);

    /* mrs[i], where not NULL, registers iov[i] with the endpoint's device:
     * a wire that can sends those bytes in place (srm_wire_verbs.h). */
    ssize_t (*sendv)(srm_wire_conn_t *conn, const struct iovec *iov,
                     const srm_wire_verbs_mr_t *const *mrs, int iovcnt);
    /* -1 with errno 0: the peer closed the connection. */
    ssize_t (*recvv)(srm_wire_conn_t *conn, const struct iovec *iov,
                     int iovcnt);
    /* Received and not yet taken by recvv. */
    size_t (*pending)(const srm_wire_conn_t *conn);
    /* Takes the completions that are there; UCS_ERR_IO_ERROR once the
     * endpoint failed (why() says how). */
    ucs_status_t (*poll)(srm_wire_conn_t *conn);
    /* Why the last recvv or poll failed, and how loudly to say it. */
    srm_log_level_t (*why)(const srm_wire_conn_t *conn, int err, char *buf,
                           size_t size);
    /* The kernel's counts of segments retransmitted and of data segments
     * sent (*sent 0 if it does not count those); UCS_ERR_UNSUPPORTED if
     * the wire has none (SRM_WIRE_CAP_RETRANS), UCS_ERR_IO_ERROR if the
     * kernel would not say. */
    ucs_status_t (*retransmits)(const srm_wire_conn_t *conn,
                                uint32_t *resent, uint32_t *sent);
    /* Waits up to `timeout` seconds for what was posted to go out. */
    void (*drain)(srm_wire_conn_t *conn, double timeout);
    /* Fault injection: fails as the wire itself would, and says how in
     * *what; 1 if the caller must close the connection now for that. */
    int (*fail)(srm_wire_conn_t *conn, const char **what);

    /* One-sided operations (SRM_WIRE_CAP_RDMA), srm_wire_verbs.h: posted,
     * UCS_ERR_NO_RESOURCE (no slot free now), or UCS_ERR_IO_ERROR. */
    ucs_status_t (*rdma)(srm_wire_conn_t *conn, int write, void *local,
                         uint32_t lkey, uint64_t remote, uint32_t rkey,
                         uint32_t length, uint64_t id);
    /* Whether an operation completed: its id, and whether it succeeded. */
    int (*rdma_next)(srm_wire_conn_t *conn, uint64_t *id, int *ok);
    /* A usable endpoint: no error seen. */
    int (*usable)(const srm_wire_conn_t *conn);

    /* The connection's own counters (at most SRM_WIRE_COUNTERS_MAX), for
     * `srmctl status`; how many. */
    unsigned (*counters)(const srm_wire_conn_t *conn,
                         srm_wire_counter_t *out);
} srm_wire_ops_t;

extern const srm_wire_ops_t srm_wire_tcp_ops;
extern const srm_wire_ops_t srm_wire_verbs_ops;

/* The wire of a path: verbs when the path has a device. */
static inline const srm_wire_ops_t *srm_wire_of(const srm_wire_verbs_dev_t *dev)
{
    return (dev != NULL) ? &srm_wire_verbs_ops : &srm_wire_tcp_ops;
}

static inline int srm_wire_can(const srm_wire_ops_t *wire, unsigned caps)
{
    return (wire->caps & caps) == caps;
}

/* Closes the connection and destroys the endpoint, if any. */
void srm_wire_conn_close(srm_wire_conn_t *conn);

#endif
