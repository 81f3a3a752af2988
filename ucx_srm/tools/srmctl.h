/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef SRMCTL_H
#define SRMCTL_H

#include <ucx_srm/common/srm_proto.h>

#include <stddef.h>

/*
 * Sends one request to the agent on socket_name and returns its answer,
 * malloc'd, its text NUL-terminated; NULL after saying why on stderr.
 */
srm_status_rep_t *srmctl_ask(const char *socket_name, double timeout,
                             const void *req, size_t req_size);

/*
 * srmctl top: the agent's channels and processes with their rates,
 * refreshed every delay seconds, iterations times (0: until q or a
 * signal); with json, one object of rates over one delay, and exit.
 */
int srmctl_top(const char *socket_name, double timeout, double delay,
               unsigned iterations, int json);

#endif
