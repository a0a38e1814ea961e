// nerve._nerve, real-time helpers (include/nerve/rt.h): the C structs as
// typed read-only classes (Series, PrioMap, Applied, Caps, TaskStats, Tick),
// the set-up helpers, and RtTask, a nerve_task driven from Python through
// nerve_task_next(): the loop's timing is C's, the body is whatever Python
// runs between two next() calls, on the calling thread. No thread of its
// own, no handshake: nerve.rt runs a Task on a threading.Thread when asked
// to start one.
#include "_nerve.h"

#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>

#include <nerve/rt.h>

#include <cstring>
#include <functional>
#include <string>

namespace nerve_py {

using namespace nb::literals;

namespace {

PyObject *g_policy = nullptr; // int -> nerve.rt.Policy (or the int), set
                              // by _set_rt_hooks

nb::object policy_of(int p)
{
    if (!g_policy) {
        return nb::int_(p);
    }
    return nb::borrow(g_policy)(p);
}

std::string str_of(nb::handle o)
{
    return nb::repr(o).c_str();
}

// ---- typed classes of the C structs -----------------------------------------

// The fields of each struct, in their order: the one list the properties,
// the constructor, the equality and the repr are made from.
#define NERVE_PY_SERIES(X)                                                     \
    X(n) X(min_ns) X(max_ns) X(max_abs_ns) X(mean_ns) X(rms_ns)
#define NERVE_PY_PRIO_MAP(X)                                                   \
    X(period_min_ns) X(period_max_ns) X(prio_min) X(prio_max)

std::string series_repr(const nerve_rt_series &s)
{
    std::string r = "Series(";
    const char *sep = "";
#define NERVE_PY_F(f)                                                          \
    r += sep;                                                                  \
    r += #f "=" + std::to_string(s.f);                                         \
    sep = ", ";
    NERVE_PY_SERIES(NERVE_PY_F)
#undef NERVE_PY_F
    return r + ")";
}

bool series_eq(const nerve_rt_series &a, const nerve_rt_series &b)
{
    bool eq = true;
#define NERVE_PY_F(f) eq = eq && a.f == b.f;
    NERVE_PY_SERIES(NERVE_PY_F)
#undef NERVE_PY_F
    return eq;
}

std::string prio_map_repr(const nerve_rt_prio_map &m)
{
    std::string r = "PrioMap(";
    const char *sep = "";
#define NERVE_PY_F(f)                                                          \
    r += sep;                                                                  \
    r += #f "=" + std::to_string(m.f);                                         \
    sep = ", ";
    NERVE_PY_PRIO_MAP(NERVE_PY_F)
#undef NERVE_PY_F
    return r + ")";
}

const nerve_rt_prio_map &prio_map_default()
{
    static const nerve_rt_prio_map d = NERVE_RT_PRIO_MAP_INIT;
    return d;
}

// One cycle of a task: struct nerve_task_tick with the message copied.
struct Tick {
    struct nerve_task_tick tk; // tk.msg is not kept (the buffer is reused)
    nb::object message;        // a Message, or None

