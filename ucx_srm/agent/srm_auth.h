/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The cluster secret (UCX_SRM_SECRET_FILE) and the proofs agents exchange in
 * a channel handshake. Each side sends a fresh nonce; the acceptor proves
 * itself in HELLO_ACK, the initiator in AUTH. A proof is HMAC-SHA256 under
 * the secret over a role label, both nonces, both node ids, the
 * connection's kind and path and, on the verbs wire, both queue pairs as
 * HELLO and HELLO_ACK carried them, so it cannot be replayed on another
 * connection or reflected back to its sender, and a queue pair swapped on
 * the way is refused before the channel carries anything.
 */
#ifndef SRM_AUTH_H
#define SRM_AUTH_H

#include <ucx_srm/common/srm_frame.h>

#include <ucs/type/status.h>

#include <stddef.h>
#include <stdint.h>

#define SRM_AUTH_SECRET_MIN 16
#define SRM_AUTH_SECRET_MAX 4096

typedef struct srm_auth {
    size_t  len;        /* 0: no secret configured */
    uint8_t secret[SRM_AUTH_SECRET_MAX];
} srm_auth_t;

typedef enum {
    SRM_AUTH_ROLE_ACCEPTOR,
    SRM_AUTH_ROLE_INITIATOR,
} srm_auth_role_t;

/* What a proof is about: the handshake of one connection. */
typedef struct srm_auth_context {
    uint64_t initiator_id;
    uint64_t acceptor_id;
    uint8_t  initiator_nonce[SRM_AUTH_NONCE_LEN];
    uint8_t  acceptor_nonce[SRM_AUTH_NONCE_LEN];
    uint8_t  kind;
    uint8_t  path;
    srm_hello_qp_t initiator_qp;  /* all zero on the tcp wire */
    srm_hello_qp_t acceptor_qp;
} srm_auth_context_t;

/*
 * Reads the secret from path (trailing newlines dropped). Refuses a file
 * that others may read or write, or whose length is out of range, with
 * the reason in the log. "" leaves auth->len 0.
 */
ucs_status_t srm_auth_load(srm_auth_t *auth, const char *path);

/* UCS_ERR_IO_ERROR if the system had no random bytes (errno says why). */
ucs_status_t srm_auth_nonce(uint8_t nonce[SRM_AUTH_NONCE_LEN]);

/* UCS_ERR_IO_ERROR if the HMAC could not be computed (mac zeroed). */
ucs_status_t srm_auth_prove(const srm_auth_t *auth, srm_auth_role_t role,
                             const srm_auth_context_t *ctx,
                             uint8_t mac[SRM_AUTH_MAC_LEN]);

/* 1 if mac is the proof of role, compared in constant time. */
int srm_auth_check(const srm_auth_t *auth, srm_auth_role_t role,
                   const srm_auth_context_t *ctx,
                   const uint8_t mac[SRM_AUTH_MAC_LEN]);

#endif
