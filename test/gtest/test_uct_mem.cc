/* SPDX-License-Identifier: BSD-3-Clause */
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
#include "srm_test_uct.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <unistd.h>
#include <vector>

namespace {

using srm_test::agent;

class uct_mem_test : public ::testing::Test {
protected:
    void SetUp() override
    {
        ucs_status_t status = srm_test::open_srm_md(
                {{"SOCKET", agent_.socket()}, {"AGENT", "never"},
                 {"MEM_ALLOC", "y"}},
                &md_, &component_);
        if (status == UCS_ERR_NO_DEVICE) {
            GTEST_FAIL() << "no srm transport: is libuct_srm.so.0 preloaded?";
        }
        ASSERT_EQ(UCS_OK, status) << ucs_status_string(status);
    }

    void TearDown() override
    {
        if (md_ != nullptr) {
            uct_md_close(md_);
        }
    }

    ucs_status_t alloc(size_t length, uct_allocated_memory_t *mem)
    {
        return srm_test::alloc_md_memory(md_, length, mem);
    }

    bool status_has(const std::string &what)
    {
        return agent_.status().find(what) != std::string::npos;
    }

    agent           agent_;
    uct_component_h component_ = nullptr;
    uct_md_h        md_        = nullptr;
};

/*
 * PUT/GET zcopy between two ports of one agent (the agent copies between
 * its mappings of the two regions): data, completions, flush, and a freed
 * region refused without harm to the next operation.
 */
class uct_rma_test : public uct_mem_test {
protected:
    void SetUp() override
    {
        uct_mem_test::SetUp();
        if (HasFatalFailure()) {
            return;
        }
        ASSERT_EQ(UCS_OK, ucs_async_context_create(UCS_ASYNC_MODE_THREAD_SPINLOCK,
                                                   &async_));
        ASSERT_EQ(UCS_OK, uct_worker_create(async_, UCS_THREAD_MODE_SINGLE,
                                            &worker_));
        open_iface(&initiator_);
        open_iface(&target_);
        uct_iface_attr_t attr;
        ASSERT_EQ(UCS_OK, uct_iface_query(target_, &attr));
        std::vector<char> dev(attr.device_addr_len), addr(attr.iface_addr_len);
        ASSERT_EQ(UCS_OK, uct_iface_get_device_address(
                                  target_, (uct_device_addr_t*)dev.data()));
        ASSERT_EQ(UCS_OK, uct_iface_get_address(
                                  target_, (uct_iface_addr_t*)addr.data()));
        uct_ep_params_t params = {};
        params.field_mask = UCT_EP_PARAM_FIELD_IFACE |
                            UCT_EP_PARAM_FIELD_DEV_ADDR |
                            UCT_EP_PARAM_FIELD_IFACE_ADDR;
        params.iface      = initiator_;
        params.dev_addr   = (const uct_device_addr_t*)dev.data();
        params.iface_addr = (const uct_iface_addr_t*)addr.data();
        ASSERT_EQ(UCS_OK, uct_ep_create(&params, &ep_));
    }

    void TearDown() override
    {
        if (ep_ != nullptr) {
            uct_ep_destroy(ep_);
        }
        for (uct_iface_h iface : {initiator_, target_}) {
            if (iface != nullptr) {
                uct_iface_close(iface);
            }
        }
        if (worker_ != nullptr) {
            uct_worker_destroy(worker_);
        }
        if (async_ != nullptr) {
            ucs_async_context_destroy(async_);
        }
        uct_mem_test::TearDown();
    }

    void open_iface(uct_iface_h *iface)
    {
        ASSERT_EQ(UCS_OK, srm_test::open_srm_iface(md_, worker_, iface));
    }

    struct comp_t {
        uct_completion_t uct;
        ucs_status_t     status;
        int              done;
    };

    static void on_comp(uct_completion_t *self)
    {
        comp_t *c = ucs_container_of(self, comp_t, uct);
        c->status = self->status;
        c->done++;
    }

    void init_comp(comp_t *c)
    {
        c->uct.func   = on_comp;
        c->uct.count  = 1;
        c->uct.status = UCS_OK;
        c->status     = UCS_OK;
        c->done       = 0;
    }

    bool wait(comp_t *c, int timeout_ms = 10000)
    {
        for (int i = 0; (i < timeout_ms * 10) && !c->done; ++i) {
            if (uct_worker_progress(worker_) == 0) {
                usleep(100);
            }
        }
        return c->done != 0;
    }

