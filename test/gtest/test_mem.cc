/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Memory the srm md allocates: the packed rkey (validated on unpack, never
 * trusted) and the agent's region registry (owner, generation, bounds).
 */
extern "C" {
#include <ucx_srm/agent/srm_regions.h>
#include <ucx_srm/common/srm_rkey.h>
}

#include <gtest/gtest.h>

#include <fcntl.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <random>
#include <vector>

namespace {

srm_rkey_t sample_key()
{
    srm_rkey_t key = {};
    key.node_id     = 0x1122334455667788ull;
    key.client_addr = 0x7f0000001000ull;
    key.agent_addr  = 0x7f1000001000ull;
    key.length      = 1 << 20;
    key.region_id   = 3;
    key.generation  = 42;
    key.rkey[0]     = 0x1234;
    key.rkey[1]     = 0x5678;
    key.flags       = SRM_RKEY_FLAG_RDMA;
    return key;
}

/* A memfd of length bytes, sealed against shrinking unless told not to. */
int make_memfd(size_t length, bool seal = true)
{
    int fd = memfd_create("srm-test-mem", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if ((fd < 0) || (ftruncate(fd, (off_t)length) != 0)) {
        return -1;
    }
    if (seal && (fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK) != 0)) {
        close(fd);
        return -1;
    }
    return fd;
}

} // namespace

TEST(rkey, packs_to_a_fixed_size_and_round_trips)
{
    srm_rkey_t key = sample_key(), out;
    uint8_t buf[sizeof(srm_rkey_packed_t) + 1];

    EXPECT_EQ(64u, sizeof(srm_rkey_packed_t));
    /* Unaligned on purpose: UCP packs keys back to back. */
    srm_rkey_pack(&key, buf + 1);
    ASSERT_EQ(SRM_RKEY_OK, srm_rkey_unpack(buf + 1, &out));
    EXPECT_EQ(key.node_id, out.node_id);
    EXPECT_EQ(key.client_addr, out.client_addr);
    EXPECT_EQ(key.agent_addr, out.agent_addr);
    EXPECT_EQ(key.length, out.length);
    EXPECT_EQ(key.region_id, out.region_id);
    EXPECT_EQ(key.generation, out.generation);
    EXPECT_EQ(key.rkey[0], out.rkey[0]);
    EXPECT_EQ(key.rkey[1], out.rkey[1]);
    EXPECT_EQ(key.flags, out.flags);
}

TEST(rkey, a_key_without_rdma_names_no_memory_and_is_valid)
{
    srm_rkey_t key = {}, out;
    uint8_t buf[sizeof(srm_rkey_packed_t)];

    srm_rkey_pack(&key, buf);
    ASSERT_EQ(SRM_RKEY_OK, srm_rkey_unpack(buf, &out));
    EXPECT_EQ(0u, out.flags);
}

TEST(rkey, rejects_bad_magic_version_flags_range_and_scribbles)
{
    srm_rkey_t key = sample_key(), out;
    srm_rkey_packed_t packed;

    srm_rkey_pack(&key, &packed);
    packed.magic ^= 1;
    EXPECT_EQ(SRM_RKEY_ERR_MAGIC, srm_rkey_unpack(&packed, &out));

    srm_rkey_pack(&key, &packed);
    packed.version = SRM_RKEY_VERSION + 1;
    EXPECT_EQ(SRM_RKEY_ERR_VERSION, srm_rkey_unpack(&packed, &out));

    srm_rkey_pack(&key, &packed);
    packed.rkey[0] ^= 0x100; /* a flipped bit anywhere: the checksum */
    EXPECT_EQ(SRM_RKEY_ERR_CHECK, srm_rkey_unpack(&packed, &out));

    key.flags = 0x80;
    srm_rkey_pack(&key, &packed);
    EXPECT_EQ(SRM_RKEY_ERR_FLAGS, srm_rkey_unpack(&packed, &out));

    key        = sample_key();
    key.length = 0;
    srm_rkey_pack(&key, &packed);
    EXPECT_EQ(SRM_RKEY_ERR_RANGE, srm_rkey_unpack(&packed, &out));

    key             = sample_key();
    key.client_addr = UINT64_MAX - 10;
    srm_rkey_pack(&key, &packed);
    EXPECT_EQ(SRM_RKEY_ERR_RANGE, srm_rkey_unpack(&packed, &out));

    key           = sample_key();
    key.region_id = 0;
    srm_rkey_pack(&key, &packed);
    EXPECT_EQ(SRM_RKEY_ERR_RANGE, srm_rkey_unpack(&packed, &out));
}

