// nerve._nerve, channels (include/nerve/chan.h): open handles, Spans over
// ring memory, copying and zero-copy put/get, waits, ChannelInfo. See
// _nerve.h for the parts and the threading rules.
#include "_nerve.h"

#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <cstdio>
#include <cstring>

namespace nerve_py {

using namespace nb::literals;

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

namespace {

void chan_really_close(Chan &ch);

} // namespace
// ---- Chan: one open handle -------------------------------------------------

Chan::Chan(const std::string &n, bool write, bool lazy)
    : name(n), writable(write), hint(MIN_HINT)
{
    nerve_chan *h = nullptr;
    const uint32_t flags =
        (write ? NERVE_O_WRITE : NERVE_O_READ) | (lazy ? NERVE_O_LAZY : 0u);
    int rc = without_gil([&] { return nerve_chan_open(n.c_str(), flags, &h); });
    if (rc != 0) {
        raise_nerve(rc, n.c_str());
    }
    c = h;
}

Chan::~Chan()
{
    if (c) {
        nerve_chan_close(c);
    }
}

nerve_chan *Chan::use()
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

void Chan::check_not_reserved()
{
    if (reserved) {
        raise_nerve(NERVE_EBUSY, name.c_str(),
                    "a reservation is open on this handle; commit or "
                    "abort it before waiting on the handle");
    }
}

namespace {

void chan_really_close(Chan &ch);

// Run call(slice_deadline) without the GIL until it returns something other
// than a slice timeout, the deadline passes, or a signal handler raises.
// Lost wake-ups are not a concern here: each slice is a complete C wait with
// its own lost-wakeup argument, and the caller's condition is re-checked by
// the C call at the start of every slice.
template <class F>
int wait_sliced(std::vector<Chan *> chans, int64_t deadline, F &&call)
{
    WaitGuard guard(std::move(chans));
    const bool sliced = on_main_thread();
    for (;;) {
        int64_t now = nerve_clock_now_ns();
        if (deadline >= 0 && now >= deadline) {
            return NERVE_ETIMEDOUT;
        }
        int64_t end = now + SLICE_NS;
        if (!sliced) {
            end = deadline >= 0 ? deadline : NERVE_FOREVER;
        } else if (deadline >= 0 && deadline < end) {
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

// The spin and lead of a read (nerve::WaitPolicy of the C++ API, with the
// same meaning): spin_ns of polling before the blocking wait; with a
// lead and a period learnt from this handle's reads, a blocking wait
// until lead_ns before the next message is due comes first.
struct Poll {
    int64_t spin_ns = 0;
    int64_t lead_ns = 0;
};

int64_t seconds_to_ns(double s)
{
    return static_cast<int64_t>(s * 1e9);
}

Poll poll_of(bool wait, double spin, double lead)
{
    if (!(spin >= 0 && spin <= 60) || !(lead >= 0 && lead <= 60)) {
        throw nb::value_error("spin and lead are seconds, from 0 to 60");
    }
    if ((spin > 0 || lead > 0) && !wait) {
        throw nb::value_error("spin and lead apply only with wait=True");
    }
    if (lead > 0 && spin == 0) {
        throw nb::value_error("lead needs a spin: it says when to start it");
    }
    return {seconds_to_ns(spin), seconds_to_ns(lead)};
}

// One waiting read under Poll p (deadline: absolute, -1 = never). once()
// is the non-blocking C read (NERVE_EAGAIN: nothing yet); block(end) the
// blocking one until the absolute time `end`. As policy_read in
// cxx/reader.hpp, except that the blocking parts go through wait_sliced
// (signals, the busy mark) and the spin runs without the GIL, in slices.
// Thread: the caller's, with the GIL.  Blocking: busy for up to spin_ns.
template <class Once, class Block>
int wait_polled(Chan &ch, const Poll &p, int64_t deadline, Once &&once,
                Block &&block)
{
    const nerve::WaitRhythm &rh = ch.rhythm;
    if (p.lead_ns > 0 && rh.period_ns > 0) {
        const int64_t nap_end = rh.last_ns + rh.period_ns - p.lead_ns;
        if (nap_end > nerve_clock_now_ns() &&
            (deadline < 0 || nap_end < deadline)) {
            int rc = wait_sliced({&ch}, nap_end, block);
            if (rc != NERVE_ETIMEDOUT) {
                return rc;
            }
        }
    }
    if (p.spin_ns > 0) {
        // The spin, in slices like the blocking wait, so that Ctrl-C
        // interrupts a long one too.
        const int64_t spin_end = nerve_clock_now_ns() + p.spin_ns;
        WaitGuard guard({&ch});
        for (;;) {
            const int64_t now = nerve_clock_now_ns();
            int64_t left = spin_end - now;
            if (deadline >= 0 && deadline - now < left) {
                left = deadline - now;
            }
            if (left <= 0) {
                break;
            }
            int64_t no_limit = NERVE_FOREVER;
            int rc = without_gil([&] {
                return nerve::spin_wait(once, left < SLICE_NS ? left : SLICE_NS,
                                        &no_limit);
            });
            if (rc != NERVE_EAGAIN) {
                return rc;
            }
            if (PyErr_CheckSignals() != 0) {
                throw nb::python_error();
            }
        }
    }
    return wait_sliced({&ch}, deadline, block);
}

// ---- Span: a buffer exporter over ring memory ------------------------------

struct SpanObject {
    PyObject_HEAD PyObject *owner; // the Chan's Python object (strong)
    Chan *chan;
    char *ptr; // nullptr once the span is finished (committed/aborted)
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
                    std::optional<double> timeout, std::optional<uint64_t> seq,
                    std::optional<int64_t> at, bool repeat, double spin,
                    double lead)
{
    ch.use();
    Which w = which_of(newest, seq, at, repeat);
    const Poll poll = poll_of(wait, spin, lead);
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
                rc = wait_polled(
                    ch, poll, deadline,
                    [&] {
                        return nerve_chan_get(c, p, cap, w.arg, 0, &info,
                                              w.flags);
                    },
                    [&](int64_t end) {
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
    ch.rhythm.note(info);
    if (info.len != cap && _PyBytes_Resize(&buf, Py_ssize_t(info.len)) < 0) {
        throw nb::python_error();
    }
    return nb::steal(make_message(info, buf));
}

// view(): (span, seq, time, missed, size) or None.
nb::object chan_view(Chan &ch, bool newest, bool wait,
                     std::optional<double> timeout, std::optional<uint64_t> seq,
                     std::optional<int64_t> at, bool repeat, double spin,
                     double lead)
{
    nerve_chan *c = ch.use();
    Which w = which_of(newest, seq, at, repeat);
    const Poll poll = poll_of(wait, spin, lead);
    bool can_wait = wait && (w.flags & NERVE_GET_MASK) != NERVE_GET_AT;
    check_timeout(timeout);
    int64_t deadline = can_wait ? deadline_from(timeout) : 0;
    struct nerve_view v;
    int rc = nerve_chan_view(c, w.arg, 0, &v, w.flags);
    if (rc == NERVE_EAGAIN && can_wait) {
        rc = wait_polled(
            ch, poll, deadline,
            [&] { return nerve_chan_view(c, w.arg, 0, &v, w.flags); },
            [&](int64_t end) {
                return nerve_chan_view(c, w.arg, end, &v,
                                       w.flags | NERVE_F_WAIT |
                                           NERVE_F_ABSTIME);
            });
    }
    if (rc == NERVE_EAGAIN) {
        return nb::none();
    }
    if (rc != 0) {
        raise_nerve(rc, ch.name.c_str());
    }
    ch.rhythm.note(v.info);
    PyObject *sp =
        span_new(ch, const_cast<void *>(v.data), size_t(v.info.len), true);
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
        return at ? nerve_chan_put_at(c, v.buf, size_t(v.len), *at, tmo, &info,
                                      fl)
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

// ---- ChannelInfo: struct nerve_stats with the channel's name -----------------

// Every field of struct nerve_stats, in its order: the one list the class's
// properties and its repr are made from.
// (clang-format finds no stable layout for this X-macro list.)
// clang-format off
#define NERVE_PY_STATS_FIELDS(X) \
    X(slots) \
    X(data_size) \
    X(file_size) \
    X(head_seq) \
    X(tail_seq) \
    X(newest_time_ns) \
    X(bytes_total) \
    X(waiters) \
    X(created_ns) \
    X(layout_version) \
    X(mode) \
    X(uid) \
    X(gid) \
    X(creator_version) \
    X(lock_owner_tid) \
    X(lock_flags)
// clang-format on

// A field's value as the repr shows it: the mode in octal, the clock of
// each time named.
std::string field_text(const char *f, uint64_t v)
{
    if (std::strcmp(f, "mode") == 0) {
        char b[32];
        std::snprintf(b, sizeof b, "0o%03llo", (unsigned long long)v);
        return b;
    }
    std::string t = std::to_string(v);
    if (std::strcmp(f, "newest_time_ns") == 0) {
        return t + " (monotonic)";
    }
    if (std::strcmp(f, "created_ns") == 0) {
        return t + " (realtime)";
    }
    return t;
}

struct ChannelInfo : nerve_stats {
    std::string name;
    std::optional<std::string> error; // why it could not be described
    ChannelInfo(std::string n, std::optional<std::string> e)
        : nerve_stats(), name(std::move(n)), error(std::move(e))
    {
    }
    uint64_t messages() const
    {
        return head_seq ? head_seq + 1 - tail_seq : 0;
    }
    std::string repr() const
    {
        std::string r = "ChannelInfo(name=";
        r += nb::repr(nb::str(name.c_str())).c_str();
        if (error) {
            r += ", error=";
            r += nb::repr(nb::str(error->c_str())).c_str();
            return r + ")";
        }
#define NERVE_PY_REPR(f) r += ", " #f "=" + field_text(#f, uint64_t(f));
        NERVE_PY_STATS_FIELDS(NERVE_PY_REPR)
#undef NERVE_PY_REPR
        return r + ", messages=" + std::to_string(messages()) + ")";
    }
};

nb::object stat_info(const std::string &name, const struct nerve_stats &st)
{
    ChannelInfo info(name, std::nullopt);
    static_cast<nerve_stats &>(info) = st;
    return nb::cast(std::move(info));
}

nb::object chan_stat(Chan &ch)
{
    if (!ch.c) {
        throw nb::value_error("operation on a closed channel");
    }
    struct nerve_stats st;
    int rc = nerve_chan_stat(ch.c, &st);
    if (rc != 0) {
        raise_nerve(rc, ch.name.c_str());
    }
    return stat_info(ch.name, st);
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
            std::optional<std::string> encoding,
            std::optional<nb::bytes> schema, bool exist_ok)
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

// nerve_chan_path(): the file (or the bell) of channel `name`, or with no
// name the prefix every channel's path begins with.
std::string chan_path(std::optional<std::string> name, bool bell)
{
    char buf[NERVE_PATH_MAX];
    if (name && name->find('\0') != std::string::npos) {
        raise_nerve(NERVE_EINVAL, nullptr, "a channel name holds no NUL");
    }
    int rc = nerve_chan_path(name ? name->c_str() : nullptr,
                             bell ? NERVE_PATH_BELL : 0, buf, sizeof buf);
    if (rc != 0) {
        raise_nerve(rc, name ? name->c_str() : nullptr);
    }
    return buf;
}

// nerve_chan_file_size(): what create() with these options would commit.
uint64_t chan_file_size(uint64_t slots, uint64_t size,
                        std::optional<std::string> type,
                        std::optional<std::string> encoding,
                        std::optional<nb::bytes> schema)
{
    struct nerve_chan_opts o = NERVE_CHAN_OPTS_INIT;
    o.slots = slots;
    o.data_size = size;
    o.type = type ? type->c_str() : nullptr;
    o.encoding = encoding ? encoding->c_str() : nullptr;
    if (schema) {
        o.schema = schema->c_str();
        o.schema_len = schema->size();
    }
    uint64_t out = 0;
    int rc = nerve_chan_file_size(&o, &out);
    if (rc != 0) {
        raise_nerve(rc);
    }
    return out;
}

// nerve_size_parse(): the one size grammar ("64K" -> 65536).
uint64_t size_parse(const std::string &text)
{
    if (text.find('\0') != std::string::npos) {
        raise_nerve(NERVE_EINVAL, nullptr, "a size holds no NUL");
    }
    uint64_t out = 0;
    int rc = nerve_size_parse(text.c_str(), &out);
    if (rc != 0) {
        raise_nerve(rc);
    }
    return out;
}

int collect_name(const char *name, void *arg)
{
    static_cast<std::vector<std::string> *>(arg)->emplace_back(name);
    return 0;
}

} // namespace

void bind_chan(nb::module_ &m)
{
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

    nb::class_<Chan>(m, "Chan",
                     "An open channel handle (native base of "
                     "nerve.Channel).")
        .def(nb::init<const std::string &, bool, bool>(), "name"_a,
             "write"_a = false, "lazy"_a = false)
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
             "at"_a = nb::none(), "repeat"_a = false, "spin"_a = 0.0,
             "lead"_a = 0.0,
             "Copy a message out of the channel; see nerve.Channel.get.")
        .def("_view", &chan_view, nb::kw_only(), "newest"_a = false,
             "wait"_a = false, "timeout"_a = nb::none(), "seq"_a = nb::none(),
             "at"_a = nb::none(), "repeat"_a = false, "spin"_a = 0.0,
             "lead"_a = 0.0)
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
        .def(
            "grow",
            [](Chan &ch, uint64_t size, uint64_t slots) {
                nerve_chan *c = ch.use();
                if (ch.exports || ch.reserved)
                    raise_nerve(NERVE_EBUSY, ch.name.c_str(),
                                "views or a reservation of this handle are "
                                "still alive; release them before growing");
                int rc = nerve_chan_grow(&c, size, slots);
                if (rc != 0)
                    raise_nerve(rc, ch.name.c_str());
                ch.c = c;
            },
            "size"_a, "slots"_a = 0,
            "Replace the channel with a larger successor under the same name "
            "(at least `size` data ring bytes and `slots` slots), holding "
            "every message present with its sequence number; this handle "
            "then writes the successor, and readers of the old channel get "
            "nerve.Superseded once they have read all of it "
            "(nerve_chan_grow); Channel.follow() follows it by itself.")
        .def(
            "follow_successor",
            [](Chan &ch) {
                nerve_chan *c = ch.use();
                if (ch.exports || ch.reserved)
                    raise_nerve(NERVE_EBUSY, ch.name.c_str(),
                                "views or a reservation of this handle are "
                                "still alive; release them before following");
                nerve_chan *before = c;
                int rc = nerve_chan_follow(&c);
                if (rc != 0)
                    raise_nerve(rc, ch.name.c_str());
                ch.c = c;
                return c != before;
            },
            "After nerve.Superseded: reopen the name (a writer grew the "
            "channel) keeping this handle's place, so that the next get "
            "returns the next message. Returns whether the handle moved "
            "(False while the name still names this channel).")
        .def(
            "renamed",
            [](Chan &ch) {
                int rc = nerve_chan_renamed(ch.use());
                if (rc < 0 && rc != NERVE_ENOENT)
                    raise_nerve(rc, ch.name.c_str());
                return rc != 0;
            },
            "Whether the channel's name now names another file, or none (a "
            "successor whose grower died before marking this channel: "
            "follow_successor() moves there).")
        .def(
            "cancel",
            [](Chan &ch) {
                if (ch.c) {
                    nerve_chan_cancel(ch.c);
                }
            },
            "Wake every wait on this handle with nerve.Cancelled, now and "
            "until cancel_clear(). Safe from any thread.")
        .def(
            "cancel_clear",
            [](Chan &ch) {
                if (ch.c) {
                    nerve_chan_cancel_clear(ch.c);
                }
            },
            "Undo cancel(): later waits wait again.")
        .def(
            "seek",
            [](Chan &ch, uint64_t seq) { nerve_chan_seek(ch.use(), seq); },
            "seq"_a, "Set the cursor: the next get() returns message seq + 1.")
        .def_prop_ro(
            "cursor",
            [](Chan &ch) -> uint64_t {
                return ch.c ? nerve_chan_cursor(ch.c) : 0;
            },
            "Sequence number of the last message get() or view() "
            "returned with the default or newest selection (0 "
            "before the first).")
        .def_prop_ro(
            "name", [](Chan &ch) { return ch.name; }, "The channel's name.")
        .def_prop_ro(
            "writable", [](Chan &ch) { return ch.writable; },
            "True if the handle was opened for writing.")
        .def_prop_ro(
            "closed", [](Chan &ch) { return !ch.c || ch.closing; },
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
        int rc = without_gil(
            [&] { return nerve_chan_stat_name(name.c_str(), &st); });
        if (rc != 0) {
            raise_nerve(rc, name.c_str());
        }
        return stat_info(name, st);
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
    m.def("path", &chan_path, "name"_a = nb::none(), "bell"_a = false);
    m.def("file_size", &chan_file_size, "slots"_a, "size"_a,
          "type"_a = nb::none(), "encoding"_a = nb::none(),
          "schema"_a = nb::none());
    m.def("parse_size", &size_parse, "text"_a);
    m.attr("LOCK_OWNER_DIED") = NERVE_LOCK_OWNER_DIED;
    m.attr("LOCK_WAITERS") = NERVE_LOCK_WAITERS;

    nb::class_<ChannelInfo>(m, "ChannelInfo",
                            "Facts about a channel, read without any lock "
                            "(struct nerve_stats, see nerve_chan_stat_name).")
        .def(nb::init<std::string, std::optional<std::string>>(), "name"_a,
             "error"_a = nb::none(),
             "A channel that could not be described (error says why).")
        .def_ro("name", &ChannelInfo::name, "The channel's name.")
        .def_ro("error", &ChannelInfo::error,
                "Why the channel could not be described (None when it "
                "could; the other fields are then 0).")
#define NERVE_PY_RO(f) .def_ro(#f, &ChannelInfo::f)
            NERVE_PY_STATS_FIELDS(NERVE_PY_RO)
#undef NERVE_PY_RO
        .def_prop_ro("messages", &ChannelInfo::messages,
                     "Messages still readable in the ring.")
        // The names before the fields were named with their unit.
        .def_prop_ro(
            "newest_time",
            [](const ChannelInfo &i) { return i.newest_time_ns; },
            "Old name of newest_time_ns.")
        .def_prop_ro(
            "created", [](const ChannelInfo &i) { return i.created_ns; },
            "Old name of created_ns.")
        .def_prop_ro(
            "created_realtime_ns",
            [](const ChannelInfo &i) { return i.created_ns; },
            "Same as created_ns (CLOCK_REALTIME ns).")
        .def("__repr__", &ChannelInfo::repr);
}

} // namespace nerve_py
