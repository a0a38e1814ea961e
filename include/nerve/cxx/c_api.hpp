// nerve C++ API: the public C API, as every C++ header of the layer
// includes it (this header is their one way in to <nerve/nerve.h>).
//
// Nothing is translated: the C declarations are valid C++ as they stand.
// Their status results are marked NERVE_NODISCARD, placed first in each
// declaration (before NERVE_API), which common.h spells as C++17's
// [[nodiscard]] in C++ and GCC's warn_unused_result in C; a (void) cast
// silences either.
#ifndef NERVE_CXX_C_API_HPP
#define NERVE_CXX_C_API_HPP

#include <nerve/nerve.h>

#endif
