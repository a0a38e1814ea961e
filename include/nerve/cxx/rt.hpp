// nerve C++ API: real-time helpers and periodic tasks (include/nerve/rt.h).
//
// A thin, header-only layer: every call is the C call of the same name,
// with std::chrono durations and nerve::Result<T> instead of out-params.
// nerve::rt::Task<F> owns a nerve_task and the callable it runs; the
// callable takes the tick and returns 0 to go on, > 0 to stop, or a
// negative nerve code to stop with that error.
//
//   auto t = nerve::rt::Task<F>::open(opts, [&](const nerve_task_tick &k) {
//       return step(k);
//   });
//   if (t) { (void)t->start(); ... t->stop(); (void)t->join(); }
#ifndef NERVE_CXX_RT_HPP
#define NERVE_CXX_RT_HPP

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>

#include "c_api.hpp" // <nerve/nerve.h>, which includes <nerve/rt.h>
#include "result.hpp"

namespace nerve::rt {

/// Rate-monotonic priority of a period (Tobar et al. eq. 1); map may be null.
inline Result<int>
prio_from_period(std::chrono::nanoseconds period,
                 const nerve_rt_prio_map *map = nullptr) noexcept
{
    int p =
        nerve_rt_prio_from_period(static_cast<int64_t>(period.count()), map);
    if (p < 0) {
        return fail(p);
    }
    return p;
}

/// Lock memory and prefault stack and heap; see nerve_rt_lock_memory().
inline Result<nerve_rt_applied> lock_memory(std::size_t stack_bytes,
                                            std::size_t heap_bytes,
                                            uint32_t flags = 0) noexcept
{
    nerve_rt_applied a{};
    int rc = nerve_rt_lock_memory(stack_bytes, heap_bytes, flags, &a);
    if (rc != 0) {
        return fail(rc);
    }
    return a;
}

/// Policy and priority of the calling thread; see nerve_rt_sched_set().
inline Result<nerve_rt_applied> sched_set(int policy, int priority,
                                          uint32_t flags = 0) noexcept
{
    nerve_rt_applied a{};
    int rc = nerve_rt_sched_set(policy, priority, flags, &a);
    if (rc != 0) {
        return fail(rc);
    }
    return a;
}

/// Pin the calling thread to the CPUs of a mask (bit i = CPU i).
inline Result<void> affinity_set(uint64_t cpus) noexcept
{
    return Result<void>::from_status(nerve_rt_affinity_set(cpus));
}

/// What this process may do (real-time scheduling, memory locking).
inline Result<nerve_rt_caps> probe() noexcept
{
    nerve_rt_caps c{};
    int rc = nerve_rt_probe(&c);
    if (rc != 0) {
        return fail(rc);
    }
    return c;
}

/// A periodic or channel-driven loop calling F (int(const nerve_task_tick&)).
/// Move-only; destroying it stops and joins a running loop.
template <class F> class Task {
public:
    /// Make a task (not started) from options and a callable
    /// (nerve_task_open()).
    static Result<Task> open(const nerve_task_opts &opts, F fn)
    {
        auto body = std::make_unique<F>(std::move(fn));
        nerve_task *t = nullptr;
        int rc = nerve_task_open(&opts, &Task::trampoline, body.get(), &t);
        if (rc != 0) {
            return fail(rc);
        }
        return Task(t, std::move(body));
    }

    Task(Task &&o) noexcept
        : t_(std::exchange(o.t_, nullptr)), body_(std::move(o.body_))
    {
    }
    Task &operator=(Task &&o) noexcept
    {
        if (this != &o) {
            nerve_task_close(t_);
            t_ = std::exchange(o.t_, nullptr);
            body_ = std::move(o.body_);
        }
        return *this;
    }
    Task(const Task &) = delete;
    Task &operator=(const Task &) = delete;
    ~Task()
    {
        nerve_task_close(t_);
    }

    /// Start on a new thread; see nerve_task_start().
    Result<void> start() noexcept
    {
        return Result<void>::from_status(nerve_task_start(t_));
    }
    /// Run on the calling thread until stopped; see nerve_task_run().
    Result<void> run() noexcept
    {
        return Result<void>::from_status(nerve_task_run(t_));
    }
    /// Ask the loop to stop (any thread, signal-safe).
    void stop() noexcept
    {
        nerve_task_stop(t_);
    }
    /// Wait for a started loop to end; its status.
    Result<void> join() noexcept
    {
        return Result<void>::from_status(nerve_task_join(t_));
    }
    /// Statistics, readable while the loop runs.
    Result<struct nerve_task_stats> stats() const noexcept
    {
        struct nerve_task_stats s {};
        int rc = nerve_task_stat(t_, &s);
        if (rc != 0) {
            return fail(rc);
        }
        return s;
    }
    /// The statistics as text (nerve_task_stats_format()).
    std::string format(const char *name = nullptr) const
    {
        struct nerve_task_stats s {};
        if (nerve_task_stat(t_, &s) != 0) {
            return std::string();
        }
        int n = nerve_task_stats_format(&s, name, nullptr, 0);
        std::string out(static_cast<std::size_t>(n) + 1, '\0');
        nerve_task_stats_format(&s, name, out.data(), out.size());
        out.resize(static_cast<std::size_t>(n));
        return out;
    }
    /// The C handle, for calls this layer does not wrap.
    nerve_task *get() const noexcept
    {
        return t_;
    }

private:
    Task(nerve_task *t, std::unique_ptr<F> body) noexcept
        : t_(t), body_(std::move(body))
    {
    }
    static int trampoline(void *arg, const nerve_task_tick *tick)
    {
        return (*static_cast<F *>(arg))(*tick);
    }

    nerve_task *t_ = nullptr;
    std::unique_ptr<F> body_;
};

/// Deduce F from a lambda: auto t = nerve::rt::make_task(opts, [](auto&){...});
template <class F> Result<Task<F>> make_task(const nerve_task_opts &opts, F fn)
{
    return Task<F>::open(opts, std::move(fn));
}

} // namespace nerve::rt

#endif
