/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef SRM_CPUS_H
#define SRM_CPUS_H

#include <ucs/type/status.h>

#include <stddef.h>

typedef struct srm_agent srm_agent_t;
typedef struct srm_json srm_json_t;

/* Places the agent as UCX_SRM_AGENT_CPUS says; an error names the setting
 * (not a list, or cores outside the cpuset). After the wire is up: the
 * NIC's locality needs its name. */
ucs_status_t srm_cpus_init(srm_agent_t *agent);
void srm_cpus_cleanup(srm_agent_t *agent);

/* Looks again at the ranks' bindings (auto: moves away from bound cores)
 * and at the agent's cores; 1 when they had time to spare since the last
 * call (POLL=auto may spin). */
int srm_cpus_update(srm_agent_t *agent, double now);

/* For srmctl status: "1 of 0-1 (auto, near eth0), 2 ranks bound, ..." */
void srm_cpus_describe(const srm_agent_t *agent, char *buf, size_t size);
void srm_cpus_json(const srm_agent_t *agent, srm_json_t *json);

#endif
