/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * srm_rma_probe: the two sides of test_two_users, one process each.
 *
 *   srm_rma_probe victim DIR
 *       allocates 4 KB of srm md memory holding 0xa5, writes its packed
 *       key to DIR/key, and waits for DIR/done; exits 0 if the memory
 *       still holds 0xa5 everywhere, 3 if anyone changed it.
 *   srm_rma_probe attacker DIR
 *       reads DIR/key and tries a PUT and a GET of the victim's memory
 *       with the key as it is, and with its token guessed; prints one
 *       line per try ("put key-as-given: <UCX status>"), and "leaked" if
 *       a GET brought back the victim's bytes, until the agent drops it
 *       ("attacker: dropped by the agent"). Exit 0 once it is done.
 *
 * Both talk to the agent named by UCX_SRM_SOCKET (UCX_SRM_MEM_ALLOC=y).
 * Exit 2: the setup failed (the message says where).
 */
#include <ucx_srm/common/srm_rkey.h>

#include <uct/api/uct.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define PROBE_SIZE     4096
#define PROBE_VICTIM   0xa5
#define PROBE_ATTACKER 0x3c
#define PROBE_GUESSES  10 /* more than the agent lets a process forge */

typedef struct {
    uct_component_h     component;
    uct_md_h            md;
    ucs_async_context_t *async;
    uct_worker_h        worker;
    uct_iface_h         initiator, target;
    uct_ep_h            ep;
    ucs_status_t        ep_failed; /* UCS_OK while the agent serves it */
} probe_t;

typedef struct {
    uct_completion_t uct;
    ucs_status_t     status;
    int              done;
} probe_comp_t;

static void __attribute__((noreturn)) probe_die(const char *what,
                                                ucs_status_t status)
{
    fprintf(stderr, "srm_rma_probe: %s: %s\n", what,
            ucs_status_string(status));
    exit(2);
}

static void probe_check(const char *what, ucs_status_t status)
{
    if (status != UCS_OK) {
        probe_die(what, status);
    }
}

static uct_component_h probe_srm_component(void)
{
    uct_component_h *components, found = NULL;
    uct_component_attr_t attr;
    unsigned i, num;

    probe_check("uct_query_components",
                uct_query_components(&components, &num));
    for (i = 0; (i < num) && (found == NULL); ++i) {
        attr.field_mask = UCT_COMPONENT_ATTR_FIELD_NAME;
        if ((uct_component_query(components[i], &attr) == UCS_OK) &&
            (strcmp(attr.name, "srm") == 0)) {
            found = components[i];
        }
    }
    uct_release_component_list(components);
    if (found == NULL) {
        probe_die("no srm component (is the module preloaded?)",
                  UCS_ERR_NO_DEVICE);
    }
    return found;
}

/* The agent dropped this process: its endpoints fail (without a handler,
 * UCX would abort). */
static ucs_status_t probe_on_ep_error(void *arg, uct_ep_h ep,
                                      ucs_status_t status)
{
    ((probe_t*)arg)->ep_failed = status;
    return UCS_OK;
}

static void probe_open_iface(probe_t *p, uct_iface_h *iface)
{
    uct_iface_params_t params;
    uct_iface_config_t *config;

    probe_check("uct_md_iface_config_read",
                uct_md_iface_config_read(p->md, "srm", NULL, NULL, &config));
    memset(&params, 0, sizeof(params));
    params.field_mask           = UCT_IFACE_PARAM_FIELD_OPEN_MODE |
                                  UCT_IFACE_PARAM_FIELD_DEVICE;
    params.open_mode            = UCT_IFACE_OPEN_MODE_DEVICE;
    params.mode.device.tl_name  = "srm";
    params.mode.device.dev_name = "node";
    params.field_mask          |= UCT_IFACE_PARAM_FIELD_ERR_HANDLER |
                                  UCT_IFACE_PARAM_FIELD_ERR_HANDLER_ARG |
                                  UCT_IFACE_PARAM_FIELD_ERR_HANDLER_FLAGS;
    params.err_handler          = probe_on_ep_error;
    params.err_handler_arg      = p;
    params.err_handler_flags    = 0;
    probe_check("uct_iface_open",
                uct_iface_open(p->md, p->worker, &params, config, iface));
    uct_config_release(config);
    uct_iface_progress_enable(*iface, UCT_PROGRESS_SEND | UCT_PROGRESS_RECV);
}

/* The md, and with ifaces set, a worker and an ep between two ifaces of
 * this process: same-node RMA goes where the key points, not the ep. */
