// nerve C++ API: includes the public C API the way C++ needs it.
//
// Every C++ header of the layer includes <nerve/nerve.h> through this one,
// for two properties of the C headers seen from C++:
//   - a C header may declare a function and a struct of the same name
//     (rt.h: nerve_task_stats), which is fine in C; GCC's -Wshadow, on in
//     this project's build, warns in C++ that the function hides the
//     struct's implicit constructor. C++ code names such structs with the
//     `struct` keyword, so the warning is silenced for the C headers only.
//   - common.h spells NERVE_NODISCARD as [[nodiscard]] in C++17, and the
//     C declarations put it after NERVE_API (a GNU attribute); Clang
//     rejects a standard attribute list in that place (GCC accepts it). For Clang
//     the GNU attribute warn_unused_result, which Clang treats like
//     [[nodiscard]] (a (void) cast silences it), is used for the C
//     declarations instead. GCC keeps [[nodiscard]]: its
//     warn_unused_result cannot be silenced by a cast.
// If a user includes <nerve/nerve.h> before this header, the C headers'
// own spelling applies.
#ifndef NERVE_CXX_C_API_HPP
#define NERVE_CXX_C_API_HPP

#include <nerve/common.h>

#if defined(__clang__) && !defined(NERVE_CHAN_H)
#undef NERVE_NODISCARD
#define NERVE_NODISCARD __attribute__((warn_unused_result))
#endif

#if defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wshadow"
#endif
#include <nerve/nerve.h>
#if defined(__GNUC__)
#pragma GCC diagnostic pop
#endif

#endif
