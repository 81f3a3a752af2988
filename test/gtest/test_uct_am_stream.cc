/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Multi-process active-message stream stress test for a UCT transport.
 *
 * Two forked children each open an iface of the transport under test, connect
 * to each other with CONNECT_TO_IFACE endpoints and stream sequenced,
 * checksummed active messages over a random mix of AM short, bcopy and zcopy.
 * The parent forks before making any UCX call and only collects the
 * children's results over pipes.
 *
 * Environment:
 *   SRM_TEST_TL             transport name (default "srm")
 *   SRM_TEST_DEV            device name (default: any device of the transport)
 *   SRM_TEST_AM_COUNT       messages per direction in Bidirectional (100000)
 *   SRM_TEST_TIMEOUT_S      per-child timeout in seconds (120)
 *   SRM_TEST_ALLOW_MISSING  "1": skip, not fail, if the transport is absent
 */

#include <uct/api/uct.h>

#include <gtest/gtest.h>

#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

/* ------------------------------------------------------------ settings */

struct Settings {
    std::string tl;
    std::string dev;
    uint64_t    am_count;
    double      timeout_s;
    bool        allow_missing;
};

std::string env_string(const char *name, const char *def)
{
    const char *value = std::getenv(name);
    return ((value != nullptr) && (*value != '\0')) ? value : def;
}

uint64_t env_positive(const char *name, uint64_t def)
{
    const char *value = std::getenv(name);
    if ((value == nullptr) || (*value == '\0')) {
        return def;
    }

    char *end;
    errno             = 0;
    unsigned long long parsed = std::strtoull(value, &end, 10);
    if ((errno != 0) || (*end != '\0') || (parsed == 0)) {
        throw std::invalid_argument(std::string(name) + "='" + value +
                                    "' is not a positive integer");
    }
    return parsed;
}

Settings load_settings()
{
    Settings s;
    s.tl            = env_string("SRM_TEST_TL", "srm");
    s.dev           = env_string("SRM_TEST_DEV", "");
    s.am_count      = env_positive("SRM_TEST_AM_COUNT", 100000);
    s.timeout_s     = double(env_positive("SRM_TEST_TIMEOUT_S", 120));
    s.allow_missing = (env_string("SRM_TEST_ALLOW_MISSING", "0") == "1");
    return s;
}

/* ----------------------------------------------------------- utilities */

class TestError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

class MissingTransport : public TestError {
public:
    using TestError::TestError;
};

std::string format(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

std::string format(const char *fmt, ...)
{
    char    buf[1024];
    va_list ap;
    va_start(ap, fmt);
    std::vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    return buf;
}

void check(ucs_status_t status, const char *what)
{
    if (status != UCS_OK) {
        throw TestError(format("%s failed: %s", what,
                               ucs_status_string(status)));
    }
}

template<size_t N> void copy_string(char (&dst)[N], const std::string &src)
{
    std::snprintf(dst, N, "%s", src.c_str());
}

class Deadline {
public:
    explicit Deadline(double seconds) :
        m_seconds(seconds),
        m_end(Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                     std::chrono::duration<double>(seconds)))
    {
    }

    bool expired() const
    {
        return Clock::now() >= m_end;
    }

    int remaining_ms() const
    {
        auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                m_end - Clock::now());
        return int(std::max<int64_t>(left.count(), 0));
    }

    double seconds() const
    {
        return m_seconds;
    }

private:
    using Clock = std::chrono::steady_clock;

    double            m_seconds;
    Clock::time_point m_end;
};

void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while ((nanosleep(&ts, &ts) != 0) && (errno == EINTR)) {
    }
}

/* ------------------------------------------- control channel (fd I/O) */

void write_all(int fd, const void *buf, size_t length)
{
    auto ptr = static_cast<const char*>(buf);
    while (length > 0) {
        ssize_t n = ::write(fd, ptr, length);
        if ((n < 0) && (errno == EINTR)) {
            continue;
        }
        if (n <= 0) {
            throw TestError(format("write to fd %d failed: %s", fd,
                                   std::strerror(errno)));
        }
        ptr    += n;
        length -= size_t(n);
    }
}

/* Returns true when fd is readable or hung up. */
bool wait_readable(int fd, int timeout_ms)
{
    struct pollfd pfd = {fd, POLLIN, 0};
    return ::poll(&pfd, 1, timeout_ms) > 0;
}

/* Returns false on EOF before the first byte; throws on partial data. */
bool read_all(int fd, void *buf, size_t length, const Deadline &deadline,
              const char *what)
{
    auto   ptr   = static_cast<char*>(buf);
    size_t total = length;
    while (length > 0) {
        if (!wait_readable(fd, deadline.remaining_ms())) {
            if (deadline.expired()) {
                throw TestError(format("timed out after %.0f s waiting for %s",
                                       deadline.seconds(), what));
            }
            continue;
        }

        ssize_t n = ::read(fd, ptr, length);
        if ((n < 0) && (errno == EINTR)) {
            continue;
        }
        if ((n == 0) && (length == total)) {
            return false;
        }
        if (n <= 0) {
            throw TestError(format("reading %s failed: %s", what,
                                   (n == 0) ? "truncated" :
                                              std::strerror(errno)));
        }
        ptr    += n;
        length -= size_t(n);
    }
    return true;
}

void read_or_throw(int fd, void *buf, size_t length, const Deadline &deadline,
                   const char *what)
{
    if (!read_all(fd, buf, length, deadline, what)) {
        throw TestError(format("peer closed the control socket while we were "
                               "waiting for %s (did the peer fail?)", what));
    }
}

void send_blob(int fd, const std::vector<uint8_t> &blob)
{
    uint32_t length = uint32_t(blob.size());
    write_all(fd, &length, sizeof(length));
    write_all(fd, blob.data(), blob.size());
}

std::vector<uint8_t> recv_blob(int fd, const Deadline &deadline,
                               const char *what)
{
    uint32_t length;
    read_or_throw(fd, &length, sizeof(length), deadline, what);
    if (length > 4096) {
        throw TestError(format("bogus %s length %u", what, length));
    }
    std::vector<uint8_t> blob(length);
    read_or_throw(fd, blob.data(), length, deadline, what);
    return blob;
}

