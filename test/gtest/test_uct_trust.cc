/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The module against an agent it must not trust: one run by another user
 * (refused before anything is sent to it), one that hands over a segment it
 * could shrink under us, one that writes RMA completions for requests we
 * never made. hostile_agent answers the attach itself, keeps the segment
 * mapped and writes into the port's RX ring as an agent would.
 */
#include "srm_test_uct.h"

extern "C" {
#include <ucx_srm/common/srm_atomic.h>
#include <ucx_srm/common/srm_frame.h>
#include <ucx_srm/common/srm_proto.h>
#include <ucx_srm/common/srm_rma.h>
#include <ucx_srm/common/srm_shm.h>
#include <ucx_srm/uct/srm_uct.h>
#include <ucs/debug/log_def.h>
}

#include <gtest/gtest.h>

#include <atomic>
#include <dirent.h>
#include <cstring>
#include <fcntl.h>
#include <mutex>
#include <random>
#include <poll.h>
#include <signal.h>
#include <string>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <vector>

namespace {

/* The errors the module logged while an instance lives. */
class error_log {
public:
    error_log() { ucs_log_push_handler(on_log); }
    ~error_log()
    {
        ucs_log_pop_handler();
        std::lock_guard<std::mutex> lock(mutex());
        lines().clear();
    }

    bool contains(const std::string &text) const
    {
        std::lock_guard<std::mutex> lock(mutex());
        for (const auto &line : lines()) {
            if (line.find(text) != std::string::npos) {
                return true;
            }
        }
        return false;
    }

private:
    static std::mutex &mutex()
    {
        static std::mutex m;
        return m;
    }
    static std::vector<std::string> &lines()
    {
        static std::vector<std::string> l;
        return l;
    }
    static ucs_log_func_rc_t on_log(const char *, unsigned, const char *,
                                    ucs_log_level_t level,
                                    const ucs_log_component_config_t *,
                                    const char *message, va_list ap)
    {
        char buf[1024];
        if (level <= UCS_LOG_LEVEL_WARN) {
            vsnprintf(buf, sizeof(buf), message, ap);
            std::lock_guard<std::mutex> lock(mutex());
            lines().push_back(buf);
        }
        return UCS_LOG_FUNC_RC_CONTINUE;
    }
};

int listen_on(const std::string &name)
{
    struct sockaddr_un addr;
    socklen_t addrlen;
    int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);

    if ((fd < 0) || (srm_sock_addr(name.c_str(), &addr, &addrlen) != 0) ||
        (bind(fd, (struct sockaddr*)&addr, addrlen) != 0) ||
        (listen(fd, 4) != 0)) {
        if (fd >= 0) {
            close(fd);
        }
        return -1;
    }
    return fd;
}

/* An agent in a thread of ours that attaches one port and then does only
 * what the test tells it. */
class hostile_agent {
public:
    /* mangle_seed != 0: the attach reply is changed at random (fields,
     * header, fds) from that seed. */
    explicit hostile_agent(bool sealed, unsigned mangle_seed = 0) :
        name_("srm-gtest-hostile-" + std::to_string(getpid())),
        sealed_(sealed), mangle_seed_(mangle_seed)
    {
        listen_fd_ = listen_on(name_);
        EXPECT_GE(listen_fd_, 0) << "cannot listen on @" << name_;
        stop_fd_ = eventfd(0, EFD_CLOEXEC);
        thread_  = std::thread([this] { serve(); });
    }

    ~hostile_agent()
    {
        uint64_t one = 1;
        EXPECT_EQ((ssize_t)sizeof(one), write(stop_fd_, &one, sizeof(one)));
        thread_.join();
        if (shm_ != nullptr) {
            srm_shm_unmap(&layout_, shm_);
        }
        close(stop_fd_);
        close(listen_fd_);
    }

    const std::string &name() const { return name_; }
    bool attached() const { return attached_.load(); }

    /* Writes an RMA_DONE frame with cookie into the port's RX ring. */
    void complete_rma(uint64_t cookie)
    {
        srm_rma_done_t done = {};
        done.cookie         = cookie;
        write_rx(SRM_FRAME_RMA_DONE, &done, sizeof(done));
    }

