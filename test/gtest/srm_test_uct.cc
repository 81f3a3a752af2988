/* SPDX-License-Identifier: BSD-3-Clause */
#include "srm_test_uct.h"

namespace srm_test {

static uct_component_h srm_component()
{
    uct_component_h *components, found = nullptr;
    unsigned num;

    if (uct_query_components(&components, &num) != UCS_OK) {
        return nullptr;
    }
    for (unsigned i = 0; (i < num) && (found == nullptr); ++i) {
        uct_component_attr_t attr = {};
        attr.field_mask           = UCT_COMPONENT_ATTR_FIELD_NAME;
        if ((uct_component_query(components[i], &attr) == UCS_OK) &&
            (std::string(attr.name) == "srm")) {
            found = components[i]; /* a static of the module: stays valid */
        }
    }
    uct_release_component_list(components);
    return found;
}

ucs_status_t open_srm_md(const md_settings &settings, uct_md_h *md_p,
                         uct_component_h *component_p)
{
    uct_component_h component = srm_component();
    uct_md_config_t *config;
    ucs_status_t status;

    *md_p = nullptr;
    if (component == nullptr) {
        return UCS_ERR_NO_DEVICE;
    }
    status = uct_md_config_read(component, nullptr, nullptr, &config);
    if (status != UCS_OK) {
        return status;
    }
    for (const auto &setting : settings) {
        status = uct_config_modify(config, setting.first.c_str(),
                                   setting.second.c_str());
        if (status == UCS_ERR_NO_ELEM) {
            /* UCX 1.18 matches the md table's own entries only with its
             * prefix (SRM_MEM_ALLOC), 1.13 also without. */
            status = uct_config_modify(config,
                                       ("SRM_" + setting.first).c_str(),
                                       setting.second.c_str());
        }
        if (status != UCS_OK) {
            uct_config_release(config);
            return status;
        }
    }
    status = uct_md_open(component, "srm", config, md_p);
    uct_config_release(config);
    if ((status == UCS_OK) && (component_p != nullptr)) {
        *component_p = component;
    }
    return status;
}

ucs_status_t open_srm_iface(uct_md_h md, uct_worker_h worker,
                            uct_iface_h *iface_p, uct_error_handler_t on_error,
                            void *on_error_arg)
{
    uct_iface_config_t *config;
    ucs_status_t status;

    status = uct_md_iface_config_read(md, "srm", nullptr, nullptr, &config);
    if (status != UCS_OK) {
        return status;
    }
    uct_iface_params_t params   = {};
    params.field_mask           = UCT_IFACE_PARAM_FIELD_OPEN_MODE |
                                  UCT_IFACE_PARAM_FIELD_DEVICE;
    params.open_mode            = UCT_IFACE_OPEN_MODE_DEVICE;
    params.mode.device.tl_name  = "srm";
    params.mode.device.dev_name = "node";
    if (on_error != nullptr) {
        params.field_mask |= UCT_IFACE_PARAM_FIELD_ERR_HANDLER |
                             UCT_IFACE_PARAM_FIELD_ERR_HANDLER_ARG |
                             UCT_IFACE_PARAM_FIELD_ERR_HANDLER_FLAGS;
        params.err_handler       = on_error;
        params.err_handler_arg   = on_error_arg;
        params.err_handler_flags = 0;
    }
    status = uct_iface_open(md, worker, &params, config, iface_p);
    uct_config_release(config);
    if (status == UCS_OK) {
        uct_iface_progress_enable(*iface_p,
                                  UCT_PROGRESS_SEND | UCT_PROGRESS_RECV);
    }
    return status;
}

ucs_status_t alloc_md_memory(uct_md_h md, size_t length,
                             uct_allocated_memory_t *mem)
{
    uct_alloc_method_t method     = UCT_ALLOC_METHOD_MD;
    uct_mem_alloc_params_t params = {};
    params.field_mask = UCT_MEM_ALLOC_PARAM_FIELD_FLAGS |
                        UCT_MEM_ALLOC_PARAM_FIELD_MEM_TYPE |
                        UCT_MEM_ALLOC_PARAM_FIELD_MDS |
                        UCT_MEM_ALLOC_PARAM_FIELD_NAME;
    params.flags      = UCT_MD_MEM_ACCESS_ALL;
    params.mem_type   = UCS_MEMORY_TYPE_HOST;
    params.mds.mds    = &md;
    params.mds.count  = 1;
    params.name       = "srm-gtest";
    return uct_mem_alloc(length, &method, 1, &params, mem);
}

void two_port_test::TearDown()
{
    if (ep_ != nullptr) {
        uct_ep_destroy(ep_);
    }
    if (back_ep_ != nullptr) {
        uct_ep_destroy(back_ep_);
    }
    for (int i = 0; i < 2; ++i) {
        if (iface_[i] != nullptr) {
            uct_iface_close(iface_[i]);
        }
        if (md_[i] != nullptr) {
            uct_md_close(md_[i]);
        }
    }
    if (worker_ != nullptr) {
        uct_worker_destroy(worker_);
    }
    if (async_ != nullptr) {
        ucs_async_context_destroy(async_);
    }
}

void two_port_test::create_worker()
{
    if (worker_ != nullptr) {
        return;
    }
    ASSERT_EQ(UCS_OK, ucs_async_context_create(UCS_ASYNC_MODE_THREAD_SPINLOCK,
                                               &async_));
    ASSERT_EQ(UCS_OK, uct_worker_create(async_, UCS_THREAD_MODE_SINGLE,
                                        &worker_));
}

void connect_ports(uct_iface_h from, uct_iface_h to, uint8_t am_id,
                          uct_am_callback_t on_am, void *arg, uct_ep_h *ep_p)
{
    uct_iface_attr_t attr;
    ASSERT_EQ(UCS_OK, uct_iface_query(to, &attr));
    std::vector<char> dev(attr.device_addr_len), addr(attr.iface_addr_len);
    ASSERT_EQ(UCS_OK, uct_iface_get_device_address(
                              to, (uct_device_addr_t*)dev.data()));
    ASSERT_EQ(UCS_OK, uct_iface_get_address(
                              to, (uct_iface_addr_t*)addr.data()));
    ASSERT_EQ(UCS_OK, uct_iface_set_am_handler(to, am_id, on_am, arg, 0));
    uct_ep_params_t params = {};
    params.field_mask = UCT_EP_PARAM_FIELD_IFACE |
                        UCT_EP_PARAM_FIELD_DEV_ADDR |
                        UCT_EP_PARAM_FIELD_IFACE_ADDR;
    params.iface      = from;
    params.dev_addr   = (const uct_device_addr_t*)dev.data();
    params.iface_addr = (const uct_iface_addr_t*)addr.data();
    ASSERT_EQ(UCS_OK, uct_ep_create(&params, ep_p));
}

void two_port_test::create_ep(uct_am_callback_t on_am, void *arg)
{
    connect_ports(iface_[0], iface_[1], 9, on_am, arg, &ep_);
}

void two_port_test::create_back_ep(uint8_t am_id, uct_am_callback_t on_am,
                                   void *arg)
{
    connect_ports(iface_[1], iface_[0], am_id, on_am, arg, &back_ep_);
}

void two_port_test::open_port(int i, const std::string &socket)
{
    create_worker();
    ASSERT_EQ(UCS_OK, open_srm_md({{"SOCKET", socket}, {"AGENT", "never"}},
                                  &md_[i]));
    ASSERT_EQ(UCS_OK, open_srm_iface(md_[i], worker_, &iface_[i]));
}

} // namespace srm_test
