/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The module's UCX_SRM_* settings: the memory domain's (which embeds the
 * node agent connection's, srm_config.c) and the interface's. Kept apart
 * from the code that reads them so that srm_settings_man can print them
 * into ucx-srm(7) without linking the module.
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "srm_uct.h"

ucs_config_field_t uct_srm_md_config_table[] = {
    {"", "", NULL, ucs_offsetof(uct_srm_md_config_t, super),
     UCS_CONFIG_TYPE_TABLE(uct_md_config_table)},

    {"", "", NULL, ucs_offsetof(uct_srm_md_config_t, node),
     UCS_CONFIG_TYPE_TABLE(srm_node_config_table)},

    {"MEM_ALLOC", "n",
     "Allocate memory through the node agent (UCT_MD_FLAG_ALLOC): a memfd\n"
     "the agent maps and, on the verbs wire, registers in its protection\n"
     "domain, so that remote agents may read and write it by RDMA.",
     ucs_offsetof(uct_srm_md_config_t, mem_alloc), UCS_CONFIG_TYPE_BOOL},

    {NULL}
};

static const char *uct_srm_direct_names[] = {
    [UCT_SRM_DIRECT_NO]     = "no",
    [UCT_SRM_DIRECT_AUTO]   = "auto",
    [UCT_SRM_DIRECT_ALWAYS] = "always",
    [UCT_SRM_DIRECT_LAST]   = NULL
};

ucs_config_field_t uct_srm_iface_config_table[] = {
    {"", "", NULL, ucs_offsetof(uct_srm_iface_config_t, super),
     UCS_CONFIG_TYPE_TABLE(uct_iface_config_table)},

    {"SEG_SIZE", "8k",
     "Largest active message sent by copy (AM short and bcopy); also the\n"
     "size of one scheduling unit on the node channel.",
     ucs_offsetof(uct_srm_iface_config_t, seg_size), UCS_CONFIG_TYPE_MEMUNITS},

    {"MAX_ZCOPY", "auto",
     "Largest active message sent from user memory (AM zcopy). The agent\n"
     "moves it in SEG_SIZE units; it may not exceed the agent's frame limit.\n"
     "auto: the largest the agent takes (its frame limit less the AM header).\n"
     "Each message costs both agents a wakeup or more, so larger messages\n"
     "carry bulk data faster.",
     ucs_offsetof(uct_srm_iface_config_t, max_zcopy), UCS_CONFIG_TYPE_MEMUNITS},

    {"MAX_RMA", "4m",
     "Largest PUT/GET zcopy, offered only with UCX_SRM_MEM_ALLOC=y and an\n"
     "agent that serves every peer (verbs wire, or no wire); the agent\n"
     "moves it in one piece.",
     ucs_offsetof(uct_srm_iface_config_t, max_rma), UCS_CONFIG_TYPE_MEMUNITS},

    {"TX_RINGS", "4",
     "Send rings per interface. Destinations are spread over them by node,\n"
     "so a full queue to one node does not block sends to another.",
     ucs_offsetof(uct_srm_iface_config_t, tx_rings), UCS_CONFIG_TYPE_UINT},

    {"TX_RING_SIZE", "1m",
     "Bytes of each send ring (a power of two, at least 1m).",
     ucs_offsetof(uct_srm_iface_config_t, tx_ring_size),
     UCS_CONFIG_TYPE_MEMUNITS},

    {"RX_RING_SIZE", "2m",
     "Bytes of the receive ring (a power of two, at least 1m).",
     ucs_offsetof(uct_srm_iface_config_t, rx_ring_size),
     UCS_CONFIG_TYPE_MEMUNITS},

    {"RX_MAX_POLL", "32",
     "Most messages handled in one call to progress.",
     ucs_offsetof(uct_srm_iface_config_t, rx_max_poll), UCS_CONFIG_TYPE_UINT},

    {"YIELD", "y",
     "When a call to progress finds nothing and nothing was sent since the\n"
     "last one, give up the CPU (sched_yield) before returning. What this\n"
     "process waits for is done by the node agent, which may need this very\n"
     "core; with a core to spare the call returns at once. n: poll without\n"
     "yielding.",
     ucs_offsetof(uct_srm_iface_config_t, yield), UCS_CONFIG_TYPE_BOOL},

    {"DIRECT", "auto",
     "Which active messages to another node this process writes to that\n"
     "node's channel socket itself, sparing the sending agent's wakeup (the\n"
     "agent keeps them for resending, as it does its own). Small messages:\n"
     " no     - none: every message goes through the agent (and so does\n"
     "          every message received, whatever DIRECT_RECV says).\n"
     " auto   - the first 16 sent after a receive, while the agent sleeps\n"
     "          (requests, replies, a window of messages: where its wakeup\n"
     "          is the cost); a longer stream stays with the agent, which\n"
     "          coalesces it.\n"
     " always - every one the channel can take at once.\n"
     "Messages above LARGE_THRESH (the bulk channel; see DIRECT_BULK): every\n"
     "one the channel can take at once, unless no.\n"
     "Only on the tcp wire, and never while earlier messages of this process\n"
     "to that node are still with the agent.",
     ucs_offsetof(uct_srm_iface_config_t, direct),
     UCS_CONFIG_TYPE_ENUM(uct_srm_direct_names)},

    {"DIRECT_RECV", "y",
     "Read active messages from another node's channel sockets in\n"
     "progress, once this process has written to that node directly: a\n"
     "message for this process that is next in order is taken there. While\n"
     "processes poll a socket the agent does not listen to it, so such a\n"
     "message wakes no agent. Every other message is left to the agent.\n"
     "n: the agent reads every socket.",
     ucs_offsetof(uct_srm_iface_config_t, direct_recv), UCS_CONFIG_TYPE_BOOL},

    {"DIRECT_BULK", "n",
     "Send and receive messages above LARGE_THRESH directly too, on the\n"
     "bulk channel's socket, as DIRECT and DIRECT_RECV say for the small\n"
     "channel; writers may have one channel depth unacknowledged. Between\n"
     "two hosts it took 16 KB latency from 5x tcp's to 3x, and 1 MB\n"
     "bandwidth from 0.18x to 0.24x, for a quarter of the 8 B message\n"
     "rate (still 19x tcp's). n (the default until test_netns_retrans\n"
     "passes with y every time): the agents carry every message above\n"
     "LARGE_THRESH.",
     ucs_offsetof(uct_srm_iface_config_t, direct_bulk), UCS_CONFIG_TYPE_BOOL},

    {NULL}
};
