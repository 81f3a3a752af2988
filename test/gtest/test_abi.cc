/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The module is compiled against UCX's internal headers with the macros in
 * config.h. If those differ from the installed libucx's build, structures
 * change size and memory is corrupted silently. These tests compare our view
 * of three structures with what the live library writes or declares.
 */
#include <config.h>

extern "C" {
#include <ucs/async/async.h>
#include <ucs/datastruct/arbiter.h>
#include <ucs/type/class.h>
#include <uct/base/uct_iface.h>
}

#include <gtest/gtest.h>

#include <cstddef>
#include <cstring>
#include <vector>

extern "C" ucs_class_t uct_base_iface_t_class;

namespace {

const unsigned char kCanary = 0xa5;

/* Index just past the last byte the library changed, or 0 if none. */
size_t written_extent(const std::vector<unsigned char> &buf)
{
    for (size_t i = buf.size(); i > 0; --i) {
        if (buf[i - 1] != kCanary) {
            return i;
        }
    }
    return 0;
}

} // namespace

TEST(abi, base_iface_size_matches_library_class)
{
    EXPECT_EQ(sizeof(uct_base_iface_t), uct_base_iface_t_class.size)
            << "uct_base_iface_t differs from libuct's: check ENABLE_STATS "
               "and the other ABI macros in config.h";
}

TEST(abi, arbiter_group_size_matches_library)
{
    std::vector<unsigned char> buf(4 * sizeof(ucs_arbiter_group_t), kCanary);
    ucs_arbiter_group_t *group = reinterpret_cast<ucs_arbiter_group_t*>(
            buf.data());

    /*
     * The library's init writes the tail pointer and, only in a build with
     * assertions, the guard after it: the extent tells which build it is.
     */
    ucs_arbiter_group_init(group);
    size_t extent = written_extent(buf);
#if UCS_ENABLE_ASSERT
    size_t expected = offsetof(ucs_arbiter_group_t, guard) + sizeof(int);
#else
    size_t expected = sizeof(ucs_arbiter_group_t);
#endif
    EXPECT_EQ(expected, extent)
            << "libucs initialised " << extent << " bytes of a group we "
            << "think is " << sizeof(ucs_arbiter_group_t)
            << " bytes: ENABLE_ASSERT in config.h does not match libucs";
    ucs_arbiter_group_cleanup(group);
}

TEST(abi, async_context_size_matches_library)
{
    std::vector<unsigned char> buf(4 * sizeof(ucs_async_context_t), kCanary);
    ucs_async_context_t *async = reinterpret_cast<ucs_async_context_t*>(
            buf.data());

    ASSERT_EQ(UCS_OK, ucs_async_context_init(async, UCS_ASYNC_MODE_POLL));
    size_t extent = written_extent(buf);
    /* last_wakeup is the last field: the library must have written there. */
    EXPECT_EQ(sizeof(ucs_async_context_t), extent)
            << "libucs initialised up to byte " << extent << " of an async "
            << "context we think is " << sizeof(ucs_async_context_t)
            << " bytes: ENABLE_ASSERT/ENABLE_MT in config.h do not match";
    ucs_async_context_cleanup(async);
}
