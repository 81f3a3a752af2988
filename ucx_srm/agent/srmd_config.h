/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef SRMD_CONFIG_H
#define SRMD_CONFIG_H

#include "srm_agent.h"

/*
 * Reads the agent's UCX_SRM_* settings from the environment (the service's
 * EnvironmentFile, or the rank that started it) into agent->node_config,
 * agent->config and agent->settings. Any UCX_SRM_* name that no srm table
 * knows, or a value its setting does not take, is an error naming it on
 * stderr: the agent does not start half configured.
 */
ucs_status_t srmd_config_read(srm_agent_t *agent);

#endif
