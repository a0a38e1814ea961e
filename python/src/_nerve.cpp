// nerve._nerve: the native half of the Python package.
//
// A thin binding of the public C API (include/nerve/chan.h); the typed,
// documented surface lives in python/src/nerve/*.py, which subclasses Chan.
// Three things here are not plain forwarding, and each is why this module is
// C++ rather than ctypes:
//
// 1. The hot path (put and get of small messages) stays well under a
//    microsecond: no GIL release unless the call really waits, one copy
//    straight into a bytes object sized from the previous message, and
//    Message tuples allocated directly from their Python type.
// 2. Blocking waits release the GIL and wait in slices of SLICE_NS with
//    absolute deadlines, checking for signals between slices, so Ctrl-C
//    interrupts a wait within one slice without touching the C core's
//    signal contract.
// 3. Zero-copy buffers (views into the ring, reservations) are exported by
//    Span objects that keep their channel object alive and count exports:
//    close() with buffers still exported defers the munmap until the last
//    one is released, so no Python object can ever point at unmapped memory.
//
// Threading: the C API allows one caller per handle. Calls that do not wait
// hold the GIL throughout, so they cannot overlap; a call that waits marks
// the handle busy before releasing the GIL, and any other call on that handle
// (except cancel and the read-only facts) raises Busy meanwhile.

#include <nanobind/nanobind.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <nerve/chan.h>
#include <nerve/errors.h>
#include <nerve/rt.h>
#include <nerve/version.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>

#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <unistd.h>
#include <vector>

namespace nb = nanobind;
using namespace nb::literals;

namespace {

// Longest time a wait runs without looking at pending signals.
constexpr int64_t SLICE_NS = 50'000'000;
// Smallest buffer a copying get starts with.
constexpr size_t MIN_HINT = 64;

// Set by the Python package at import (see nerve/_core.py).
PyObject *g_message_type = nullptr; // a tuple subclass: Message
PyObject *g_error_factory = nullptr; // (code, message, name) -> exception
PyObject *g_coerce = nullptr;        // obj -> bytes-like, for odd buffers

// Raise the nerve.Error subclass for rc (name: the channel, or nullptr).
[[noreturn]] void raise_nerve(int rc, const char *name = nullptr,
                              const char *msg = nullptr)
{
    if (!msg) {
        msg = nerve_strerror(rc);
    }
    if (!g_error_factory) {
        PyErr_SetString(PyExc_RuntimeError, msg);
        throw nb::python_error();
    }
    PyObject *exc =
        PyObject_CallFunction(g_error_factory, "isz", rc, msg, name);
    if (exc) {
        PyErr_SetObject(reinterpret_cast<PyObject *>(Py_TYPE(exc)), exc);
        Py_DECREF(exc);
    }
    throw nb::python_error();
}

// Absolute CLOCK_MONOTONIC deadline for a timeout in seconds; -1 = never.
int64_t deadline_from(std::optional<double> timeout)
{
    if (!timeout) {
        return -1;
    }
    double t = *timeout;
    if (t != t || t < 0) {
        throw nb::value_error("timeout must be None or >= 0");
    }
    // Casting inf or a float beyond int64 is undefined: a timeout of more
    // than a century (or inf) waits forever, as None does.
    if (t > 3e9) {
        return -1;
    }
    return nerve_clock_now_ns() + static_cast<int64_t>(t * 1e9);
}

// Refuse a bad timeout whether or not the call will have to wait.
void check_timeout(std::optional<double> timeout)
{
    if (timeout && (*timeout != *timeout || *timeout < 0)) {
        throw nb::value_error("timeout must be None or >= 0");
    }
}

// ---- the GIL and interpreter exit ------------------------------------------
//
// Python 3.11-3.13 end a daemon thread that tries to take the GIL after
// finalization began with pthread_exit(), which unwinds the stack. Unwinding
// through this module's C++ frames would abort the process (nanobind's
// dispatch catches everything, and a destructor that retakes the GIL is
// noexcept). So the GIL is retaken only through reacquire_gil(), and an
// atexit hook (at_exit(), run before finalization starts) closes the door:
// a thread that finds g_exiting set parks forever instead (the process is
// ending), and at_exit() waits, with the GIL released, for threads already
// past the check to get the GIL. The seq_cst increment-then-load here and
// store-then-load in at_exit() make the two sides agree (Dekker): either the
// thread sees g_exiting, or at_exit() sees it counted.
std::atomic<bool> g_exiting{false};
std::atomic<int> g_reacquiring{0};

void reacquire_gil(PyThreadState *ts)
{
    g_reacquiring.fetch_add(1, std::memory_order_seq_cst);
    if (g_exiting.load(std::memory_order_seq_cst)) {
        g_reacquiring.fetch_sub(1, std::memory_order_seq_cst);
        for (;;) {
            pause();
        }
    }
    PyEval_RestoreThread(ts);
    g_reacquiring.fetch_sub(1, std::memory_order_seq_cst);
}

// Run f() (a C call that cannot throw) without the GIL.
template <class F> auto without_gil(F &&f)
{
    PyThreadState *ts = PyEval_SaveThread();
    auto r = f();
    reacquire_gil(ts);
    return r;
}

void at_exit()
{
    g_exiting.store(true, std::memory_order_seq_cst);
    Py_BEGIN_ALLOW_THREADS
    while (g_reacquiring.load(std::memory_order_seq_cst) > 0) {
        sched_yield();
    }
    Py_END_ALLOW_THREADS
}

struct Chan;
void chan_really_close(Chan &ch);

// ---- Chan: one open handle -------------------------------------------------

struct Chan {
    nerve_chan *c = nullptr;
    std::string name;
    bool writable = false;
    bool closing = false;  // close() asked while buffers were exported
    bool waiting = false;  // a call waits with the GIL released
    bool reserved = false; // a reservation is open in the C handle
    Py_ssize_t exports = 0; // live buffer exports of Spans on this handle
    PyObject *reservation = nullptr; // borrowed: the open reservation's Span
    size_t hint = MIN_HINT; // size of the last message a get copied

    Chan(const std::string &n, bool write) : name(n), writable(write)
    {
        nerve_chan *h = nullptr;
        int rc = without_gil([&] {
            return nerve_chan_open(n.c_str(),
                                   write ? NERVE_O_WRITE : NERVE_O_READ, &h);
        });
        if (rc != 0) {
            raise_nerve(rc, n.c_str());
        }
        c = h;
    }
    ~Chan()
    {
        if (c) {
            nerve_chan_close(c);
        }
    }
    Chan(const Chan &) = delete;
    Chan &operator=(const Chan &) = delete;

    // The handle for a call that must not overlap another one.
    nerve_chan *use()
    {
        if (!c || closing) {
            throw nb::value_error("operation on a closed channel");
        }
        if (waiting) {
            raise_nerve(NERVE_EBUSY, name.c_str(),
                        "channel handle is waiting in another thread; use "
                        "one handle per thread");
        }
        return c;
    }