/* --------------------------------------------------------- wire format */

constexpr uint8_t  kAmId            = 17;
constexpr uint32_t kMagic           = 0x4d535253u;
constexpr size_t   kMaxMsgSize      = 64 * 1024; /* caps every message */
constexpr size_t   kMinPayload      = 8;
constexpr size_t   kSmallPayloadMax = 256;
constexpr uint64_t kSlowCount       = 20000;

/* Every message, whatever the send method, is this header plus payload. */
struct MsgHeader {
    uint32_t magic;
    uint32_t seq;
    uint32_t length; /* payload bytes following the header */
    uint32_t csum;   /* FNV-1a over seq and payload */
};
static_assert(sizeof(MsgHeader) == 16, "MsgHeader must be packed");

uint32_t fnv1a(const void *data, size_t length, uint32_t hash = 2166136261u)
{
    auto bytes = static_cast<const uint8_t*>(data);
    for (size_t i = 0; i < length; ++i) {
        hash ^= bytes[i];
        hash *= 16777619u;
    }
    return hash;
}

uint32_t message_csum(uint32_t seq, const uint8_t *payload, size_t length)
{
    return fnv1a(payload, length, fnv1a(&seq, sizeof(seq)));
}

uint64_t splitmix64(uint64_t &state)
{
    uint64_t z = (state += 0x9e3779b97f4a7c15ull);
    z          = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z          = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

void fill_random(uint8_t *buf, size_t length, uint64_t seed)
{
    for (size_t i = 0; i < length; i += sizeof(uint64_t)) {
        uint64_t word = splitmix64(seed);
        std::memcpy(buf + i, &word, std::min(sizeof(word), length - i));
    }
}

/* -------------------------------------------------------------- receiver */

struct RecvStats {
    uint64_t received;
    uint64_t seq_errors;
    uint64_t csum_errors;
    uint64_t len_errors;
    uint64_t extra;

    uint64_t errors() const
    {
        return seq_errors + csum_errors + len_errors + extra;
    }
};

/* Validates incoming messages; never aborts from the AM callback. */
class Receiver {
public:
    explicit Receiver(uint64_t expected_count) : m_limit(expected_count)
    {
    }

    static ucs_status_t am_cb(void *arg, void *data, size_t length, unsigned)
    {
        static_cast<Receiver*>(arg)->on_message(
                static_cast<const uint8_t*>(data), length);
        return UCS_OK;
    }

    const RecvStats &stats() const
    {
        return m_stats;
    }

    const std::string &first_error() const
    {
        return m_first_error;
    }

private:
    void on_message(const uint8_t *data, size_t length)
    {
        if (++m_stats.received > m_limit) {
            error(m_stats.extra, format("unexpected message #%llu",
                                        (unsigned long long)m_stats.received));
        }

        MsgHeader hdr;
        if (length < sizeof(hdr)) {
            error(m_stats.len_errors,
                  format("runt message of %zu bytes", length));
            return;
        }
        std::memcpy(&hdr, data, sizeof(hdr));

        if (hdr.magic != kMagic) {
            error(m_stats.seq_errors, format("bad magic 0x%x (seq field %u)",
                                             hdr.magic, hdr.seq));
        } else if (hdr.seq != m_expected_seq) {
            error(m_stats.seq_errors, format("got seq %u, expected seq %u",
                                             hdr.seq, m_expected_seq));
        }
        m_expected_seq = hdr.seq + 1;

        size_t payload_length = length - sizeof(hdr);
        if (hdr.length != payload_length) {
            error(m_stats.len_errors,
                  format("seq %u: header says %u payload bytes, got %zu",
                         hdr.seq, hdr.length, payload_length));
        } else if (message_csum(hdr.seq, data + sizeof(hdr), payload_length) !=
                   hdr.csum) {
            error(m_stats.csum_errors,
                  format("seq %u: checksum mismatch (%zu payload bytes)",
                         hdr.seq, payload_length));
        }
    }

    void error(uint64_t &counter, const std::string &what)
    {
        ++counter;
        if (m_first_error.empty()) {
            m_first_error = what;
        }
    }

    uint64_t    m_limit;
    uint32_t    m_expected_seq = 0;
    RecvStats   m_stats        = {};
    std::string m_first_error;
};

/* ------------------------------------------------------ zcopy buffers */

/* Registered send buffers that stay reserved until the zcopy completes. */
class ZcopyPool {
public:
    struct Slot {
        uct_completion_t comp; /* first: the completion callback casts back */
        uint8_t          *buf;
        bool             busy;
        ZcopyPool        *pool;
    };

    ZcopyPool(uct_md_h md, bool need_memh) : m_md(md), m_slots(kNumSlots)
    {
        size_t size = kNumSlots * kMaxMsgSize;
        if (posix_memalign(reinterpret_cast<void**>(&m_mem), 4096, size) != 0) {
            throw TestError("failed to allocate zcopy buffers");
        }

        if (need_memh) {
            ucs_status_t status = uct_md_mem_reg(md, m_mem, size,
                                                 UCT_MD_MEM_ACCESS_ALL,
                                                 &m_memh);
            if (status != UCS_OK) {
                std::free(m_mem);
                check(status, "uct_md_mem_reg");
            }
        }

        for (size_t i = 0; i < kNumSlots; ++i) {
            m_slots[i].buf  = m_mem + (i * kMaxMsgSize);
            m_slots[i].busy = false;
            m_slots[i].pool = this;
        }
    }

    ~ZcopyPool()
    {
        if (m_memh != UCT_MEM_HANDLE_NULL) {
            uct_md_mem_dereg(m_md, m_memh);
        }
        std::free(m_mem);
    }

    ZcopyPool(const ZcopyPool&)            = delete;
    ZcopyPool &operator=(const ZcopyPool&) = delete;

    Slot *acquire()
    {
        for (Slot &slot : m_slots) {
            if (!slot.busy) {
                slot.busy = true;
                ++m_busy;
                return &slot;
            }
        }
        return nullptr;
    }

    void release(Slot *slot)
    {
        slot->busy = false;
        --m_busy;
    }

    /* Makes the slot's completion ready for one operation. */
    uct_completion_t *arm(Slot *slot)
    {
        slot->comp.func   = completed;
        slot->comp.count  = 1;
        slot->comp.status = UCS_OK;
        return &slot->comp;
    }

    uct_mem_h memh() const
    {
        return m_memh;
    }

    size_t busy() const
    {
        return m_busy;
    }

    uint64_t failed_completions() const
    {
        return m_failed;
    }

private:
    static constexpr size_t kNumSlots = 16;

    static void completed(uct_completion_t *comp)
    {
        Slot *slot = reinterpret_cast<Slot*>(comp);
        if (comp->status != UCS_OK) {
            ++slot->pool->m_failed;
        }
        slot->pool->release(slot);
    }

    uct_md_h          m_md;
    uct_mem_h         m_memh = UCT_MEM_HANDLE_NULL;
    uint8_t           *m_mem = nullptr;
    std::vector<Slot> m_slots;
    size_t            m_busy   = 0;
    uint64_t          m_failed = 0;
};

/* ----------------------------------------------------------- UCT session */

struct FoundResource {
    uct_md_h    md = nullptr;
    std::string md_name;
    std::string dev;
};

std::vector<std::string> md_names(uct_component_h component)
{
    uct_component_attr_t attr = {};
    attr.field_mask           = UCT_COMPONENT_ATTR_FIELD_MD_RESOURCE_COUNT;
    check(uct_component_query(component, &attr), "uct_component_query");

    std::vector<uct_md_resource_desc_t> resources(attr.md_resource_count);
    attr.field_mask   = UCT_COMPONENT_ATTR_FIELD_MD_RESOURCES;
    attr.md_resources = resources.data();
    check(uct_component_query(component, &attr), "uct_component_query");

    std::vector<std::string> names;
    for (const uct_md_resource_desc_t &resource : resources) {
        names.push_back(resource.md_name);
    }
    return names;
}

uct_md_h open_md(uct_component_h component, const std::string &name)
{
    uct_md_config_t *config;
    if (uct_md_config_read(component, nullptr, nullptr, &config) != UCS_OK) {
        return nullptr;
    }

    uct_md_h     md;
    ucs_status_t status = uct_md_open(component, name.c_str(), config, &md);
    uct_config_release(config);
    return (status == UCS_OK) ? md : nullptr;
}

/* Returns the matching device name, or "" if md has no such resource. */
std::string match_tl_resource(uct_md_h md, const std::string &tl,
                              const std::string &dev, std::string *available)
{
    uct_tl_resource_desc_t *resources;
    unsigned               count;
    if (uct_md_query_tl_resources(md, &resources, &count) != UCS_OK) {
        return "";
    }

    std::string found;
    for (unsigned i = 0; i < count; ++i) {
        const uct_tl_resource_desc_t &r = resources[i];
        *available += format(" %s/%s", r.tl_name, r.dev_name);
        if (found.empty() && (tl == r.tl_name) &&
            (dev.empty() || (dev == r.dev_name))) {
            found = r.dev_name;
        }
    }
    uct_release_tl_resource_list(resources);
    return found;
}

FoundResource search_component(uct_component_h component,
                               const std::string &tl, const std::string &dev,
                               std::string *available)
{
    FoundResource result;
    for (const std::string &name : md_names(component)) {
        uct_md_h md = open_md(component, name);
        if (md == nullptr) {
            continue;
        }

        result.dev = match_tl_resource(md, tl, dev, available);
        if (!result.dev.empty()) {
            result.md      = md;
            result.md_name = name;
            return result;
        }
        uct_md_close(md);
    }
    return result;
}

/* Opens the md providing the first resource matching tl (and dev, if set). */
FoundResource find_resource(const std::string &tl, const std::string &dev)
{
    uct_component_h *components;
    unsigned        count;
    check(uct_query_components(&components, &count), "uct_query_components");

    FoundResource result;
    std::string   available;
    try {
        for (unsigned i = 0; (i < count) && (result.md == nullptr); ++i) {
            result = search_component(components[i], tl, dev, &available);
        }
    } catch (...) {
        uct_release_component_list(components);
        throw;
    }
    uct_release_component_list(components);

    if (result.md == nullptr) {
        throw MissingTransport(format(
                "UCT transport '%s'%s%s not found; available resources:%s",
                tl.c_str(), dev.empty() ? "" : " on device ", dev.c_str(),
                available.empty() ? " (none)" : available.c_str()));
    }
    return result;
}

/* Owns every UCT object of one child; tears them down in reverse order. */
class Session {
public:
    Session() = default;

    Session(const Session&)            = delete;
    Session &operator=(const Session&) = delete;

    ~Session()
    {
        if (m_ep != nullptr) {
            uct_ep_pending_purge(m_ep, [](uct_pending_req_t*, void*) {},
                                 nullptr);
            uct_ep_destroy(m_ep);
        }
        if (m_iface != nullptr) {
            uct_iface_close(m_iface);
        }
        m_pool.reset();
        if (m_md != nullptr) {
            uct_md_close(m_md);
        }
        if (m_worker != nullptr) {
            uct_worker_destroy(m_worker);
        }
        if (m_async != nullptr) {
            ucs_async_context_destroy(m_async);
        }
    }

    void open(const std::string &tl, const std::string &dev)
    {
        FoundResource resource = find_resource(tl, dev);
        m_md                   = resource.md;
        m_tl                   = tl;
        m_dev                  = resource.dev;
        m_md_name              = resource.md_name;

        check(uct_md_query(m_md, &m_md_attr), "uct_md_query");
        check(ucs_async_context_create(UCS_ASYNC_MODE_THREAD_SPINLOCK,
                                       &m_async),
              "ucs_async_context_create");
        check(uct_worker_create(m_async, UCS_THREAD_MODE_SINGLE, &m_worker),
              "uct_worker_create");
        open_iface();
        check(uct_iface_query(m_iface, &m_attr), "uct_iface_query");

        if (m_attr.cap.flags & UCT_IFACE_FLAG_AM_ZCOPY) {
            m_pool.reset(new ZcopyPool(m_md, m_md_attr.cap.flags &
                                                     UCT_MD_FLAG_NEED_MEMH));
        }
    }

    void require_connect_to_iface() const
    {
        if (!(m_attr.cap.flags & UCT_IFACE_FLAG_CONNECT_TO_IFACE)) {
            throw TestError(format("transport %s does not support "
                                   "CONNECT_TO_IFACE (iface cap flags 0x%llx)",
                                   name().c_str(),
                                   (unsigned long long)m_attr.cap.flags));
        }
    }

    void set_am_handler(Receiver *receiver)
    {
        check(uct_iface_set_am_handler(m_iface, kAmId, Receiver::am_cb,
                                       receiver, 0),
              "uct_iface_set_am_handler");
    }

    std::vector<uint8_t> device_address() const
    {
        std::vector<uint8_t> addr(m_attr.device_addr_len);
        auto                 dev = reinterpret_cast<uct_device_addr_t*>(
                addr.data());
        check(uct_iface_get_device_address(m_iface, dev),
              "uct_iface_get_device_address");
        return addr;
    }

    std::vector<uint8_t> iface_address() const
    {
        std::vector<uint8_t> addr(m_attr.iface_addr_len);
        auto                 iface = reinterpret_cast<uct_iface_addr_t*>(
                addr.data());
        check(uct_iface_get_address(m_iface, iface), "uct_iface_get_address");
        return addr;
    }

    void connect(const std::vector<uint8_t> &dev_addr,
                 const std::vector<uint8_t> &iface_addr)
    {
        auto dev   = reinterpret_cast<const uct_device_addr_t*>(
                dev_addr.data());
        auto iface = reinterpret_cast<const uct_iface_addr_t*>(
                iface_addr.data());
        if (!uct_iface_is_reachable(m_iface, dev, iface)) {
            throw TestError(format("peer %s iface is not reachable",
                                   name().c_str()));
        }

        uct_ep_params_t params = {};
        params.field_mask      = UCT_EP_PARAM_FIELD_IFACE |
                                 UCT_EP_PARAM_FIELD_DEV_ADDR |
                                 UCT_EP_PARAM_FIELD_IFACE_ADDR;
        params.iface           = m_iface;
        params.dev_addr        = dev;
        params.iface_addr      = iface;
        check(uct_ep_create(&params, &m_ep), "uct_ep_create");
    }

    void progress()
    {
        uct_worker_progress(m_worker);
    }

    uct_ep_h ep() const
    {
        return m_ep;
    }

    ZcopyPool *pool() const
    {
        return m_pool.get();
    }

    const uct_iface_attr_t &attr() const
    {
        return m_attr;
    }

    std::string name() const
    {
        return m_tl + "/" + m_dev;
    }

    std::string description() const
    {
        const auto &am = m_attr.cap.am;
        return format("%s (md %s) am_short<=%zu am_bcopy<=%zu am_zcopy<=%zu "
                      "max_hdr=%zu pending=%s",
                      name().c_str(), m_md_name.c_str(),
                      has(UCT_IFACE_FLAG_AM_SHORT) ? am.max_short : 0,
                      has(UCT_IFACE_FLAG_AM_BCOPY) ? am.max_bcopy : 0,
                      has(UCT_IFACE_FLAG_AM_ZCOPY) ? am.max_zcopy : 0,
                      am.max_hdr, has(UCT_IFACE_FLAG_PENDING) ? "yes" : "no");
    }

private:
    bool has(uint64_t flag) const
    {
        return (m_attr.cap.flags & flag) != 0;
    }

    void open_iface()
    {
        uct_iface_config_t *config;
        check(uct_md_iface_config_read(m_md, m_tl.c_str(), nullptr, nullptr,
                                       &config),
              "uct_md_iface_config_read");

        uct_iface_params_t params     = {};
        params.field_mask             = UCT_IFACE_PARAM_FIELD_OPEN_MODE |
                                        UCT_IFACE_PARAM_FIELD_DEVICE |
                                        UCT_IFACE_PARAM_FIELD_STATS_ROOT |
                                        UCT_IFACE_PARAM_FIELD_RX_HEADROOM |
                                        UCT_IFACE_PARAM_FIELD_FEATURES;
        params.open_mode              = UCT_IFACE_OPEN_MODE_DEVICE;
        params.mode.device.tl_name    = m_tl.c_str();
        params.mode.device.dev_name   = m_dev.c_str();
        params.stats_root             = nullptr;
        params.rx_headroom            = 0;
        params.features               = UCT_IFACE_FEATURE_AM;

        ucs_status_t status = uct_iface_open(m_md, m_worker, &params, config,
                                             &m_iface);
        uct_config_release(config);
        check(status, "uct_iface_open");
        uct_iface_progress_enable(m_iface,
                                  UCT_PROGRESS_SEND | UCT_PROGRESS_RECV);
    }

    std::string                m_tl, m_dev, m_md_name;
    ucs_async_context_t        *m_async  = nullptr;
    uct_worker_h               m_worker  = nullptr;
    uct_md_h                   m_md      = nullptr;
    uct_iface_h                m_iface   = nullptr;
    uct_ep_h                   m_ep      = nullptr;
    uct_md_attr_t              m_md_attr = {};
    uct_iface_attr_t           m_attr    = {};
    std::unique_ptr<ZcopyPool> m_pool;
};

/* ---------------------------------------------------------------- sender */

/* Largest total message (header included) per method; 0 = unavailable. */
struct SendLimits {
    size_t max_short = 0;
    size_t max_bcopy = 0;
    size_t max_zcopy = 0;
    size_t min_zcopy = 0;
    size_t zcopy_hdr = 0; /* bytes of the message sent as the zcopy header */
    bool   pending   = false;

    size_t largest() const
    {
        return std::max({max_short, max_bcopy, max_zcopy});
    }
};

SendLimits send_limits(const uct_iface_attr_t &attr, bool have_pool)
{
    const uint64_t flags = attr.cap.flags;
    SendLimits     limits;
    if (flags & UCT_IFACE_FLAG_AM_SHORT) {
        limits.max_short = std::min(attr.cap.am.max_short, kMaxMsgSize);
    }
    if (flags & UCT_IFACE_FLAG_AM_BCOPY) {
        limits.max_bcopy = std::min(attr.cap.am.max_bcopy, kMaxMsgSize);
    }
    if (have_pool && (attr.cap.am.max_iov >= 1)) {
        limits.max_zcopy = std::min(attr.cap.am.max_zcopy, kMaxMsgSize);
        limits.min_zcopy = attr.cap.am.min_zcopy;
        limits.zcopy_hdr = (attr.cap.am.max_hdr >= sizeof(MsgHeader)) ?
                                   sizeof(MsgHeader) : 0;
    }
    limits.pending = (flags & UCT_IFACE_FLAG_PENDING) != 0;

    if (limits.largest() < sizeof(MsgHeader) + kMinPayload) {
        throw TestError(format("transport has no usable active messages: "
                               "limits (short %zu, bcopy %zu, zcopy %zu) "
                               "cannot carry a %zu-byte message",
                               limits.max_short, limits.max_bcopy,
                               limits.max_zcopy,
                               sizeof(MsgHeader) + kMinPayload));
    }
    return limits;
}

struct SendStats {
    uint64_t posted;
    uint64_t short_sends;
    uint64_t bcopy_sends;
    uint64_t zcopy_sends;
    uint64_t no_resource;
    uint64_t pending_adds;
    uint64_t pending_busy;
    uint64_t pending_dispatches;
    uint64_t send_errors;
};

/*
 * Posts `count` messages in order. At most one message is in the "not yet
 * accepted by the transport" state, either retried by the caller after a
 * progress, or parked on the transport's pending queue.
 */
class Sender {
public:
    Sender(uct_ep_h ep, ZcopyPool *pool, const SendLimits &limits,
           uint64_t count, uint64_t seed, SendStats &stats) :
        m_ep(ep),
        m_pool(pool),
        m_limits(limits),
        m_count(count),
        m_seed(seed),
        m_rng(seed),
        m_stats(stats),
        m_msg(kMaxMsgSize)
    {
        m_pending.self = this;
    }

    Sender(const Sender&)            = delete;
    Sender &operator=(const Sender&) = delete;

    /* Makes at most one send attempt; the caller progresses the worker. */
    void advance()
    {
        if (m_pending_queued || done()) {
            return;
        }

        if (!m_have_msg) {
            build_next();
        }

        if ((m_method == Method::ZCOPY) && (m_slot == nullptr)) {
            m_slot = m_pool->acquire();
            if (m_slot == nullptr) {
                return; /* all zcopy buffers are still in flight */
            }
            std::memcpy(m_slot->buf, m_msg.data(), m_total);
        }

        ucs_status_t status = post();
        if (status == UCS_ERR_NO_RESOURCE) {
            on_no_resource();
        } else {
            on_posted(status);
        }
    }

    bool done() const
    {
        return m_stats.posted == m_count;
    }

    const std::string &error() const
    {
        return m_error;
    }

private:
    enum class Method { SHORT, BCOPY, ZCOPY };

    struct PendingReq {
        uct_pending_req_t req; /* first: the pending callback casts back */
        Sender            *self;
    };

    size_t uniform(size_t lo, size_t hi)
    {
        return std::uniform_int_distribution<size_t>(lo, hi)(m_rng);
    }

    /* Mostly small messages, some up to bcopy size, a few up to the max. */
    size_t pick_total_size()
    {
        size_t medium = std::max(m_limits.max_short, m_limits.max_bcopy);
        size_t pct    = uniform(0, 99);
        size_t upper;
        if (pct < 80) {
            upper = sizeof(MsgHeader) + kSmallPayloadMax;
        } else if ((pct < 95) && (medium > 0)) {
            upper = medium;
        } else {
            upper = m_limits.largest();
        }
        upper = std::min(std::max(upper, sizeof(MsgHeader) + kMinPayload),
                         m_limits.largest());
        return uniform(sizeof(MsgHeader) + kMinPayload, upper);
    }

    bool pick_method(size_t total)
    {
        Method candidates[3];
        size_t n = 0;
        if (total <= m_limits.max_short) {
            candidates[n++] = Method::SHORT;
        }
        if (total <= m_limits.max_bcopy) {
            candidates[n++] = Method::BCOPY;
        }
        if ((total <= m_limits.max_zcopy) && (total >= m_limits.min_zcopy)) {
            candidates[n++] = Method::ZCOPY;
        }
        if (n == 0) {
            return false;
        }
        m_method = candidates[uniform(0, n - 1)];
        return true;
    }

    void build_next()
    {
        for (int attempt = 0;; ++attempt) {
            m_total = pick_total_size();
            if (pick_method(m_total)) {
                break;
            }
            if (attempt == 1000) {
                throw TestError("no AM send method fits the message sizes");
            }
        }

        uint32_t  seq     = uint32_t(m_stats.posted);
        size_t    length  = m_total - sizeof(MsgHeader);
        uint8_t   *payload = m_msg.data() + sizeof(MsgHeader);
        fill_random(payload, length, m_seed ^ (uint64_t(seq) << 20));

        MsgHeader hdr = {kMagic, seq, uint32_t(length),
                         message_csum(seq, payload, length)};
        std::memcpy(m_msg.data(), &hdr, sizeof(hdr));
        m_have_msg = true;
    }

    static size_t pack_cb(void *dest, void *arg)
    {
        Sender *self = static_cast<Sender*>(arg);
        std::memcpy(dest, self->m_msg.data(), self->m_total);
        return self->m_total;
    }

    ucs_status_t post()
    {
        switch (m_method) {
        case Method::SHORT: {
            /* the 64-bit AM header carries the first 8 bytes of the message */
            uint64_t am_hdr;
            std::memcpy(&am_hdr, m_msg.data(), sizeof(am_hdr));
            return uct_ep_am_short(m_ep, kAmId, am_hdr,
                                   m_msg.data() + sizeof(am_hdr),
                                   unsigned(m_total - sizeof(am_hdr)));
        }
        case Method::BCOPY: {
            ssize_t packed = uct_ep_am_bcopy(m_ep, kAmId, pack_cb, this, 0);
            if (packed < 0) {
                return ucs_status_t(packed);
            }
            return (size_t(packed) == m_total) ? UCS_OK :
                                                 UCS_ERR_MESSAGE_TRUNCATED;
        }
        case Method::ZCOPY: {
            size_t    hdr = m_limits.zcopy_hdr;
            uct_iov_t iov = {};
            iov.buffer    = m_slot->buf + hdr;
            iov.length    = m_total - hdr;
            iov.memh      = m_pool->memh();
            iov.count     = 1;
            return uct_ep_am_zcopy(m_ep, kAmId, m_slot->buf, unsigned(hdr),
                                   &iov, 1, 0, m_pool->arm(m_slot));
        }
        }
        return UCS_ERR_INVALID_PARAM;
    }

    /* Either leave it to the caller to progress and retry, or park the
     * message on the transport's pending queue, to exercise both paths. */
    void on_no_resource()
    {
        ++m_stats.no_resource;
        if (!m_limits.pending || (uniform(0, 1) == 0)) {
            return;
        }

        m_pending.req.func  = pending_cb;
        ucs_status_t status = uct_ep_pending_add(m_ep, &m_pending.req, 0);
        if (status == UCS_OK) {
            m_pending_queued = true;
            ++m_stats.pending_adds;
        } else if (status == UCS_ERR_BUSY) {
            ++m_stats.pending_busy; /* resources freed meanwhile: retry */
        } else {
            set_error(format("uct_ep_pending_add failed: %s",
                             ucs_status_string(status)));
        }
    }

    static ucs_status_t pending_cb(uct_pending_req_t *req)
    {
        Sender      *self  = reinterpret_cast<PendingReq*>(req)->self;
        ucs_status_t status = self->post();
        if (status == UCS_ERR_NO_RESOURCE) {
            return status; /* stays queued */
        }

        self->m_pending_queued = false;
        ++self->m_stats.pending_dispatches;
        self->on_posted(status);
        return UCS_OK;
    }

    void on_posted(ucs_status_t status)
    {
        if (UCS_STATUS_IS_ERR(status)) {
            ++m_stats.send_errors;
            set_error(format("AM %s of seq %llu (%zu bytes) failed: %s",
                             method_name(), (unsigned long long)m_stats.posted,
                             m_total, ucs_status_string(status)));
        }

        switch (m_method) {
        case Method::SHORT:
            ++m_stats.short_sends;
            break;
        case Method::BCOPY:
            ++m_stats.bcopy_sends;
            break;
        case Method::ZCOPY:
            ++m_stats.zcopy_sends;
            if (status != UCS_INPROGRESS) {
                m_pool->release(m_slot); /* else the completion releases it */
            }
            m_slot = nullptr;
            break;
        }

        m_have_msg = false;
        ++m_stats.posted;
    }

    const char *method_name() const
    {
        switch (m_method) {
        case Method::SHORT:
            return "short";
        case Method::BCOPY:
            return "bcopy";
        case Method::ZCOPY:
            return "zcopy";
        }
        return "?";
    }

    void set_error(const std::string &error)
    {
        if (m_error.empty()) {
            m_error = error;
        }
    }

    uct_ep_h             m_ep;
    ZcopyPool            *m_pool;
    SendLimits           m_limits;
    uint64_t             m_count;
    uint64_t             m_seed;
    std::mt19937_64      m_rng;
    SendStats            &m_stats;
    std::vector<uint8_t> m_msg;
    size_t               m_total          = 0;
    Method               m_method         = Method::SHORT;
    bool                 m_have_msg       = false;
    bool                 m_pending_queued = false;
    ZcopyPool::Slot      *m_slot          = nullptr;
    PendingReq           m_pending        = {};
    std::string          m_error;
};

/* ------------------------------------------------------------ child side */

struct ChildPlan {
    int      index;
    uint64_t send_count;
    uint64_t recv_count;
    /* Until this many messages arrived, sleep ~1 ms between progress calls */
    uint64_t slow_until;
};

enum ChildStatus : int32_t {
    CHILD_OK        = 0,
    CHILD_FAILED    = 1,
    CHILD_MISSING   = 2,
    CHILD_NO_RESULT = 3 /* set by the parent only */
};

/* Sent to the parent in one write, so it must stay below PIPE_BUF. */
struct ChildResult {
    int32_t   status;
    SendStats tx;
    RecvStats rx;
    uint64_t  zcopy_failures;
    double    seconds;
    char      transport[256];
    char      message[1024];
};
static_assert(sizeof(ChildResult) <= PIPE_BUF, "ChildResult too large");

/* Drives one child's traffic; every wait progresses and honors the timeout. */
class Driver {
public:
    Driver(Session &session, Sender &sender, const Receiver &receiver,
           const ChildPlan &plan, const SendStats &tx_stats,
           const Deadline &deadline) :
        m_session(session),
        m_sender(sender),
        m_receiver(receiver),
        m_plan(plan),
        m_tx_stats(tx_stats),
        m_deadline(deadline)
    {
    }

    void send_all()
    {
        while (!m_sender.done()) {
            m_sender.advance();
            progress("sending");
        }
    }

    void flush()
    {
        for (;;) {
            ucs_status_t status = uct_ep_flush(m_session.ep(), 0, nullptr);
            if ((status == UCS_OK) && (zcopy_busy() == 0)) {
                return;
            }
            if (UCS_STATUS_IS_ERR(status) && (status != UCS_ERR_NO_RESOURCE)) {
                check(status, "uct_ep_flush");
            }
            progress("flushing the endpoint");
        }
    }

    void receive_all()
    {
        while (m_receiver.stats().received < m_plan.recv_count) {
            progress("receiving");
        }
    }

    /* Keeps progressing until the peer says it has received everything, so
     * that our iface stays alive as long as the peer may still need it. */
    void exchange_done(int ctrl_fd)
    {
        const char done = 'D';
        write_all(ctrl_fd, &done, 1);
        while (!wait_readable(ctrl_fd, 0)) {
            progress("waiting for the peer to finish");
        }

        char reply = 0;
        read_or_throw(ctrl_fd, &reply, 1, m_deadline, "the peer's done");
        if (reply != done) {
            throw TestError(format("unexpected control byte 0x%x", reply));
        }
    }

    /* Gives duplicates or stray messages a chance to show up. */
    void drain(int ms)
    {
        Deadline grace(ms / 1000.0);
        while (!grace.expired()) {
            progress("draining");
        }
    }

private:
    size_t zcopy_busy() const
    {
        return (m_session.pool() != nullptr) ? m_session.pool()->busy() : 0;
    }

    void progress(const char *phase)
    {
        m_session.progress();
        if (!m_sender.error().empty()) {
            throw TestError(m_sender.error());
        }
        if (m_deadline.expired()) {
            throw TestError(format(
                    "timeout after %.0f s while %s: received %llu of %llu "
                    "messages, posted %llu of %llu",
                    m_deadline.seconds(), phase,
                    (unsigned long long)m_receiver.stats().received,
                    (unsigned long long)m_plan.recv_count,
                    (unsigned long long)m_tx_stats.posted,
                    (unsigned long long)m_plan.send_count));
        }
        if (m_receiver.stats().received < m_plan.slow_until) {
            sleep_ms(1);
        }
    }

    Session         &m_session;
    Sender          &m_sender;
    const Receiver  &m_receiver;
    const ChildPlan &m_plan;
    const SendStats &m_tx_stats;
    const Deadline  &m_deadline;
};

void connect_to_peer(Session &session, int ctrl_fd, const Deadline &deadline)
{
    send_blob(ctrl_fd, session.device_address());
    send_blob(ctrl_fd, session.iface_address());
    std::vector<uint8_t> dev_addr   = recv_blob(ctrl_fd, deadline,
                                                "the peer's device address");
    std::vector<uint8_t> iface_addr = recv_blob(ctrl_fd, deadline,
                                                "the peer's iface address");
    session.connect(dev_addr, iface_addr);
}

void run_child(const Settings &settings, const ChildPlan &plan, int ctrl_fd,
               Receiver &receiver, ChildResult &result)
{
    Deadline deadline(settings.timeout_s);
    Session  session;
    session.open(settings.tl, settings.dev);
    copy_string(result.transport, session.description());
    session.require_connect_to_iface();
    SendLimits limits = send_limits(session.attr(), session.pool() != nullptr);
    session.set_am_handler(&receiver);
    connect_to_peer(session, ctrl_fd, deadline);

    Sender     sender(session.ep(), session.pool(), limits, plan.send_count,
                      0x5eed0000ull + plan.index, result.tx);
    Driver     driver(session, sender, receiver, plan, result.tx, deadline);

    driver.send_all();
    driver.flush();
    driver.receive_all();
    driver.exchange_done(ctrl_fd);
    driver.drain(20);

    if (session.pool() != nullptr) {
        result.zcopy_failures = session.pool()->failed_completions();
    }
}

std::string verdict(const ChildResult &result, const Receiver &receiver)
{
    if (result.rx.errors() > 0) {
        return format("%llu receive errors, first: %s",
                      (unsigned long long)result.rx.errors(),
                      receiver.first_error().c_str());
    }
    if (result.tx.send_errors + result.zcopy_failures > 0) {
        return format("%llu send errors, %llu failed zcopy completions",
                      (unsigned long long)result.tx.send_errors,
                      (unsigned long long)result.zcopy_failures);
    }
    return "";
}

[[noreturn]] void child_main(const Settings &settings, const ChildPlan &plan,
                             int ctrl_fd, int result_fd)
{
    ChildResult result = {};
    Receiver    receiver(plan.recv_count);
    auto        start  = std::chrono::steady_clock::now();
    std::string failure;

    try {
        run_child(settings, plan, ctrl_fd, receiver, result);
        result.rx     = receiver.stats();
        failure       = verdict(result, receiver);
        result.status = failure.empty() ? CHILD_OK : CHILD_FAILED;
    } catch (const MissingTransport &e) {
        result.status = CHILD_MISSING;
        failure       = e.what();
    } catch (const std::exception &e) {
        result.status = CHILD_FAILED;
        failure       = e.what();
        if (!receiver.first_error().empty()) {
            failure += "; first receive error: " + receiver.first_error();
        }
    }

    result.rx      = receiver.stats();
    result.seconds = std::chrono::duration<double>(
                             std::chrono::steady_clock::now() - start).count();
    copy_string(result.message, failure);

    try {
        write_all(result_fd, &result, sizeof(result));
    } catch (const std::exception &) {
        _exit(CHILD_FAILED);
    }
    _exit(result.status);
}

/* ----------------------------------------------------------- parent side */

struct ChildProcess {
    pid_t       pid       = -1;
    int         result_fd = -1;
    int         wait_status = 0;
    ChildResult result    = {};
};

/* Forks both children; the parent makes no UCX call before this. */
std::vector<ChildProcess> spawn_children(const Settings &settings,
                                         const ChildPlan (&plans)[2])
{
    int ctrl[2];
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, ctrl) != 0) {
        throw std::runtime_error(format("socketpair: %s", strerror(errno)));
    }

    std::vector<ChildProcess> children(2);
    for (int i = 0; i < 2; ++i) {
        int result_pipe[2];
        if (pipe(result_pipe) != 0) {
            throw std::runtime_error(format("pipe: %s", strerror(errno)));
        }

        std::fflush(stdout);
        std::fflush(stderr);
        pid_t pid = fork();
        if (pid < 0) {
            throw std::runtime_error(format("fork: %s", strerror(errno)));
        }

        if (pid == 0) {
            close(result_pipe[0]);
            close(ctrl[1 - i]);
            for (int j = 0; j < i; ++j) {
                close(children[j].result_fd);
            }
            child_main(settings, plans[i], ctrl[i], result_pipe[1]);
        }

        close(result_pipe[1]);
        children[i].pid       = pid;
        children[i].result_fd = result_pipe[0];
    }

    close(ctrl[0]);
    close(ctrl[1]);
    return children;
}

