/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Test helpers for the UCT-level tests: open the srm memory domain and an
 * interface on its one device, as UCP would.
 */
#ifndef SRM_TEST_UCT_H
#define SRM_TEST_UCT_H

#include <uct/api/uct.h>

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

namespace srm_test {

/* md config entries to set, without the UCX_SRM_ prefix: {"SOCKET", ...}. */
typedef std::vector<std::pair<std::string, std::string>> md_settings;

/*
 * Opens the srm md with settings applied. UCS_ERR_NO_DEVICE when the srm
 * component is not loaded (the module must be preloaded); component_p, if
 * given, gets the component.
 */
ucs_status_t open_srm_md(const md_settings &settings, uct_md_h *md_p,
                         uct_component_h *component_p = nullptr);

/* Opens the "node" device's iface on worker, with on_error as its error
 * handler if given, and enables send and receive progress. */
ucs_status_t open_srm_iface(uct_md_h md, uct_worker_h worker,
                            uct_iface_h *iface_p,
                            uct_error_handler_t on_error = nullptr,
                            void *on_error_arg = nullptr);

/* Allocates length bytes through md (UCT_ALLOC_METHOD_MD only). */
ucs_status_t alloc_md_memory(uct_md_h md, size_t length,
                             uct_allocated_memory_t *mem);

/* An ep from `from` to `to`, whose AM am_id goes to on_am(arg) there. */
void connect_ports(uct_iface_h from, uct_iface_h to, uint8_t am_id,
                   uct_am_callback_t on_am, void *arg, uct_ep_h *ep_p);

/*
 * A fixture with two srm ports (md and iface each, on one worker) and an
 * endpoint: TearDown closes whatever the test opened.
 */
class two_port_test : public ::testing::Test {
protected:
    void TearDown() override;

    /* The async context and worker, made on the first call. */
    void create_worker();

    /* ep_ from port 0 to port 1, whose AM id 9 goes to on_am(arg). */
    void create_ep(uct_am_callback_t on_am, void *arg);

    /* back_ep_ from port 1 to port 0, whose AM id am_id goes to
     * on_am(arg). */
    void create_back_ep(uint8_t am_id, uct_am_callback_t on_am, void *arg);

    /* md_[i] and iface_[i] on the agent at socket (UCX_SRM_AGENT=never). */
    void open_port(int i, const std::string &socket);

    ucs_async_context_t *async_   = nullptr;
    uct_worker_h         worker_  = nullptr;
    uct_md_h             md_[2]   = {nullptr, nullptr};
    uct_iface_h          iface_[2] = {nullptr, nullptr};
    uct_ep_h             ep_      = nullptr;
    uct_ep_h             back_ep_ = nullptr;
};

} // namespace srm_test

#endif