static void probe_open(probe_t *p, int ifaces)
{
    uct_md_config_t *config;
    uct_ep_params_t params;
    uct_iface_attr_t attr;
    char dev[64], addr[64];

    memset(p, 0, sizeof(*p));
    p->component = probe_srm_component();
    probe_check("uct_md_config_read",
                uct_md_config_read(p->component, NULL, NULL, &config));
    probe_check("uct_md_open",
                uct_md_open(p->component, "srm", config, &p->md));
    uct_config_release(config);
    probe_check("ucs_async_context_create",
                ucs_async_context_create(UCS_ASYNC_MODE_THREAD_SPINLOCK,
                                         &p->async));
    probe_check("uct_worker_create",
                uct_worker_create(p->async, UCS_THREAD_MODE_SINGLE,
                                  &p->worker));
    if (!ifaces) {
        return;
    }
    probe_open_iface(p, &p->initiator);
    probe_open_iface(p, &p->target);
    probe_check("uct_iface_query", uct_iface_query(p->target, &attr));
    if ((attr.device_addr_len > sizeof(dev)) ||
        (attr.iface_addr_len > sizeof(addr))) {
        probe_die("addresses larger than expected", UCS_ERR_UNSUPPORTED);
    }
    probe_check("uct_iface_get_device_address",
                uct_iface_get_device_address(p->target,
                                             (uct_device_addr_t*)dev));
    probe_check("uct_iface_get_address",
                uct_iface_get_address(p->target, (uct_iface_addr_t*)addr));
    memset(&params, 0, sizeof(params));
    params.field_mask = UCT_EP_PARAM_FIELD_IFACE |
                        UCT_EP_PARAM_FIELD_DEV_ADDR |
                        UCT_EP_PARAM_FIELD_IFACE_ADDR;
    params.iface      = p->initiator;
    params.dev_addr   = (const uct_device_addr_t*)dev;
    params.iface_addr = (const uct_iface_addr_t*)addr;
    probe_check("uct_ep_create", uct_ep_create(&params, &p->ep));
}

static void probe_alloc(probe_t *p, uct_allocated_memory_t *mem, int fill)
{
    uct_alloc_method_t method = UCT_ALLOC_METHOD_MD;
    uct_mem_alloc_params_t params;

    memset(&params, 0, sizeof(params));
    params.field_mask = UCT_MEM_ALLOC_PARAM_FIELD_FLAGS |
                        UCT_MEM_ALLOC_PARAM_FIELD_MEM_TYPE |
                        UCT_MEM_ALLOC_PARAM_FIELD_MDS |
                        UCT_MEM_ALLOC_PARAM_FIELD_NAME;
    params.flags      = UCT_MD_MEM_ACCESS_ALL;
    params.mem_type   = UCS_MEMORY_TYPE_HOST;
    params.mds.mds    = &p->md;
    params.mds.count  = 1;
    params.name       = "srm_rma_probe";
    probe_check("uct_mem_alloc (UCX_SRM_MEM_ALLOC=y?)",
                uct_mem_alloc(PROBE_SIZE, &method, 1, &params, mem));
    if (mem->method != UCT_ALLOC_METHOD_MD) {
        probe_die("the memory is not the srm md's", UCS_ERR_UNSUPPORTED);
    }
    memset(mem->address, fill, PROBE_SIZE);
}

static int probe_filled(const uct_allocated_memory_t *mem, int fill)
{
    const unsigned char *bytes = mem->address;
    size_t i;

    for (i = 0; i < PROBE_SIZE; ++i) {
        if (bytes[i] != fill) {
            return 0;
        }
    }
    return 1;
}

static int probe_victim(const char *dir)
{
    char path[4096], tmp[4096];
    srm_rkey_packed_t packed;
    uct_allocated_memory_t mem;
    FILE *file;
    probe_t p;
    int i;

    probe_open(&p, 0);
    probe_alloc(&p, &mem, PROBE_VICTIM);
    probe_check("uct_md_mkey_pack", uct_md_mkey_pack(p.md, mem.memh, &packed));
    snprintf(tmp, sizeof(tmp), "%s/key.tmp", dir);
    snprintf(path, sizeof(path), "%s/key", dir);
    file = fopen(tmp, "w");
    if ((file == NULL) || (fwrite(&packed, sizeof(packed), 1, file) != 1) ||
        (fclose(file) != 0) || (chmod(tmp, 0644) != 0) ||
        (rename(tmp, path) != 0)) {
        perror("srm_rma_probe: writing the key");
        return 2;
    }
    printf("victim: key of region at %p written\n", mem.address);
    fflush(stdout);
    snprintf(path, sizeof(path), "%s/done", dir);
    for (i = 0; (i < 6000) && (access(path, F_OK) != 0); ++i) {
        usleep(10000);
    }
    if (!probe_filled(&mem, PROBE_VICTIM)) {
        printf("victim: memory changed\n");
        return 3;
    }
    printf("victim: memory unchanged\n");
    uct_mem_free(&mem);
    return 0;
}

