/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The verbs wire built without its XRC objects (configure without
 * --enable-xrc): every device runs RC, and UCX_SRM_XRC=yes stops the agent
 * saying why.
 */
#include "srm_wire_verbs_xrc.h"
#include "srm_wire_verbs_dev.h"

#include <ucx_srm/common/srm_log.h>

int srm_wire_verbs_xrc_dev_init(srm_wire_verbs_dev_t *dev, unsigned mode)
{
    dev->xrc = srm_wire_verbs_xrc_choose(mode, 0, 0, &dev->xrc_why);
    if (dev->xrc < 0) {
        srm_error("verbs device %s: UCX_SRM_XRC=yes, but %s", dev->name,
                  dev->xrc_why);
        return -1;
    }
    return 0;
}

void srm_wire_verbs_xrc_dev_close(srm_wire_verbs_dev_t *dev)
{
}
