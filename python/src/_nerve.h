// nerve._nerve: the native half of the Python package, by subject.
//
//   _nerve.cpp        the module: binds the parts below, version constants
//   _nerve_core.cpp   errors, timeouts, the GIL and interpreter exit
//   _nerve_chan.cpp   channels (include/nerve/chan.h): handles, zero-copy
//                     Spans, put/get, ChannelInfo
//   _nerve_rt.cpp     real-time helpers (include/nerve/rt.h): the C structs
//                     as typed classes, and RtTask over nerve_task_next()
//   _nerve_mcap.cpp   a channel's messages copied out as MCAP Message
//                     records (the hot loop of `nerve blackbox`'s dump)
//
// A thin binding of the public C API; the typed, documented surface lives
// in python/src/nerve/*.py. Three things here are not plain forwarding, and
// each is why this module is C++ rather than ctypes:
//
// 1. The hot path (put and get of small messages) stays well under a
//    microsecond: no GIL release unless the call really waits, one copy
//    straight into a bytes object sized from the previous message, and
//    Message tuples allocated directly from their Python type.
// 2. Blocking waits release the GIL and, on the main thread, wait in
//    slices of SLICE_NS with absolute deadlines, checking for signals
//    between slices, so Ctrl-C interrupts a wait within one slice without
//    touching the C core's signal contract. Python runs signal handlers on
//    the main thread only: another thread's wait runs to its deadline in
//    one C wait (a slice would only wake it for nothing), and cancel()
//    still ends it at once.
// 3. Zero-copy buffers (views into the ring, reservations) are exported by
//    Span objects that keep their channel object alive and count exports:
//    close() with buffers still exported defers the munmap until the last
//    one is released, so no Python object can ever point at unmapped memory.
//
// Threading: the C API allows one caller per handle. Calls that do not wait
// hold the GIL throughout, so they cannot overlap; a call that waits marks
// the handle busy before releasing the GIL, and any other call on that handle
// (except cancel and the read-only facts) raises Busy meanwhile.
#ifndef NERVE_PY_NERVE_H
#define NERVE_PY_NERVE_H

#include <nanobind/nanobind.h>
#include <nanobind/stl/optional.h>

#include <nerve/chan.h>
#include <nerve/cxx/reader.hpp> // nerve::spin_wait, nerve::WaitRhythm
#include <nerve/errors.h>

#include <atomic>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace nerve_py {

namespace nb = nanobind;

// Longest time a wait of the main thread runs without looking at pending
// signals.
constexpr int64_t SLICE_NS = 50'000'000;

// Whether the calling thread is the interpreter's main thread, where
// signal handlers run. Thread: any, with the GIL.
bool on_main_thread();

// ---- _nerve_core.cpp -------------------------------------------------------

// Set by the Python package at import (nerve/_channel.py, _set_hooks).
extern PyObject *g_message_type;  // a tuple subclass: Message
extern PyObject *g_error_factory; // (code, message, name) -> exception
extern PyObject *g_coerce;        // obj -> bytes-like, for odd buffers

// Raise the nerve.Error subclass for rc (name: the channel, or nullptr).
[[noreturn]] void raise_nerve(int rc, const char *name = nullptr,
                              const char *msg = nullptr);
// The exception object for rc (None for 0), not raised.
nb::object error_object(int rc);

// Absolute CLOCK_MONOTONIC deadline for a timeout in seconds; -1 = never.
int64_t deadline_from(std::optional<double> timeout);
// Refuse a bad timeout whether or not the call will have to wait.
void check_timeout(std::optional<double> timeout);

// The GIL is retaken only through reacquire_gil() (see _nerve_core.cpp for
// why: threads parked at interpreter exit).
extern std::atomic<bool> g_exiting;
extern std::atomic<int> g_reacquiring;
void reacquire_gil(PyThreadState *ts);
void at_exit();

// Run f() (a C call that cannot throw) without the GIL.
template <class F> auto without_gil(F &&f)
{
    PyThreadState *ts = PyEval_SaveThread();
    auto r = f();
    reacquire_gil(ts);
    return r;
}

void bind_core(nb::module_ &m);

// ---- _nerve_chan.cpp -------------------------------------------------------

// Smallest buffer a copying get starts with.
constexpr size_t MIN_HINT = 64;

// One open handle (the native base of nerve.Channel).
struct Chan {
    nerve_chan *c = nullptr;
    std::string name;
    bool writable = false;
    bool closing = false;   // close() asked while buffers were exported
    bool waiting = false;   // a call waits with the GIL released
    bool reserved = false;  // a reservation is open in the C handle
    Py_ssize_t exports = 0; // live buffer exports of Spans on this handle
    PyObject *reservation = nullptr; // borrowed: the open reservation's Span
    size_t hint;                     // size of the last message a get copied
    // The period learnt from the messages this handle read, for the
    // `lead` of get/view (as nerve::Reader keeps it for its WaitPolicy).
    nerve::WaitRhythm rhythm;

    Chan(const std::string &n, bool write, bool lazy = false);
    ~Chan();
    Chan(const Chan &) = delete;
    Chan &operator=(const Chan &) = delete;

    // The handle for a call that must not overlap another one.
    nerve_chan *use();
    // Refuse to hand the handle to a wait while a reservation is open: the
    // reserving thread could then neither commit nor abort (Busy) and the
    // writer lock would stay taken.
    void check_not_reserved();
};

// Marks handles busy while a call runs without the GIL (a wait, a long
// copy), exception-safe: any other call on them raises Busy meanwhile.
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
    WaitGuard(const WaitGuard &) = delete;
    WaitGuard &operator=(const WaitGuard &) = delete;
};

// A Message tuple (seq, time_ns, data, missed, size); steals `data`.
PyObject *make_message(const struct nerve_get_info &info, PyObject *data);

void bind_chan(nb::module_ &m);

// ---- _nerve_mcap.cpp -------------------------------------------------------

void bind_mcap(nb::module_ &m);

// ---- _nerve_rt.cpp ---------------------------------------------------------

void bind_rt(nb::module_ &m);

// ---- _nerve_bridge.cpp -----------------------------------------------------

// The bridge kernel: names, globs, ChannelDir, Budget.
void bind_bridge(nb::module_ &m);

} // namespace nerve_py

#endif