    /*
     * Up to count frames of random make into the port's RX ring, as an
     * agent that is buggy or not ours might write them: any type, wrong
     * magic or version now and then, lengths past what the record holds,
     * any port, key and AM id; sometimes a producer index out of range.
     */
    void scribble_rx(std::mt19937 &rng, unsigned count)
    {
        srm_ring_t rx;
        srm_frame_hdr_t *hdr;
        auto *base = static_cast<uint8_t*>(shm_);

        srm_ring_init_producer(&rx, &ctl()->rx, base + layout_.rx_offset,
                               layout_.rx_ring_size);
        for (unsigned i = 0; i < count; ++i) {
            uint32_t held  = rng() % 512;
            uint32_t claim = (rng() % 4 == 0) ? (uint32_t)rng() : held;
            size_t record  = srm_frame_record_size(held);
            if (srm_ring_reserve(&rx, record, &hdr) != SRM_RING_OK) {
                break;
            }
            srm_frame_hdr_init(hdr, (srm_frame_type_t)(rng() % 20), claim);
            hdr->magic   ^= (rng() % 16 == 0) ? 1 : 0;
            hdr->version += (rng() % 16 == 0) ? 1 : 0;
            hdr->am_id    = rng() % 40;
            hdr->src_port = rng();
            hdr->dst_port = (rng() % 2) ? 7 : rng();
            hdr->dst_key  = (rng() % 2) ? 0x1234 : rng();
            auto *payload = static_cast<uint8_t*>(srm_frame_payload(hdr));
            for (uint32_t b = 0; b < held; ++b) {
                payload[b] = rng();
            }
            srm_ring_commit(&rx, record);
        }
        if (rng() % 8 == 0) {
            srm_store_release(&ctl()->rx.head,
                              srm_load_acquire(&ctl()->rx.head) +
                                      (rng() % (2 * layout_.rx_ring_size)));
        }
    }

    /* The cookie of the next RMA request in the port's TX ring; 0 if none. */
    uint64_t take_rma_cookie()
    {
        srm_ring_t tx;
        srm_frame_hdr_t hdr;
        srm_rma_req_t req;
        void *payload;
        auto *base = static_cast<uint8_t*>(shm_);

        srm_ring_init_consumer(&tx, &ctl()->tx[0], base + layout_.tx_offset[0],
                               layout_.tx_ring_size);
        if ((srm_ring_peek(&tx, SRM_FRAME_MAX_PAYLOAD, &hdr, &payload) !=
             SRM_RING_OK) ||
            (hdr.type != SRM_FRAME_RMA) || (hdr.length < sizeof(req))) {
            return 0;
        }
        std::memcpy(&req, payload, sizeof(req));
        srm_ring_release(&tx);
        return req.cookie;
    }

private:
    srm_shm_ctl_t *ctl() { return static_cast<srm_shm_ctl_t*>(shm_); }

    void write_rx(srm_frame_type_t type, const void *payload, uint32_t length)
    {
        srm_ring_t rx;
        srm_frame_hdr_t *hdr;
        auto *base = static_cast<uint8_t*>(shm_);

        srm_ring_init_producer(&rx, &ctl()->rx, base + layout_.rx_offset,
                               layout_.rx_ring_size);
        ASSERT_EQ(SRM_RING_OK, srm_ring_reserve(&rx,
                                                srm_frame_record_size(length),
                                                &hdr));
        srm_frame_hdr_init(hdr, type, length);
        std::memcpy(srm_frame_payload(hdr), payload, length);
        srm_ring_commit(&rx, srm_frame_record_size(length));
    }

    /* The segment as the client gets it: the real one, or an unsealed copy
     * of it that its holder could shrink at any time. */
    int segment_fd(int sealed_fd)
    {
        if (sealed_) {
            return dup(sealed_fd);
        }
        int fd = memfd_create("srm-gtest-unsealed", MFD_CLOEXEC);
        if ((fd >= 0) &&
            (write(fd, shm_, layout_.total_size) !=
             (ssize_t)layout_.total_size)) {
            close(fd);
            return -1;
        }
        return fd;
    }