    bool timed_out() const
    {
        return tk.msg_status == NERVE_ETIMEDOUT;
    }
    std::string repr() const
    {
        return "Tick(cycle=" + std::to_string(tk.cycle) +
               ", release_ns=" + std::to_string(tk.release_ns) +
               ", wake_ns=" + std::to_string(tk.wake_ns) +
               ", skipped=" + std::to_string(tk.skipped) +
               ", status=" + std::to_string(tk.msg_status) +
               ", message=" + str_of(message) + ")";
    }
};

nb::object make_tick(const struct nerve_task_tick &tk)
{
    Tick t;
    t.tk = tk;
    t.tk.msg = nullptr;
    t.message = nb::none();
    if (tk.msg) {
        PyObject *data = PyBytes_FromStringAndSize(
            static_cast<const char *>(tk.msg), Py_ssize_t(tk.msg_info.len));
        if (!data) {
            throw nb::python_error();
        }
        t.message = nb::steal(make_message(tk.msg_info, data));
    }
    return nb::cast(std::move(t));
}

std::string stats_repr(const nerve_task_stats &s)
{
    return "TaskStats(cycles=" + std::to_string(s.cycles) +
           ", overruns=" + std::to_string(s.overruns) +
           ", skipped=" + std::to_string(s.skipped) +
           ", timeouts=" + std::to_string(s.timeouts) +
           ", missed=" + std::to_string(s.missed) +
           ", abs_err=" + series_repr(s.abs_err) +
           ", rel_err=" + series_repr(s.rel_err) +
           ", latency=" + series_repr(s.latency) +
           ", exec=" + series_repr(s.exec) +
           ", period_ns=" + std::to_string(s.period_ns) +
           ", policy=" + str_of(policy_of(s.policy)) +
           ", priority=" + std::to_string(s.priority) +
           ", sched_err=" + std::to_string(s.sched_err) +
           ", running=" + (s.running ? "True" : "False") + ")";
}

// ---- set-up helpers ------------------------------------------------------

int rt_prio_from_period(int64_t period_ns, const nerve_rt_prio_map *map)
{
    int rc = nerve_rt_prio_from_period(period_ns, map);
    if (rc < 0) {
        raise_nerve(rc);
    }
    return rc;
}

nerve_rt_applied rt_lock_memory(size_t stack, size_t heap, uint32_t flags)
{
    struct nerve_rt_applied a;
    std::memset(&a, 0, sizeof a);
    int rc = without_gil(
        [&] { return nerve_rt_lock_memory(stack, heap, flags, &a); });
    if (rc != 0) {
        raise_nerve(rc, nullptr, a.msg[0] ? a.msg : nullptr);
    }
    return a;
}

nerve_rt_applied rt_sched_set(int policy, int priority, uint32_t flags)
{
    struct nerve_rt_applied a;
    std::memset(&a, 0, sizeof a);
    int rc = nerve_rt_sched_set(policy, priority, flags, &a);
    if (rc != 0) {
        raise_nerve(rc, nullptr, a.msg[0] ? a.msg : nullptr);
    }
    return a;
}

nerve_rt_caps rt_probe()
{
    struct nerve_rt_caps c;
    std::memset(&c, 0, sizeof c);
    int rc = without_gil([&] { return nerve_rt_probe(&c); });
    if (rc != 0) {
        raise_nerve(rc);
    }
    return c;
}

// A C-contiguous buffer of int64 (format q, or l where long is 64 bits).
struct I64Buffer {
    Py_buffer v;
    explicit I64Buffer(nb::handle obj)
    {
        if (PyObject_GetBuffer(obj.ptr(), &v,
                               PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) != 0) {
            throw nb::python_error();
        }
        const char *f = v.format ? v.format : "B";
        if (*f == '@' || *f == '=' || *f == '<') {
            f++;
        }
        bool ok = v.itemsize == 8 &&
                  (std::strcmp(f, "q") == 0 ||
                   (std::strcmp(f, "l") == 0 && sizeof(long) == 8));
        if (!ok) {
            PyBuffer_Release(&v);
            throw nb::type_error("timestamps must be a contiguous buffer of "
                                 "int64 (array('q'), numpy int64)");
        }
    }
    ~I64Buffer()
    {
        PyBuffer_Release(&v);
    }
    I64Buffer(const I64Buffer &) = delete;
    I64Buffer &operator=(const I64Buffer &) = delete;
    const int64_t *data() const
    {
        return static_cast<const int64_t *>(v.buf);
    }
    size_t size() const
    {
        return size_t(v.len / 8);
    }
};

std::tuple<nerve_rt_series, nerve_rt_series>
rt_timing_compute(nb::handle release, nb::handle wake)
{
    I64Buffer r(release), w(wake);
    if (r.size() != w.size()) {
        throw nb::value_error("release and wake must have the same length");
    }
    struct nerve_rt_series a, b;
    int rc = nerve_rt_timing_compute(r.data(), w.data(), r.size(), &a, &b);
    if (rc != 0) {
        raise_nerve(rc);
    }
    return {a, b};
}

// ---- RtTask: a task driven by nerve_task_next() ----------------------------
//
// All state is [GIL] except the C task's own stop flag. One thread at a time
// may be in next() (it waits with the GIL released, in slices that answer
// signals); stop() and close() from any thread. A channel-driven task owns
// its handle from the first next() until the loop has ended: other calls on
// the handle raise Busy meanwhile (see Chan::use), and only the task, which
// marked it, clears the mark.

struct RtTask {
    nerve_task *t = nullptr;
    nb::object chan_obj; // channel-driven: keeps the channel alive
    Chan *chan = nullptr;
    nb::object stats_obj; // publish_stats(): keeps that channel alive
    Chan *stats_chan = nullptr;
    bool stats_held = false; // the stats handle is marked busy by us
    struct nerve_rt_prio_map map;
    bool held = false;       // the channel handle is marked busy by us
    bool begun = false;      // next() was called: the C loop may run
    bool in_next = false;    // a thread is in next()
    bool stop_asked = false; // stop() was called
    bool stop_sent = false;  // nerve_task_stop() was called
    bool ended = false;      // the loop has ended; rc says how
    int rc = 0;

