/*
 * Memory the srm md allocates (UCX_SRM_MEM_ALLOC=y): a memfd the private
 * agent maps and lists, an rkey that names it, a region that goes when it is
 * freed or when the md (its connection) closes, and unpacking that refuses
 * garbage instead of trusting it.
 */
extern "C" {
#include <ucx_srm/common/srm_rkey.h>
#include <uct/api/uct.h>
}

#include "srm_test_agent.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

namespace {

using srm_test::agent;

class uct_mem_test : public ::testing::Test {
protected:
    void SetUp() override
    {
        uct_component_h *components;
        unsigned num;

        ASSERT_EQ(UCS_OK, uct_query_components(&components, &num));
        for (unsigned c = 0; c < num; ++c) {
            uct_component_attr_t attr = {};
            attr.field_mask = UCT_COMPONENT_ATTR_FIELD_NAME;
            ASSERT_EQ(UCS_OK, uct_component_query(components[c], &attr));
            if (std::string(attr.name) != "srm") {
                continue;
            }
            component_ = components[c];
            uct_md_config_t *config;
            ASSERT_EQ(UCS_OK, uct_md_config_read(components[c], nullptr,
                                                 nullptr, &config));
            EXPECT_EQ(UCS_OK, uct_config_modify(config, "SOCKET",
                                                agent_.socket().c_str()));
            EXPECT_EQ(UCS_OK, uct_config_modify(config, "AGENT", "never"));
            EXPECT_EQ(UCS_OK, uct_config_modify(config, "MEM_ALLOC", "y"));
            ASSERT_EQ(UCS_OK, uct_md_open(components[c], "srm", config,
                                          &md_));
            uct_config_release(config);
        }
        uct_release_component_list(components);
        if (md_ == nullptr) {
            GTEST_FAIL() << "no srm transport: is libuct_srm.so.0 preloaded?";
        }
    }

    void TearDown() override
    {
        if (md_ != nullptr) {
            uct_md_close(md_);
        }
    }

    ucs_status_t alloc(size_t length, uct_allocated_memory_t *mem)
    {
        uct_alloc_method_t method = UCT_ALLOC_METHOD_MD;
        uct_mem_alloc_params_t params = {};
        params.field_mask = UCT_MEM_ALLOC_PARAM_FIELD_FLAGS |
                            UCT_MEM_ALLOC_PARAM_FIELD_MEM_TYPE |
                            UCT_MEM_ALLOC_PARAM_FIELD_MDS |
                            UCT_MEM_ALLOC_PARAM_FIELD_NAME;
        params.flags      = UCT_MD_MEM_ACCESS_ALL;
        params.mem_type   = UCS_MEMORY_TYPE_HOST;
        params.mds.mds    = &md_;
        params.mds.count  = 1;
        params.name       = "srm-gtest";
        return uct_mem_alloc(length, &method, 1, &params, mem);
    }

    bool status_has(const std::string &what)
    {
        return agent_.status().find(what) != std::string::npos;
    }

    agent           agent_;
    uct_component_h component_ = nullptr;
    uct_md_h        md_        = nullptr;
};

} // namespace

TEST_F(uct_mem_test, md_offers_alloc_and_fixed_size_keys)
{
    uct_md_attr_t attr;
    ASSERT_EQ(UCS_OK, uct_md_query(md_, &attr));
    EXPECT_TRUE(attr.cap.flags & UCT_MD_FLAG_ALLOC);
    EXPECT_TRUE(attr.cap.flags & UCT_MD_FLAG_REG);
    EXPECT_EQ(sizeof(srm_rkey_packed_t), attr.rkey_packed_size);
}