    void packed_key(const uct_allocated_memory_t &mem, uct_rkey_bundle_t *b)
    {
        uct_md_attr_t attr;
        ASSERT_EQ(UCS_OK, uct_md_query(md_, &attr));
        std::vector<uint8_t> packed(attr.rkey_packed_size);
        ASSERT_EQ(UCS_OK, uct_md_mkey_pack(md_, mem.memh, packed.data()));
        ASSERT_EQ(UCS_OK, uct_rkey_unpack(component_, packed.data(), b));
    }

    ucs_status_t rma(bool put, const uct_allocated_memory_t &local,
                     size_t offset, size_t length, uint64_t remote_addr,
                     uct_rkey_t rkey, comp_t *c)
    {
        uct_iov_t iov = {};
        iov.buffer = (char*)local.address + offset;
        iov.length = length;
        iov.memh   = local.memh;
        iov.count  = 1;
        init_comp(c);
        return put ? uct_ep_put_zcopy(ep_, &iov, 1, remote_addr, rkey,
                                      &c->uct)
                   : uct_ep_get_zcopy(ep_, &iov, 1, remote_addr, rkey,
                                      &c->uct);
    }

    ucs_async_context_t *async_  = nullptr;
    uct_worker_h        worker_  = nullptr;
    uct_iface_h         initiator_ = nullptr, target_ = nullptr;
    uct_ep_h            ep_      = nullptr;
};

} // namespace

