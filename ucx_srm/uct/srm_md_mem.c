/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Memory the srm md allocates, and the keys that name it. An allocation is a
 * memfd sealed against shrinking, mapped here and handed to the node agent
 * over the md's own control connection; the agent maps it too and, on the
 * verbs wire, registers it in its PD, so RDMA from other agents can reach
 * it (docs/design.md, "The verbs wire"). The packed rkey (srm_rkey.h) names
 * the agent, the region and its keys; unpacking validates it.
 */
#define _GNU_SOURCE /* memfd_create, file seals */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "srm_uct.h"

#include <ucx_srm/common/srm_rkey.h>

#include <ucs/debug/log.h>
#include <ucs/debug/memtrack_int.h>
#include <ucs/sys/math.h>
#include <ucs/sys/sys.h>

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* One request, one reply, on the md's connection; reconnects once if the
 * agent went away (an idle agent may have exited and a new one started),
 * unless may_connect is 0: a region of an agent that is gone is gone. */
ucs_status_t uct_srm_md_call(uct_srm_md_t *md, const void *req,
                             size_t req_len, int fd, void *rep,
                             size_t rep_len, srm_msg_type_t rep_type,
                             int may_connect, int *fds, int *nfds)
{
    int max_fds = (fds != NULL) ? *nfds : 0;
    ucs_status_t status;
    int attempt, got, i;
    ssize_t len;

    if (fds != NULL) {
        *nfds = 0;
    }

    for (attempt = 0; attempt < 2; ++attempt) {
        if ((md->mem_sock < 0) && !may_connect) {
            return UCS_ERR_NOT_CONNECTED;
        }
        if (md->mem_sock < 0) {
            status = uct_srm_agent_connect(md, &md->mem_sock);
            if (status != UCS_OK) {
                return status;
            }
        }
        got = max_fds;
        if ((srm_sock_send(md->mem_sock, req, req_len, &fd,
                           (fd >= 0) ? 1 : 0) >= 0) &&
            ((len = srm_sock_recv(md->mem_sock, rep, rep_len, fds,
                                  &got)) > 0)) {
            if (srm_msg_hdr_check(rep, (size_t)len, rep_type, rep_len) != 0) {
                ucs_error("srm: bad reply from @%s: %m", md->socket_name);
                for (i = 0; i < got; ++i) {
                    close(fds[i]);
                }
                return UCS_ERR_IO_ERROR;
            }
            if (fds != NULL) {
                *nfds = got;
            }
            return UCS_OK;
        }
        ucs_debug("srm: request to @%s failed: %m", md->socket_name);
        close(md->mem_sock);
        md->mem_sock = -1;
    }
    return UCS_ERR_IO_ERROR;
}