    RtTask(int64_t period_ns, int64_t start_ns, int64_t offset_ns,
           uint32_t flags, int policy, std::optional<int> priority,
           uint64_t cpus, const nerve_rt_prio_map *prio_map,
           uint64_t stack_prefault, nb::object chan_, bool newest,
           int64_t deadline_ns, uint64_t msg_max)
    {
        struct nerve_task_opts o = NERVE_TASK_OPTS_INIT;
        o.flags = flags;
        o.period_ns = period_ns;
        o.start_ns = start_ns;
        o.offset_ns = offset_ns;
        o.policy = policy;
        o.priority = priority ? *priority : NERVE_TASK_PRIO_AUTO;
        o.cpus = cpus;
        if (prio_map) {
            map = *prio_map;
            o.prio_map = &map;
        }
        o.stack_prefault = stack_prefault;
        if (!chan_.is_none()) {
            chan = nb::cast<Chan *>(chan_);
            o.chan = chan->use();
            chan_obj = chan_;
            o.chan_which = newest ? NERVE_GET_NEWEST : NERVE_GET_NEXT;
            o.deadline_ns = deadline_ns;
            o.msg_max = msg_max;
        }
        int r = nerve_task_open(&o, nullptr, nullptr, &t);
        if (r != 0) {
            raise_nerve(r);
        }
    }
    RtTask(const RtTask &) = delete;
    RtTask &operator=(const RtTask &) = delete;

    ~RtTask()
    {
        finish();
        nerve_task_close(t);
    }

    void hold_chan()
    {
        if (chan && !held) {
            chan->use();
            chan->check_not_reserved();
            chan->waiting = true;
            held = true;
        }
        // The loop puts on the stats handle: no other call may use (or
        // close) it until the loop has ended.
        if (stats_chan && !stats_held) {
            stats_chan->use();
            stats_chan->check_not_reserved();
            stats_chan->waiting = true;
            stats_held = true;
        }
    }

    void release_chan()
    {
        if (chan && held) {
            held = false;
            chan->waiting = false;
        }
        if (stats_chan && stats_held) {
            stats_held = false;
            stats_chan->waiting = false;
        }
    }

    // nerve_task_publish_stats(), before the first next().
    void publish_stats(nb::object chan_)
    {
        Chan *c = nullptr;
        nerve_chan *h = nullptr;
        if (!chan_.is_none()) {
            c = nb::cast<Chan *>(chan_);
            if (c == chan) {
                raise_nerve(NERVE_EINVAL, c->name.c_str(),
                            "the statistics need a handle of their own, not "
                            "the one the loop waits on");
            }
            h = c->use();
        }
        int r = nerve_task_publish_stats(t, h);
        if (r != 0) {
            raise_nerve(r);
        }
        stats_chan = c;
        stats_obj = chan_;
    }

    // The loop ended with r (from nerve_task_next).
    void end(int r)
    {
        ended = true;
        rc = (r == NERVE_ECANCELED && stop_asked) ? 0 : r;
        if (chan && held && stop_sent && chan->c) {
            // A stop sent while the loop was ending on its own (after the
            // C loop's last look at its flag) may have left the handle
            // cancelled; it is still ours: clear it before giving it back.
            nerve_chan_cancel_clear(chan->c);
        }
        release_chan();
    }

