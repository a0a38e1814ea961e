// nerve._nerve: the native half of the Python package. This file makes the
// module from its parts; _nerve.h says what each part holds and why the
// binding is C++.
#include "_nerve.h"

#include <nerve/version.h>

namespace nb = nanobind;

NB_MODULE(_nerve, m)
{
    m.doc() = "Native binding of the nerve C library (private: use nerve).";
    // Daemon threads parked at exit (see reacquire_gil) still reference
    // channels; that is expected, not a reference-counting bug.
    nb::set_leak_warnings(false);

    nerve_py::bind_core(m);
    nerve_py::bind_chan(m);
    nerve_py::bind_rt(m);
    nerve_py::bind_mcap(m);
    nerve_py::bind_bridge(m);

    m.attr("VERSION") = NERVE_VERSION_MAJOR * 10000 +
                        NERVE_VERSION_MINOR * 100 + NERVE_VERSION_PATCH;
    m.attr("VERSION_STRING") =
        nb::str("{}.{}.{}")
            .format(NERVE_VERSION_MAJOR, NERVE_VERSION_MINOR,
                    NERVE_VERSION_PATCH);
    m.attr("LAYOUT_VERSION") = NERVE_LAYOUT_VERSION;
    m.attr("NAME_MAX") = NERVE_NAME_MAX;
    m.attr("WAIT_MAX") = NERVE_WAIT_MAX;
}
