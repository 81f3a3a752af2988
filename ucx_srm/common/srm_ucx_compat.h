/*
 * What differs between the UCX versions srm builds with, keyed on the
 * installed uct/api/version.h. Everything else in the tree is written once;
 * the few functions whose signature UCX changed (the md and iface entry
 * points) test SRM_UCX_AT_LEAST where they are defined, and nothing else
 * tests a version.
 *
 * Checked against the tagged sources of 1.13.1 and 1.18.1:
 *   1.14  md query fills uct_md_attr_v2_t; mem_reg takes a params struct
 *   1.15  ucs_config_parser_fill_opts takes a config list entry, not a
 *         table and its prefix
 *   1.16  mkey_pack gets the address and length; uct_base_iface_internal_ops
 *         is gone: each transport has its own internal ops, with
 *         iface_is_reachable_v2 and ep_is_connected
 */
#ifndef SRM_UCX_COMPAT_H
#define SRM_UCX_COMPAT_H

#include <ucs/config/parser.h>
#include <uct/api/version.h>

#define SRM_UCX_AT_LEAST(_major, _minor) \
    (UCT_API >= UCT_VERSION(_major, _minor))

#define SRM_UCX_OLDEST UCT_VERSION(1, 13)
#define SRM_UCX_NEWEST UCT_VERSION(1, 18)

#if (UCT_API < SRM_UCX_OLDEST) || (UCT_API > SRM_UCX_NEWEST)
#  error "ucx-srm builds with UCX 1.13 to 1.18 (see srm_ucx_compat.h)"
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

#endif