    // Refuse to hand the handle to a wait while a reservation is open: the
    // reserving thread could then neither commit nor abort (Busy) and the
    // writer lock would stay taken.
    void check_not_reserved()
    {
        if (reserved) {
            raise_nerve(NERVE_EBUSY, name.c_str(),
                        "a reservation is open on this handle; commit or "
                        "abort it before waiting on the handle");
        }
    }
};

// Marks handles busy for the duration of a wait, exception-safe.
struct WaitGuard {
    std::vector<Chan *> chans;
    explicit WaitGuard(std::vector<Chan *> v) : chans(std::move(v))
    {
        for (Chan *ch : chans) {
            ch->check_not_reserved();
        }
        for (Chan *ch : chans) {
            ch->waiting = true;
        }
    }
    ~WaitGuard()
    {
        for (Chan *ch : chans) {
            ch->waiting = false;
        }
    }
};

// Run call(slice_deadline) without the GIL until it returns something other
// than a slice timeout, the deadline passes, or a signal handler raises.
// Lost wake-ups are not a concern here: each slice is a complete C wait with
// its own lost-wakeup argument, and the caller's condition is re-checked by
// the C call at the start of every slice.
template <class F>
int wait_sliced(std::vector<Chan *> chans, int64_t deadline, F &&call)
{
    WaitGuard guard(std::move(chans));
    for (;;) {
        int64_t now = nerve_clock_now_ns();
        if (deadline >= 0 && now >= deadline) {
            return NERVE_ETIMEDOUT;
        }
        int64_t end = now + SLICE_NS;
        if (deadline >= 0 && deadline < end) {
            end = deadline;
        }
        int rc = without_gil([&] { return call(end); });
        if (rc == NERVE_ETIMEDOUT || rc == NERVE_EINTR) {
            if (PyErr_CheckSignals() != 0) {
                throw nb::python_error();
            }
            continue;
        }
        return rc;
    }
}

// ---- Span: a buffer exporter over ring memory ------------------------------

struct SpanObject {
    PyObject_HEAD
    PyObject *owner;  // the Chan's Python object (strong)
    Chan *chan;
    char *ptr;        // nullptr once the span is finished (committed/aborted)
    Py_ssize_t len;
    int readonly;
    int has_view;
    struct nerve_view view;
};

PyTypeObject *g_span_type = nullptr;

int span_getbuffer(PyObject *self, Py_buffer *buf, int flags)
{
    auto *s = reinterpret_cast<SpanObject *>(self);
    if (!s->ptr || !s->chan->c || s->chan->closing) {
        PyErr_SetString(PyExc_BufferError,
                        "nerve: buffer is no longer valid (reservation "
                        "finished or channel closed)");
        buf->obj = nullptr;
        return -1;
    }
    if (PyBuffer_FillInfo(buf, self, s->ptr, s->len, s->readonly, flags) < 0) {
        return -1;
    }
    s->chan->exports++;
    return 0;
}

void span_releasebuffer(PyObject *self, Py_buffer *)
{
    auto *s = reinterpret_cast<SpanObject *>(self);
    Chan *ch = s->chan;
    if (--ch->exports == 0 && ch->closing) {
        chan_really_close(*ch);
    }
}

void span_dealloc(PyObject *self)
{
    auto *s = reinterpret_cast<SpanObject *>(self);
    PyTypeObject *tp = Py_TYPE(self);
    if (s->chan && s->chan->reservation == self) {
        s->chan->reservation = nullptr;
    }
    Py_XDECREF(s->owner);
    tp->tp_free(self);
    Py_DECREF(tp);
}

// Span.check(): raise StaleView if a writer began to overwrite the message.
PyObject *span_check(PyObject *self, PyObject *)
{
    auto *s = reinterpret_cast<SpanObject *>(self);
    if (!s->has_view) {
        PyErr_SetString(PyExc_TypeError, "not a view");
        return nullptr;
    }
    if (!s->chan->c) {
        PyErr_SetString(PyExc_ValueError, "operation on a closed channel");
        return nullptr;
    }
    int rc = nerve_chan_view_check(s->chan->c, &s->view);
    if (rc != 0) {
        try {
            raise_nerve(rc, s->chan->name.c_str());
        } catch (nb::python_error &e) {
            e.restore();
            return nullptr;
        }
    }
    Py_RETURN_NONE;
}

PyObject *span_valid(PyObject *self, PyObject *)
{
    auto *s = reinterpret_cast<SpanObject *>(self);
    if (!s->has_view || !s->chan->c) {
        Py_RETURN_FALSE;
    }
    return PyBool_FromLong(nerve_chan_view_check(s->chan->c, &s->view) == 0);
}

PyMethodDef span_methods[] = {
    {"check", span_check, METH_NOARGS,
     "Raise StaleView if a writer has begun to overwrite the viewed message."},
    {"valid", span_valid, METH_NOARGS,
     "True while no writer has begun to overwrite the viewed message."},
    {nullptr, nullptr, 0, nullptr}};

PyObject *span_new(Chan &ch, void *ptr, size_t len, bool readonly)
{
    nb::object owner = nb::find(&ch);
    auto *s = PyObject_New(SpanObject, g_span_type);
    if (!s) {
        throw nb::python_error();
    }
    s->owner = owner.release().ptr();
    s->chan = &ch;
    s->ptr = static_cast<char *>(ptr);
    s->len = static_cast<Py_ssize_t>(len);
    s->readonly = readonly;
    s->has_view = 0;
    std::memset(&s->view, 0, sizeof s->view);
    return reinterpret_cast<PyObject *>(s);
}

void chan_really_close(Chan &ch)
{
    if (ch.c) {
        nerve_chan_close(ch.c);
        ch.c = nullptr;
    }
}

// ---- messages --------------------------------------------------------------

// A Message tuple (seq, time, data, missed, size); steals `data`.
PyObject *make_message(const struct nerve_get_info &info, PyObject *data)
{
    auto *tp = reinterpret_cast<PyTypeObject *>(g_message_type);
    PyObject *t = tp->tp_alloc(tp, 5);
    if (!t) {
        Py_DECREF(data);
        throw nb::python_error();
    }
    PyTuple_SET_ITEM(t, 0, PyLong_FromUnsignedLongLong(info.seq));
    PyTuple_SET_ITEM(t, 1, PyLong_FromLongLong(info.time_ns));
    PyTuple_SET_ITEM(t, 2, data);
    PyTuple_SET_ITEM(t, 3, PyLong_FromUnsignedLongLong(info.missed));
    PyTuple_SET_ITEM(t, 4, PyLong_FromUnsignedLongLong(info.len));
    for (int i = 0; i < 5; i++) {
        if (!PyTuple_GET_ITEM(t, i)) {
            Py_DECREF(t);
            throw nb::python_error();
        }
    }
    return t;
}

// Which message a get/view asks for: flags and arg.
struct Which {
    uint32_t flags;
    int64_t arg;
};

Which which_of(bool newest, std::optional<uint64_t> seq,
               std::optional<int64_t> at, bool repeat)
{
    int n = int(newest) + int(seq.has_value()) + int(at.has_value());
    if (n > 1) {
        throw nb::value_error("give at most one of newest, seq and at");
    }
    if (repeat && !newest) {
        throw nb::value_error("repeat applies only with newest=True");
    }
    if (newest) {
        return {NERVE_GET_NEWEST | (repeat ? NERVE_F_REPEAT : 0u), 0};
    }
    if (seq) {
        return {NERVE_GET_SEQ, static_cast<int64_t>(*seq)};
    }
    if (at) {
        return {NERVE_GET_AT, *at};
    }
    return {NERVE_GET_NEXT, 0};
}

nb::object chan_get(Chan &ch, bool newest, bool wait,
                    std::optional<double> timeout,
                    std::optional<uint64_t> seq, std::optional<int64_t> at,
                    bool repeat)
{
    ch.use();
    Which w = which_of(newest, seq, at, repeat);
    bool can_wait = wait && (w.flags & NERVE_GET_MASK) != NERVE_GET_AT;
    check_timeout(timeout);
    int64_t deadline = can_wait ? deadline_from(timeout) : 0;
    size_t cap = ch.hint;
    struct nerve_get_info info;
    PyObject *buf = nullptr;
    int rc;
    for (;;) {
        if (!buf) {
            buf = PyBytes_FromStringAndSize(nullptr, Py_ssize_t(cap));
            if (!buf) {
                throw nb::python_error();
            }
        }
        // The allocation may run Python (a collection's finalizers), which
        // may close the handle: take it only now, and again on a retry.
        nerve_chan *c;
        try {
            c = ch.use();
        } catch (...) {
            Py_DECREF(buf);
            throw;
        }
        char *p = PyBytes_AS_STRING(buf);
        rc = nerve_chan_get(c, p, cap, w.arg, 0, &info, w.flags);
        if (rc == NERVE_EAGAIN && can_wait) {
            try {
                rc = wait_sliced({&ch}, deadline, [&](int64_t end) {
                    return nerve_chan_get(c, p, cap, w.arg, end, &info,
                                          w.flags | NERVE_F_WAIT |
                                              NERVE_F_ABSTIME);
                });
            } catch (...) {
                Py_DECREF(buf);
                throw;
            }
        }
        if (rc == NERVE_EMSGSIZE) {
            // Nothing was consumed; retry with the size the message needs.
            Py_DECREF(buf);
            buf = nullptr;
            cap = size_t(info.len);
            continue;
        }
        break;
    }
    if (rc != 0) {
        Py_DECREF(buf);
        if (rc == NERVE_EAGAIN) {
            return nb::none();
        }
        raise_nerve(rc, ch.name.c_str());
    }
    ch.hint = info.len > MIN_HINT ? size_t(info.len) : MIN_HINT;
    if (info.len != cap && _PyBytes_Resize(&buf, Py_ssize_t(info.len)) < 0) {
        throw nb::python_error();
    }
    return nb::steal(make_message(info, buf));
}

// view(): (span, seq, time, missed, size) or None.
nb::object chan_view(Chan &ch, bool newest, bool wait,
                     std::optional<double> timeout,
                     std::optional<uint64_t> seq, std::optional<int64_t> at,
                     bool repeat)
{
    nerve_chan *c = ch.use();
    Which w = which_of(newest, seq, at, repeat);
    bool can_wait = wait && (w.flags & NERVE_GET_MASK) != NERVE_GET_AT;
    check_timeout(timeout);
    int64_t deadline = can_wait ? deadline_from(timeout) : 0;
    struct nerve_view v;
    int rc = nerve_chan_view(c, w.arg, 0, &v, w.flags);
    if (rc == NERVE_EAGAIN && can_wait) {
        rc = wait_sliced({&ch}, deadline, [&](int64_t end) {
            return nerve_chan_view(c, w.arg, end, &v,
                                   w.flags | NERVE_F_WAIT | NERVE_F_ABSTIME);
        });
    }
    if (rc == NERVE_EAGAIN) {
        return nb::none();
    }
    if (rc != 0) {
        raise_nerve(rc, ch.name.c_str());
    }
    PyObject *sp = span_new(ch, const_cast<void *>(v.data), size_t(v.info.len),
                            true);
    if (!ch.c || ch.closing) {
        // Allocating the span ran Python that closed the handle.
        Py_DECREF(sp);
        throw nb::value_error("operation on a closed channel");
    }
    auto *s = reinterpret_cast<SpanObject *>(sp);
    s->has_view = 1;
    s->view = v;
    return nb::make_tuple(nb::steal(sp), v.info.seq, v.info.time_ns,
                          v.info.missed, v.info.len);
}

// True if a buffer format string has Python object items ('O' outside the
// ":name:" field names of a struct format): their bytes are pointers.
bool format_has_objects(const char *f)
{
    bool in_name = false;
    for (; f && *f; f++) {
        if (*f == ':') {
            in_name = !in_name;
        } else if (!in_name && *f == 'O') {
            return true;
        }
    }
    return false;
}

// A Py_buffer released when it goes out of scope.
struct BufferGuard {
    Py_buffer v;
    bool held = false;
    BufferGuard() = default;
    BufferGuard(const BufferGuard &) = delete;
    BufferGuard &operator=(const BufferGuard &) = delete;
    ~BufferGuard()
    {
        if (held) {
            PyBuffer_Release(&v);
        }
    }
};

// put(data, timeout) -> seq. Takes any object with the buffer protocol; a
// non-contiguous buffer is gathered straight into a reservation (one copy).
// Everything that may run Python (exporting the buffer, the coerce hook)
// happens before the handle is taken, since that Python code may close it.
// `at`: the caller's commit time (nerve_chan_put_at), or none for now.
void chan_put_impl(Chan &ch, nb::handle data, std::optional<double> timeout,
                   std::optional<int64_t> at, struct nerve_put_info &info)
{
    ch.use();
    check_timeout(timeout);
    BufferGuard b;
    Py_buffer &v = b.v;
    PyObject *obj = data.ptr();
    nb::object coerced;
    bool gather = false;
    if (PyObject_GetBuffer(obj, &v, PyBUF_FORMAT) == 0) {
        b.held = true;
    } else {
        PyErr_Clear();
        if (PyObject_GetBuffer(obj, &v, PyBUF_FULL_RO) == 0) {
            b.held = true;
            gather = true; // non-contiguous: gather into the ring
        } else {
            PyErr_Clear();
            if (!g_coerce) {
                throw nb::type_error("put() needs bytes or a buffer");
            }
            coerced = nb::steal(PyObject_CallOneArg(g_coerce, obj));
            if (!coerced.is_valid()) {
                throw nb::python_error();
            }
            if (PyObject_GetBuffer(coerced.ptr(), &v, PyBUF_SIMPLE) != 0) {
                throw nb::python_error();
            }
            b.held = true;
        }
    }
    if (format_has_objects(v.format)) {
        throw nb::type_error(
            "put(): arrays of Python objects hold pointers, not data");
    }
    nerve_chan *c = ch.use();
    if (gather) {
        void *ptr = nullptr;
        int rc = nerve_chan_reserve(c, size_t(v.len), 0, &ptr, 0);
        if (rc == NERVE_ETIMEDOUT && !(timeout && *timeout == 0)) {
            int64_t deadline = deadline_from(timeout);
            rc = wait_sliced({&ch}, deadline, [&](int64_t end) {
                return nerve_chan_reserve(c, size_t(v.len), end, &ptr,
                                          NERVE_F_ABSTIME);
            });
        }
        if (rc != 0) {
            raise_nerve(rc, ch.name.c_str());
        }
        // Plain memory copies: no Python runs until the commit.
        Py_ssize_t len = v.len;
        if (PyBuffer_ToContiguous(ptr, &v, len, 'C') != 0) {
            (void)nerve_chan_abort(c);
            throw nb::python_error();
        }
        rc = at ? nerve_chan_commit_at(c, size_t(len), *at, &info)
                : nerve_chan_commit(c, size_t(len), &info);
        if (rc != 0) {
            (void)nerve_chan_abort(c);
            raise_nerve(rc, ch.name.c_str());
        }
        return;
    }
    auto put = [&](int64_t tmo, uint32_t fl) {
        return at ? nerve_chan_put_at(c, v.buf, size_t(v.len), *at, tmo,
                                      &info, fl)
                  : nerve_chan_put(c, v.buf, size_t(v.len), tmo, &info, fl);
    };
    int rc = put(0, 0);
    if (rc == NERVE_ETIMEDOUT && !(timeout && *timeout == 0)) {
        // The writer lock is held by another writer: wait without the GIL.
        int64_t deadline = deadline_from(timeout);
        rc = wait_sliced({&ch}, deadline, [&](int64_t end) {
            return put(end, NERVE_F_ABSTIME);
        });
    }
    if (rc != 0) {
        raise_nerve(rc, ch.name.c_str());
    }
}

uint64_t chan_put(Chan &ch, nb::handle data, std::optional<double> timeout)
{
    struct nerve_put_info info;
    chan_put_impl(ch, data, timeout, std::nullopt, info);
    return info.seq;
}

// put_at(data, time, timeout) -> (seq, time recorded).
nb::tuple chan_put_at(Chan &ch, nb::handle data, int64_t time,
                      std::optional<double> timeout)
{
    struct nerve_put_info info;
    chan_put_impl(ch, data, timeout, time, info);
    return nb::make_tuple(info.seq, info.time_ns);
}

nb::object chan_reserve(Chan &ch, size_t len, std::optional<double> timeout)
{
    nerve_chan *c = ch.use();
    check_timeout(timeout);
    void *ptr = nullptr;
    int rc = nerve_chan_reserve(c, len, 0, &ptr, 0);
    if (rc == NERVE_ETIMEDOUT && !(timeout && *timeout == 0)) {
        int64_t deadline = deadline_from(timeout);
        rc = wait_sliced({&ch}, deadline, [&](int64_t end) {
            return nerve_chan_reserve(c, len, end, &ptr, NERVE_F_ABSTIME);
        });
    }
    if (rc != 0) {
        raise_nerve(rc, ch.name.c_str());
    }
    ch.reserved = true;
    PyObject *sp;
    try {
        sp = span_new(ch, ptr, len, false);
    } catch (...) {
        if (ch.reserved && ch.c) {
            (void)nerve_chan_abort(ch.c);
            ch.reserved = false;
        }
        throw;
    }
    if (!ch.c || ch.closing) {
        // Allocating the span ran Python that closed the handle (which
        // aborted the reservation).
        Py_DECREF(sp);
        throw nb::value_error("operation on a closed channel");
    }
    ch.reservation = sp;
    return nb::steal(sp);
}

// End the open reservation's span so it exports no new buffers.
void finish_reservation(Chan &ch)
{
    ch.reserved = false;
    if (ch.reservation) {
        reinterpret_cast<SpanObject *>(ch.reservation)->ptr = nullptr;
        ch.reservation = nullptr;
    }
}

// _commit_at(size, time) -> (seq, time recorded).
nb::tuple chan_commit_at(Chan &ch, size_t len, int64_t time)
{
    nerve_chan *c = ch.use();
    struct nerve_put_info info;
    int rc = nerve_chan_commit_at(c, len, time, &info);
    if (rc != 0) {
        (void)nerve_chan_abort(c);
        finish_reservation(ch);
        raise_nerve(rc, ch.name.c_str());
    }
    finish_reservation(ch);
    return nb::make_tuple(info.seq, info.time_ns);
}

uint64_t chan_commit(Chan &ch, size_t len)
{
    nerve_chan *c = ch.use();
    struct nerve_put_info info;
    int rc = nerve_chan_commit(c, len, &info);
    if (rc != 0) {
        // A failed commit leaves the reservation open (chan.h); nothing
        // could publish it later, and it holds the writer lock: drop it.
        (void)nerve_chan_abort(c);
        finish_reservation(ch);
        raise_nerve(rc, ch.name.c_str());
    }
    finish_reservation(ch);
    return info.seq;
}

void chan_abort(Chan &ch)
{
    nerve_chan *c = ch.use();
    int rc = nerve_chan_abort(c);
    finish_reservation(ch);
    if (rc != 0) {
        raise_nerve(rc, ch.name.c_str());
    }
}

void chan_close(Chan &ch)
{
    if (!ch.c || ch.closing) {
        return;
    }
    if (ch.waiting) {
        raise_nerve(NERVE_EBUSY, ch.name.c_str(),
                    "channel handle is waiting in another thread; cancel() "
                    "it first");
    }
    if (ch.reserved) {
        // Give the writer lock back now, not when the last buffer goes.
        (void)nerve_chan_abort(ch.c);
        finish_reservation(ch);
    }
    if (ch.exports > 0) {
        ch.closing = true; // the last released buffer closes the handle
    } else {
        chan_really_close(ch);
    }
}

nb::dict stat_dict(const struct nerve_stats &st)
{
    nb::dict d;
    d["slots"] = st.slots;
    d["data_size"] = st.data_size;
    d["file_size"] = st.file_size;
    d["head_seq"] = st.head_seq;
    d["tail_seq"] = st.tail_seq;
    d["newest_time"] = st.newest_time_ns;
    d["bytes_total"] = st.bytes_total;
    d["waiters"] = st.waiters;
    d["created"] = st.created_ns;
    d["layout_version"] = st.layout_version;
    d["mode"] = st.mode;
    d["uid"] = st.uid;
    d["gid"] = st.gid;
    d["creator_version"] = st.creator_version;
    return d;
}

nb::dict chan_stat(Chan &ch)
{
    if (!ch.c) {
        throw nb::value_error("operation on a closed channel");
    }
    struct nerve_stats st;
    int rc = nerve_chan_stat(ch.c, &st);
    if (rc != 0) {
        raise_nerve(rc, ch.name.c_str());
    }
    return stat_dict(st);
}

// The ring mapping (nerve_chan_ring), as (address, length), for
// registering it once with a DMA engine, e.g. cupy's
// cuda.runtime.hostRegister, so device copies go straight into
// reservations.
nb::tuple chan_ring(Chan &ch)
{
    if (!ch.c) {
        throw nb::value_error("operation on a closed channel");
    }
    void *base;
    uint64_t len;
    int rc = nerve_chan_ring(ch.c, &base, &len);
    if (rc != 0) {
        raise_nerve(rc, ch.name.c_str());
    }
    return nb::make_tuple((uintptr_t)base, len);
}

nb::tuple chan_meta(Chan &ch)
{
    if (!ch.c) {
        throw nb::value_error("operation on a closed channel");
    }
    struct nerve_meta m;
    int rc = nerve_chan_meta(ch.c, &m);
    if (rc != 0) {
        raise_nerve(rc, ch.name.c_str());
    }
    // The library opens only channels whose type and encoding are valid
    // UTF-8 (NERVE_ECORRUPT otherwise), so the strict decode cannot fail;
    // "replace" keeps any future slip a str and never a conversion error.
    auto text = [](const char *s) -> nb::object {
        PyObject *o = PyUnicode_DecodeUTF8(s, Py_ssize_t(strlen(s)), "replace");
        if (!o) {
            throw nb::python_error();
        }
        return nb::steal(o);
    };
    nb::object type = nb::none(), enc = nb::none(), schema = nb::none();
    if (m.type && m.type[0]) {
        type = text(m.type);
    }
    if (m.encoding && m.encoding[0]) {
        enc = text(m.encoding);
    }
    if (m.schema && m.schema_len) {
        schema = nb::bytes(m.schema, size_t(m.schema_len));
    }
    return nb::make_tuple(type, enc, schema);
}

// wait_any(chans, timeout) -> bit mask of ready channels (0 on timeout).
uint64_t wait_any(std::vector<Chan *> chans, std::optional<double> timeout)
{
    if (chans.empty() || chans.size() > NERVE_WAIT_MAX) {
        throw nb::value_error("wait_any() takes 1 to 64 channels");
    }
    check_timeout(timeout);
    std::vector<nerve_chan *> hs;
    for (Chan *ch : chans) {
        if (!ch) {
            throw nb::type_error("wait_any() takes nerve.Channel objects, "
                                 "not None");
        }
        hs.push_back(ch->use());
    }
    uint64_t ready = 0;
    int rc = nerve_chan_wait_any(hs.data(), hs.size(), 0, &ready, 0);
    if (rc == NERVE_ETIMEDOUT && !(timeout && *timeout == 0)) {
        int64_t deadline = deadline_from(timeout);
        rc = wait_sliced(chans, deadline, [&](int64_t end) {
            return nerve_chan_wait_any(hs.data(), hs.size(), end, &ready,
                                  NERVE_F_ABSTIME);
        });
    }
    if (rc == NERVE_ETIMEDOUT) {
        return 0;
    }
    if (rc < 0) {
        raise_nerve(rc);
    }
    return ready;
}

void create(const std::string &name, uint64_t slots, uint64_t size,
            uint32_t mode, std::optional<std::string> type,
            std::optional<std::string> encoding, std::optional<nb::bytes> schema,
            bool exist_ok)
{
    struct nerve_chan_opts o = NERVE_CHAN_OPTS_INIT;
    o.flags = exist_ok ? NERVE_C_EXIST_OK : 0;
    o.slots = slots;
    o.data_size = size;
    o.mode = mode;
    // A NUL inside a Python str would silently cut the C string short.
    if ((type && type->find('\0') != std::string::npos) ||
        (encoding && encoding->find('\0') != std::string::npos)) {
        raise_nerve(NERVE_EINVAL, name.c_str(),
                    "type and encoding must not contain NUL characters");
    }
    o.type = type ? type->c_str() : nullptr;
    o.encoding = encoding ? encoding->c_str() : nullptr;
    if (schema) {
        o.schema = schema->c_str();
        o.schema_len = schema->size();
    }
    int rc = without_gil([&] { return nerve_chan_create(name.c_str(), &o); });
    if (rc != 0) {
        raise_nerve(rc, name.c_str());
    }
}

int collect_name(const char *name, void *arg)
{
    static_cast<std::vector<std::string> *>(arg)->emplace_back(name);
    return 0;
}

// ---- real-time helpers (include/nerve/rt.h) --------------------------------
//
// The helpers are plain forwarding. RtTask is not: it runs a nerve_task whose
// body is Python, in one of two modes.
//
// call mode (nerve.rt.Task): the body trampoline takes the GIL on the loop's
// thread for every cycle and calls the callable. The C loop keeps the timing
// (absolute sleeps, statistics) and holds no GIL while it sleeps; the body's
// execution time, and its wait for the GIL, are Python's.
//
// step mode (nerve.rt.periodic): the body trampoline never touches the GIL.
// It hands the tick to the Python thread iterating the loop and waits until
// that thread asks for the next tick, so one cycle's "body" is the Python
// code between two iterations. Handshake, under RtTask::mu:
//   loop:   state IDLE -> READY (tick posted), wait until IDLE or stopping
//   Python: READY -> TAKEN (tick copied); on the next request TAKEN -> IDLE
// The wait on the loop side needs no lost-wakeup argument beyond the
// condition variable's: every state change happens under mu and notifies.
//
// The loop ends in a joiner thread (a plain C++ thread that calls
// nerve_task_join and records the status) so that Python's join() can wait
// in slices, with the GIL released, and still answer Ctrl-C.

struct RtTask;
PyObject *g_tick_type = nullptr; // nerve.rt.Tick, set by _set_rt_hooks

// The exit gate of reacquire_gil(), for a thread that takes the GIL through
// PyGILState_Ensure (it may have no thread state of its own). Returns false
// once the interpreter is exiting: the caller must then not touch Python.
bool gil_ensure(PyGILState_STATE *st)
{
    g_reacquiring.fetch_add(1, std::memory_order_seq_cst);
    if (g_exiting.load(std::memory_order_seq_cst)) {
        g_reacquiring.fetch_sub(1, std::memory_order_seq_cst);
        return false;
    }
    *st = PyGILState_Ensure();
    g_reacquiring.fetch_sub(1, std::memory_order_seq_cst);
    return true;
}

nb::tuple series_tuple(const struct nerve_rt_series &s)
{
    return nb::make_tuple(s.n, s.min_ns, s.max_ns, s.max_abs_ns, s.mean_ns,
                          s.rms_ns);
}

nb::tuple applied_tuple(const struct nerve_rt_applied &a)
{
    return nb::make_tuple(a.policy, a.priority, a.fallback_err,
                          bool(a.mem_locked), nb::str(a.msg));
}

struct nerve_rt_prio_map prio_map_of(nb::handle t)
{
    struct nerve_rt_prio_map m = NERVE_RT_PRIO_MAP_INIT;
    auto v = nb::cast<std::tuple<int32_t, int32_t, int64_t, int64_t>>(t);
    m.prio_min = std::get<0>(v);
    m.prio_max = std::get<1>(v);
    m.period_min_ns = std::get<2>(v);
    m.period_max_ns = std::get<3>(v);
    return m;
}

int rt_prio_from_period(int64_t period_ns, nb::object map)
{
    struct nerve_rt_prio_map m = NERVE_RT_PRIO_MAP_INIT;
    if (!map.is_none()) {
        m = prio_map_of(map);
    }
    int rc = nerve_rt_prio_from_period(period_ns, &m);
    if (rc < 0) {
        raise_nerve(rc);
    }
    return rc;
}

nb::tuple rt_lock_memory(size_t stack, size_t heap, uint32_t flags)
{
    struct nerve_rt_applied a;
    std::memset(&a, 0, sizeof a);
    int rc = without_gil(
        [&] { return nerve_rt_lock_memory(stack, heap, flags, &a); });
    if (rc != 0) {
        raise_nerve(rc, nullptr, a.msg[0] ? a.msg : nullptr);
    }
    return applied_tuple(a);
}

nb::tuple rt_sched_set(int policy, int priority, uint32_t flags)
{
    struct nerve_rt_applied a;
    std::memset(&a, 0, sizeof a);
    int rc = nerve_rt_sched_set(policy, priority, flags, &a);
    if (rc != 0) {
        raise_nerve(rc, nullptr, a.msg[0] ? a.msg : nullptr);
    }
    return applied_tuple(a);
}

nb::tuple rt_probe()
{
    struct nerve_rt_caps c;
    std::memset(&c, 0, sizeof c);
    int rc = without_gil([&] { return nerve_rt_probe(&c); });
    if (rc != 0) {
        raise_nerve(rc);
    }
    return nb::make_tuple(bool(c.fifo_ok), c.fifo_max_prio, c.memlock_max,
                          bool(c.preempt_rt));
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
    ~I64Buffer() { PyBuffer_Release(&v); }
    const int64_t *data() const { return static_cast<const int64_t *>(v.buf); }
    size_t size() const { return size_t(v.len / 8); }
};

nb::tuple rt_timing_compute(nb::handle release, nb::handle wake)
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
    return nb::make_tuple(series_tuple(a), series_tuple(b));
}

