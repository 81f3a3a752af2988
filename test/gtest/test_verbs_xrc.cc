/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * XRC without a device: the choice between XRC and RC, and UCX_SRM_XRC.
 * Built in every build (the XRC objects and their tests only with
 * configure --enable-xrc: test_xrc_target.cc).
 */
extern "C" {
#include <ucx_srm/common/srm_config.h>
#include <ucx_srm/wire/srm_wire_verbs.h>
#include <ucx_srm/wire/srm_wire_verbs_xrc.h>
}

#include "config.h"
#if HAVE_VERBS
#  include <infiniband/verbs.h>
#endif

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>

TEST(verbs_xrc, choice_follows_device_and_setting)
{
    const uint64_t xrc   = SRM_WIRE_VERBS_DEVICE_XRC,
                   other = ~SRM_WIRE_VERBS_DEVICE_XRC;
    const char *why   = nullptr;

    EXPECT_EQ(1, srm_wire_verbs_xrc_choose(SRM_XRC_AUTO, 1, xrc | 1, &why));
    EXPECT_STREQ("device has XRC", why);
    EXPECT_EQ(0, srm_wire_verbs_xrc_choose(SRM_XRC_AUTO, 1, other, &why));
    EXPECT_STREQ("device has no XRC", why);
    EXPECT_EQ(0, srm_wire_verbs_xrc_choose(SRM_XRC_NO, 1, xrc, &why));
    EXPECT_STREQ("UCX_SRM_XRC=no", why);
    EXPECT_EQ(1, srm_wire_verbs_xrc_choose(SRM_XRC_YES, 1, xrc, &why));
    EXPECT_EQ(-1, srm_wire_verbs_xrc_choose(SRM_XRC_YES, 1, other, &why));
    EXPECT_STREQ("device has no XRC", why);

    /* A build without the XRC verbs cannot use a device's XRC. */
    EXPECT_EQ(0, srm_wire_verbs_xrc_choose(SRM_XRC_AUTO, 0, xrc, &why));
    EXPECT_NE(nullptr, strstr(why, "built without"));
    EXPECT_EQ(-1, srm_wire_verbs_xrc_choose(SRM_XRC_YES, 0, xrc, &why));
    EXPECT_EQ(0, srm_wire_verbs_xrc_choose(SRM_XRC_NO, 0, xrc, &why));
}

#if HAVE_VERBS
TEST(verbs_xrc, device_flag_is_rdma_cores)
{
    EXPECT_EQ(static_cast<uint64_t>(IBV_DEVICE_XRC), SRM_WIRE_VERBS_DEVICE_XRC);
}
#endif

TEST(verbs_xrc, setting_parses_auto_no_yes_and_nothing_else)
{
    const char *names[] = {"auto", "no", "yes"};
    const unsigned modes[] = {SRM_XRC_AUTO, SRM_XRC_NO, SRM_XRC_YES};
    srm_agent_config_t config;

    unsetenv("UCX_SRM_XRC");
    ASSERT_EQ(UCS_OK, srm_ucx_config_fill(&config, srm_agent_config_table,
                                          "UCX_", SRM_CONFIG_PREFIX));
    EXPECT_EQ(unsigned(SRM_XRC_AUTO), config.xrc);
    ucs_config_parser_release_opts(&config, srm_agent_config_table);

    for (int i = 0; i < 3; ++i) {
        setenv("UCX_SRM_XRC", names[i], 1);
        ASSERT_EQ(UCS_OK, srm_ucx_config_fill(&config, srm_agent_config_table,
                                              "UCX_", SRM_CONFIG_PREFIX));
        EXPECT_EQ(modes[i], config.xrc) << names[i];
        ucs_config_parser_release_opts(&config, srm_agent_config_table);
    }
    setenv("UCX_SRM_XRC", "maybe", 1);
    EXPECT_NE(UCS_OK, srm_ucx_config_fill(&config, srm_agent_config_table,
                                          "UCX_", SRM_CONFIG_PREFIX));
    unsetenv("UCX_SRM_XRC");
}
