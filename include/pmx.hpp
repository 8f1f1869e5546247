/*
 * pmx.hpp — C++ RAII wrappers over pmx.h: each object owns its C handle
 * (freed by the destructor, movable, not copyable) and a failing call
 * throws pmx::error with pmx's reason (pmx_last_error()).
 *
 *     pmx::counters c("task-clock,page-faults");
 *     c.enable(); work(); c.disable();
 *     for (auto &r : c.read()) std::cout << r.name << " " << r.count.value << "\n";
 *
 *     { pmx::region r("solve"); solve(); }   // region begin/end
 *
 * SPDX-License-Identifier: MIT OR Apache-2.0
 */
#ifndef PMX_HPP
#define PMX_HPP

#include <pmx.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace pmx {

/* A pmx call failed; what() is pmx's reason. */
class error : public std::runtime_error {
public:
    explicit error(const std::string &call)
        : std::runtime_error(call + ": " + last()) {}

private:
    static std::string last()
    {
        const char *e = pmx_last_error();
        return e ? e : "unknown error";
    }
};

namespace detail {
inline int check(int rc, const char *call)
{
    if (rc < 0)
        throw error(call);
    return rc;
}
template <class T> T *check(T *p, const char *call)
{
    if (!p)
        throw error(call);
    return p;
}
/* Owns a C handle; Free is the one call that frees it. */
template <class T, void (*Free)(T *)> class handle {
public:
    explicit handle(T *p) : p_(p) {}
    handle(handle &&o) noexcept : p_(std::exchange(o.p_, nullptr)) {}
    handle &operator=(handle &&o) noexcept
    {
        if (this != &o) {
            reset();
            p_ = std::exchange(o.p_, nullptr);
        }
        return *this;
    }
    handle(const handle &) = delete;
    handle &operator=(const handle &) = delete;
    ~handle() { reset(); }
    T *get() const { return p_; }

private:
    void reset()
    {
        if (p_)
            Free(std::exchange(p_, nullptr));
    }
    T *p_;
};
inline void close_msr(pmx_msr_session *s) { (void)pmx_msr_close(s); }
} // namespace detail

/* One event's reading. */
struct reading {
    std::string name;
    pmx_count count;
};

/* pmx_counters_*: events read by the program itself. */
class counters {
public:
    /* pid 0, cpu -1: the calling thread (see pmx_counters_open). */
    explicit counters(const std::string &events, int pid = 0, int cpu = -1)
        : h_(detail::check(pmx_counters_open(events.c_str(), pid, cpu),
                           "pmx_counters_open")),
          buf_(static_cast<size_t>(pmx_counters_count(h_.get())))
    {
    }
    void enable() { detail::check(pmx_counters_enable(h_.get()), "pmx_counters_enable"); }
    void disable() { detail::check(pmx_counters_disable(h_.get()), "pmx_counters_disable"); }
    void reset() { detail::check(pmx_counters_reset(h_.get()), "pmx_counters_reset"); }
    /* Into a caller's buffer (no allocation): the counts, in name order. */
    const std::vector<pmx_count> &read_counts()
    {
        detail::check(pmx_counters_read(h_.get(), buf_.data(), static_cast<int>(buf_.size())),
                      "pmx_counters_read");
        return buf_;
    }
    /* Named readings. */
    std::vector<reading> read()
    {
        const auto &c = read_counts();
        std::vector<reading> out;
        for (size_t i = 0; i < c.size(); i++)
            out.push_back({name(static_cast<int>(i)), c[i]});
        return out;
    }
    int size() const { return static_cast<int>(buf_.size()); }
    std::string name(int i) const
    {
        const char *n = pmx_counters_name(h_.get(), i);
        return n ? n : "";
    }
    pmx_counters *get() const { return h_.get(); }

private:
    detail::handle<pmx_counters, pmx_counters_close> h_;
    std::vector<pmx_count> buf_;
};

/* pmx_recorder_*: handles read together every interval. */
class recorder {
public:
    recorder(int interval_ms, int capacity)
        : h_(detail::check(pmx_recorder_new(interval_ms, capacity), "pmx_recorder_new"))
    {
    }
    /* Every online CPU when cpus is empty. */
    int add_event(const std::string &event, const std::vector<int> &cpus = {},
                  int transform = PMX_DELTA)
    {
        return detail::check(pmx_recorder_add_event(h_.get(), event.c_str(),
                                                    cpus.empty() ? nullptr : cpus.data(),
                                                    static_cast<int>(cpus.size()), transform),
                             "pmx_recorder_add_event");
    }
    int add_msr(const std::string &reg, int scope = PMX_SCOPE_THREAD, int transform = PMX_DELTA)
    {
        return detail::check(pmx_recorder_add_msr(h_.get(), reg.c_str(), scope, transform),
                             "pmx_recorder_add_msr");
    }
    void start() { detail::check(pmx_recorder_start(h_.get()), "pmx_recorder_start"); }
    void stop() { detail::check(pmx_recorder_stop(h_.get()), "pmx_recorder_stop"); }
    void wait() { detail::check(pmx_recorder_wait(h_.get()), "pmx_recorder_wait"); }
    bool sample() { return detail::check(pmx_recorder_sample(h_.get()), "pmx_recorder_sample") == 1; }
    int size() { return detail::check(pmx_recorder_len(h_.get()), "pmx_recorder_len"); }
    void write_csv(const std::string &path)
    {
        detail::check(pmx_recorder_write_csv(h_.get(), path.c_str()), "pmx_recorder_write_csv");
    }
    pmx_recorder *get() const { return h_.get(); }

private:
    detail::handle<pmx_recorder, pmx_recorder_free> h_;
};

/* pmx_msr_*: registers restored when the session is destroyed. */
class msr_session {
public:
    explicit msr_session(const char *cpus = nullptr)
        : h_(detail::check(pmx_msr_open(cpus), "pmx_msr_open"))
    {
    }
    uint64_t read(const std::string &reg, int cpu)
    {
        uint64_t v = 0;
        detail::check(pmx_msr_read(h_.get(), reg.c_str(), cpu, &v), "pmx_msr_read");
        return v;
    }
    int program(const std::string &events)
    {
        return detail::check(pmx_msr_program(h_.get(), events.c_str()), "pmx_msr_program");
    }

private:
    detail::handle<pmx_msr_session, detail::close_msr> h_;
};

#ifndef PMX_DISABLE
/* A region for the lifetime of the object (pmx_region_begin/end). */
class region {
public:
    explicit region(std::string name) : name_(std::move(name))
    {
        detail::check(pmx_region_begin(name_.c_str()), "pmx_region_begin");
    }
    region(const region &) = delete;
    region &operator=(const region &) = delete;
    ~region() { (void)pmx_region_end(name_.c_str()); }

private:
    std::string name_;
};
#endif

/* pmx_encode: the event-select value and perf config of a spec. */
inline std::pair<uint64_t, uint64_t> encode(const std::string &spec, const char *arch = nullptr)
{
    uint64_t reg = 0, config = 0;
    detail::check(pmx_encode(spec.c_str(), arch, &reg, &config), "pmx_encode");
    return {reg, config};
}

/* pmx_decode: one field of a register value. */
inline uint64_t decode(const char *reg, uint64_t value, const std::string &field)
{
    uint64_t v = 0;
    detail::check(pmx_decode(reg, value, field.c_str(), &v), "pmx_decode");
    return v;
}

} // namespace pmx

#endif /* PMX_HPP */
