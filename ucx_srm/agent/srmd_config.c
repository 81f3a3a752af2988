/* SPDX-License-Identifier: BSD-3-Clause */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "srmd_config.h"

#include <ucx_srm/uct/srm_uct.h> /* the module's tables: names it knows */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern char **environ;

#define SRMD_ENV_PREFIX "UCX_" SRM_CONFIG_PREFIX

/* The field called name in table or a table it embeds, or NULL. */
static const ucs_config_field_t *
srmd_config_find(const ucs_config_field_t *table, const char *name)
{
    const ucs_config_field_t *field, *found;

    for (field = table; field->name != NULL; ++field) {
        if (field->name[0] == '\0') {
            found = srmd_config_find(field->parser.arg, name);
            if (found != NULL) {
                return found;
            }
        } else if (strcmp(field->name, name) == 0) {
            return field;
        }
    }
    return NULL;
}

/* Every UCX_SRM_* variable must name a setting of srmd or of the module. */
static ucs_status_t srmd_config_check_names(void)
{
    static ucs_config_field_t *tables[] = {
        srm_agent_config_table, uct_srm_md_config_table,
        uct_srm_iface_config_table
    };
    char name[128];
    unsigned i, known, unknown = 0;
    char **env;
    size_t len;

    for (env = environ; *env != NULL; ++env) {
        if (strncmp(*env, SRMD_ENV_PREFIX, strlen(SRMD_ENV_PREFIX)) != 0) {
            continue;
        }
        len = strcspn(*env + strlen(SRMD_ENV_PREFIX), "=");
        snprintf(name, sizeof(name), "%.*s", (int)len,
                 *env + strlen(SRMD_ENV_PREFIX));
        for (i = known = 0; (i < sizeof(tables) / sizeof(tables[0])) &&
                            !known; ++i) {
            known = (srmd_config_find(tables[i], name) != NULL);
        }
        if (!known) {
            fprintf(stderr, "srmd: %s%s is not a setting of srm (a typo? "
                    "ucx-srm(7) and srmd --config list them)\n",
                    SRMD_ENV_PREFIX, name);
            ++unknown;
        }
    }
    return (unknown == 0) ? UCS_OK : UCS_ERR_INVALID_PARAM;
}

/* Each value set must parse; UCX's own error does not say which. */
static ucs_status_t srmd_config_check_values(ucs_config_field_t *table)
{
    const ucs_config_field_t *field;
    char name[128], scratch[256] __attribute__((aligned(16)));
    ucs_status_t status = UCS_OK;
    const char *value;

    for (field = table; field->name != NULL; ++field) {
        if (field->name[0] == '\0') {
            continue;
        }
        snprintf(name, sizeof(name), "%s%s", SRMD_ENV_PREFIX, field->name);
        value = getenv(name);
        if (value == NULL) {
            continue;
        }
        memset(scratch, 0, sizeof(scratch));
        if (field->parser.read(value, scratch, field->parser.arg) != 1) {
            scratch[0] = '\0';
            field->parser.help(scratch, sizeof(scratch), field->parser.arg);
            fprintf(stderr, "srmd: %s='%s' is not a valid value (it takes %s)"
                    "\n", name, value, scratch);
            status = UCS_ERR_INVALID_PARAM;
        } else {
            field->parser.release(scratch, field->parser.arg);
        }
    }
    return status;
}

ucs_status_t srmd_config_read(srm_agent_t *agent)
{
    ucs_status_t status;

    status = srmd_config_check_names();
    if ((srmd_config_check_values(srm_node_config_table) != UCS_OK) ||
        (srmd_config_check_values(srm_agent_config_table) != UCS_OK) ||
        (status != UCS_OK)) {
        return UCS_ERR_INVALID_PARAM;
    }
    status = srm_ucx_config_fill(&agent->node_config, srm_node_config_table,
                                 "UCX_", SRM_CONFIG_PREFIX);
    if (status != UCS_OK) {
        fprintf(stderr, "srmd: invalid UCX_SRM_* setting: %s\n",
                ucs_status_string(status));
        return status;
    }
    status = srm_ucx_config_fill(&agent->config, srm_agent_config_table,
                                 "UCX_", SRM_CONFIG_PREFIX);
    if (status != UCS_OK) {
        fprintf(stderr, "srmd: invalid UCX_SRM_* setting: %s\n",
                ucs_status_string(status));
        return status;
    }
    /* What a process compares its own settings with: as read, before
     * the agent resolves "auto" values. */
    if (srm_config_format_settings(&agent->config, srm_agent_config_table,
                                   agent->settings,
                                   sizeof(agent->settings)) < 0) {
        agent->settings[0] = '\0';
    }
    if (agent->config.quantum < 64) {
        fprintf(stderr, "srmd: UCX_SRM_QUANTUM must be at least 64 bytes\n");
        return UCS_ERR_INVALID_PARAM;
    }
    return UCS_OK;
}
