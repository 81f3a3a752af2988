/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The srm component and memory domain. Memory needs no registration to be
 * sent through the rings (every send is a copy into shared memory), so REG
 * is a no-op that lets UCP use zcopy paths on host memory. Allocation
 * (srm_md_mem.c) gives memory the node agent knows, with real remote keys on
 * the verbs wire.
 */
#define _GNU_SOURCE /* dladdr */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "srm_uct.h"

#include <ucs/sys/string.h>
#include <ucs/debug/log.h>

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* Listed by `ucx_info -c` although only srmd reads it. */
UCS_CONFIG_DECLARE_TABLE(srm_agent_config_table, "SRM node agent (srmd)",
                         SRM_CONFIG_PREFIX, srm_agent_config_t)

/*
 * With allocation (and so PUT/GET zcopy on the verbs wire) the md does not
 * offer registration: UCP would pick srm as a rendezvous lane for user
 * buffers (wireup/select.c wants REG plus GET/PUT_ZCOPY) and our RMA
 * cannot reach memory the agent does not know (no ibv_import_pd on rxe).
 * UCP then sends large messages through the rings (AM bcopy / rendezvous
 * over AM).
 */
#define UCT_SRM_MD_FLAGS(_md) \
    ((_md)->mem_alloc ? UCT_MD_FLAG_ALLOC : UCT_MD_FLAG_REG)
#define UCT_SRM_MD_REG_TYPES(_md) \
    ((_md)->mem_alloc ? 0 : UCS_BIT(UCS_MEMORY_TYPE_HOST))
#define UCT_SRM_MD_ALLOC_TYPES(_md) \
    ((_md)->mem_alloc ? UCS_BIT(UCS_MEMORY_TYPE_HOST) : 0)

/* UCX 1.14 changed the md's query (v2 attributes) and mem_reg (params). */
#if SRM_UCX_AT_LEAST(1, 14)
static ucs_status_t uct_srm_md_query(uct_md_h tl_md, uct_md_attr_v2_t *attr)
{
    uct_srm_md_t *md = ucs_derived_of(tl_md, uct_srm_md_t);

    attr->flags            = UCT_SRM_MD_FLAGS(md);
    attr->reg_mem_types    = UCT_SRM_MD_REG_TYPES(md);
    attr->alloc_mem_types  = UCT_SRM_MD_ALLOC_TYPES(md);
    attr->access_mem_types = UCS_BIT(UCS_MEMORY_TYPE_HOST);
    attr->detect_mem_types = 0;
    attr->max_alloc        = md->mem_alloc ? SIZE_MAX : 0;
    attr->max_reg          = ULONG_MAX;
    attr->rkey_packed_size = sizeof(srm_rkey_packed_t);
    attr->reg_cost         = ucs_linear_func_make(0, 0);
    memset(&attr->local_cpus, 0xff, sizeof(attr->local_cpus));
    ucs_strncpy_zero(attr->component_name, UCT_SRM_NAME,
                     sizeof(attr->component_name));
    return UCS_OK;
}

static ucs_status_t uct_srm_md_mem_reg(uct_md_h md, void *address,
                                       size_t length,
                                       const uct_md_mem_reg_params_t *params,
                                       uct_mem_h *memh_p)
{
    *memh_p = UCT_SRM_MEMH;
    return UCS_OK;
}
#else
static ucs_status_t uct_srm_md_query(uct_md_h tl_md, uct_md_attr_t *attr)
{
    uct_srm_md_t *md = ucs_derived_of(tl_md, uct_srm_md_t);

    attr->cap.flags            = UCT_SRM_MD_FLAGS(md);
    attr->cap.reg_mem_types    = UCT_SRM_MD_REG_TYPES(md);
    attr->cap.alloc_mem_types  = UCT_SRM_MD_ALLOC_TYPES(md);
    attr->cap.access_mem_types = UCS_BIT(UCS_MEMORY_TYPE_HOST);
    attr->cap.detect_mem_types = 0;
    attr->cap.max_alloc        = md->mem_alloc ? SIZE_MAX : 0;
    attr->cap.max_reg          = ULONG_MAX;
    attr->rkey_packed_size     = sizeof(srm_rkey_packed_t);
    attr->reg_cost             = ucs_linear_func_make(0, 0);
    memset(&attr->local_cpus, 0xff, sizeof(attr->local_cpus));
    return UCS_OK;
}

static ucs_status_t uct_srm_md_mem_reg(uct_md_h md, void *address,
                                       size_t length, unsigned flags,
                                       uct_mem_h *memh_p)
{
    *memh_p = UCT_SRM_MEMH;
    return UCS_OK;
}
#endif