TEST_F(uct_mem_test, md_offers_alloc_and_fixed_size_keys)
{
    uct_md_attr_t attr;
    ASSERT_EQ(UCS_OK, uct_md_query(md_, &attr));
    EXPECT_TRUE(attr.cap.flags & UCT_MD_FLAG_ALLOC);
    /* No REG: UCP must not pick srm for rendezvous on user buffers. */
    EXPECT_FALSE(attr.cap.flags & UCT_MD_FLAG_REG);
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
    /* On the tcp wire the key names memory, no RDMA; on the verbs wire
     * (test_vm_rma sets SRM_TEST_EXPECT_RDMA) the agent registered it in
     * its PD and the key carries the rkey. */
    if (getenv("SRM_TEST_EXPECT_RDMA") != nullptr) {
        EXPECT_EQ(SRM_RKEY_FLAG_RDMA, key->flags & SRM_RKEY_FLAG_RDMA);
        EXPECT_NE(0u, key->rkey[0]);
        EXPECT_TRUE(status_has("registered in the agent PD (1 regions"))
                << agent_.status();
    } else {
        EXPECT_EQ(0u, key->flags & SRM_RKEY_FLAG_RDMA);
    }
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

TEST_F(uct_mem_test, a_user_maps_no_more_than_the_mem_limit)
{
    /* 1 MB per user: a second 600 KB allocation is refused (and counted;
     * the md logs the agent's reason), through the same md or another
     * connection of the same user (more connections used to bypass it),
     * and freeing makes room. */
    agent limited({"UCX_SRM_MEM_LIMIT=1m"});
    const std::vector<std::pair<std::string, std::string>> config = {
            {"SOCKET", limited.socket()}, {"AGENT", "never"},
            {"MEM_ALLOC", "y"}};
    uct_md_h md1 = nullptr, md2 = nullptr;
    uct_component_h component;
    ASSERT_EQ(UCS_OK, srm_test::open_srm_md(config, &md1, &component));
    ASSERT_EQ(UCS_OK, srm_test::open_srm_md(config, &md2, &component));

    uct_allocated_memory_t first, second, other;
    ASSERT_EQ(UCS_OK, srm_test::alloc_md_memory(md1, 600000, &first));
    EXPECT_NE(UCS_OK, srm_test::alloc_md_memory(md1, 600000, &second));
    std::string status = limited.status();
    EXPECT_NE(std::string::npos, status.find("rejected 1, limit 1024 KB"))
            << status;
    EXPECT_NE(UCS_OK, srm_test::alloc_md_memory(md2, 600000, &other))
            << "another connection of the same user passed the limit";

    ASSERT_EQ(UCS_OK, srm_test::alloc_md_memory(md2, 300000, &other));
    ASSERT_EQ(UCS_OK, uct_mem_free(&first));
    ASSERT_EQ(UCS_OK, srm_test::alloc_md_memory(md1, 600000, &second));
    EXPECT_NE(std::string::npos,
              limited.status().find("(2 regions, 884 KB)"))
            << limited.status();

    EXPECT_EQ(UCS_OK, uct_mem_free(&second));
    EXPECT_EQ(UCS_OK, uct_mem_free(&other));
    uct_md_close(md1);
    uct_md_close(md2);
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

TEST_F(uct_rma_test, put_and_get_move_the_data_and_complete)
{
    const size_t len = 256 * 1024;
    uct_allocated_memory_t src, dst;
    uct_rkey_bundle_t rkey;
    comp_t c;

    ASSERT_EQ(UCS_OK, alloc(len, &src));
    ASSERT_EQ(UCS_OK, alloc(len, &dst));
    for (size_t i = 0; i < len; ++i) {
        ((uint8_t*)src.address)[i] = (uint8_t)(i * 7 + 1);
    }
    memset(dst.address, 0, len);
    packed_key(dst, &rkey);

    ASSERT_EQ(UCS_INPROGRESS, rma(true, src, 0, len, (uintptr_t)dst.address,
                                  rkey.rkey, &c));
    /* Not done until the agent answered: flush says so. */
    EXPECT_EQ(UCS_INPROGRESS, uct_ep_flush(ep_, 0, nullptr));
    ASSERT_TRUE(wait(&c));
    EXPECT_EQ(UCS_OK, c.status);
    EXPECT_EQ(0, memcmp(src.address, dst.address, len));
    EXPECT_EQ(UCS_OK, uct_ep_flush(ep_, 0, nullptr));

    /* GET a part back, at an offset, into a cleared source. */
    memset(src.address, 0, len);
    ASSERT_EQ(UCS_INPROGRESS, rma(false, src, 4096, 10000,
                                  (uintptr_t)dst.address + 8192, rkey.rkey,
                                  &c));
    ASSERT_TRUE(wait(&c));
    EXPECT_EQ(UCS_OK, c.status);
    EXPECT_EQ(0, memcmp((char*)src.address + 4096,
                        (char*)dst.address + 8192, 10000));
    EXPECT_EQ(0, ((uint8_t*)src.address)[4095]);

    /* A flush with a completion waits for the RMA before it. */
    comp_t f;
    init_comp(&f);
    ASSERT_EQ(UCS_INPROGRESS, rma(true, src, 0, 64, (uintptr_t)dst.address,
                                  rkey.rkey, &c));
    ASSERT_EQ(UCS_INPROGRESS, uct_ep_flush(ep_, 0, &f.uct));
    ASSERT_TRUE(wait(&f));
    EXPECT_EQ(1, c.done);

    EXPECT_EQ(UCS_OK, uct_rkey_release(component_, &rkey));
    EXPECT_EQ(UCS_OK, uct_mem_free(&src));
    EXPECT_EQ(UCS_OK, uct_mem_free(&dst));
}

TEST_F(uct_rma_test, out_of_range_or_user_memory_is_refused_at_once)
{
    uct_allocated_memory_t mem;
    uct_rkey_bundle_t rkey;
    comp_t c;

    ASSERT_EQ(UCS_OK, alloc(8192, &mem));
    packed_key(mem, &rkey);
    EXPECT_EQ(UCS_ERR_INVALID_PARAM,
              rma(true, mem, 0, 8193, (uintptr_t)mem.address, rkey.rkey, &c));
    EXPECT_EQ(UCS_ERR_INVALID_PARAM,
              rma(true, mem, 0, 16, (uintptr_t)mem.address + 8190, rkey.rkey,
                  &c));

    std::vector<char> user(64);
    uct_iov_t iov = {};
    iov.buffer = user.data();
    iov.length = user.size();
    iov.memh   = UCT_MEM_HANDLE_NULL;
    iov.count  = 1;
    EXPECT_EQ(UCS_ERR_UNSUPPORTED,
              uct_ep_put_zcopy(ep_, &iov, 1, (uintptr_t)mem.address,
                               rkey.rkey, nullptr));
    EXPECT_EQ(UCS_OK, uct_rkey_release(component_, &rkey));
    EXPECT_EQ(UCS_OK, uct_mem_free(&mem));
}

namespace {

struct fence_state {
    uct_pending_req_t req;
    uct_ep_h          ep;
    const int         *put_done;    /* the PUT's completion count */
    int               put_done_at_send; /* its value when the AM went */
    int               sent;
    int               received;
};

ucs_status_t fence_on_am(void *arg, void *data, size_t length, unsigned flags)
{
    static_cast<fence_state*>(arg)->received++;
    return UCS_OK;
}

ucs_status_t fence_send_pending(uct_pending_req_t *req)
{
    fence_state *st     = ucs_container_of(req, fence_state, req);
    ucs_status_t status = uct_ep_am_short(st->ep, 7, 0, "f", 1);

    if (status == UCS_OK) {
        st->put_done_at_send = *st->put_done;
        st->sent++;
    }
    return status;
}

} // namespace

/* After uct_ep_fence / uct_iface_fence nothing starts before the RMA sent
 * before it is answered: sends say NO_RESOURCE, and the one queued as
 * pending goes once the PUT is done. Without a fence an AM passes an
 * unanswered PUT. */
TEST_F(uct_rma_test, sends_after_a_fence_wait_for_the_rma_before_it)
{
    const size_t len = 64 * 1024;
    uct_allocated_memory_t src, dst;
    uct_rkey_bundle_t rkey;
    comp_t c, c2;
    fence_state st = {};

    ASSERT_EQ(UCS_OK, uct_iface_set_am_handler(target_, 7, fence_on_am, &st,
                                               0));
    ASSERT_EQ(UCS_OK, alloc(len, &src));
    ASSERT_EQ(UCS_OK, alloc(len, &dst));
    packed_key(dst, &rkey);
    st.ep       = ep_;
    st.put_done = &c.done;

    /* No fence: the AM does not wait for the PUT. */
    ASSERT_EQ(UCS_INPROGRESS, rma(true, src, 0, len, (uintptr_t)dst.address,
                                  rkey.rkey, &c));
    EXPECT_EQ(UCS_OK, uct_ep_am_short(ep_, 7, 0, "a", 1));
    ASSERT_TRUE(wait(&c));

    /* An ep fence: the AM and another PUT wait; the AM queued as pending
     * goes after the PUT's completion. */
    ASSERT_EQ(UCS_INPROGRESS, rma(true, src, 0, len, (uintptr_t)dst.address,
                                  rkey.rkey, &c));
    EXPECT_EQ(UCS_OK, uct_ep_fence(ep_, 0));
    EXPECT_EQ(UCS_ERR_NO_RESOURCE, uct_ep_am_short(ep_, 7, 0, "b", 1));
    EXPECT_EQ(UCS_ERR_NO_RESOURCE, rma(true, src, 0, 64,
                                       (uintptr_t)dst.address, rkey.rkey,
                                       &c2));
    st.req.func = fence_send_pending;
    ASSERT_EQ(UCS_OK, uct_ep_pending_add(ep_, &st.req, 0));
    ASSERT_TRUE(wait(&c));
    for (int i = 0; (i < 100000) && (st.sent == 0); ++i) {
        if (uct_worker_progress(worker_) == 0) {
            usleep(100);
        }
    }
    EXPECT_EQ(1, st.sent);
    EXPECT_EQ(1, st.put_done_at_send) << "the AM went before the PUT was done";

    /* The fence is over: sends go at once. */
    EXPECT_EQ(UCS_OK, uct_ep_am_short(ep_, 7, 0, "c", 1));

    /* An iface fence holds them too. */
    ASSERT_EQ(UCS_INPROGRESS, rma(true, src, 0, len, (uintptr_t)dst.address,
                                  rkey.rkey, &c));
    EXPECT_EQ(UCS_OK, uct_iface_fence(initiator_, 0));
    EXPECT_EQ(UCS_ERR_NO_RESOURCE, uct_ep_am_short(ep_, 7, 0, "d", 1));
    ASSERT_TRUE(wait(&c));
    EXPECT_EQ(UCS_OK, uct_ep_am_short(ep_, 7, 0, "e", 1));

    /* A fence with no RMA outstanding holds nothing. */
    EXPECT_EQ(UCS_OK, uct_ep_fence(ep_, 0));
    EXPECT_EQ(UCS_OK, uct_ep_am_short(ep_, 7, 0, "g", 1));

    for (int i = 0; (i < 100000) && (st.received < 5); ++i) {
        if (uct_worker_progress(worker_) == 0) {
            usleep(100);
        }
    }
    EXPECT_EQ(5, st.received);
    EXPECT_EQ(UCS_OK, uct_rkey_release(component_, &rkey));
    EXPECT_EQ(UCS_OK, uct_mem_free(&src));
    EXPECT_EQ(UCS_OK, uct_mem_free(&dst));
}

TEST_F(uct_rma_test, rma_to_a_freed_region_fails_and_the_next_one_works)
{
    uct_allocated_memory_t src, gone, dst;
    uct_rkey_bundle_t gone_key, dst_key;
    comp_t c;

    ASSERT_EQ(UCS_OK, alloc(4096, &src));
    ASSERT_EQ(UCS_OK, alloc(4096, &gone));
    ASSERT_EQ(UCS_OK, alloc(4096, &dst));
    packed_key(gone, &gone_key);
    packed_key(dst, &dst_key);
    uint64_t gone_addr = (uintptr_t)gone.address;
    ASSERT_EQ(UCS_OK, uct_mem_free(&gone));

    memset(src.address, 0x3c, 4096);
    ASSERT_EQ(UCS_INPROGRESS, rma(true, src, 0, 4096, gone_addr,
                                  gone_key.rkey, &c));
    ASSERT_TRUE(wait(&c));
    EXPECT_EQ(UCS_ERR_INVALID_PARAM, c.status);

    ASSERT_EQ(UCS_INPROGRESS, rma(true, src, 0, 4096, (uintptr_t)dst.address,
                                  dst_key.rkey, &c));
    ASSERT_TRUE(wait(&c));
    EXPECT_EQ(UCS_OK, c.status);
    EXPECT_EQ(0x3c, ((uint8_t*)dst.address)[4095]);
    EXPECT_TRUE(status_has("rejected 1, ")) << agent_.status();

    EXPECT_EQ(UCS_OK, uct_rkey_release(component_, &gone_key));
    EXPECT_EQ(UCS_OK, uct_rkey_release(component_, &dst_key));
    EXPECT_EQ(UCS_OK, uct_mem_free(&src));
    EXPECT_EQ(UCS_OK, uct_mem_free(&dst));
}

/*
 * A key names a region by id, generation and address, all easy to learn;
 * the agent's random token in it is what opens the region. A key with a
 * forged token moves nothing, and a process that keeps forging is dropped.
 */
TEST_F(uct_rma_test, a_key_with_a_forged_token_reaches_nothing)
{
    uct_allocated_memory_t src, dst;
    comp_t c;

    ASSERT_EQ(UCS_OK, alloc(4096, &src));
    ASSERT_EQ(UCS_OK, alloc(4096, &dst));
    uct_md_attr_t attr;
    ASSERT_EQ(UCS_OK, uct_md_query(md_, &attr));
    std::vector<uint8_t> packed(attr.rkey_packed_size);
    ASSERT_EQ(UCS_OK, uct_md_mkey_pack(md_, dst.memh, packed.data()));
    srm_rkey_t key;
    ASSERT_EQ(SRM_RKEY_OK, srm_rkey_unpack(packed.data(), &key));
    key.token ^= 0x5a5a5a5a; /* everything else right, the check recomputed */
    srm_rkey_pack(&key, packed.data());
    uct_rkey_bundle_t forged;
    ASSERT_EQ(UCS_OK, uct_rkey_unpack(component_, packed.data(), &forged));

    memset(src.address, 0x3c, 4096);
    memset(dst.address, 0, 4096);
    for (bool put : {true, false}) {
        ASSERT_EQ(UCS_INPROGRESS, rma(put, src, 0, 4096,
                                      (uintptr_t)dst.address, forged.rkey,
                                      &c));
        ASSERT_TRUE(wait(&c));
        EXPECT_EQ(UCS_ERR_REJECTED, c.status);
    }
    EXPECT_EQ(0, ((uint8_t*)dst.address)[0]) << "a forged PUT wrote";
    EXPECT_EQ(0x3c, ((uint8_t*)src.address)[0]) << "a forged GET read";

    /* Keep forging: the agent lets go of this port, maybe before the
     * last of these is posted (then it fails at once). No progress from
     * here: this iface has no error handler, and its endpoints fail. */
    comp_t more[8];
    for (auto &m : more) {
        if (rma(true, src, 0, 64, (uintptr_t)dst.address, forged.rkey,
                &m) != UCS_INPROGRESS) {
            break;
        }
    }
    for (int i = 0; (i < 500) && !status_has("dropped 1"); ++i) {
        usleep(10000);
    }
    EXPECT_TRUE(status_has("dropped 1")) << agent_.status();

    EXPECT_EQ(UCS_OK, uct_rkey_release(component_, &forged));
    EXPECT_EQ(UCS_OK, uct_mem_free(&src));
    EXPECT_EQ(UCS_OK, uct_mem_free(&dst));
}

TEST_F(uct_rma_test, offered_only_where_the_agent_serves_every_peer)
{
    /* On a tcp wire (UCX_SRM_DEVICES=lo in make check) RMA to other nodes
     * is not there, so UCT is not offered PUT/GET; without a wire, or on
     * the verbs wire, it is. */
    uct_iface_attr_t attr;
    ASSERT_EQ(UCS_OK, uct_iface_query(initiator_, &attr));
    if (status_has("wire: none") || status_has("wire: verbs")) {
        EXPECT_TRUE(attr.cap.flags & UCT_IFACE_FLAG_PUT_ZCOPY);
        EXPECT_TRUE(attr.cap.flags & UCT_IFACE_FLAG_GET_ZCOPY);
    } else {
        EXPECT_FALSE(attr.cap.flags & UCT_IFACE_FLAG_PUT_ZCOPY);
        EXPECT_FALSE(attr.cap.flags & UCT_IFACE_FLAG_GET_ZCOPY);
    }
}

/*
 * PUT/GET between two agents (two nodes): on the verbs wire
 * (SRM_TEST_EXPECT_RDMA, test_vm_rma) RDMA WRITE/READ move the data; an
 * operation on a freed remote region fails, and the next one works once
 * the channel has failed over. On the tcp wire the agent refuses them
 * (UNSUPPORTED), harmlessly.
 */
class uct_rma_2nodes_test : public srm_test::two_port_test {
protected:

    void open(int i, const std::string &socket)
    {
        create_worker();
        ucs_status_t status = srm_test::open_srm_md(
                {{"SOCKET", socket}, {"AGENT", "never"}, {"MEM_ALLOC", "y"}},
                &md_[i], &component_);
        ASSERT_EQ(UCS_OK, status) << ucs_status_string(status);
        ASSERT_EQ(UCS_OK, srm_test::open_srm_iface(md_[i], worker_,
                                                   &iface_[i]));
    }

    static ucs_status_t on_am(void *arg, void *data, size_t length,
                              unsigned flags)
    {
        auto *self = static_cast<uct_rma_2nodes_test*>(arg);

        self->received_++;
        /* With a region to watch: its first and last byte as the last PUT
         * left them when the AM after its fence arrives. */
        if ((self->watch_ != nullptr) &&
            ((self->watch_[0] != self->watch_want_) ||
             (self->watch_[self->watch_len_ - 1] != self->watch_want_))) {
            self->watch_bad_++;
        }
        return UCS_OK;
    }

    void connect()
    {
        ASSERT_NO_FATAL_FAILURE(create_ep(on_am, this));
        /* One AM across first: the channels are up before any RMA. */
        ASSERT_EQ(UCS_OK, uct_ep_am_short(ep_, 9, 0, "x", 1));
        for (int i = 0; (i < 600000) && (received_ == 0); ++i) {
            if (uct_worker_progress(worker_) == 0) {
                usleep(100);
            }
        }
        ASSERT_EQ(1, received_);
    }

    ucs_status_t alloc(int i, size_t length, uct_allocated_memory_t *mem)
    {
        return srm_test::alloc_md_memory(md_[i], length, mem);
    }

    struct comp_t {
        uct_completion_t uct;
        int              done;
    };

    static void on_comp(uct_completion_t *self)
    {
        ucs_container_of(self, comp_t, uct)->done++;
    }

    /* The operation's status once complete (UCS_ERR_TIMED_OUT if never). */
    ucs_status_t rma(bool put, const uct_allocated_memory_t &local,
                     uint64_t remote_addr, uct_rkey_t rkey, size_t length)
    {
        comp_t c;
        c.uct.func   = on_comp;
        c.uct.count  = 1;
        c.uct.status = UCS_OK;
        c.done       = 0;
        uct_iov_t iov = {};
        iov.buffer = local.address;
        iov.length = length;
        iov.memh   = local.memh;
        iov.count  = 1;
        ucs_status_t status =
                put ? uct_ep_put_zcopy(ep_, &iov, 1, remote_addr, rkey, &c.uct)
                    : uct_ep_get_zcopy(ep_, &iov, 1, remote_addr, rkey, &c.uct);
        if (status != UCS_INPROGRESS) {
            return status;
        }
        for (int i = 0; (i < 1200000) && !c.done; ++i) { /* 2 min */
            if (uct_worker_progress(worker_) == 0) {
                usleep(100);
            }
        }
        return c.done ? c.uct.status : UCS_ERR_TIMED_OUT;
    }

    void key_of(int i, const uct_allocated_memory_t &mem,
                uct_rkey_bundle_t *b)
    {
        std::vector<uint8_t> packed(sizeof(srm_rkey_packed_t));
        ASSERT_EQ(UCS_OK, uct_md_mkey_pack(md_[i], mem.memh, packed.data()));
        ASSERT_EQ(UCS_OK, uct_rkey_unpack(component_, packed.data(), b));
    }

    /* mem's key with another token: a guess. */
    void forged_key_of(int i, const uct_allocated_memory_t &mem,
                       uct_rkey_bundle_t *b)
    {
        srm_rkey_packed_t packed;
        srm_rkey_t key;
        ASSERT_EQ(UCS_OK, uct_md_mkey_pack(md_[i], mem.memh, &packed));
        ASSERT_EQ(SRM_RKEY_OK, srm_rkey_unpack(&packed, &key));
        key.token ^= 0x5a5a;
        srm_rkey_pack(&key, &packed); /* a checksum of its own */
        ASSERT_EQ(UCS_OK, uct_rkey_unpack(component_, &packed, b));
    }

    /* Both ports open and connected; SRC on node 0 and a zeroed DST on
     * node 1, LEN bytes each, and DST's key. */
    void connect_regions(size_t len, uct_allocated_memory_t *src,
                         uct_allocated_memory_t *dst,
                         uct_rkey_bundle_t *dst_key)
    {
        for (auto &a : agents_) {
            a.reset(new agent(agent_env_));
        }
        open(0, agents_[0]->socket());
        open(1, agents_[1]->socket());
        ASSERT_NO_FATAL_FAILURE(connect());
        ASSERT_EQ(UCS_OK, alloc(0, len, src));
        ASSERT_EQ(UCS_OK, alloc(1, len, dst));
        ASSERT_NO_FATAL_FAILURE(key_of(1, *dst, dst_key));
        memset(dst->address, 0, len);
    }

    std::vector<std::string> agent_env_; /* for both agents */
    std::unique_ptr<agent>   agents_[2];
    uct_component_h     component_ = nullptr;
    int                 received_  = 0;
    const uint8_t       *watch_    = nullptr;
    size_t              watch_len_ = 0;
    uint8_t             watch_want_ = 0;
    int                 watch_bad_ = 0;
};

/* PUT to the other node, fence, AM: the AM goes only after the PUT is
 * answered, so its receiver finds the data in place (RDMA: the PUT and the
 * AM travel on different queue pairs). On the tcp wire the PUT fails
 * (no RDMA), and the fence lets the AM go after that answer. */
TEST_F(uct_rma_2nodes_test, an_am_after_a_fence_finds_the_put_in_place)
{
    const size_t len    = 256 * 1024;
    const int    rounds = 20;
    const bool   rdma   = getenv("SRM_TEST_EXPECT_RDMA") != nullptr;
    uct_allocated_memory_t src, dst;
    uct_rkey_bundle_t dst_key;
    int failed_puts = 0;

    ASSERT_NO_FATAL_FAILURE(connect_regions(len, &src, &dst, &dst_key));
    watch_     = (const uint8_t*)dst.address;
    watch_len_ = len;

    for (int r = 1; r <= rounds; ++r) {
        comp_t c;
        c.uct.func   = on_comp;
        c.uct.count  = 1;
        c.uct.status = UCS_OK;
        c.done       = 0;
        memset(src.address, r, len);
        uct_iov_t iov = {};
        iov.buffer = src.address;
        iov.length = len;
        iov.memh   = src.memh;
        iov.count  = 1;
        ASSERT_EQ(UCS_INPROGRESS, uct_ep_put_zcopy(ep_, &iov, 1,
                                                   (uintptr_t)dst.address,
                                                   dst_key.rkey, &c.uct));
        watch_want_ = rdma ? (uint8_t)r : 0;
        ASSERT_EQ(UCS_OK, uct_ep_fence(ep_, 0));
        ucs_status_t status;
        for (int i = 0; i < 1200000; ++i) { /* 2 min */
            status = uct_ep_am_short(ep_, 9, 0, "f", 1);
            if (status != UCS_ERR_NO_RESOURCE) {
                break;
            }
            if (uct_worker_progress(worker_) == 0) {
                usleep(100);
            }
        }
        ASSERT_EQ(UCS_OK, status);
        EXPECT_EQ(1, c.done) << "round " << r << ": the AM went first";
        failed_puts += c.uct.status != UCS_OK;
        /* This round's AM arrives before the next PUT is posted. */
        for (int i = 0; (i < 600000) && (received_ < r + 1); ++i) {
            if (uct_worker_progress(worker_) == 0) {
                usleep(100);
            }
        }
        ASSERT_EQ(r + 1, received_) << "round " << r << ": no AM";
    }
    EXPECT_EQ(0, watch_bad_) << "AMs that found the PUT before them not done";
    EXPECT_EQ(rdma ? 0 : rounds, failed_puts);
    watch_ = nullptr;
    EXPECT_EQ(UCS_OK, uct_rkey_release(component_, &dst_key));
    EXPECT_EQ(UCS_OK, uct_mem_free(&src));
    EXPECT_EQ(UCS_OK, uct_mem_free(&dst));
}

TEST_F(uct_rma_2nodes_test, put_get_between_agents)
{
    const size_t len = 128 * 1024;
    const bool rdma  = getenv("SRM_TEST_EXPECT_RDMA") != nullptr;
    uct_allocated_memory_t src, dst, gone;
    uct_rkey_bundle_t dst_key, gone_key;

    ASSERT_NO_FATAL_FAILURE(connect_regions(len, &src, &dst, &dst_key));
    for (size_t i = 0; i < len; ++i) {
        ((uint8_t*)src.address)[i] = (uint8_t)(i * 13 + 5);
    }

    ucs_status_t status = rma(true, src, (uintptr_t)dst.address, dst_key.rkey,
                              len);
    if (!rdma) {
        EXPECT_EQ(UCS_ERR_UNSUPPORTED, status) << "a tcp-wire agent";
    } else {
        ASSERT_EQ(UCS_OK, status);
        EXPECT_EQ(0, memcmp(src.address, dst.address, len));
        memset(src.address, 0, len);
        ((uint8_t*)dst.address)[77] = 0x99;
        ASSERT_EQ(UCS_OK, rma(false, src, (uintptr_t)dst.address,
                              dst_key.rkey, len));
        EXPECT_EQ(0, memcmp(src.address, dst.address, len));
        EXPECT_EQ(0x99, ((uint8_t*)src.address)[77]);

        /* A remote region freed under its key, and a key with a made-up
         * token: the target's agent refuses them (before, the first went
         * to the NIC and failed the bulk channel's queue pair, which every
         * process's traffic to that node shares), and nothing fails over. */
        ASSERT_EQ(UCS_OK, alloc(1, 4096, &gone));
        key_of(1, gone, &gone_key);
        uint64_t gone_addr = (uintptr_t)gone.address;
        ASSERT_EQ(UCS_OK, uct_mem_free(&gone));
        EXPECT_EQ(UCS_ERR_INVALID_PARAM, rma(true, src, gone_addr,
                                             gone_key.rkey, 4096));
        EXPECT_EQ(UCS_OK, uct_rkey_release(component_, &gone_key));
        uct_rkey_bundle_t forged;
        ASSERT_NO_FATAL_FAILURE(forged_key_of(1, dst, &forged));
        EXPECT_EQ(UCS_ERR_REJECTED, rma(false, src, (uintptr_t)dst.address,
                                        forged.rkey, 64));
        EXPECT_EQ(UCS_OK, uct_rkey_release(component_, &forged));
        memset(dst.address, 0, 64);
        ((uint8_t*)src.address)[0] = 0x42;
        EXPECT_EQ(UCS_OK, rma(true, src, (uintptr_t)dst.address,
                              dst_key.rkey, 64));
        EXPECT_EQ(0x42, ((uint8_t*)dst.address)[0]);
        std::string status = agents_[0]->status();
        EXPECT_NE(std::string::npos, status.find(" failed 2 served 0\n"))
                << status;
        EXPECT_EQ(std::string::npos, status.find("failovers 1"))
                << "a failed RMA failed a channel over\n" << status;
        EXPECT_NE(std::string::npos,
                  agents_[1]->status().find(" failed 0 served 5\n"))
                << agents_[1]->status();
    }
    EXPECT_EQ(UCS_OK, uct_rkey_release(component_, &dst_key));
    EXPECT_EQ(UCS_OK, uct_mem_free(&src));
    EXPECT_EQ(UCS_OK, uct_mem_free(&dst));
}

/*
 * Without failover a channel's connection is made only for its frames, and
 * RMA requests go on the small channel: the bulk one may never be up. The
 * serving agent then uses the queue pair the request came on; it waited
 * for the bulk one before, and the request, and everything behind it on
 * the small channel, waited for good.
 */
TEST_F(uct_rma_2nodes_test, without_failover_rma_needs_no_bulk_channel)
{
    const size_t len = 4096;
    uct_allocated_memory_t src, dst;
    uct_rkey_bundle_t dst_key;

    if (getenv("SRM_TEST_EXPECT_RDMA") == nullptr) {
        GTEST_SKIP() << "SKIPPED LOUDLY: RMA between nodes needs the verbs "
                        "wire (test_vm_rma runs this on rxe)";
    }
    agent_env_ = {"UCX_SRM_FAILOVER=n"};
    ASSERT_NO_FATAL_FAILURE(connect_regions(len, &src, &dst, &dst_key));
    memset(src.address, 0x3c, len);
    EXPECT_EQ(UCS_OK, rma(true, src, (uintptr_t)dst.address, dst_key.rkey,
                          len));
    EXPECT_EQ(0x3c, ((uint8_t*)dst.address)[len - 1]);
    ((uint8_t*)dst.address)[9] = 0x77;
    EXPECT_EQ(UCS_OK, rma(false, src, (uintptr_t)dst.address, dst_key.rkey,
                          len));
    EXPECT_EQ(0x77, ((uint8_t*)src.address)[9]);
    EXPECT_EQ(UCS_OK, uct_rkey_release(component_, &dst_key));
    EXPECT_EQ(UCS_OK, uct_mem_free(&src));
    EXPECT_EQ(UCS_OK, uct_mem_free(&dst));
}