TEST_F(uct_mem_test, alloc_registers_a_region_that_free_releases)
{
    uct_allocated_memory_t mem;
    uct_md_attr_t attr;
    ASSERT_EQ(UCS_OK, uct_md_query(md_, &attr));
    ASSERT_EQ(UCS_OK, alloc(100000, &mem));
    EXPECT_EQ(UCT_ALLOC_METHOD_MD, mem.method);
    EXPECT_GE(mem.length, 100000u);
    memset(mem.address, 0x5a, mem.length); /* it is real memory */
    EXPECT_TRUE(status_has("(1 regions, 100 KB)")) << agent_.status();

    std::vector<uint8_t> packed(attr.rkey_packed_size);
    ASSERT_EQ(UCS_OK, uct_md_mkey_pack(md_, mem.memh, packed.data()));
    uct_rkey_bundle_t bundle;
    ASSERT_EQ(UCS_OK, uct_rkey_unpack(component_, packed.data(), &bundle));
    const srm_rkey_t *key = reinterpret_cast<const srm_rkey_t*>(bundle.rkey);
    EXPECT_EQ((uintptr_t)mem.address, key->client_addr);
    EXPECT_EQ(mem.length, key->length);
    EXPECT_NE(0u, key->region_id);
    EXPECT_NE(0u, key->agent_addr);
    /* The private agent's wire is tcp: the key names memory, no RDMA. */
    EXPECT_EQ(0u, key->flags & SRM_RKEY_FLAG_RDMA);
    EXPECT_EQ(UCS_OK, uct_rkey_release(component_, &bundle));

    ASSERT_EQ(UCS_OK, uct_mem_free(&mem));
    EXPECT_TRUE(status_has("(0 regions, 0 KB)")) << agent_.status();
}

TEST_F(uct_mem_test, closing_the_md_releases_its_regions)
{
    uct_allocated_memory_t mem[3];
    for (auto &m : mem) {
        ASSERT_EQ(UCS_OK, alloc(4096, &m));
    }
    EXPECT_TRUE(status_has("(3 regions, 12 KB)")) << agent_.status();
    ASSERT_EQ(UCS_OK, uct_mem_free(&mem[1]));
    EXPECT_TRUE(status_has("(2 regions, 8 KB)")) << agent_.status();

    /* A process that exits without freeing: its connection closes. */
    uct_md_close(md_);
    md_ = nullptr;
    bool released = false;
    for (int i = 0; (i < 200) && !released; ++i) {
        released = status_has("(0 regions, 0 KB)");
        if (!released) {
            usleep(10000);
        }
    }
    EXPECT_TRUE(released) << agent_.status();
}

TEST_F(uct_mem_test, registered_user_memory_packs_a_key_without_rdma)
{
    std::vector<char> buf(4096);
    uct_mem_h memh;
    uct_md_attr_t attr;
    ASSERT_EQ(UCS_OK, uct_md_query(md_, &attr));
    ASSERT_EQ(UCS_OK, uct_md_mem_reg(md_, buf.data(), buf.size(),
                                     UCT_MD_MEM_ACCESS_ALL, &memh));
    std::vector<uint8_t> packed(attr.rkey_packed_size);
    ASSERT_EQ(UCS_OK, uct_md_mkey_pack(md_, memh, packed.data()));
    uct_rkey_bundle_t bundle;
    ASSERT_EQ(UCS_OK, uct_rkey_unpack(component_, packed.data(), &bundle));
    EXPECT_EQ(0u, reinterpret_cast<const srm_rkey_t*>(bundle.rkey)->flags);
    EXPECT_EQ(UCS_OK, uct_rkey_release(component_, &bundle));
    EXPECT_EQ(UCS_OK, uct_md_mem_dereg(md_, memh));
}

TEST_F(uct_mem_test, garbage_keys_do_not_unpack)
{
    std::vector<uint8_t> garbage(sizeof(srm_rkey_packed_t), 0xee);
    uct_rkey_bundle_t bundle;
    EXPECT_EQ(UCS_ERR_INVALID_PARAM,
              uct_rkey_unpack(component_, garbage.data(), &bundle));
}