/* Reads results and reaps the children, killing any that overstay. */
void collect_children(std::vector<ChildProcess> &children, double timeout_s)
{
    Deadline deadline(timeout_s + 30);
    for (ChildProcess &child : children) {
        bool have_result = false;
        try {
            have_result = read_all(child.result_fd, &child.result,
                                   sizeof(child.result), deadline,
                                   "the child's result");
        } catch (const std::exception &e) {
            copy_string(child.result.message, e.what());
        }
        close(child.result_fd);

        if (!have_result) {
            if (child.result.message[0] == '\0') {
                copy_string(child.result.message, "no result from the child");
            }
            child.result.status = CHILD_NO_RESULT;
            kill(child.pid, SIGKILL);
        }
    }

    for (ChildProcess &child : children) {
        while ((waitpid(child.pid, &child.wait_status, 0) < 0) &&
               (errno == EINTR)) {
        }
    }
}

std::string describe_exit(int wait_status)
{
    if (WIFEXITED(wait_status)) {
        return format("exited with code %d", WEXITSTATUS(wait_status));
    }
    if (WIFSIGNALED(wait_status)) {
        return format("killed by signal %d", WTERMSIG(wait_status));
    }
    return "ended abnormally";
}

void report_child(int index, const ChildProcess &child)
{
    const ChildResult &r = child.result;
    auto               u = [](uint64_t v) { return (unsigned long long)v; };
    std::printf("[  child %d ] %s\n", index, r.transport);
    std::printf("[  child %d ] sent %llu (short %llu, bcopy %llu, zcopy "
                "%llu), no_resource %llu, pending add/busy/dispatch "
                "%llu/%llu/%llu\n",
                index, u(r.tx.posted), u(r.tx.short_sends),
                u(r.tx.bcopy_sends), u(r.tx.zcopy_sends), u(r.tx.no_resource),
                u(r.tx.pending_adds), u(r.tx.pending_busy),
                u(r.tx.pending_dispatches));
    std::printf("[  child %d ] received %llu, errors %llu (seq %llu, csum "
                "%llu, len %llu, extra %llu), %.2f s, %s\n",
                index, u(r.rx.received), u(r.rx.errors()),
                u(r.rx.seq_errors), u(r.rx.csum_errors), u(r.rx.len_errors),
                u(r.rx.extra), r.seconds,
                describe_exit(child.wait_status).c_str());
    std::fflush(stdout);

    std::string prefix = format("child%d_", index);
    ::testing::Test::RecordProperty(prefix + "sent",
                                    std::to_string(r.tx.posted));
    ::testing::Test::RecordProperty(prefix + "received",
                                    std::to_string(r.rx.received));
    ::testing::Test::RecordProperty(prefix + "errors",
                                    std::to_string(r.rx.errors()));
}

