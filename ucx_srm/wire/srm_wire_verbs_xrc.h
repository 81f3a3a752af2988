/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * XRC on the verbs wire (docs/design.md, "The verbs wire"): where the
 * device has it (ConnectX; not soft-RoCE), each client owns an XRC SRQ in a
 * domain shared by the node, and the other nodes' agents send straight into
 * it: the hardware picks the client, the receiving agent copies nothing.
 *
 * What is here: the choice between XRC and RC at device open (made, logged
 * and shown by srmctl status), the node's XRC domain (opened at device open
 * when XRC is chosen), and the verbs objects of the data path: a client's
 * SRQ, the target (TGT) and initiator (INI) queue pairs of a link, and a
 * SEND into a remote SRQ. What is not: nothing creates SRQs, TGT or INI
 * queue pairs or sends on them yet (the clients do not open the device,
 * HELLO does not carry the TGT queue pair, the channels send on RC), and
 * their completions are not reaped. None of it has run on hardware with
 * XRC; the choice is unit tested (test_verbs_xrc.cc).
 *
 * The objects are built only with configure --enable-xrc (which needs
 * rdma-core's XRC verbs); without it every device runs RC.
 */
#ifndef SRM_WIRE_VERBS_XRC_H
#define SRM_WIRE_VERBS_XRC_H

#include "srm_wire_verbs.h"

#include <ucx_srm/common/srm_config.h>

#include <stdint.h>

/* IBV_DEVICE_XRC of device_cap_flags, known without the verbs headers
 * (srm_wire_verbs_xrc.c checks that they agree). */
#define SRM_WIRE_VERBS_DEVICE_XRC (1ull << 20)

typedef struct srm_wire_verbs_xrc_domain srm_wire_verbs_xrc_domain_t;
typedef struct srm_wire_verbs_xrc_srq    srm_wire_verbs_xrc_srq_t;
typedef struct srm_wire_verbs_xrc_qp     srm_wire_verbs_xrc_qp_t;

/*
 * XRC (1) or RC (0) for a device with these device_cap_flags, under
 * UCX_SRM_XRC=mode (srm_xrc_mode_t), in a build with (built) or without
 * the XRC objects; -1 when mode is yes and XRC cannot be had. *why says
 * why, for the log and srmctl status.
 */
int srm_wire_verbs_xrc_choose(unsigned mode, int built,
                              uint64_t device_cap_flags, const char **why);

/*
 * At device open: the choice (dev->xrc, dev->xrc_why) and, with XRC, the
 * node's domain, opened now on a memfd so that a device that claims XRC
 * but gives none is found out at start. -1 (logged) when UCX_SRM_XRC=yes
 * cannot be had. srm_wire_verbs_xrc_none.c in builds without --enable-xrc.
 */
int srm_wire_verbs_xrc_dev_init(srm_wire_verbs_dev_t *dev, unsigned mode);
void srm_wire_verbs_xrc_dev_close(srm_wire_verbs_dev_t *dev);

/*
 * The node's XRC domain, named by the file behind fd (which it then keeps
 * and closes; on failure fd stays the caller's): the agent makes one on a
 * memfd, and a client that is passed the fd opens the same domain. NULL
 * with errno.
 */
srm_wire_verbs_xrc_domain_t *
srm_wire_verbs_xrc_domain_open(srm_wire_verbs_dev_t *dev, int fd);
void srm_wire_verbs_xrc_domain_close(srm_wire_verbs_xrc_domain_t *domain);
int srm_wire_verbs_xrc_domain_fd(const srm_wire_verbs_xrc_domain_t *domain);

/* A client's receive queue in the domain; its number is what the other
 * nodes' agents send to (srm_wire_xrc_target.h). NULL with errno. */
srm_wire_verbs_xrc_srq_t *
srm_wire_verbs_xrc_srq_create(srm_wire_verbs_xrc_domain_t *domain,
                              unsigned max_wr);
void srm_wire_verbs_xrc_srq_destroy(srm_wire_verbs_xrc_srq_t *srq);
uint32_t srm_wire_verbs_xrc_srq_num(const srm_wire_verbs_xrc_srq_t *srq);

/* A link's receiving end, in the domain, and its sending end, on the
 * device. NULL with errno. */
srm_wire_verbs_xrc_qp_t *
srm_wire_verbs_xrc_tgt_create(srm_wire_verbs_xrc_domain_t *domain);
srm_wire_verbs_xrc_qp_t *
srm_wire_verbs_xrc_ini_create(srm_wire_verbs_dev_t *dev, unsigned max_send_wr);
void srm_wire_verbs_xrc_qp_destroy(srm_wire_verbs_xrc_qp_t *qp);
void srm_wire_verbs_xrc_qp_local(const srm_wire_verbs_xrc_qp_t *qp,
                                 srm_hello_qp_t *info);
/* TGT: to RTR against the peer's INI; INI: to RTS against the peer's TGT.
 * -1 with errno. */
int srm_wire_verbs_xrc_qp_connect(srm_wire_verbs_xrc_qp_t *qp,
                                  const srm_hello_qp_t *remote);

/*
 * One SEND on an INI queue pair into the peer node's SRQ remote_srqn, of
 * len bytes at buf (registered in the device's protection domain with
 * lkey). remote_srqn must come from a live srm_xrc_table_lookup. -1 with
 * errno.
 */
int srm_wire_verbs_xrc_send(srm_wire_verbs_xrc_qp_t *ini, uint32_t remote_srqn,
                            const void *buf, uint32_t len, uint32_t lkey,
                            uint64_t wr_id, int signaled);

#endif
