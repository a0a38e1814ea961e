// nerve._nerve, core: errors, timeouts, the GIL and interpreter exit, the
// hooks the Python package sets at import. See _nerve.h for the parts.
#include "_nerve.h"

#include <nanobind/stl/string.h>

#include <sched.h>
#include <unistd.h>

namespace nerve_py {

using namespace nb::literals;

PyObject *g_message_type = nullptr;
PyObject *g_error_factory = nullptr;
PyObject *g_coerce = nullptr;

namespace {

PyObject *new_error(int rc, const char *name, const char *msg)
{
    if (!msg) {
        // The library's detail of this thread's failure (what was wrong,
        // what would have been accepted, what to do), as every binding
        // and the nerve command show it.
        msg = nerve_err_detail(rc);
    }
    if (!g_error_factory) {
        PyErr_SetString(PyExc_RuntimeError, msg);
        return nullptr;
    }
    return PyObject_CallFunction(g_error_factory, "isz", rc, msg, name);
}

} // namespace

void raise_nerve(int rc, const char *name, const char *msg)
{
    PyObject *exc = new_error(rc, name, msg);
    if (exc) {
        PyErr_SetObject(reinterpret_cast<PyObject *>(Py_TYPE(exc)), exc);
        Py_DECREF(exc);
    }
    throw nb::python_error();
}

nb::object error_object(int rc)
{
    if (rc == 0) {
        return nb::none();
    }
    PyObject *exc = new_error(rc, nullptr, nullptr);
    if (!exc) {
        throw nb::python_error();
    }
    return nb::steal(exc);
}

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

void at_exit()
{
    g_exiting.store(true, std::memory_order_seq_cst);
    Py_BEGIN_ALLOW_THREADS while (
        g_reacquiring.load(std::memory_order_seq_cst) > 0)
    {
        sched_yield();
    }
    Py_END_ALLOW_THREADS
}

namespace {
unsigned long g_main_thread = 0; // threading.main_thread().ident at import
} // namespace

bool on_main_thread()
{
    return PyThread_get_thread_ident() == g_main_thread;
}

void bind_core(nb::module_ &m)
{
    g_main_thread = nb::cast<unsigned long>(
        nb::module_::import_("threading").attr("main_thread")().attr("ident"));
    m.def("_at_exit", &at_exit,
          "Called by atexit: from now on no waiting thread retakes the GIL.");
    m.def("now_ns", &nerve_clock_now_ns);
    m.def("mono_to_realtime_ns", &nerve_clock_to_realtime_ns, "mono_ns"_a);
    // The C library's own table of codes: (name, code, message).
    m.def("error_table", []() {
        nb::list out;
#define NERVE_PY_ERR(name, value, msg)                                         \
    out.append(nb::make_tuple(#name, value, msg));
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
}

} // namespace nerve_py