class UctAmStream : public ::testing::Test {
protected:
    /* Returns the children's results, or nothing if the transport is absent */
    std::vector<ChildProcess> run(const ChildPlan (&plans)[2])
    {
        std::vector<ChildProcess> children = spawn_children(m_settings, plans);
        collect_children(children, m_settings.timeout_s);

        for (const ChildProcess &child : children) {
            if (child.result.status == CHILD_MISSING) {
                missing_transport(child.result.message);
                return {};
            }
        }

        for (int i = 0; i < 2; ++i) {
            report_child(i, children[i]);
            check_child(i, plans[i], children[i]);
        }
        return children;
    }

    Settings m_settings = load_settings();

private:
    void missing_transport(const char *message)
    {
        if (m_settings.allow_missing) {
            GTEST_SKIP() << "\n*****************************************\n"
                         << "*** SKIPPED (SRM_TEST_ALLOW_MISSING=1): "
                         << message
                         << "\n*****************************************";
        }
        FAIL() << message << " (set SRM_TEST_TL/SRM_TEST_DEV, or "
               << "SRM_TEST_ALLOW_MISSING=1 to skip)";
    }

    static void check_child(int index, const ChildPlan &plan,
                            const ChildProcess &child)
    {
        const ChildResult &r = child.result;
        EXPECT_EQ("exited with code 0", describe_exit(child.wait_status))
                << "child " << index << " (pid " << child.pid << ") "
                << describe_exit(child.wait_status) << ": " << r.message;
        if (r.status == CHILD_NO_RESULT) {
            return;
        }
        EXPECT_EQ(plan.send_count, r.tx.posted) << "child " << index;
        EXPECT_EQ(plan.recv_count, r.rx.received) << "child " << index;
        EXPECT_EQ(0u, r.rx.errors()) << "child " << index;
    }
};

} // namespace

TEST_F(UctAmStream, Bidirectional)
{
    const uint64_t n        = m_settings.am_count;
    const ChildPlan plans[] = {{0, n, n, 0}, {1, n, n, 0}};
    run(plans);
}

/* Child 0 floods child 1, which polls only every ~1 ms for the first half, so
 * the sender hits NO_RESOURCE and the pending queue. */
TEST_F(UctAmStream, SlowReceiver)
{
    const ChildPlan plans[] = {{0, kSlowCount, 0, 0},
                               {1, 0, kSlowCount, kSlowCount / 2}};
    std::vector<ChildProcess> children = run(plans);
    if (!children.empty() && (children[0].result.tx.no_resource == 0)) {
        std::printf("[  WARNING ] the sender never got UCS_ERR_NO_RESOURCE: "
                    "the transport buffered all %llu messages\n",
                    (unsigned long long)kSlowCount);
    }
}
