/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef SRM_NOTIFY_H
#define SRM_NOTIFY_H

/*
 * Tells the service manager the agent's state ("READY=1", "STOPPING=1",
 * "STATUS=..."), as sd_notify(3) does, when it runs as a Type=notify
 * systemd service ($NOTIFY_SOCKET set); does nothing otherwise. No
 * libsystemd: the protocol is one datagram on a unix socket.
 */
void srm_notify(const char *state);

#endif