    // End a loop that is not waiting in next(): the body of the last tick
    // ends now, the handle is un-cancelled and given back. Never blocks
    // (the C task is stopped first, so nerve_task_next returns at once).
    void finish()
    {
        if (ended || in_next) {
            return;
        }
        if (!begun) {
            ended = true; // never begun
            return;
        }
        stop_asked = true;
        stop_sent = true;
        nerve_task_stop(t);
        struct nerve_task_tick tk;
        end(nerve_task_next(t, 0, 0, &tk));
    }

    // Any thread (the GIL orders it with next() and end()). The C task is
    // stopped only while its loop may run: stopping it cancels the channel
    // handle, which a loop not begun, or ended, would never clear.
    void stop()
    {
        stop_asked = true;
        if (begun && !ended) {
            stop_sent = true;
            nerve_task_stop(t);
        }
    }

    // next(timeout): the Tick of the next cycle; None once the loop was
    // stopped; raises the error that ended the loop, or Timeout.
    nb::object next(std::optional<double> timeout)
    {
        check_timeout(timeout);
        if (in_next) {
            raise_nerve(NERVE_EBUSY, nullptr,
                        "another thread is waiting in this loop's next()");
        }
        if (!ended && stop_asked && !begun) {
            ended = true; // stopped before its first cycle
        }
        if (ended) {
            if (rc != 0) {
                raise_nerve(rc);
            }
            return nb::none();
        }
        int64_t deadline = deadline_from(timeout);
        hold_chan();
        begun = true;
        in_next = true;
        struct nerve_task_tick tk;
        int r;
        for (;;) {
            int64_t end_ns = nerve_clock_now_ns() + SLICE_NS;
            if (deadline >= 0 && deadline < end_ns) {
                end_ns = deadline;
            }
            r = without_gil([&] {
                return nerve_task_next(t, end_ns, NERVE_F_ABSTIME, &tk);
            });
            if (r != NERVE_ETIMEDOUT && r != NERVE_EINTR) {
                break;
            }
            if (PyErr_CheckSignals() != 0) {
                in_next = false;
                throw nb::python_error();
            }
            if (r == NERVE_ETIMEDOUT && deadline >= 0 &&
                nerve_clock_now_ns() >= deadline) {
                in_next = false;
                raise_nerve(NERVE_ETIMEDOUT);
            }
        }
        in_next = false;
        if (r == 0) {
            return make_tick(tk);
        }
        end(r);
        if (rc != 0) {
            raise_nerve(rc);
        }
        return nb::none();
    }

    nerve_task_stats stats() const
    {
        struct nerve_task_stats s;
        int r = nerve_task_stat(t, &s);
        if (r != 0) {
            raise_nerve(r);
        }
        return s;
    }