    void serve()
    {
        struct pollfd pfd[2] = {{listen_fd_, POLLIN, 0}, {stop_fd_, POLLIN, 0}};
        if ((poll(pfd, 2, 20000) < 1) || !(pfd[0].revents & POLLIN)) {
            return;
        }
        int fd = accept(listen_fd_, nullptr, nullptr);
        srm_attach_req_t req;
        int nfds = 0, sealed_fd = -1;
        if ((srm_sock_recv(fd, &req, sizeof(req), nullptr, &nfds) <= 0) ||
            (srm_shm_layout_init(&layout_, req.num_tx_rings, req.tx_ring_size,
                                 req.rx_ring_size) != 0) ||
            (srm_shm_create(&layout_, "srm-gtest-hostile", &sealed_fd,
                            &shm_) != 0)) {
            close(fd);
            return;
        }
        srm_attach_rep_t rep = {};
        srm_msg_hdr_init(&rep.hdr, SRM_MSG_ATTACH_REP);
        rep.port        = 7;
        rep.key         = 0x1234;
        rep.node_id     = 0x5151;
        rep.max_payload = 64 * 1024;
        rep.flags       = SRM_ATTACH_FLAG_RMA;
        rep.shm_size    = layout_.total_size;
        int fds[3] = {segment_fd(sealed_fd), eventfd(0, EFD_CLOEXEC),
                      eventfd(0, EFD_CLOEXEC)};
        int nfds_sent = 3;
        size_t rep_len = sizeof(rep);
        close(sealed_fd);
        if (mangle_seed_ != 0) {
            mangle(&rep, fds, &nfds_sent, &rep_len);
        }
        /* Before the send: the module may refuse and the test look at
         * attached() before this thread runs again. */
        attached_ = true;
        srm_sock_send(fd, &rep, rep_len, fds, nfds_sent);
        for (int f : fds) {
            close(f);
        }

        /* Until the module hangs up or the test ends; doorbells unread. */
        struct pollfd wait[2] = {{fd, POLLIN, 0}, {stop_fd_, POLLIN, 0}};
        char byte;
        while ((poll(wait, 2, -1) > 0) && !(wait[1].revents & POLLIN) &&
               (recv(fd, &byte, sizeof(byte), 0) > 0)) {
        }
        close(fd);
    }

    /* One or two changes to the reply, from mangle_seed_. */
    void mangle(srm_attach_rep_t *rep, int fds[3], int *nfds, size_t *len)
    {
        std::mt19937 rng(mangle_seed_);
        for (int changes = 1 + rng() % 2; changes > 0; --changes) {
            switch (rng() % 9) {
            case 0: rep->max_payload = rng() % (2 * SRM_FRAME_MAX_PAYLOAD); break;
            case 1: rep->shm_size += (int64_t)(rng() % 2 ? 4096 : -4096); break;
            case 2: rep->status = 1 + rng() % 200;
                    memset(rep->error, 'x', sizeof(rep->error)); break;
            case 3: rep->hdr.version += 1; break;
            case 4: rep->hdr.type = SRM_MSG_STATUS_REP; break;
            case 5: *len = rng() % sizeof(*rep); break;
            case 6: *nfds = rng() % 3; break;
            case 7: std::swap(fds[0], fds[1 + rng() % 2]); break;
            default: rep->port = rng(); rep->key = rng(); rep->flags = rng();
                     break;
            }
        }
    }

    std::string       name_;
    bool              sealed_;
    unsigned          mangle_seed_;
    int               listen_fd_ = -1, stop_fd_ = -1;
    srm_shm_layout_t  layout_    = {};
    void              *shm_      = nullptr;
    std::atomic<bool> attached_{false};
    std::thread       thread_;
};

class uct_trust_test : public srm_test::two_port_test {
protected:
    ucs_status_t open_on(const std::string &socket)
    {
        create_worker();
        ucs_status_t status = srm_test::open_srm_md({{"SOCKET", socket},
                                                     {"AGENT", "never"}},
                                                    &md_[0]);
        if (status != UCS_OK) {
            return status;
        }
        return srm_test::open_srm_iface(md_[0], worker_, &iface_[0]);
    }

