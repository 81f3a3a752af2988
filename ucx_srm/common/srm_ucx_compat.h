/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What differs between the UCX versions srm builds with, keyed on the
 * installed uct/api/version.h. Everything else in the tree is written once;
 * the few functions whose signature UCX changed (the md and iface entry
 * points) test SRM_UCX_AT_LEAST where they are defined, and nothing else
 * tests a version.
 *
 * Checked against the tagged sources of 1.13.1 .. 1.22.0 and 1.23's
 * development tree:
 *   1.14  md query fills uct_md_attr_v2_t; mem_reg takes a params struct;
 *         md ops: mem_attach
 *   1.15  ucs_config_parser_fill_opts takes a config list entry, not a
 *         table and its prefix
 *   1.16  md ops: is_sockaddr_accessible is gone; mkey_pack gets the
 *         address and length; uct_base_iface_internal_ops
 *         is gone: each transport has its own internal ops, with
 *         iface_is_reachable_v2 and ep_is_connected
 *   1.18  UCT_IFACE_FLAG_INTER_NODE: UCP's network-only worker addresses
 *         (Open MPI 5) keep only transports that set it
 *   1.19  mem_alloc gets a system device; rkey_unpack gets a params struct;
 *         ucs_config_parser_print_opts gets a name filter
 *   1.20  internal ops: ep_get_device_ep, and (1.20 only: 1.21 has
 *         neither) iface_query_v2 and iface_mem_element_pack, which UCP's
 *         device API calls unchecked
 *   1.21  md ops: mem_elem_pack (UCP's device API calls it unchecked)
 *   1.22  internal ops: iface_query_v2 again (UCP calls it unchecked) and
 *         ep_put_sgl_zcopy; ep_check may be given a completion
 *   1.23  internal ops: ep_get_sgl_zcopy and ep_outstanding_purge (the base
 *         iface asserts that ep_outstanding_purge is set); md ops:
 *         mem_elem_release
 */
#ifndef SRM_UCX_COMPAT_H
#define SRM_UCX_COMPAT_H

#include <ucs/config/parser.h>
#include <ucs/sys/stubs.h>
#include <uct/api/version.h>

#define SRM_UCX_AT_LEAST(_major, _minor) \
    (UCT_API >= UCT_VERSION(_major, _minor))

#define SRM_UCX_OLDEST UCT_VERSION(1, 13)
#define SRM_UCX_NEWEST UCT_VERSION(1, 23)

#if (UCT_API < SRM_UCX_OLDEST) || (UCT_API > SRM_UCX_NEWEST)
#  error "ucx-srm builds with UCX 1.13 to 1.23 (see srm_ucx_compat.h)"
#endif

/* The internal ops slots each version has, beyond 1.16's. */
#define SRM_UCX_HAS_EP_GET_DEVICE_EP       SRM_UCX_AT_LEAST(1, 20)
#define SRM_UCX_HAS_IFACE_MEM_ELEMENT_PACK (UCT_API == UCT_VERSION(1, 20))
#define SRM_UCX_HAS_IFACE_QUERY_V2 \
    (SRM_UCX_HAS_IFACE_MEM_ELEMENT_PACK || SRM_UCX_AT_LEAST(1, 22))
#define SRM_UCX_HAS_EP_PUT_SGL_ZCOPY       SRM_UCX_AT_LEAST(1, 22)
#define SRM_UCX_HAS_EP_GET_SGL_ZCOPY       SRM_UCX_AT_LEAST(1, 23)
#define SRM_UCX_HAS_EP_OUTSTANDING_PURGE   SRM_UCX_AT_LEAST(1, 23)
/* The md ops slots that came or went after 1.13. */
#define SRM_UCX_HAS_MD_MEM_ATTACH          SRM_UCX_AT_LEAST(1, 14)
#define SRM_UCX_HAS_MD_IS_SOCKADDR_ACCESSIBLE (!SRM_UCX_AT_LEAST(1, 16))
#define SRM_UCX_HAS_MD_MEM_ELEM_PACK       SRM_UCX_AT_LEAST(1, 21)
#define SRM_UCX_HAS_MD_MEM_ELEM_RELEASE    SRM_UCX_AT_LEAST(1, 23)

#if SRM_UCX_AT_LEAST(1, 18)
#  define SRM_UCX_IFACE_FLAG_INTER_NODE UCT_IFACE_FLAG_INTER_NODE
#else
#  define SRM_UCX_IFACE_FLAG_INTER_NODE 0
#endif

/*
 * One of UCX's stubs (ucs_empty_function...) in a slot of another type.
 * From 1.22 the stubs are declared (void), and -Wcast-function-type
 * accepts the cast only through void (*)(void), which matches any type.
 */
#define SRM_UCX_STUB(_slot_type, _stub) \
    ((_slot_type)(void (*)(void))(_stub))
#define SRM_UCX_UNSUPPORTED(_slot_type) \
    SRM_UCX_STUB(_slot_type, ucs_empty_function_return_unsupported)

/* ep_check's argument checks (UCT_EP_KEEPALIVE_CHECK_PARAM of uct_iface.h). */
#if SRM_UCX_AT_LEAST(1, 22)
#  define SRM_UCX_EP_CHECK_PARAMS(_flags, _comp) \
      UCT_EP_KEEPALIVE_CHECK_PARAM(_flags)
#else
#  define SRM_UCX_EP_CHECK_PARAMS(_flags, _comp) \
      UCT_EP_KEEPALIVE_CHECK_PARAM(_flags, _comp)
#endif

/* Fills opts from table's defaults and the environment (UCX_<prefix>...). */
static inline ucs_status_t
srm_ucx_config_fill(void *opts, ucs_config_field_t *table,
                    const char *env_prefix, const char *table_prefix)
{
#if SRM_UCX_AT_LEAST(1, 15)
    ucs_config_global_list_entry_t entry = {.name   = table_prefix,
                                            .prefix = table_prefix,
                                            .table  = table};

    return ucs_config_parser_fill_opts(opts, &entry, env_prefix, 0);
#else
    return ucs_config_parser_fill_opts(opts, table, env_prefix, table_prefix,
                                       0);
#endif
}

/* Prints opts with their documentation, every field. */
static inline void
srm_ucx_config_print(FILE *stream, const char *title, const void *opts,
                     ucs_config_field_t *table, const char *table_prefix,
                     const char *env_prefix, ucs_config_print_flags_t flags)
{
#if SRM_UCX_AT_LEAST(1, 19)
    ucs_config_parser_print_opts(stream, title, opts, table, table_prefix,
                                 env_prefix, flags, NULL);
#else
    ucs_config_parser_print_opts(stream, title, opts, table, table_prefix,
                                 env_prefix, flags);
#endif
}

#endif