int call_body(void *arg, const struct nerve_task_tick *tk);
int step_body(void *arg, const struct nerve_task_tick *tk);

enum class Hand { IDLE, READY, TAKEN };

struct RtTask {
    nerve_task *t = nullptr;
    bool step;              // step mode (periodic iterator)
    nb::object body;        // call mode: the callable
    nb::object chan_obj;    // channel-driven: keeps the channel alive
    Chan *chan = nullptr;
    struct nerve_rt_prio_map map;
    PyObject *exc = nullptr; // owned: the body's exception, raised by join
    bool started = false;    // [GIL]
    bool in_run = false;     // [GIL] run() is executing
    pthread_t run_thread{};  // [GIL] in_run: the thread executing run()
    std::atomic<bool> stop_sent{false}; // nerve_task_stop() was called
    std::thread joiner;      // [GIL] started by start()
    bool join_claimed = false; // [GIL] a join() has taken joiner.join()
    bool held = false;       // [GIL] hold_chan() marked the handle busy
    std::thread::id loop_tid; // set by the loop thread's first body call

    // Under mu:
    std::mutex mu;
    std::condition_variable cv;
    bool finished = false;  // the loop has ended; rc is its status
    int rc = 0;
    bool stopping = false;  // stop() was called
    Hand hand = Hand::IDLE; // step mode handshake
    const struct nerve_task_tick *cur = nullptr; // READY/TAKEN: the tick