    static void on_done(uct_completion_t *comp)
    {
        ++static_cast<counted_completion*>(comp)->calls;
    }

    struct counted_completion : uct_completion_t {
        int calls = 0;
    };

    static ucs_status_t ignore_am(void *, void *, size_t, unsigned)
    {
        return UCS_OK;
    }

    /* Closes what open_on opened, for the next round of a test. */
    void close_ports()
    {
        if (ep_ != nullptr) {
            uct_ep_destroy(ep_);
            ep_ = nullptr;
        }
        if (iface_[0] != nullptr) {
            uct_iface_close(iface_[0]);
            iface_[0] = nullptr;
        }
        if (md_[0] != nullptr) {
            uct_md_close(md_[0]);
            md_[0] = nullptr;
        }
    }

    static size_t open_fds()
    {
        size_t count = 0;
        DIR *dir     = opendir("/proc/self/fd");
        while (struct dirent *entry = readdir(dir)) {
            count += (entry->d_name[0] != '.');
        }
        closedir(dir);
        return count;
    }
};

/* A process of uid nobody listening on name, counting what it hears from
 * the first client until that client hangs up. */
class impostor {
public:
    explicit impostor(const std::string &name)
    {
        int ready[2];
        EXPECT_EQ(0, pipe(ready));
        EXPECT_EQ(0, pipe(report_));
        pid_ = fork();
        if (pid_ == 0) {
            run(name, ready[1]);
        }
        close(ready[1]);
        close(report_[1]);
        char ok = 0;
        EXPECT_EQ(1, read(ready[0], &ok, 1));
        EXPECT_EQ('y', ok) << "the impostor could not listen on @" << name;
        close(ready[0]);
    }

    ~impostor()
    {
        int wstatus;
        kill(pid_, SIGTERM);
        EXPECT_EQ(pid_, waitpid(pid_, &wstatus, 0));
        close(report_[0]);
    }

    /* Bytes the first client sent before hanging up; -1 if none came. */
    long heard()
    {
        long bytes = -1;
        EXPECT_EQ((ssize_t)sizeof(bytes),
                  read(report_[0], &bytes, sizeof(bytes)));
        return bytes;
    }

private:
    [[noreturn]] void run(const std::string &name, int ready_fd)
    {
        close(report_[0]);
        if ((setgid(65534) != 0) || (setuid(65534) != 0)) {
            _exit(2);
        }
        int fd  = listen_on(name);
        char ok = (fd >= 0) ? 'y' : 'n';
        if (write(ready_fd, &ok, 1) != 1) {
            _exit(3);
        }
        struct pollfd pfd = {fd, POLLIN, 0};
        long bytes        = -1;
        if (poll(&pfd, 1, 20000) == 1) {
            int conn = accept(fd, nullptr, nullptr);
            char buf[4096];
            ssize_t n;
            bytes = 0;
            while ((n = recv(conn, buf, sizeof(buf), 0)) > 0) {
                bytes += n;
            }
        }
        if (write(report_[1], &bytes, sizeof(bytes)) != sizeof(bytes)) {
            _exit(4);
        }
        pause();
        _exit(0);
    }

    pid_t pid_ = -1;
    int   report_[2];
};

#define SKIP_UNLESS_ROOT() \
    if (geteuid() != 0) { \
        GTEST_SKIP() << "SKIPPED LOUDLY: needs root to run an impostor as " \
                        "another uid (nobody)"; \
    }

/*
 * Another user binds our agent's name first. The module must not attach:
 * the "agent" would read every message and md memfd and forge receives.
 * It refuses before sending a byte, naming the uid that holds the name.
 */
TEST_F(uct_trust_test, an_agent_of_another_uid_is_refused_before_a_word)
{
    SKIP_UNLESS_ROOT();
    const std::string name = "srm-gtest-impostor-" + std::to_string(getpid());
    impostor other(name);
    {
        error_log log;
        EXPECT_NE(UCS_OK, open_on(name));
        EXPECT_TRUE(log.contains("held by uid 65534"));
    }
    EXPECT_EQ(0, other.heard()) << "the module talked to an impostor";
}