TEST(rkey, random_garbage_never_unpacks)
{
    std::mt19937 rng(7);
    srm_rkey_packed_t packed;
    srm_rkey_t out;
    unsigned i, ok = 0;

    for (i = 0; i < 100000; ++i) {
        uint8_t *p = reinterpret_cast<uint8_t*>(&packed);
        for (size_t j = 0; j < sizeof(packed); ++j) {
            p[j] = (uint8_t)rng();
        }
        if (i & 1) { /* half with a valid magic and version: the checksum */
            packed.magic   = SRM_RKEY_MAGIC;
            packed.version = SRM_RKEY_VERSION;
        }
        ok += (srm_rkey_unpack(&packed, &out) == SRM_RKEY_OK);
    }
    EXPECT_EQ(0u, ok);
}

TEST(rkey, range_inside_has_no_overflow)
{
    EXPECT_TRUE(srm_range_inside(100, 50, 100, 50));
    EXPECT_TRUE(srm_range_inside(100, 50, 149, 1));
    EXPECT_TRUE(srm_range_inside(100, 50, 120, 0));
    EXPECT_FALSE(srm_range_inside(100, 50, 99, 1));
    EXPECT_FALSE(srm_range_inside(100, 50, 149, 2));
    EXPECT_FALSE(srm_range_inside(100, 50, 100, 51));
    EXPECT_FALSE(srm_range_inside(100, 50, UINT64_MAX, 2));
    EXPECT_FALSE(srm_range_inside(100, 50, 120, UINT64_MAX));
}

class mem_registry : public ::testing::Test {
protected:
    void SetUp() override { srm_regions_init(&mem); }
    void TearDown() override { srm_regions_cleanup(&mem); }

    srm_regions_t mem;
};

TEST_F(mem_registry, add_maps_the_same_memory_and_find_checks_bounds)
{
    const size_t len = 64 * 1024;
    const uint64_t base = 0x10000000;
    const srm_region_t *region;
    int fd = make_memfd(len);
    ASSERT_GE(fd, 0);
    void *mine = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    ASSERT_NE(MAP_FAILED, mine);

    ASSERT_EQ(UCS_OK, srm_regions_add(&mem, 7, fd, base, len, NULL, &region));
    close(fd); /* the agent's mapping keeps the memory */
    EXPECT_EQ(1u, mem.count);
    EXPECT_EQ(len, mem.bytes);
    EXPECT_NE(0u, region->id);
    EXPECT_NE(0u, region->generation);
    uint32_t id = region->id, gen = region->generation;

    memset(mine, 0xa5, len);
    const srm_region_t *found = srm_regions_find(&mem, 7, id, gen,
                                                 base + 100, 200);
    ASSERT_NE(nullptr, found);
    EXPECT_EQ(0xa5, *(uint8_t*)srm_region_agent_addr(found, base + 100));
    EXPECT_NE(nullptr, srm_regions_find(&mem, 7, id, gen, base, len));

    /* Beyond either end, another owner, an unknown id: nothing. */
    EXPECT_EQ(nullptr, srm_regions_find(&mem, 7, id, gen, base - 1, 2));
    EXPECT_EQ(nullptr, srm_regions_find(&mem, 7, id, gen, base + len - 1, 2));
    EXPECT_EQ(nullptr, srm_regions_find(&mem, 7, id, gen, base, len + 1));
    EXPECT_EQ(nullptr,
              srm_regions_find(&mem, 7, id, gen, base + 8, UINT64_MAX));
    EXPECT_EQ(nullptr, srm_regions_find(&mem, 8, id, gen, base, 1));
    EXPECT_EQ(nullptr, srm_regions_find(&mem, 7, id + 1, gen, base, 1));
    EXPECT_EQ(nullptr, srm_regions_find(&mem, 7, 0, gen, base, 1));
    EXPECT_EQ(7u, mem.rejected);
    munmap(mine, len);
}

TEST_F(mem_registry, a_reused_slot_does_not_answer_to_the_stale_generation)
{
    const srm_region_t *region;
    int fd = make_memfd(4096);
    ASSERT_GE(fd, 0);

    ASSERT_EQ(UCS_OK,
              srm_regions_add(&mem, 1, fd, 0x1000, 4096, NULL, &region));
    uint32_t id = region->id, old_gen = region->generation;
    ASSERT_EQ(UCS_OK, srm_regions_remove(&mem, 1, id, old_gen));
    EXPECT_EQ(nullptr, srm_regions_find(&mem, 1, id, old_gen, 0x1000, 1));
    EXPECT_EQ(UCS_ERR_NO_ELEM,
              srm_regions_remove(&mem, 1, id, old_gen)); /* twice: no */

    ASSERT_EQ(UCS_OK,
              srm_regions_add(&mem, 1, fd, 0x1000, 4096, NULL, &region));
    EXPECT_EQ(id, region->id); /* the same slot ... */
    EXPECT_NE(old_gen, region->generation); /* ... a new generation */
    EXPECT_EQ(nullptr, srm_regions_find(&mem, 1, id, old_gen, 0x1000, 1));
    EXPECT_NE(nullptr, srm_regions_find(&mem, 1, id, region->generation, 0x1000,
                                        1));
    /* Another owner cannot remove it. */
    EXPECT_EQ(UCS_ERR_NO_ELEM,
              srm_regions_remove(&mem, 2, id, region->generation));
    EXPECT_EQ(1u, mem.count);
    close(fd);
}