    RtTask(nb::object body_, bool step_, int64_t period_ns, int64_t start_ns,
           int64_t offset_ns, uint32_t flags, int policy,
           std::optional<int> priority, uint64_t cpus, nb::object prio_map,
           uint64_t stack_prefault, nb::object chan_, bool newest,
           int64_t deadline_ns, uint64_t msg_max)
        : step(step_), body(std::move(body_))
    {
        if (!step && !PyCallable_Check(body.ptr())) {
            throw nb::type_error("the task body must be callable");
        }
        struct nerve_task_opts o = NERVE_TASK_OPTS_INIT;
        o.flags = flags;
        o.period_ns = period_ns;
        o.start_ns = start_ns;
        o.offset_ns = offset_ns;
        o.policy = policy;
        o.priority = priority ? *priority : NERVE_TASK_PRIO_AUTO;
        o.cpus = cpus;
        map = NERVE_RT_PRIO_MAP_INIT;
        if (!prio_map.is_none()) {
            map = prio_map_of(prio_map);
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
        int rc = nerve_task_open(&o, step ? step_body : call_body, this, &t);
        if (rc != 0) {
            raise_nerve(rc);
        }
    }
    RtTask(const RtTask &) = delete;
    RtTask &operator=(const RtTask &) = delete;

    ~RtTask()
    {
        // Called with the GIL held. A started loop is stopped and waited
        // for with the GIL released, since a call-mode body needs it (at
        // exit the bodies no longer take it: see gil_ensure).
        stop();
        if (joiner.joinable() && !join_claimed) {
            Py_BEGIN_ALLOW_THREADS
            joiner.join();
            Py_END_ALLOW_THREADS
        }
        nerve_task_close(t);
        release_chan();
        Py_XDECREF(exc);
    }

    // The channel handle is the loop's while it may run: other calls on it
    // raise Busy meanwhile (see Chan::use).
    void hold_chan()
    {
        if (chan) {
            chan->use();
            chan->check_not_reserved();
            chan->waiting = true;
            held = true;
        }
    }
    // Only the holder clears the mark: a second join(), dropping the task
    // or a task never started must not free a handle that another thread
    // is waiting on now.
    void release_chan()
    {
        if (chan && held) {
            held = false;
            chan->waiting = false;
            if (stop_sent && chan->c) {
                // A stop that raced with the loop's own end may have left
                // the handle cancelled; the loop is over, so clear it.
                nerve_chan_cancel_clear(chan->c);
            }
        }
    }

    // Any thread, also the body. The C stop is sent only to a loop that may
    // be running: for a channel-driven task it cancels the handle, and only
    // the loop's end (or release_chan) clears that again.
    void stop()
    {
        bool send;
        {
            std::lock_guard<std::mutex> lk(mu);
            stopping = true;
            send = started && !finished;
        }
        cv.notify_all();
        if (send) {
            stop_sent = true;
            nerve_task_stop(t);
        }
    }

    void start()
    {
        if (started) {
            raise_nerve(NERVE_EBUSY, nullptr, "the task was already started");
        }
        hold_chan();
        bool pre_stopped;
        {
            std::lock_guard<std::mutex> lk(mu);
            pre_stopped = stopping;
        }
        if (pre_stopped) {
            // stop() before start(): the loop ends before its first cycle.
            stop_sent = true;
            nerve_task_stop(t);
        }
        int r = without_gil([&] { return nerve_task_start(t); });
        if (r != 0) {
            release_chan();
            raise_nerve(r);
        }
        started = true;
        joiner = std::thread([this] {
            int jr = nerve_task_join(t);
            {
                std::lock_guard<std::mutex> lk(mu);
                finished = true;
                rc = jr;
            }
            cv.notify_all();
        });
    }

    void run()
    {
        if (step) {
            throw nb::type_error("run() needs a task with a body");
        }
        if (started) {
            raise_nerve(NERVE_EBUSY, nullptr, "the task was already started");
        }
        hold_chan();
        started = true;
        in_run = true;
        run_thread = pthread_self();
        bool pre_stopped;
        {
            std::lock_guard<std::mutex> lk(mu);
            pre_stopped = stopping;
        }
        if (pre_stopped) {
            stop_sent = true;
            nerve_task_stop(t);
        }
        int r = without_gil([&] { return nerve_task_run(t); });
        in_run = false;
        // The calling thread is no longer the loop's: join() may be called
        // from it now.
        loop_tid = std::thread::id();
        {
            std::lock_guard<std::mutex> lk(mu);
            finished = true;
            rc = r;
        }
        release_chan();
        raise_outcome();
    }

    // Ctrl-C while run() executes (from nerve.rt's watcher thread, which
    // saw SIGINT arrive): stop the loop and wake the running thread from a
    // clock sleep (the loop re-checks its stop flag on EINTR). The GIL,
    // held here, keeps that thread from returning to Python before the
    // signal lands, so its pending SIGINT raises one KeyboardInterrupt.
    void interrupt()
    {
        stop();
        if (in_run) {
            pthread_kill(run_thread, SIGINT);
        }
    }

    // Raise the body's exception or the loop's error, if any.
    void raise_outcome()
    {
        if (exc) {
            PyObject *tb = PyException_GetTraceback(exc);
            Py_INCREF(exc);
            PyObject *tp = reinterpret_cast<PyObject *>(Py_TYPE(exc));
            Py_INCREF(tp);
            PyErr_Restore(tp, exc, tb);
            throw nb::python_error();
        }
        if (rc < 0) {
            raise_nerve(rc);
        }
    }

    // Wait (GIL released, in slices that answer Ctrl-C) until pred() holds
    // under mu or the deadline (-1: none) passes. Returns pred().
    template <class P> bool wait_for(int64_t deadline, P &&pred)
    {
        for (;;) {
            int64_t now = nerve_clock_now_ns();
            int64_t end = now + SLICE_NS;
            if (deadline >= 0 && deadline < end) {
                end = deadline;
            }
            bool ok = without_gil([&] {
                std::unique_lock<std::mutex> lk(mu);
                cv.wait_for(lk, std::chrono::nanoseconds(end - now),
                            [&] { return pred(); });
                return pred();
            });
            if (ok) {
                return true;
            }
            if (PyErr_CheckSignals() != 0) {
                throw nb::python_error();
            }
            if (deadline >= 0 && nerve_clock_now_ns() >= deadline) {
                return false;
            }
        }
    }

    bool join(std::optional<double> timeout)
    {
        if (!started) {
            raise_nerve(NERVE_EINVAL, nullptr, "the task was never started");
        }
        if (std::this_thread::get_id() == loop_tid) {
            throw nb::value_error("join() called from the task's own body");
        }
        if (!wait_for(deadline_from(timeout), [&] { return finished; })) {
            return false;
        }
        if (joiner.joinable() && !join_claimed) {
            // One caller joins the (already ending) thread; a concurrent
            // join() only needs `finished`, which it has seen.
            join_claimed = true;
            without_gil([&] {
                joiner.join();
                return 0;
            });
        }
        release_chan();
        raise_outcome();
        return true;
    }

    // Step mode: finish the previous tick, wait for the next one. Returns
    // the Tick, or None once the loop has ended (raising its error if any).
    nb::object next_tick(std::optional<double> timeout);

    bool finished_now()
    {
        std::lock_guard<std::mutex> lk(mu);
        return finished;
    }

    nb::tuple stats() const
    {
        struct nerve_task_stats s;
        int r = nerve_task_stat(t, &s);
        if (r != 0) {
            raise_nerve(r);
        }
        return nb::make_tuple(s.cycles, s.overruns, s.skipped, s.timeouts,
                              s.missed, series_tuple(s.abs_err),
                              series_tuple(s.rel_err), series_tuple(s.latency),
                              series_tuple(s.exec), s.period_ns, s.policy,
                              s.priority, s.sched_err, bool(s.running));
    }

    std::string format(std::optional<std::string> name) const
    {
        struct nerve_task_stats s;
        int r = nerve_task_stat(t, &s);
        if (r != 0) {
            raise_nerve(r);
        }
        const char *nm = name ? name->c_str() : nullptr;
        int n = nerve_task_stats_format(&s, nm, nullptr, 0);
        std::string out(size_t(n) + 1, '\0');
        nerve_task_stats_format(&s, nm, &out[0], out.size());
        out.resize(size_t(n));
        return out;
    }
};

// The Tick for one cycle (GIL held). The message, if any, is copied.
PyObject *make_tick(const struct nerve_task_tick *tk)
{
    PyObject *msg = Py_None;
    Py_INCREF(msg);
    if (tk->msg) {
        Py_DECREF(msg);
        PyObject *data = PyBytes_FromStringAndSize(
            static_cast<const char *>(tk->msg), Py_ssize_t(tk->msg_info.len));
        if (!data) {
            return nullptr;
        }
        try {
            msg = make_message(tk->msg_info, data);
        } catch (nb::python_error &e) {
            e.restore();
            return nullptr;
        }
    }
    return PyObject_CallFunction(g_tick_type, "KLLKNi",
                                 (unsigned long long)tk->cycle,
                                 (long long)tk->release_ns,
                                 (long long)tk->wake_ns,
                                 (unsigned long long)tk->skipped, msg,
                                 int(tk->msg_status));
}

int call_body(void *arg, const struct nerve_task_tick *tk)
{
    auto *s = static_cast<RtTask *>(arg);
    PyGILState_STATE st;
    if (!gil_ensure(&st)) {
        return 1; // the interpreter is exiting: end the loop
    }
    if (tk->cycle == 0) {
        s->loop_tid = std::this_thread::get_id();
    }
    int rc = 0;
    PyObject *tick = make_tick(tk);
    PyObject *res = tick ? PyObject_CallOneArg(s->body.ptr(), tick) : nullptr;
    Py_XDECREF(tick);
    if (res) {
        int truth = PyObject_IsTrue(res);
        Py_DECREF(res);
        rc = truth > 0 ? 1 : 0;
        if (truth < 0) {
            res = nullptr;
        } else if (PyErr_CheckSignals() != 0) {
            // run() on the main thread: Ctrl-C ends the loop here.
            res = nullptr;
        }
    }
    if (!res) {
        PyObject *type, *value, *tb;
        PyErr_Fetch(&type, &value, &tb);
        PyErr_NormalizeException(&type, &value, &tb);
        if (tb && value) {
            PyException_SetTraceback(value, tb);
        }
        Py_XDECREF(type);
        Py_XDECREF(tb);
        if (!s->exc) {
            s->exc = value;
        } else {
            Py_XDECREF(value);
        }
        rc = NERVE_ECANCELED; // stops the loop; join() raises s->exc
    }
    PyGILState_Release(st);
    return rc;
}

int step_body(void *arg, const struct nerve_task_tick *tk)
{
    auto *s = static_cast<RtTask *>(arg);
    std::unique_lock<std::mutex> lk(s->mu);
    if (s->stopping) {
        return 1;
    }
    s->cur = tk;
    s->hand = Hand::READY;
    s->cv.notify_all();
    s->cv.wait(lk, [&] { return s->hand == Hand::IDLE || s->stopping; });
    s->cur = nullptr;
    s->hand = Hand::IDLE;
    return s->stopping ? 1 : 0;
}

nb::object RtTask::next_tick(std::optional<double> timeout)
{
    if (!step) {
        throw nb::type_error("next_tick() is for periodic() loops");
    }
    if (!started) {
        start();
    }
    {
        std::lock_guard<std::mutex> lk(mu);
        if (hand == Hand::TAKEN) {
            hand = Hand::IDLE;
        }
    }
    cv.notify_all();
    int64_t deadline = deadline_from(timeout);
    bool got = wait_for(deadline,
                        [&] { return hand == Hand::READY || finished; });
    if (!got) {
        raise_nerve(NERVE_ETIMEDOUT);
    }
    std::unique_lock<std::mutex> lk(mu);
    if (hand != Hand::READY) {
        lk.unlock();
        join(std::nullopt);
        return nb::none();
    }
    // The loop waits for us while the tick (and its message) is copied.
    hand = Hand::TAKEN;
    const struct nerve_task_tick *tk = cur;
    lk.unlock();
    PyObject *tick = make_tick(tk);
    if (!tick) {
        throw nb::python_error();
    }
    return nb::steal(tick);
}

} // namespace

