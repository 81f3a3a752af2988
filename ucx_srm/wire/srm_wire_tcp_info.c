/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What the kernel counted of a tcp wire connection (TCP_INFO). Apart from
 * srm_wire_tcp.c because it needs the kernel's struct tcp_info: the C
 * library's stops before the segment counts, and the two headers cannot
 * be included together.
 */
#include "srm_wire_tcp.h"
#include <linux/tcp.h>
#include <netinet/in.h>
#include <stddef.h>
#include <string.h>
#include <sys/socket.h>

int srm_wire_tcp_retransmits(int fd, uint32_t *resent, uint32_t *sent)
{
    struct tcp_info info;
    socklen_t len = sizeof(info);

    memset(&info, 0, sizeof(info));
    if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &info, &len) != 0) {
        return -1;
    }
    *resent = info.tcpi_total_retrans;
    *sent   = (len >= offsetof(struct tcp_info, tcpi_data_segs_out) +
                       sizeof(info.tcpi_data_segs_out)) ?
                      info.tcpi_data_segs_out : 0; /* before Linux 4.6 */
    return 0;
}