/*
 * A process binds our agent's name, never accepts, and lets its queue
 * fill. Opening srm used to block in connect() for ever; now it fails
 * within UCX_SRM_CONNECT_TIMEOUT, saying why. Run in a child, so that a
 * hang is seen as one.
 */
TEST_F(uct_trust_test, a_name_whose_queue_stays_full_fails_the_open_in_time)
{
    const std::string name = "srm-gtest-full-" + std::to_string(getpid());
    int listen_fd          = listen_on(name);
    ASSERT_GE(listen_fd, 0);
    std::vector<int> queued;
    struct sockaddr_un addr;
    socklen_t addrlen;
    ASSERT_EQ(0, srm_sock_addr(name.c_str(), &addr, &addrlen));
    for (int i = 0; i < 64; ++i) {
        int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK, 0);
        ASSERT_GE(fd, 0);
        queued.push_back(fd);
        if (connect(fd, (struct sockaddr*)&addr, addrlen) != 0) {
            ASSERT_EQ(EAGAIN, errno) << strerror(errno);
            break;
        }
    }
    ASSERT_LT(queued.size(), 64u) << "the queue never filled";

    pid_t child = fork();
    if (child == 0) {
        error_log log;
        ucs_status_t status = srm_test::open_srm_md(
                {{"SOCKET", name}, {"AGENT", "never"},
                 {"CONNECT_TIMEOUT", "1s"}},
                &md_[0]);
        if (status == UCS_OK) {
            create_worker();
            status = srm_test::open_srm_iface(md_[0], worker_, &iface_[0]);
        }
        _exit(((status != UCS_OK) && log.contains("queue stays full")) ? 0 :
                                                                         1);
    }
    int wstatus = 0;
    pid_t got   = 0;
    for (int i = 0; (i < 150) && (got == 0); ++i) { /* 15 s */
        usleep(100000);
        got = waitpid(child, &wstatus, WNOHANG);
    }
    if (got == 0) {
        kill(child, SIGKILL);
        waitpid(child, &wstatus, 0);
    }
    EXPECT_EQ(child, got) << "opening srm on @" << name
                          << " hung (killed after 15 s)";
    EXPECT_TRUE(WIFEXITED(wstatus) && (WEXITSTATUS(wstatus) == 0))
            << "the open did not fail saying the queue stays full";
    for (int fd : queued) {
        close(fd);
    }
    close(listen_fd);
}

/* An agent started on a name another uid holds does not report "an agent
 * already serves" (exit 0, and its clients would wait for nothing): it
 * fails, naming the uid. */
TEST_F(uct_trust_test, srmd_on_a_name_another_uid_holds_fails_naming_it)
{
    SKIP_UNLESS_ROOT();
    const std::string name = "srm-gtest-taken-" + std::to_string(getpid());
    impostor other(name);
    const std::string log_path = "/tmp/" + name + ".log";
    const std::string command  = std::string(SRM_TEST_BUILDDIR) +
                                 "/srmd --socket " + name + " --log " +
                                 log_path + " 2>&1";
    int wstatus = system(command.c_str());
    EXPECT_TRUE(WIFEXITED(wstatus) && (WEXITSTATUS(wstatus) == 1))
            << "status 0x" << std::hex << wstatus;
    FILE *log = fopen(log_path.c_str(), "r");
    ASSERT_NE(nullptr, log);
    std::string text;
    char line[1024];
    while (fgets(line, sizeof(line), log) != nullptr) {
        text += line;
    }
    fclose(log);
    unlink(log_path.c_str());
    EXPECT_NE(std::string::npos, text.find("held by uid 65534")) << text;
    EXPECT_GE(other.heard(), 0) << "srmd did not ask who holds the name";
}

/* srmd's exit status with --log path (and a socket nobody serves). */
int srmd_with_log(const std::string &path)
{
    const std::string command = std::string(SRM_TEST_BUILDDIR) +
                                "/srmd --socket srm-gtest-log-" +
                                std::to_string(getpid()) + " --log " + path +
                                " --exit-when-idle 2>/dev/null & "
                                "pid=$!; sleep 0.3; kill $pid 2>/dev/null; "
                                "wait $pid";
    int wstatus = system(command.c_str());
    return WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : -1;
}