ucs_status_t uct_srm_mem_alloc(uct_md_h tl_md, size_t *length_p,
                               void **address_p, ucs_memory_type_t mem_type,
                               unsigned flags, const char *alloc_name,
                               uct_mem_h *memh_p)
{
    uct_srm_md_t *md = ucs_derived_of(tl_md, uct_srm_md_t);
    size_t page      = ucs_get_page_size();
    size_t length    = ((*length_p + page - 1) / page) * page;
    srm_mem_reg_req_t req;
    srm_mem_reg_rep_t rep;
    uct_srm_memh_t *memh;
    ucs_status_t status;
    void *addr;
    int fd;

    if ((mem_type != UCS_MEMORY_TYPE_HOST) ||
        (flags & UCT_MD_MEM_FLAG_FIXED) || (length == 0)) {
        return UCS_ERR_UNSUPPORTED;
    }

    memh = ucs_calloc(1, sizeof(*memh), "srm_memh");
    if (memh == NULL) {
        return UCS_ERR_NO_MEMORY;
    }
    fd = memfd_create("srm-md", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if ((fd < 0) || (ftruncate(fd, (off_t)length) != 0) ||
        (fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW) != 0)) {
        ucs_debug("srm: memfd for %zu bytes (%s): %m", length, alloc_name);
        status = UCS_ERR_NO_MEMORY;
        goto err_close;
    }
    addr = mmap(NULL, length, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (addr == MAP_FAILED) {
        status = UCS_ERR_NO_MEMORY;
        goto err_close;
    }

    memset(&req, 0, sizeof(req));
    srm_msg_hdr_init(&req.hdr, SRM_MSG_MEM_REG_REQ);
    req.address = (uintptr_t)addr;
    req.length  = length;
    pthread_mutex_lock(&md->mem_lock);
    status = uct_srm_md_call(md, &req, sizeof(req), fd, &rep, sizeof(rep),
                             SRM_MSG_MEM_REG_REP, 1, NULL, NULL);
    pthread_mutex_unlock(&md->mem_lock);
    close(fd); /* both mappings keep the memory */
    fd = -1;
    if ((status == UCS_OK) && (rep.status != 0)) {
        /* UCP falls back to another method: not an error, but the limit
         * is worth a word at diag level. */
        ucs_log((rep.status == ENOMEM) ? UCS_LOG_LEVEL_DIAG :
                                         UCS_LOG_LEVEL_DEBUG,
                "srm: agent @%s did not register %zu bytes (%s): %.*s",
                md->socket_name, length, alloc_name, (int)sizeof(rep.error),
                rep.error);
        status = UCS_ERR_NO_MEMORY;
    }
    if (status != UCS_OK) {
        munmap(addr, length);
        goto err_close;
    }

    memh->key.node_id     = rep.node_id;
    memh->key.client_addr = (uintptr_t)addr;
    memh->key.agent_addr  = rep.agent_addr;
    memh->key.length      = length;
    memh->key.region_id   = rep.region_id;
    memh->key.generation  = rep.generation;
    memh->key.token       = rep.token;
    memh->key.rkey[0]     = rep.rkey[0];
    memh->key.rkey[1]     = rep.rkey[1];
    memh->key.flags       = (rep.flags & SRM_ATTACH_FLAG_RDMA) ?
                            SRM_RKEY_FLAG_RDMA : 0;
    memh->address         = addr;
    memh->length          = length;
    ucs_debug("srm: allocated %zu bytes at %p (%s): region %u.%u%s", length,
              addr, alloc_name, rep.region_id, rep.generation,
              memh->key.flags ? ", RDMA" : "");
    *length_p  = length;
    *address_p = addr;
    *memh_p    = memh;
    return UCS_OK;

err_close:
    if (fd >= 0) {
        close(fd);
    }
    ucs_free(memh);
    return status;
}

ucs_status_t uct_srm_mem_free(uct_md_h tl_md, uct_mem_h tl_memh)
{
    uct_srm_md_t *md     = ucs_derived_of(tl_md, uct_srm_md_t);
    uct_srm_memh_t *memh = tl_memh;
    srm_mem_dereg_req_t req;
    srm_mem_dereg_rep_t rep;
    ucs_status_t status;

    memset(&req, 0, sizeof(req));
    srm_msg_hdr_init(&req.hdr, SRM_MSG_MEM_DEREG_REQ);
    req.region_id  = memh->key.region_id;
    req.generation = memh->key.generation;
    pthread_mutex_lock(&md->mem_lock);
    /* The agent forgets the region before we unmap it. */
    status = uct_srm_md_call(md, &req, sizeof(req), -1, &rep, sizeof(rep),
                             SRM_MSG_MEM_DEREG_REP, 0, NULL, NULL);
    pthread_mutex_unlock(&md->mem_lock);
    if ((status == UCS_OK) && (rep.status != 0)) {
        /* A new agent never knew it; the old one released it on exit. */
        ucs_debug("srm: agent had no region %u.%u: %s", req.region_id,
                  req.generation, strerror(rep.status));
    }
    munmap(memh->address, memh->length);
    ucs_free(memh);
    return UCS_OK;
}

/* Registered user memory (UCT_SRM_MEMH) packs a key that names nothing. */
ucs_status_t uct_srm_mkey_pack(uct_md_h md, uct_mem_h tl_memh,
                               const uct_md_mkey_pack_params_t *params,
                               void *rkey_buffer)
{
    static const srm_rkey_t none = {0};
    const uct_srm_memh_t *memh   = tl_memh;

    srm_rkey_pack((tl_memh == UCT_SRM_MEMH) ? &none : &memh->key,
                  rkey_buffer);
    return UCS_OK;
}

ucs_status_t uct_srm_rkey_unpack(uct_component_t *component,
                                 const void *rkey_buffer, uct_rkey_t *rkey_p,
                                 void **handle_p)
{
    srm_rkey_status_t rstatus;
    srm_rkey_t *key;

    key = ucs_malloc(sizeof(*key), "srm_rkey");
    if (key == NULL) {
        return UCS_ERR_NO_MEMORY;
    }
    rstatus = srm_rkey_unpack(rkey_buffer, key);
    if (rstatus != SRM_RKEY_OK) {
        ucs_error("srm: cannot unpack a remote key: %s",
                  srm_rkey_status_str(rstatus));
        ucs_free(key);
        return UCS_ERR_INVALID_PARAM;
    }
    *rkey_p   = (uintptr_t)key;
    *handle_p = key;
    return UCS_OK;
}

ucs_status_t uct_srm_rkey_release(uct_component_t *component, uct_rkey_t rkey,
                                  void *handle)
{
    ucs_free(handle);
    return UCS_OK;
}
