/* SPDX-License-Identifier: BSD-3-Clause */
#define _GNU_SOURCE
#include "srm_auth.h"

#include <ucx_srm/common/srm_log.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *srm_auth_labels[] = {
    [SRM_AUTH_ROLE_ACCEPTOR]  = "srm-channel-acceptor-v2",
    [SRM_AUTH_ROLE_INITIATOR] = "srm-channel-initiator-v2",
};

ucs_status_t srm_auth_load(srm_auth_t *auth, const char *path)
{
    struct stat st;
    ssize_t got;
    int fd;

    auth->len = 0;
    if ((path == NULL) || (path[0] == '\0')) {
        return UCS_OK;
    }
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        srm_error("UCX_SRM_SECRET_FILE=%s: cannot open: %m", path);
        return UCS_ERR_INVALID_PARAM;
    }
    if (fstat(fd, &st) != 0) {
        srm_error("UCX_SRM_SECRET_FILE=%s: cannot stat: %m", path);
        close(fd);
        return UCS_ERR_INVALID_PARAM;
    }
    if (!S_ISREG(st.st_mode) || (st.st_mode & (S_IRWXG | S_IRWXO))) {
        srm_error("UCX_SRM_SECRET_FILE=%s: must be a regular file that only "
                  "its owner may read (mode %03o; try chmod 600)", path,
                  (unsigned)(st.st_mode & 0777));
        close(fd);
        return UCS_ERR_INVALID_PARAM;
    }
    got = read(fd, auth->secret, sizeof(auth->secret));
    close(fd);
    if (got < 0) {
        srm_error("UCX_SRM_SECRET_FILE=%s: cannot read: %m", path);
        return UCS_ERR_INVALID_PARAM;
    }
    while ((got > 0) && ((auth->secret[got - 1] == '\n') ||
                         (auth->secret[got - 1] == '\r'))) {
        --got;
    }
    if ((got < SRM_AUTH_SECRET_MIN) || (st.st_size > SRM_AUTH_SECRET_MAX)) {
        srm_error("UCX_SRM_SECRET_FILE=%s: the secret must have %d to %d "
                  "bytes", path, SRM_AUTH_SECRET_MIN, SRM_AUTH_SECRET_MAX);
        return UCS_ERR_INVALID_PARAM;
    }
    auth->len = (size_t)got;
    srm_info("channels to other agents need the cluster secret of %s", path);
    return UCS_OK;
}

ucs_status_t srm_auth_nonce(uint8_t nonce[SRM_AUTH_NONCE_LEN])
{
    return (getrandom(nonce, SRM_AUTH_NONCE_LEN, 0) == SRM_AUTH_NONCE_LEN) ?
                   UCS_OK : UCS_ERR_IO_ERROR;
}

ucs_status_t srm_auth_prove(const srm_auth_t *auth, srm_auth_role_t role,
                             const srm_auth_context_t *ctx,
                             uint8_t mac[SRM_AUTH_MAC_LEN])
{
    const char *label = srm_auth_labels[role];
    uint8_t msg[64 + 2 * sizeof(uint64_t) + 2 * SRM_AUTH_NONCE_LEN + 2 +
                2 * sizeof(srm_hello_qp_t)];
    size_t len = strlen(label) + 1;
    unsigned mac_len = SRM_AUTH_MAC_LEN;

    /* Fixed-width fields after a NUL-terminated label: unambiguous. */
    memcpy(msg, label, len);
    memcpy(msg + len, &ctx->initiator_id, sizeof(uint64_t));
    len += sizeof(uint64_t);
    memcpy(msg + len, &ctx->acceptor_id, sizeof(uint64_t));
    len += sizeof(uint64_t);
    memcpy(msg + len, ctx->initiator_nonce, SRM_AUTH_NONCE_LEN);
    len += SRM_AUTH_NONCE_LEN;
    memcpy(msg + len, ctx->acceptor_nonce, SRM_AUTH_NONCE_LEN);
    len += SRM_AUTH_NONCE_LEN;
    msg[len++] = ctx->kind;
    msg[len++] = ctx->path;
    memcpy(msg + len, &ctx->initiator_qp, sizeof(srm_hello_qp_t));
    len += sizeof(srm_hello_qp_t);
    memcpy(msg + len, &ctx->acceptor_qp, sizeof(srm_hello_qp_t));
    len += sizeof(srm_hello_qp_t);

    if (HMAC(EVP_sha256(), auth->secret, (int)auth->len, msg, len, mac,
             &mac_len) == NULL) {
        memset(mac, 0, SRM_AUTH_MAC_LEN);
        return UCS_ERR_IO_ERROR;
    }
    return UCS_OK;
}

int srm_auth_check(const srm_auth_t *auth, srm_auth_role_t role,
                   const srm_auth_context_t *ctx,
                   const uint8_t mac[SRM_AUTH_MAC_LEN])
{
    uint8_t expected[SRM_AUTH_MAC_LEN];

    return (srm_auth_prove(auth, role, ctx, expected) == UCS_OK) &&
           (CRYPTO_memcmp(expected, mac, SRM_AUTH_MAC_LEN) == 0);
}