    std::string format(std::optional<std::string> name) const
    {
        struct nerve_task_stats s = stats();
        const char *nm = name ? name->c_str() : nullptr;
        int n = nerve_task_stats_format(&s, nm, nullptr, 0);
        std::string out(size_t(n) + 1, '\0');
        nerve_task_stats_format(&s, nm, &out[0], out.size());
        out.resize(size_t(n));
        return out;
    }
};

} // namespace

void bind_rt(nb::module_ &m)
{
    m.attr("RT_OTHER") = NERVE_RT_OTHER;
    m.attr("RT_FIFO") = NERVE_RT_FIFO;
    m.attr("RT_RR") = NERVE_RT_RR;
    m.attr("RT_BEST_EFFORT") = NERVE_RT_BEST_EFFORT;
    m.attr("TASK_SKIP") = NERVE_TASK_SKIP;
    m.attr("TASK_CATCH_UP") = NERVE_TASK_CATCH_UP;
    m.attr("TASK_MLOCK") = NERVE_TASK_MLOCK;
    m.attr("TASK_STATS_TYPE") = NERVE_TASK_STATS_TYPE;

    nb::class_<nerve_rt_series>(m, "Series",
                                "Summary of one series of signed nanosecond "
                                "samples (struct nerve_rt_series).")
        .def(
            "__init__",
            [](nerve_rt_series *s, uint64_t n, int64_t min_ns, int64_t max_ns,
               int64_t max_abs_ns, int64_t mean_ns, int64_t rms_ns) {
                new (s) nerve_rt_series();
                s->n = n;
                s->min_ns = min_ns;
                s->max_ns = max_ns;
                s->max_abs_ns = max_abs_ns;
                s->mean_ns = mean_ns;
                s->rms_ns = rms_ns;
            },
            "n"_a = 0, "min_ns"_a = 0, "max_ns"_a = 0, "max_abs_ns"_a = 0,
            "mean_ns"_a = 0, "rms_ns"_a = 0)
#define NERVE_PY_RO(f) .def_ro(#f, &nerve_rt_series::f)
            NERVE_PY_SERIES(NERVE_PY_RO)
#undef NERVE_PY_RO
        .def_prop_ro(
            "jitter_ns", [](const nerve_rt_series &s) { return s.max_abs_ns; },
            "Same as max_abs_ns: the jitter of Tobar et al.")
        .def("__eq__", [](const nerve_rt_series &a,
                          const nerve_rt_series &b) { return series_eq(a, b); })
        .def("__eq__",
             [](const nerve_rt_series &, nb::handle) { return false; })
        .def("__hash__",
             [](const nerve_rt_series &s) {
                 return nb::hash(nb::make_tuple(s.n, s.min_ns, s.max_ns,
                                                s.max_abs_ns, s.mean_ns,
                                                s.rms_ns));
             })
        .def("__repr__", &series_repr);

    const nerve_rt_prio_map &d = prio_map_default();
    nb::class_<nerve_rt_prio_map>(
        m, "PrioMap",
        "Bounds of the rate-monotonic mapping (Tobar et al. eq. 1, struct "
        "nerve_rt_prio_map); the defaults are the C library's "
        "(NERVE_RT_PRIO_MAP_INIT).")
        .def(
            "__init__",
            [](nerve_rt_prio_map *p, int64_t period_min_ns,
               int64_t period_max_ns, int32_t prio_min, int32_t prio_max) {
                new (p) nerve_rt_prio_map(prio_map_default());
                p->period_min_ns = period_min_ns;
                p->period_max_ns = period_max_ns;
                p->prio_min = prio_min;
                p->prio_max = prio_max;
            },
            "period_min_ns"_a = d.period_min_ns,
            "period_max_ns"_a = d.period_max_ns, "prio_min"_a = d.prio_min,
            "prio_max"_a = d.prio_max)
#define NERVE_PY_RO(f) .def_ro(#f, &nerve_rt_prio_map::f)
            NERVE_PY_PRIO_MAP(NERVE_PY_RO)
#undef NERVE_PY_RO
        .def("__eq__",
             [](const nerve_rt_prio_map &a, const nerve_rt_prio_map &b) {
                 return a.period_min_ns == b.period_min_ns &&
                        a.period_max_ns == b.period_max_ns &&
                        a.prio_min == b.prio_min && a.prio_max == b.prio_max;
             })
        .def("__eq__",
             [](const nerve_rt_prio_map &, nb::handle) { return false; })
        .def("__hash__",
             [](const nerve_rt_prio_map &p) {
                 return nb::hash(nb::make_tuple(
                     p.period_min_ns, p.period_max_ns, p.prio_min, p.prio_max));
             })
        .def("__repr__", &prio_map_repr);

    nb::class_<nerve_rt_applied>(m, "Applied",
                                 "What a set-up call actually applied "
                                 "(struct nerve_rt_applied).")
        .def_prop_ro(
            "policy",
            [](const nerve_rt_applied &a) { return policy_of(a.policy); },
            "Policy in force after the call.")
        .def_ro("priority", &nerve_rt_applied::priority,
                "Its priority (0 under OTHER).")
        .def_ro("fallback_err", &nerve_rt_applied::fallback_err,
                "0, or the code of fallback.")
        .def_prop_ro(
            "fallback",
            [](const nerve_rt_applied &a) {
                return error_object(a.fallback_err);
            },
            "None, or the error that made a best-effort call fall "
            "back (usually nerve.OperationNotPermitted).")
        .def_prop_ro(
            "mem_locked",
            [](const nerve_rt_applied &a) { return a.mem_locked != 0; },
            "lock_memory(): True if mlockall held.")
        .def_prop_ro(
            "message",
            [](const nerve_rt_applied &a) { return std::string(a.msg); },
            "One sentence saying what happened.")
        .def("__repr__", [](const nerve_rt_applied &a) {
            return "Applied(policy=" + str_of(policy_of(a.policy)) +
                   ", priority=" + std::to_string(a.priority) +
                   ", fallback_err=" + std::to_string(a.fallback_err) +
                   ", mem_locked=" + (a.mem_locked ? "True" : "False") +
                   ", message=" + str_of(nb::str(a.msg)) + ")";
        });

    nb::class_<nerve_rt_caps>(m, "Caps",
                              "What this process may do (struct "
                              "nerve_rt_caps, see probe()).")
        .def_prop_ro(
            "fifo_ok", [](const nerve_rt_caps &c) { return c.fifo_ok != 0; },
            "True if a thread may run under SCHED_FIFO.")
        .def_ro("fifo_max_prio", &nerve_rt_caps::fifo_max_prio,
                "Highest FIFO priority permitted (0 if none).")
        .def_prop_ro(
            "memlock_max",
            [](const nerve_rt_caps &c) -> std::optional<int64_t> {
                if (c.memlock_max < 0) {
                    return std::nullopt;
                }
                return c.memlock_max;
            },
            "RLIMIT_MEMLOCK in bytes; None if unlimited or "
            "CAP_IPC_LOCK is held.")
        .def_prop_ro(
            "preempt_rt",
            [](const nerve_rt_caps &c) { return c.preempt_rt != 0; },
            "True if the kernel is PREEMPT_RT.")
        .def("__repr__", [](const nerve_rt_caps &c) {
            return "Caps(fifo_ok=" + std::string(c.fifo_ok ? "True" : "False") +
                   ", fifo_max_prio=" + std::to_string(c.fifo_max_prio) +
                   ", memlock_max=" +
                   (c.memlock_max < 0 ? std::string("None")
                                      : std::to_string(c.memlock_max)) +
                   ", preempt_rt=" + (c.preempt_rt ? "True" : "False") + ")";
        });

    nb::class_<nerve_task_stats>(m, "TaskStats",
                                 "Per-loop statistics, consistent as of one "
                                 "cycle (struct nerve_task_stats).")
        .def_ro("cycles", &nerve_task_stats::cycles, "Cycles run.")
        .def_ro("overruns", &nerve_task_stats::overruns,
                "Cycles that ended after the next release (clock) or "
                "deadline (channel).")
        .def_ro("skipped", &nerve_task_stats::skipped,
                "Clock loops, overrun='skip': releases dropped.")
        .def_ro("timeouts", &nerve_task_stats::timeouts,
                "Channel-driven loops: deadlines without a message.")
        .def_ro("missed", &nerve_task_stats::missed,
                "Channel-driven loops: messages the reader skipped.")
        .def_ro("abs_err", &nerve_task_stats::abs_err,
                "Eq. 2, wake - release (clock loops).")
        .def_ro("rel_err", &nerve_task_stats::rel_err,
                "Eq. 3 (clock loops; channel-driven ones with a period).")
        .def_ro("latency", &nerve_task_stats::latency,
                "Release (or message commit) -> body start.")
        .def_ro("exec", &nerve_task_stats::exec, "Body start -> body end.")
        .def_ro("period_ns", &nerve_task_stats::period_ns)
        .def_prop_ro(
            "policy",
            [](const nerve_task_stats &s) { return policy_of(s.policy); },
            "Policy applied to the loop's thread.")
        .def_ro("priority", &nerve_task_stats::priority,
                "Priority applied to the loop's thread.")
        .def_ro("sched_err", &nerve_task_stats::sched_err,
                "0, or the code of sched_error.")
        .def_prop_ro(
            "sched_error",
            [](const nerve_task_stats &s) { return error_object(s.sched_err); },
            "None, or why the requested policy was not applied "
            "(best effort).")
        .def_prop_ro(
            "running", [](const nerve_task_stats &s) { return s.running != 0; },
            "True while the loop runs.")
        .def_ro("stats_lost", &nerve_task_stats::stats_lost,
                "Cycles whose statistics message could not be put.")
        .def("__repr__", &stats_repr);

    nb::class_<Tick>(m, "Tick",
                     "What one cycle of a loop is about (struct "
                     "nerve_task_tick; the message is a copy).")
        .def_prop_ro(
            "cycle", [](const Tick &t) { return t.tk.cycle; },
            "0, 1, 2 ... cycles run so far.")
        .def_prop_ro(
            "release_ns", [](const Tick &t) { return t.tk.release_ns; },
            "When the cycle was due: the scheduled release (clock) "
            "or the message's commit time (channel-driven), "
            "CLOCK_MONOTONIC ns.")
        .def_prop_ro(
            "wake_ns", [](const Tick &t) { return t.tk.wake_ns; },
            "When the loop woke for it (CLOCK_MONOTONIC ns).")
        .def_prop_ro(
            "skipped", [](const Tick &t) { return t.tk.skipped; },
            "Clock loops, overrun='skip': releases dropped just "
            "before this one.")
        .def_ro("message", &Tick::message,
                "Channel-driven loops: the message (a copy), or None.")
        .def_prop_ro(
            "status", [](const Tick &t) { return t.tk.msg_status; },
            "Channel-driven loops: 0 (a message), the code of "
            "Timeout (the deadline passed without one) or of "
            "Lapped (writers kept overwriting it).")
        .def_prop_ro("timed_out", &Tick::timed_out,
                     "True if the deadline passed without a message.")
        .def("__repr__", &Tick::repr);

    m.def("rt_prio_from_period", &rt_prio_from_period, "period_ns"_a,
          "prio_map"_a = nb::none());
    m.def("rt_lock_memory", &rt_lock_memory, "stack"_a, "heap"_a, "flags"_a);
    m.def("rt_sched_set", &rt_sched_set, "policy"_a, "priority"_a, "flags"_a);
    m.def("rt_sched_get", []() {
        int policy = 0, priority = 0;
        int rc = nerve_rt_sched_get(&policy, &priority);
        if (rc != 0) {
            raise_nerve(rc);
        }
        return nb::make_tuple(policy_of(policy), priority);
    });
    m.def(
        "rt_affinity_set",
        [](uint64_t cpus) {
            int rc = nerve_rt_affinity_set(cpus);
            if (rc != 0) {
                raise_nerve(rc);
            }
        },
        "cpus"_a);
    m.def("rt_probe", &rt_probe);
    m.def("rt_timing_compute", &rt_timing_compute, "release"_a, "wake"_a);
    m.def("_set_rt_hooks", [](nb::handle policy) {
        Py_XDECREF(g_policy);
        g_policy = policy.inc_ref().ptr();
    });

    nb::class_<RtTask>(m, "RtTask",
                       "A nerve_task driven by next() (nerve_task_next); "
                       "used by nerve.rt.Task and nerve.rt.Loop.",
                       nb::is_weak_referenceable())
        .def(nb::init<int64_t, int64_t, int64_t, uint32_t, int,
                      std::optional<int>, uint64_t, const nerve_rt_prio_map *,
                      uint64_t, nb::object, bool, int64_t, uint64_t>(),
             "period_ns"_a, "start_ns"_a, "offset_ns"_a, "flags"_a, "policy"_a,
             "priority"_a.none(), "cpus"_a, "prio_map"_a.none(),
             "stack_prefault"_a, "chan"_a.none(), "newest"_a, "deadline_ns"_a,
             "msg_max"_a)
        .def("next", &RtTask::next, "timeout"_a = nb::none(),
             "End the previous cycle and wait for the next: its Tick; None "
             "once the loop was stopped. The first call applies the "
             "scheduling to the calling thread.")
        .def("stop", &RtTask::stop, "Ask the loop to stop (any thread).")
        .def("close", &RtTask::finish,
             "End the loop now unless a thread waits in next() (stop() "
             "ends that one).")
        .def("stats", &RtTask::stats)
        .def("publish_stats", &RtTask::publish_stats, "chan"_a.none(),
             "Put the statistics on chan (a writable Channel) every cycle "
             "(nerve_task_publish_stats); before the first next().")
        .def("format", &RtTask::format, "name"_a = nb::none())
        .def_prop_ro("begun", [](const RtTask &t) { return t.begun; })
        .def_prop_ro("ended", [](const RtTask &t) { return t.ended; });
}

} // namespace nerve_py
