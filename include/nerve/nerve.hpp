// nerve: the C++ API (header-only, C++17). This header only includes
// <nerve/cxx/nerve.hpp>, where the layer is described.
#ifndef NERVE_NERVE_HPP
#define NERVE_NERVE_HPP

#include <nerve/cxx/nerve.hpp>

#endif