static void probe_on_comp(uct_completion_t *self)
{
    probe_comp_t *comp = ucs_container_of(self, probe_comp_t, uct);

    comp->status = self->status;
    comp->done   = 1;
}

/* One PUT or GET of the whole region with the given key; its status. */
static ucs_status_t probe_rma(probe_t *p, int put, uct_allocated_memory_t *local,
                              uint64_t remote_addr, const void *packed)
{
    uct_rkey_bundle_t bundle;
    probe_comp_t comp;
    ucs_status_t status;
    uct_iov_t iov;
    int i;

    if (p->ep_failed != UCS_OK) {
        return p->ep_failed;
    }
    status = uct_rkey_unpack(p->component, packed, &bundle);
    if (status != UCS_OK) {
        return status;
    }
    memset(&comp, 0, sizeof(comp));
    comp.uct.func   = probe_on_comp;
    comp.uct.count  = 1;
    comp.uct.status = UCS_OK;
    memset(&iov, 0, sizeof(iov));
    iov.buffer = local->address;
    iov.length = PROBE_SIZE;
    iov.memh   = local->memh;
    iov.count  = 1;
    status = put ? uct_ep_put_zcopy(p->ep, &iov, 1, remote_addr, bundle.rkey,
                                    &comp.uct) :
                   uct_ep_get_zcopy(p->ep, &iov, 1, remote_addr, bundle.rkey,
                                    &comp.uct);
    for (i = 0; (status == UCS_INPROGRESS) && (i < 50000) && !comp.done &&
                (p->ep_failed == UCS_OK); ++i) {
        if (uct_worker_progress(p->worker) == 0) {
            usleep(100);
        }
    }
    if (status == UCS_INPROGRESS) {
        status = comp.done ? comp.status :
                 (p->ep_failed != UCS_OK) ? p->ep_failed :
                 UCS_ERR_TIMED_OUT;
    }
    uct_rkey_release(p->component, &bundle);
    return status;
}

static void probe_try(probe_t *p, const char *what, int put,
                      uct_allocated_memory_t *local, uint64_t addr,
                      const srm_rkey_packed_t *packed)
{
    ucs_status_t status;

    memset(local->address, PROBE_ATTACKER, PROBE_SIZE);
    status = probe_rma(p, put, local, addr, packed);
    printf("%s %s: %s%s\n", put ? "put" : "get", what,
           ucs_status_string(status),
           (!put && probe_filled(local, PROBE_VICTIM)) ? " leaked" : "");
    fflush(stdout);
}

static int probe_attacker(const char *dir)
{
    srm_rkey_packed_t packed, guessed;
    uct_allocated_memory_t local;
    char path[4096];
    srm_rkey_t key;
    FILE *file;
    probe_t p;
    int i;

    snprintf(path, sizeof(path), "%s/key", dir);
    file = fopen(path, "r");
    if ((file == NULL) || (fread(&packed, sizeof(packed), 1, file) != 1)) {
        perror("srm_rma_probe: reading the key");
        return 2;
    }
    fclose(file);
    if (srm_rkey_unpack(&packed, &key) != SRM_RKEY_OK) {
        fprintf(stderr, "srm_rma_probe: the key in %s is malformed\n", path);
        return 2;
    }
    probe_open(&p, 1);
    probe_alloc(&p, &local, PROBE_ATTACKER);

    probe_try(&p, "key-as-given", 1, &local, key.client_addr, &packed);
    probe_try(&p, "key-as-given", 0, &local, key.client_addr, &packed);
    for (i = 0; (i < PROBE_GUESSES) && (p.ep_failed == UCS_OK); ++i) {
        srm_rkey_t guess = key;
        guess.token     ^= (uint32_t)(i + 1) * 0x9e3779b9u;
        srm_rkey_pack(&guess, &guessed);
        probe_try(&p, "token-guessed", i & 1, &local, key.client_addr,
                  &guessed);
    }
    if (p.ep_failed != UCS_OK) {
        printf("attacker: dropped by the agent (%s)\n",
               ucs_status_string(p.ep_failed));
    }
    printf("attacker: done\n");
    return 0;
}

int main(int argc, char **argv)
{
    if ((argc == 3) && (strcmp(argv[1], "victim") == 0)) {
        return probe_victim(argv[2]);
    } else if ((argc == 3) && (strcmp(argv[1], "attacker") == 0)) {
        return probe_attacker(argv[2]);
    }
    fprintf(stderr, "usage: srm_rma_probe victim|attacker DIR\n");
    return 2;
}
