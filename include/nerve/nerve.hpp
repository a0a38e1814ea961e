// nerve C++ API: the umbrella header. `#include <nerve/nerve.hpp>` and link
// the CMake target nerve::cxx; it includes every public C++ header (and,
// through them, every public C header, <nerve/nerve.h>).
//
// A header-only C++17 layer on the public C API (include/nerve/nerve.h):
//
//   nerve::Publisher<T>   publish(const T &), zero-copy loans   cxx/publisher.hpp
//   nerve::Reader<T>      get_newest, read_unread, wait_unread,
//                         get_by_timestamp, get_seq             cxx/reader.hpp
//   nerve::Node,          spin() / spin_once() over many
//   nerve::Subscriber<T>  channels with one wait; callbacks     cxx/node.hpp
//   nerve::Codec<T>       serialization policy, type names       cxx/codec.hpp
//   nerve::Channel        untyped RAII handle; ReadResult       cxx/channel.hpp
//   nerve::Result<T>      value or NERVE_E* code; nerve::Error   cxx/result.hpp
//   nerve::rt::Task<F>    periodic and channel-driven loops      cxx/rt.hpp
//   nerve::gpu::...       device copies in and out of the ring   cxx/gpu.hpp
//                         (its CUDA part only where <cuda_runtime.h> is on
//                         the include path; NERVE_CXX_NO_CUDA leaves it out)
//   nerve::ros1::...      ROS 1 messages as payloads             cxx/ros1.hpp
//                         (only where the ROS 1 headers are on the include
//                         path; NERVE_CXX_NO_ROS1 leaves it out)
//
// Handles are move-only RAII objects; every status is [[nodiscard]]; the
// hot path (publish, loans, reads, spin) never throws on its own and, for
// trivially copyable messages, never allocates. docs/cxx.md is the guide.
#ifndef NERVE_NERVE_HPP
#define NERVE_NERVE_HPP

#include <nerve/cxx/channel.hpp>
#include <nerve/cxx/codec.hpp>
#include <nerve/cxx/gpu.hpp>
#include <nerve/cxx/node.hpp>
#include <nerve/cxx/publisher.hpp>
#include <nerve/cxx/reader.hpp>
#include <nerve/cxx/result.hpp>
#include <nerve/cxx/ros1.hpp>
#include <nerve/cxx/rt.hpp>

#endif