/*
 * The default log is in /tmp under a name anyone can guess: another user
 * who plants a symbolic link there (to a file of ours) or a file of their
 * own gets nothing written through it.
 */
TEST(srmd_log, a_planted_symlink_or_another_users_file_is_refused)
{
    SKIP_UNLESS_ROOT();
    const std::string dir    = "/tmp/srm-gtest-log-" + std::to_string(getpid());
    const std::string target = dir + "/precious";
    const std::string link   = dir + "/srmd.log";
    ASSERT_EQ(0, mkdir(dir.c_str(), 0755));
    FILE *f = fopen(target.c_str(), "w");
    ASSERT_NE(nullptr, f);
    fclose(f);
    ASSERT_EQ(0, symlink(target.c_str(), link.c_str()));

    EXPECT_EQ(1, srmd_with_log(link));
    struct stat st;
    ASSERT_EQ(0, stat(target.c_str(), &st));
    EXPECT_EQ(0, st.st_size) << "srmd wrote through a symbolic link";

    ASSERT_EQ(0, unlink(link.c_str()));
    f = fopen(link.c_str(), "w");
    ASSERT_NE(nullptr, f);
    fclose(f);
    ASSERT_EQ(0, chown(link.c_str(), 65534, 65534));
    EXPECT_EQ(1, srmd_with_log(link));
    ASSERT_EQ(0, stat(link.c_str(), &st));
    EXPECT_EQ(0, st.st_size) << "srmd appended to another user's file";

    ASSERT_EQ(0, unlink(link.c_str()));
    EXPECT_EQ(0, srmd_with_log(link)) << "a fresh log must do";
    ASSERT_EQ(0, stat(link.c_str(), &st));
    EXPECT_EQ(0600u, st.st_mode & 0777);
    unlink(link.c_str());
    unlink(target.c_str());
    rmdir(dir.c_str());
}

/* A segment its sender could shrink would SIGBUS us on the next access. */
TEST_F(uct_trust_test, a_segment_not_sealed_against_shrinking_is_refused)
{
    hostile_agent agent(false);
    EXPECT_NE(UCS_OK, open_on(agent.name()));
    EXPECT_TRUE(agent.attached());
}

TEST_F(uct_trust_test, the_sealed_segment_of_the_same_agent_is_taken)
{
    hostile_agent agent(true);
    EXPECT_EQ(UCS_OK, open_on(agent.name()));
}

/*
 * RMA completions name a request by a cookie the agent echoes. A forged
 * cookie (an address, a stale or reused one) completes nothing; the real
 * one completes its request once.
 */
TEST_F(uct_trust_test, a_forged_rma_completion_completes_nothing)
{
    hostile_agent agent(true);
    ASSERT_EQ(UCS_OK, open_on(agent.name()));
    srm_test::connect_ports(iface_[0], iface_[0], 9, ignore_am, nullptr, &ep_);
    ASSERT_NE(nullptr, ep_);

    /* A region as the md would describe it, on both ends. */
    std::vector<char> buffer(4096);
    uct_srm_memh_t memh       = {};
    memh.address              = buffer.data();
    memh.length               = buffer.size();
    memh.key.client_addr      = (uintptr_t)buffer.data();
    memh.key.length           = buffer.size();
    memh.key.region_id        = 1;
    memh.key.generation       = 1;
    uct_iov_t iov             = {};
    iov.buffer                = buffer.data();
    iov.length                = 64;
    iov.memh                  = &memh;
    iov.count                 = 1;
    counted_completion comp;
    uct_completion_t *as_comp = &comp;
    as_comp->func   = on_done;
    as_comp->count  = 1;
    as_comp->status = UCS_OK;
    ASSERT_EQ(UCS_INPROGRESS,
              uct_ep_put_zcopy(ep_, &iov, 1, (uintptr_t)buffer.data(),
                               (uct_rkey_t)&memh.key, as_comp));
    uint64_t cookie = agent.take_rma_cookie();
    ASSERT_NE(0u, cookie);

    error_log log;
    /* The completion's address, as the old protocol had it; a neighbour
     * slot; the right slot with another generation. */
    for (uint64_t forged : std::vector<uint64_t>{(uintptr_t)as_comp, cookie + 1,
                            cookie ^ ((uint64_t)1 << 40)}) {
        agent.complete_rma(forged);
        uct_worker_progress(worker_);
        EXPECT_EQ(0, comp.calls) << "forged cookie 0x" << std::hex << forged;
    }
    EXPECT_TRUE(log.contains("did not make"));
    EXPECT_EQ(UCS_INPROGRESS, uct_iface_flush(iface_[0], 0, nullptr));

    agent.complete_rma(cookie);
    uct_worker_progress(worker_);
    EXPECT_EQ(1, comp.calls);
    EXPECT_EQ(UCS_OK, uct_iface_flush(iface_[0], 0, nullptr));

    agent.complete_rma(cookie); /* a replay */
    uct_worker_progress(worker_);
    EXPECT_EQ(1, comp.calls);
}

