/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * XRC or RC for a device (srm_wire_verbs_xrc.h): built in every build, so
 * that the choice and its reasons are the same whether or not the XRC
 * objects are (configure --enable-xrc).
 */
#include "srm_wire_verbs_xrc.h"

int srm_wire_verbs_xrc_choose(unsigned mode, int built,
                              uint64_t device_cap_flags, const char **why)
{
    if (mode == SRM_XRC_NO) {
        *why = "UCX_SRM_XRC=no";
        return 0;
    }
    if (!built) {
        *why = "this srmd was built without XRC (configure --enable-xrc)";
    } else if (!(device_cap_flags & SRM_WIRE_VERBS_DEVICE_XRC)) {
        *why = "device has no XRC";
    } else {
        *why = "device has XRC";
        return 1;
    }
    return (mode == SRM_XRC_YES) ? -1 : 0;
}