/* UCX 1.16 gives mkey_pack the memory's address and length too. */
#if SRM_UCX_AT_LEAST(1, 16)
static ucs_status_t
uct_srm_md_mkey_pack(uct_md_h md, uct_mem_h memh, void *address,
                     size_t length, const uct_md_mkey_pack_params_t *params,
                     void *buffer)
{
    return uct_srm_mkey_pack(md, memh, params, buffer);
}
#else
#  define uct_srm_md_mkey_pack uct_srm_mkey_pack
#endif

/* UCX 1.19 asks for memory near a system device; ours is host memory. */
#if SRM_UCX_AT_LEAST(1, 19)
static ucs_status_t
uct_srm_md_mem_alloc(uct_md_h md, size_t *length_p, void **address_p,
                     ucs_memory_type_t mem_type, ucs_sys_device_t sys_dev,
                     unsigned flags, const char *alloc_name, uct_mem_h *memh_p)
{
    return uct_srm_mem_alloc(md, length_p, address_p, mem_type, flags,
                             alloc_name, memh_p);
}

static ucs_status_t
uct_srm_component_rkey_unpack(uct_component_t *component,
                              const void *rkey_buffer,
                              const uct_rkey_unpack_params_t *params,
                              uct_rkey_t *rkey_p, void **handle_p)
{
    return uct_srm_rkey_unpack(component, rkey_buffer, rkey_p, handle_p);
}
#else
#  define uct_srm_md_mem_alloc          uct_srm_mem_alloc
#  define uct_srm_component_rkey_unpack uct_srm_rkey_unpack
#endif

static ucs_status_t
uct_srm_md_mem_dereg(uct_md_h md, const uct_md_mem_dereg_params_t *params)
{
    UCT_MD_MEM_DEREG_CHECK_PARAMS(params, 0);
    return UCS_OK;
}

static void uct_srm_md_close(uct_md_h tl_md)
{
    uct_srm_md_t *md = ucs_derived_of(tl_md, uct_srm_md_t);

    if (md->mem_sock >= 0) {
        close(md->mem_sock); /* the agent drops regions still allocated */
    }
    pthread_mutex_destroy(&md->mem_lock);
    ucs_free(md);
}

/* UCX calls some slots unchecked: every one is filled (test_uct_ops). */
static uct_md_ops_t uct_srm_md_ops = {
    .close              = uct_srm_md_close,
    .query              = uct_srm_md_query,
    .mem_alloc          = uct_srm_md_mem_alloc,
    .mem_free           = uct_srm_mem_free,
    .mem_advise         = SRM_UCX_UNSUPPORTED(uct_md_mem_advise_func_t),
    .mkey_pack          = uct_srm_md_mkey_pack,
    .mem_reg            = uct_srm_md_mem_reg,
    .mem_dereg          = uct_srm_md_mem_dereg,
    .mem_query          = SRM_UCX_UNSUPPORTED(uct_md_mem_query_func_t),
#if SRM_UCX_HAS_MD_MEM_ATTACH
    .mem_attach         = SRM_UCX_UNSUPPORTED(uct_md_mem_attach_func_t),
#endif
#if SRM_UCX_HAS_MD_IS_SOCKADDR_ACCESSIBLE
    .is_sockaddr_accessible = SRM_UCX_STUB(uct_md_is_sockaddr_accessible_func_t,
                                           ucs_empty_function_return_zero_int),
#endif
    .detect_memory_type = SRM_UCX_UNSUPPORTED(uct_md_detect_memory_type_func_t),
#if SRM_UCX_HAS_MD_MEM_ELEM_PACK
    /* srm has no device (GPU) memory elements */
    .mem_elem_pack      = SRM_UCX_UNSUPPORTED(uct_md_mem_elem_pack_func_t),
#endif
#if SRM_UCX_HAS_MD_MEM_ELEM_RELEASE
    .mem_elem_release   = SRM_UCX_STUB(uct_md_mem_elem_release_func_t,
                                       ucs_empty_function),
#endif
};

/*
 * Agent settings in a job's environment are read by srmd, which the module
 * may start; parse them here too so UCX does not call them unused, so a
 * bad value is reported in the job's own output, and for the name of the
 * device (the agent's first wire device).
 */
static void uct_srm_md_read_agent_config(uct_srm_md_t *md)
{
    srm_config_env_device_name(md->dev_name, sizeof(md->dev_name));
}