TEST_F(mem_registry, an_owner_leaving_removes_its_regions_only)
{
    std::vector<std::pair<uint32_t, uint32_t>> keep;
    const srm_region_t *region;
    int fd = make_memfd(8192);
    ASSERT_GE(fd, 0);

    for (uint32_t i = 0; i < 40; ++i) {
        uint32_t owner = (i % 3 == 0) ? 100 : 200;
        ASSERT_EQ(UCS_OK, srm_regions_add(&mem, owner, fd, 0x100000 + i * 8192,
                                          8192, NULL, &region));
        if (owner == 200) {
            keep.push_back({region->id, region->generation});
        }
    }
    EXPECT_EQ(40u, mem.count);
    EXPECT_EQ(14u, srm_regions_remove_owner(&mem, 100));
    EXPECT_EQ(26u, mem.count);
    EXPECT_EQ(26u * 8192, mem.bytes);
    for (auto &k : keep) {
        const srm_region_t *slot = &mem.regions[k.first - 1];
        EXPECT_NE(nullptr, srm_regions_find(&mem, 200, k.first, k.second,
                                            slot->client_addr, 8192));
    }
    EXPECT_EQ(0u, srm_regions_remove_owner(&mem, 100));
    close(fd);
}

TEST_F(mem_registry, refuses_unsealed_short_or_empty_memory)
{
    const srm_region_t *region;
    int unsealed = make_memfd(4096, false);
    int sealed   = make_memfd(4096);
    ASSERT_GE(unsealed, 0);
    ASSERT_GE(sealed, 0);

    EXPECT_EQ(UCS_ERR_INVALID_PARAM,
              srm_regions_add(&mem, 1, unsealed, 0x1000, 4096, NULL, &region));
    EXPECT_EQ(EINVAL, errno);
    EXPECT_EQ(UCS_ERR_INVALID_PARAM,
              srm_regions_add(&mem, 1, sealed, 0x1000, 8192, NULL, &region));
    EXPECT_EQ(UCS_ERR_INVALID_PARAM,
              srm_regions_add(&mem, 1, sealed, 0x1000, 0, NULL, &region));
    EXPECT_EQ(UCS_ERR_INVALID_PARAM,
              srm_regions_add(&mem, 1, sealed, UINT64_MAX - 100, 4096, NULL,
                              &region));
    EXPECT_EQ(0u, mem.count);
    close(unsealed);
    close(sealed);
}

TEST_F(mem_registry, a_held_region_outlives_its_removal_until_released)
{
    const srm_region_t *region;
    int fd = make_memfd(4096);
    ASSERT_GE(fd, 0);

    ASSERT_EQ(UCS_OK,
              srm_regions_add(&mem, 1, fd, 0x1000, 4096, NULL, &region));
    uint32_t id = region->id, gen = region->generation;
    srm_region_t *found = srm_regions_find(&mem, 1, id, gen, 0x1000, 4096);
    ASSERT_NE(nullptr, found);
    srm_regions_hold(found); /* an RDMA operation in flight */
    srm_regions_hold(found);

    /* Removed (its owner left): hidden at once, registered until the
     * last operation is done, and its slot is not reused meanwhile. */
    EXPECT_EQ(1u, srm_regions_remove_owner(&mem, 1));
    EXPECT_EQ(nullptr, srm_regions_find(&mem, SRM_MEM_ANY_OWNER, id, gen,
                                        0x1000, 1));
    EXPECT_EQ(1u, mem.count);
    const srm_region_t *other;
    ASSERT_EQ(UCS_OK, srm_regions_add(&mem, 2, fd, 0x9000, 4096, NULL, &other));
    EXPECT_NE(id, other->id);
    srm_regions_release_hold(&mem, id);
    EXPECT_EQ(2u, mem.count);
    srm_regions_release_hold(&mem, id);
    EXPECT_EQ(1u, mem.count);
    srm_regions_release_hold(&mem, id); /* once more: ignored */
    EXPECT_EQ(1u, mem.count);
    close(fd);
}