NB_MODULE(_nerve, m)
{
    m.doc() = "Native binding of the nerve C library (private: use nerve).";
    // Daemon threads parked at exit (see reacquire_gil) still reference
    // channels; that is expected, not a reference-counting bug.
    nb::set_leak_warnings(false);

    static PyType_Slot span_slots[] = {
        {Py_bf_getbuffer, reinterpret_cast<void *>(span_getbuffer)},
        {Py_bf_releasebuffer, reinterpret_cast<void *>(span_releasebuffer)},
        {Py_tp_dealloc, reinterpret_cast<void *>(span_dealloc)},
        {Py_tp_methods, span_methods},
        {Py_tp_doc, const_cast<char *>(
                        "Memory inside a channel's ring, exported through the "
                        "buffer protocol (memoryview(span)).")},
        {0, nullptr}};
    static PyType_Spec span_spec = {"nerve._nerve.Span", sizeof(SpanObject), 0,
                                    Py_TPFLAGS_DEFAULT, span_slots};
    g_span_type = reinterpret_cast<PyTypeObject *>(PyType_FromSpec(&span_spec));
    if (!g_span_type) {
        throw nb::python_error();
    }
    m.attr("Span") = nb::borrow(reinterpret_cast<PyObject *>(g_span_type));

    nb::class_<Chan>(m, "Chan", "An open channel handle (native base of "
                                "nerve.Channel).")
        .def(nb::init<const std::string &, bool>(), "name"_a, "write"_a = false)
        .def("put", &chan_put, "data"_a, nb::kw_only(),
             "timeout"_a = nb::none(),
             "Append a copy of data (bytes, any buffer, numpy array) as one "
             "message and return its sequence number. timeout (seconds, None "
             "= no limit) bounds only the wait for the writer lock.")
        .def("put_at", &chan_put_at, "data"_a, "time"_a, nb::kw_only(),
             "timeout"_a = nb::none(),
             "As put(), but the message's commit time is `time` "
             "(CLOCK_MONOTONIC ns) clamped between the previous message's "
             "time and now (nerve_chan_put_at); returns (seq, time "
             "recorded).")
        .def("get", &chan_get, nb::kw_only(), "newest"_a = false,
             "wait"_a = false, "timeout"_a = nb::none(), "seq"_a = nb::none(),
             "at"_a = nb::none(), "repeat"_a = false,
             "Copy a message out of the channel; see nerve.Channel.get.")
        .def("_view", &chan_view, nb::kw_only(), "newest"_a = false,
             "wait"_a = false, "timeout"_a = nb::none(), "seq"_a = nb::none(),
             "at"_a = nb::none(), "repeat"_a = false)
        .def("_reserve", &chan_reserve, "size"_a, nb::kw_only(),
             "timeout"_a = nb::none())
        .def("_commit", &chan_commit, "size"_a)
        .def("_commit_at", &chan_commit_at, "size"_a, "time"_a)
        .def("_abort", &chan_abort)
        .def("_stat", &chan_stat)
        .def("_meta", &chan_meta)
        .def("ring", &chan_ring,
             "The ring mapping as (address, length): every reservation and "
             "view lies inside it. Register it once with a DMA engine (e.g. "
             "cupy.cuda.runtime.hostRegister) so device copies into "
             "reservations are one DMA transfer.")
        .def("close", &chan_close,
             "Close the handle. Buffers still exported from views keep the "
             "mapping alive until they are released.")
        .def("cancel",
             [](Chan &ch) {
                 if (ch.c) {
                     nerve_chan_cancel(ch.c);
                 }
             },
             "Wake every wait on this handle with nerve.Cancelled, now and "
             "until cancel_clear(). Safe from any thread.")
        .def("cancel_clear",
             [](Chan &ch) {
                 if (ch.c) {
                     nerve_chan_cancel_clear(ch.c);
                 }
             },
             "Undo cancel(): later waits wait again.")
        .def("seek",
             [](Chan &ch, uint64_t seq) { nerve_chan_seek(ch.use(), seq); },
             "seq"_a,
             "Set the cursor: the next get() returns message seq + 1.")
        .def_prop_ro("cursor",
                     [](Chan &ch) -> uint64_t {
                         return ch.c ? nerve_chan_cursor(ch.c) : 0;
                     },
                     "Sequence number of the last message get() or view() "
                     "returned with the default or newest selection (0 "
                     "before the first).")
        .def_prop_ro("name", [](Chan &ch) { return ch.name; },
                     "The channel's name.")
        .def_prop_ro("writable", [](Chan &ch) { return ch.writable; },
                     "True if the handle was opened for writing.")
        .def_prop_ro("closed", [](Chan &ch) { return !ch.c || ch.closing; },
                     "True once close() was called.");

    m.def("create", &create, "name"_a, "slots"_a, "size"_a, "mode"_a,
          "type"_a = nb::none(), "encoding"_a = nb::none(),
          "schema"_a = nb::none(), "exist_ok"_a = false);
    m.def("unlink", [](const std::string &name) {
        int rc = without_gil([&] { return nerve_chan_unlink(name.c_str()); });
        if (rc != 0) {
            raise_nerve(rc, name.c_str());
        }
    });
    m.def("list_names", []() {
        std::vector<std::string> names;
        int rc = nerve_chan_list(collect_name, &names);
        if (rc != 0) {
            raise_nerve(rc);
        }
        return names;
    });
    m.def("stat", [](const std::string &name) {
        struct nerve_stats st;
        int rc = without_gil([&] { return nerve_chan_stat_name(name.c_str(), &st); });
        if (rc != 0) {
            raise_nerve(rc, name.c_str());
        }
        return stat_dict(st);
    });
    m.def("check", [](const std::string &name) {
        char msg[512] = "";
        int rc = without_gil(
            [&] { return nerve_chan_check(name.c_str(), msg, sizeof msg); });
        if (rc != 0) {
            raise_nerve(rc, name.c_str(), msg[0] ? msg : nullptr);
        }
        return std::string(msg);
    });
    m.def("name_check", [](const std::string &name) {
        int rc = nerve_chan_name_check(name.c_str());
        if (rc != 0) {
            raise_nerve(rc, name.c_str());
        }
    });
    m.def("wait_any", &wait_any, "chans"_a, "timeout"_a = nb::none());
    m.def("_at_exit", &at_exit,
          "Called by atexit: from now on no waiting thread retakes the GIL.");
    m.def("now_ns", &nerve_clock_now_ns);
    m.def("mono_to_realtime_ns", &nerve_clock_to_realtime_ns, "mono_ns"_a);
    m.def("error_table", []() {
        nb::list out;
#define NERVE_PY_ERR(name, value, msg) out.append(nb::make_tuple(#name, value, msg));
        NERVE_ERRNO_MAP(NERVE_PY_ERR)
#undef NERVE_PY_ERR
        return out;
    });
    m.def("_set_hooks", [](nb::handle message_type, nb::handle error_factory,
                           nb::handle coerce) {
        if (!PyType_Check(message_type.ptr()) ||
            !PyType_IsSubtype(
                reinterpret_cast<PyTypeObject *>(message_type.ptr()),
                &PyTuple_Type)) {
            throw nb::type_error("message_type must be a tuple subclass");
        }
        Py_XDECREF(g_message_type);
        Py_XDECREF(g_error_factory);
        Py_XDECREF(g_coerce);
        g_message_type = message_type.inc_ref().ptr();
        g_error_factory = error_factory.inc_ref().ptr();
        g_coerce = coerce.inc_ref().ptr();
    });
    // Real-time helpers (nerve.rt wraps them).
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
        return nb::make_tuple(policy, priority);
    });
    m.def("rt_affinity_set", [](uint64_t cpus) {
        int rc = nerve_rt_affinity_set(cpus);
        if (rc != 0) {
            raise_nerve(rc);
        }
    }, "cpus"_a);
    m.def("rt_probe", &rt_probe);
    m.def("rt_timing_compute", &rt_timing_compute, "release"_a, "wake"_a);
    m.def("_set_rt_hooks", [](nb::handle tick_type) {
        Py_XDECREF(g_tick_type);
        g_tick_type = tick_type.inc_ref().ptr();
    });
    m.attr("RT_OTHER") = NERVE_RT_OTHER;
    m.attr("RT_FIFO") = NERVE_RT_FIFO;
    m.attr("RT_RR") = NERVE_RT_RR;
    m.attr("RT_BEST_EFFORT") = NERVE_RT_BEST_EFFORT;
    m.attr("TASK_SKIP") = NERVE_TASK_SKIP;
    m.attr("TASK_CATCH_UP") = NERVE_TASK_CATCH_UP;
    m.attr("TASK_MLOCK") = NERVE_TASK_MLOCK;

    nb::class_<RtTask>(m, "RtTask",
                       "A nerve_task running Python (used by nerve.rt.Task "
                       "and nerve.rt.Loop).",
                       nb::is_weak_referenceable())
        .def(nb::init<nb::object, bool, int64_t, int64_t, int64_t, uint32_t,
                      int, std::optional<int>, uint64_t, nb::object, uint64_t,
                      nb::object, bool, int64_t, uint64_t>(),
             "body"_a.none(), "step"_a, "period_ns"_a, "start_ns"_a,
             "offset_ns"_a, "flags"_a, "policy"_a, "priority"_a.none(),
             "cpus"_a, "prio_map"_a.none(), "stack_prefault"_a,
             "chan"_a.none(), "newest"_a, "deadline_ns"_a, "msg_max"_a)
        .def("start", &RtTask::start)
        .def("run", &RtTask::run)
        .def("stop", &RtTask::stop)
        .def("_interrupt", &RtTask::interrupt)
        .def("join", &RtTask::join, "timeout"_a = nb::none())
        .def("next_tick", &RtTask::next_tick, "timeout"_a = nb::none())
        .def("stats", &RtTask::stats)
        .def("format", &RtTask::format, "name"_a = nb::none())
        .def_prop_ro("started", [](RtTask &t) { return t.started; })
        .def_prop_ro("finished", &RtTask::finished_now);

    m.attr("VERSION") = NERVE_VERSION_MAJOR * 10000 + NERVE_VERSION_MINOR * 100 +
                        NERVE_VERSION_PATCH;
    m.attr("VERSION_STRING") =
        nb::str("{}.{}.{}").format(NERVE_VERSION_MAJOR, NERVE_VERSION_MINOR,
                                   NERVE_VERSION_PATCH);
    m.attr("LAYOUT_VERSION") = NERVE_LAYOUT_VERSION;
    m.attr("NAME_MAX") = NERVE_NAME_MAX;
    m.attr("WAIT_MAX") = NERVE_WAIT_MAX;
}
