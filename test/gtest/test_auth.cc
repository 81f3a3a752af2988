/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The channel handshake's proofs (srm_auth.h): a proof checks only for the
 * same secret, role and context; every field of the context is covered,
 * the queue pairs of the verbs wire among them.
 */
extern "C" {
#include <ucx_srm/agent/srm_auth.h>
}

#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <vector>

namespace {

srm_auth_t secret(const char *text)
{
    srm_auth_t auth;

    memset(&auth, 0, sizeof(auth));
    auth.len = strlen(text);
    memcpy(auth.secret, text, auth.len);
    return auth;
}

srm_auth_context_t handshake()
{
    srm_auth_context_t ctx;

    memset(&ctx, 0, sizeof(ctx));
    ctx.initiator_id = 0x1111222233334444ull;
    ctx.acceptor_id  = 0x5555666677778888ull;
    for (unsigned i = 0; i < SRM_AUTH_NONCE_LEN; ++i) {
        ctx.initiator_nonce[i] = static_cast<uint8_t>(i);
        ctx.acceptor_nonce[i]  = static_cast<uint8_t>(0x80 + i);
    }
    ctx.kind             = 1;
    ctx.path             = 0;
    ctx.initiator_qp.qpn = 0x15;
    ctx.initiator_qp.psn = 0x123456;
    ctx.acceptor_qp.qpn  = 0x19;
    ctx.acceptor_qp.psn  = 0x654321;
    ctx.acceptor_qp.gid[10] = 0xff;
    ctx.acceptor_qp.gid[11] = 0xff;
    ctx.acceptor_qp.mtu  = 3;
    return ctx;
}

} // namespace

TEST(auth, a_proof_checks_with_the_same_secret_role_and_handshake)
{
    const srm_auth_t auth        = secret("a cluster secret of 32 bytes....");
    const srm_auth_context_t ctx = handshake();
    uint8_t mac[SRM_AUTH_MAC_LEN];

    ASSERT_EQ(UCS_OK, srm_auth_prove(&auth, SRM_AUTH_ROLE_ACCEPTOR, &ctx, mac));
    EXPECT_TRUE(srm_auth_check(&auth, SRM_AUTH_ROLE_ACCEPTOR, &ctx, mac));
    /* Reflected back as the other role: refused. */
    EXPECT_FALSE(srm_auth_check(&auth, SRM_AUTH_ROLE_INITIATOR, &ctx, mac));

    const srm_auth_t other = secret("another secret of 32 bytes......");
    EXPECT_FALSE(srm_auth_check(&other, SRM_AUTH_ROLE_ACCEPTOR, &ctx, mac));
}

TEST(auth, every_field_of_the_handshake_changes_the_proof)
{
    const srm_auth_t auth = secret("a cluster secret of 32 bytes....");
    const srm_auth_context_t original = handshake();
    uint8_t mac[SRM_AUTH_MAC_LEN];
    const std::vector<std::pair<const char*,
                                std::function<void(srm_auth_context_t&)>>>
            changes = {
        {"initiator id", [](srm_auth_context_t &c) { c.initiator_id ^= 1; }},
        {"acceptor id", [](srm_auth_context_t &c) { c.acceptor_id ^= 1; }},
        {"initiator nonce",
         [](srm_auth_context_t &c) { c.initiator_nonce[7] ^= 1; }},
        {"acceptor nonce",
         [](srm_auth_context_t &c) { c.acceptor_nonce[0] ^= 1; }},
        {"kind", [](srm_auth_context_t &c) { c.kind ^= 1; }},
        {"path", [](srm_auth_context_t &c) { c.path ^= 1; }},
        {"initiator QPN", [](srm_auth_context_t &c) { c.initiator_qp.qpn++; }},
        {"initiator PSN", [](srm_auth_context_t &c) { c.initiator_qp.psn++; }},
        {"acceptor QPN", [](srm_auth_context_t &c) { c.acceptor_qp.qpn++; }},
        {"acceptor GID",
         [](srm_auth_context_t &c) { c.acceptor_qp.gid[15] ^= 1; }},
        {"acceptor LID", [](srm_auth_context_t &c) { c.acceptor_qp.lid++; }},
        {"acceptor MTU", [](srm_auth_context_t &c) { c.acceptor_qp.mtu++; }},
        {"the two queue pairs, swapped", [](srm_auth_context_t &c) {
             std::swap(c.initiator_qp, c.acceptor_qp); }},
    };

    ASSERT_EQ(UCS_OK, srm_auth_prove(&auth, SRM_AUTH_ROLE_INITIATOR, &original,
                                mac));
    for (const auto &change : changes) {
        srm_auth_context_t changed = original;
        change.second(changed);
        EXPECT_FALSE(srm_auth_check(&auth, SRM_AUTH_ROLE_INITIATOR, &changed,
                                    mac))
                << "a proof still checks with this changed: "
                << change.first;
    }
}