/* Whether a comma separated device list (UCX_NET_DEVICES) keeps name. */
static int uct_srm_md_list_keeps(const char *list, const char *name)
{
    size_t len = strlen(name), item;

    while (*list != '\0') {
        item = strcspn(list, ",");
        if (((item == 3) && (strncmp(list, "all", 3) == 0)) ||
            ((item == len) && (strncmp(list, name, len) == 0))) {
            return 1;
        }
        list += item + (list[item] == ',');
    }
    return 0;
}

/* A site's UCX_NET_DEVICES that leaves srm out is said once, with what to
 * add: UCP's own error ("no usable transports") does not say why. */
static void uct_srm_md_check_net_devices(const uct_srm_md_t *md)
{
    const char *net_devices = getenv("UCX_NET_DEVICES");
    const char *tls         = getenv("UCX_TLS");
    static int said;

    if ((net_devices == NULL) || uct_srm_md_list_keeps(net_devices,
                                                       md->dev_name) ||
        said) {
        return;
    }
    said = 1;
    ucs_log((tls != NULL) && (strstr(tls, "srm") != NULL) ?
                    UCS_LOG_LEVEL_WARN : UCS_LOG_LEVEL_DIAG,
            "srm: UCX_NET_DEVICES=%s leaves out srm's device '%s' (the "
            "agent's UCX_SRM_DEVICES): add %s to it to use srm",
            net_devices, md->dev_name, md->dev_name);
}

static ucs_status_t uct_srm_md_open(uct_component_t *component,
                                    const char *md_name,
                                    const uct_md_config_t *uct_config,
                                    uct_md_h *md_p)
{
    const uct_srm_md_config_t *config = ucs_derived_of(uct_config,
                                                       uct_srm_md_config_t);
    uid_t squatter;
    uct_srm_md_t *md;

    md = ucs_calloc(1, sizeof(*md), "srm_md");
    if (md == NULL) {
        return UCS_ERR_NO_MEMORY;
    }

    md->super.ops       = &uct_srm_md_ops;
    md->super.component = &uct_srm_component;
    md->agent_mode      = (srm_agent_mode_t)config->node.agent_mode;
    md->connect_timeout = config->node.connect_timeout;
    md->mem_alloc       = config->mem_alloc;
    md->mem_sock        = -1;
    pthread_mutex_init(&md->mem_lock, NULL);
    md->agent_choice    = srm_sock_choose_agent(config->node.socket,
                                                md->socket_name,
                                                sizeof(md->socket_name),
                                                &squatter);
    if ((md->agent_choice == SRM_AGENT_OWN_SQUATTED) &&
        (squatter == (uid_t)-1)) {
        ucs_warn("srm: @%s, the site agent's socket, takes no connection "
                 "(its listener accepts none): ignoring it, using @%s",
                 SRM_SITE_SOCKET, md->socket_name);
    } else if (md->agent_choice == SRM_AGENT_OWN_SQUATTED) {
        ucs_warn("srm: @%s, the site agent's socket, is held by uid %u, "
                 "neither root nor the %s user: ignoring it (another user "
                 "may be posing as the site's agent), using @%s",
                 SRM_SITE_SOCKET, (unsigned)squatter, SRM_SITE_USER,
                 md->socket_name);
    }
    if (config->node.agent_path[0] != '\0') {
        ucs_strncpy_zero(md->agent_path, config->node.agent_path,
                         sizeof(md->agent_path));
    } else {
        ucs_snprintf_zero(md->agent_path, sizeof(md->agent_path), "%s/srmd",
                          SRM_BINDIR);
    }

    uct_srm_md_read_agent_config(md);
    *md_p = &md->super;
    return UCS_OK;
}

static ucs_status_t
uct_srm_query_devices(uct_md_h tl_md, uct_tl_device_resource_t **devices_p,
                      unsigned *num_devices_p)
{
    uct_srm_md_t *md = ucs_derived_of(tl_md, uct_srm_md_t);

    uct_srm_md_check_net_devices(md);
    /* NET: Open MPI gives remote peers only network devices' addresses. */
    return uct_single_device_resource(tl_md, md->dev_name,
                                      UCT_DEVICE_TYPE_NET,
                                      UCS_SYS_DEVICE_ID_UNKNOWN, devices_p,
                                      num_devices_p);
}