/*
 * An agent's attach reply, changed at random 200 ways (each field, the
 * header, the length, the fds and their order): the module attaches or
 * refuses, and never crashes or keeps a descriptor of a refused reply.
 */
TEST_F(uct_trust_test, a_mangled_attach_reply_is_refused_or_taken_whole)
{
    unsigned taken = 0;
    {
        /* UCX opens some descriptors of its own on first use. */
        hostile_agent agent(true);
        ASSERT_EQ(UCS_OK, open_on(agent.name()));
        close_ports();
    }
    size_t fds_before = open_fds();

    for (unsigned seed = 1; seed <= 200; ++seed) {
        {
            hostile_agent agent(true, seed);
            if (open_on(agent.name()) == UCS_OK) {
                ++taken;
                uct_worker_progress(worker_);
            }
            close_ports();
        }
        ASSERT_EQ(fds_before, open_fds()) << "seed " << seed;
    }
    /* Some changes are harmless (port, key, flags): those are taken. */
    EXPECT_GT(taken, 0u);
    EXPECT_LT(taken, 200u);
}

namespace {

size_t am_bytes_seen;

/* Reads every byte an AM hands us: a pointer out of the ring crashes. */
ucs_status_t touch_am(void *, void *data, size_t length, unsigned)
{
    EXPECT_LE(length, (size_t)SRM_FRAME_MAX_PAYLOAD);
    volatile const uint8_t *bytes = static_cast<const uint8_t*>(data);
    for (size_t i = 0; i < length; ++i) {
        am_bytes_seen += bytes[i];
    }
    return UCS_OK;
}

} // namespace

/*
 * An agent that writes garbage into our receive ring, 100 times over from
 * different seeds: frames of every type and of none, lengths past their
 * records, any AM id, producer indices out of range. The module delivers
 * only AMs that lie whole in its ring, drops the connection at the first
 * frame it cannot follow, and never crashes.
 */
TEST_F(uct_trust_test, garbage_in_our_receive_ring_is_dropped_not_followed)
{
    unsigned lost = 0;

    for (unsigned seed = 1; seed <= 100; ++seed) {
        hostile_agent agent(true);
        ASSERT_EQ(UCS_OK, open_on(agent.name())) << "seed " << seed;
        for (uint8_t id = 0; id < UCT_AM_ID_MAX; ++id) {
            ASSERT_EQ(UCS_OK, uct_iface_set_am_handler(iface_[0], id, touch_am,
                                                       nullptr, 0));
        }
        std::mt19937 rng(seed);
        for (int round = 0; round < 20; ++round) {
            agent.scribble_rx(rng, 1 + rng() % 8);
            for (int i = 0; i < 4; ++i) {
                uct_worker_progress(worker_);
            }
        }
        uct_srm_iface_t *iface = ucs_derived_of(iface_[0], uct_srm_iface_t);
        lost += iface->agent_lost;
        close_ports();
    }
    /* Most seeds break the ring within 20 rounds. */
    EXPECT_GT(lost, 50u);
}

} // namespace
