// nerve C++ API: the umbrella header. `#include <nerve/cxx/nerve.hpp>` (or
// <nerve/nerve.hpp>) and link the CMake target nerve::cxx.
//
// A header-only C++17 layer on the public C API (include/nerve/nerve.h):
//
//   nerve::Publisher<T>   publish(const T &), zero-copy loans   publisher.hpp
//   nerve::Reader<T>      get_newest, read_unread, wait_unread,
//                         get_by_timestamp, get_seq             reader.hpp
//   nerve::Node,          spin() / spin_once() over many
//   nerve::Subscriber<T>  channels with one wait; callbacks     node.hpp
//   nerve::codec<T>       serialization policy, type names       codec.hpp
//   nerve::Channel        untyped RAII handle; read_result       channel.hpp
//   nerve::result<T>      value or NERVE_E* code; nerve::Error   result.hpp
//
// Handles are move-only RAII objects; every status is [[nodiscard]]; the
// hot path (publish, loans, reads, spin) never throws on its own and, for
// trivially copyable messages, never allocates. docs/cxx.md is the guide.
#ifndef NERVE_CXX_NERVE_HPP
#define NERVE_CXX_NERVE_HPP

#include <nerve/cxx/channel.hpp>
#include <nerve/cxx/codec.hpp>
#include <nerve/cxx/node.hpp>
#include <nerve/cxx/publisher.hpp>
#include <nerve/cxx/reader.hpp>
#include <nerve/cxx/result.hpp>

#endif