uct_component_t uct_srm_component = {
    .query_md_resources = uct_md_query_single_md_resource,
    .md_open            = uct_srm_md_open,
    .cm_open            = SRM_UCX_UNSUPPORTED(uct_component_cm_open_func_t),
    .rkey_unpack        = uct_srm_component_rkey_unpack,
    .rkey_ptr           = SRM_UCX_UNSUPPORTED(uct_component_rkey_ptr_func_t),
    .rkey_release       = uct_srm_rkey_release,
    .name               = UCT_SRM_NAME,
    .md_config          = {
        .name           = "SRM memory domain",
        .prefix         = UCT_SRM_CONFIG_PREFIX,
        .table          = uct_srm_md_config_table,
        .size           = sizeof(uct_srm_md_config_t),
    },
    .cm_config          = UCS_CONFIG_EMPTY_GLOBAL_LIST_ENTRY,
    .tl_list            = UCT_COMPONENT_TL_LIST_INITIALIZER(&uct_srm_component),
    .flags              = 0,
    .md_vfs_init        = SRM_UCX_STUB(uct_component_md_vfs_init_func_t,
                                       ucs_empty_function)
};

extern ucs_class_t UCS_CLASS_NAME(uct_srm_iface_t);
UCS_CLASS_DECLARE_NEW_FUNC(uct_srm_iface_t, uct_iface_t, uct_md_h,
                           uct_worker_h, const uct_iface_params_t*,
                           const uct_iface_config_t*);

UCT_TL_DEFINE_ENTRY(&uct_srm_component, srm, uct_srm_query_devices,
                    uct_srm_iface_t, UCT_SRM_CONFIG_PREFIX,
                    uct_srm_iface_config_table, uct_srm_iface_config_t);

typedef void (*uct_srm_ucp_get_version_t)(unsigned*, unsigned*, unsigned*);

/*
 * The UCP of the running UCX. A consumer that preloads the module (srm-run,
 * Open MPI's -x LD_PRELOAD) runs this before it opens UCP (Open MPI's pml
 * ucx comes later), so when no UCP is loaded yet the one next to the
 * running libuct is loaded and asked: it is the one the process will use.
 * It stays loaded, as it would be once the consumer opens it.
 */
static uct_srm_ucp_get_version_t uct_srm_ucp_get_version(void)
{
    void *func, *ucp;
    const char *slash;
    char path[4096];
    Dl_info info;

    func = dlsym(RTLD_DEFAULT, "ucp_get_version");
    if (func == NULL) {
        if (!dladdr((void*)uct_component_register, &info) ||
            (info.dli_fname == NULL) ||
            ((slash = strrchr(info.dli_fname, '/')) == NULL) ||
            (snprintf(path, sizeof(path), "%.*s/libucp.so.0",
                      (int)(slash - info.dli_fname), info.dli_fname) >=
             (int)sizeof(path))) {
            return NULL;
        }
        ucp = dlopen(path, RTLD_LAZY | RTLD_LOCAL);
        if (ucp == NULL) {
            return NULL;
        }
        func = dlsym(ucp, "ucp_get_version");
    }
    return (uct_srm_ucp_get_version_t)func;
}

/*
 * libuct.so.0 is the name of every UCX version's library and UCX checks no
 * module's ABI: built against another minor version, our structures would
 * sit at the wrong offsets in UCX's lists. The running version comes from
 * UCP (a UCX without one is taken on trust). A mismatch is told on stderr,
 * not through UCX's log, whose structures are the other version's too.
 */
static int uct_srm_ucx_is_ours(void)
{
    uct_srm_ucp_get_version_t get_version;
    unsigned major, minor, release;

    get_version = uct_srm_ucp_get_version();
    if (get_version == NULL) {
        return 1;
    }
    get_version(&major, &minor, &release);
    if ((major == UCT_VERNO_MAJOR) && (minor == UCT_VERNO_MINOR)) {
        return 1;
    }
    fprintf(stderr,
            "srm: built for UCX %d.%d but this process runs UCX %u.%u: the "
            "srm transport is not registered (rebuild ucx-srm against UCX "
            "%u.%u)\n",
            UCT_VERNO_MAJOR, UCT_VERNO_MINOR, major, minor, major, minor);
    return 0;
}

static int uct_srm_registered;

UCS_F_CTOR static void uct_srm_register(void)
{
    if (!uct_srm_ucx_is_ours()) {
        return;
    }
    UCS_CONFIG_ADD_TABLE(srm_agent_config_table, &ucs_config_global_list);
    uct_tl_register(&uct_srm_component, &UCT_TL_NAME(srm));
    uct_component_register(&uct_srm_component);
    uct_srm_registered = 1;
}

UCS_F_DTOR static void uct_srm_unregister(void)
{
    if (!uct_srm_registered) {
        return;
    }
    uct_component_unregister(&uct_srm_component);
    uct_tl_unregister(&UCT_TL_NAME(srm));
    UCS_CONFIG_REMOVE_TABLE(srm_agent_config_table);
}
