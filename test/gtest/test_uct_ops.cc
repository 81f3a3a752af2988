/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * UCX calls most slots of a transport's ops tables without checking them,
 * and each minor version adds some (srm_ucx_compat.h lists them). Compiled
 * against the installed UCX's headers, these tests find every slot the
 * module leaves empty, so a slot a new UCX adds is filled (or named here as
 * one UCX checks) before UCP meets it as a NULL call.
 */
#include <config.h>

extern "C" {
#include <ucx_srm/common/srm_ucx_compat.h>
#include <uct/base/uct_iface.h>
#include <uct/base/uct_md.h>
}

#include "srm_test_agent.h"
#include "srm_test_uct.h"

#include <gtest/gtest.h>

#include <cstddef>
#include <string>

namespace {

typedef void (*slot_t)(void);

/* The offsets of table's slots that hold NULL, as text ("+24 +40"). */
template <typename T> std::string empty_slots(const T *table)
{
    static_assert(sizeof(T) % sizeof(slot_t) == 0,
                  "an ops table is function pointers only");
    const slot_t *slots = reinterpret_cast<const slot_t *>(table);
    std::string empty;

    for (size_t i = 0; i < sizeof(T) / sizeof(slot_t); ++i) {
        size_t offset = i * sizeof(slot_t);
        if (slots[i] == nullptr) {
            empty += " +" + std::to_string(offset);
        }
    }
    return empty;
}

class uct_ops_test : public srm_test::two_port_test {
protected:
    srm_test::agent agent_;
};

TEST_F(uct_ops_test, the_md_fills_every_slot_of_this_ucx)
{
    open_port(0, agent_.socket());
    EXPECT_EQ("", empty_slots(md_[0]->ops))
        << "uct_md_ops_t of UCX " << UCT_VERNO_STRING
        << ": the slots at these offsets are NULL";
}

/* The iface's own ops are asked for only where its capabilities say so;
 * the internal ops, from 1.16 each transport's own, are called unchecked. */
#if SRM_UCX_AT_LEAST(1, 16)
TEST_F(uct_ops_test, the_iface_fills_every_internal_slot_of_this_ucx)
{
    open_port(0, agent_.socket());
    const uct_base_iface_t *base = ucs_derived_of(iface_[0], uct_base_iface_t);
    EXPECT_EQ("", empty_slots(base->internal_ops))
        << "uct_iface_internal_ops_t of UCX " << UCT_VERNO_STRING
        << ": the slots at these offsets are NULL";
}
#endif

} // namespace
