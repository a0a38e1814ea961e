// nerve C++ API: ROS 1 message types as channel payloads.
//
// The umbrella <nerve/nerve.hpp> includes this header; its content exists
// only where the ROS 1 headers are on the include path (so code without
// ROS never sees ROS headers; define NERVE_CXX_NO_ROS1 to leave it out
// anyway). Include ROS 1 message headers, and
// nerve::Publisher<sensor_msgs::Imu>,
// nerve::Reader<...> and Node::subscribe<...> take the ROS type directly:
//
//   #include <nerve/nerve.hpp>
//   #include <sensor_msgs/Imu.h>
//   auto pub = nerve::Publisher<sensor_msgs::Imu>::create("robot.imu");
//   pub->publish(msg);
//
// A message is carried as ROS 1 serializes it (ros::serialization, the
// bytes TCPROS and rosbag carry), and the channel records the ROS type
// name ("sensor_msgs/Imu"), the encoding "ros1msg" and the full message
// definition (ros::message_traits::Definition, dependencies included) as
// its schema. That is what `nerve ros1` (python-tools) needs to publish the
// channel as a ROS topic, what `nerve record` writes to MCAP, and what
// Python readers decode (nerve_tools.codec.schemas.decode). A channel filled by
// `nerve ros1 --from-ros` carries the same metadata, so Reader<T> opens it.
//
// The codec is enabled when <ros/serialization.h> is on the include path
// (__has_include) and applies to every type for which
// ros::message_traits::IsMessage<T> holds, trivially copyable ones
// (geometry_msgs::Vector3) included: the nerve::detail::external_codec
// hook in codec.hpp keeps those off the raw codec. Without ROS headers
// this header defines nothing, so the header-only layer still builds.
//
// Copies. publish(msg) serializes straight into the ring (one pass over
// the message, no staging buffer). Reader<T> deserializes from the ring
// into a T (the ROS code copies arrays with memcpy). For large messages
// that one copy can be avoided on either side:
//   - pub.loan(msg) serializes msg into the ring and returns a Loan whose
//     view is the serialized bytes (ros1::Serialized); a header stamp can
//     still be set in place (view.set_stamp()) before publish(), so the
//     stamp is taken after the bytes are in place;
//   - ros1::read_view(reader, flags, timeout, fn) hands fn the serialized
//     bytes in the ring (zero-copy) and then validates that no writer
//     overwrote them; ros1::stamp_of() reads a Header's stamp from them.
//
// Torn reads. decode() runs on bytes a writer may be overwriting (the
// reader validates afterwards and retries, see reader.hpp). ROS's
// deserializer checks every read against the buffer end (it throws
// StreamOverrunException, reported here as a mismatch), but sizes a vector
// from its length field before copying into it, so a torn length can make
// one decode allocate up to that length before the overwrite is detected;
// std::bad_alloc and std::length_error are caught and reported as
// NERVE_EDECODE as well. A reader that must never allocate should use
// read_view().
#ifndef NERVE_CXX_ROS1_HPP
#define NERVE_CXX_ROS1_HPP

#include <nerve/cxx/channel.hpp>
#include <nerve/cxx/codec.hpp>
#include <nerve/cxx/reader.hpp>

#if !defined(NERVE_CXX_NO_ROS1) && defined(__has_include)
#if __has_include(<ros/serialization.h>) && __has_include(<ros/message_traits.h>)
#define NERVE_CXX_HAVE_ROS1 1
#endif
#endif

#if NERVE_CXX_HAVE_ROS1

#include <ros/message_traits.h>
#include <ros/serialization.h>

#include <cstdint>
#include <cstring>
#include <new>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>

namespace nerve {

namespace ros1 {

/// True for ROS 1 message types (generated headers specialize
/// ros::message_traits::IsMessage).
template <class T>
inline constexpr bool is_message_v = ros::message_traits::IsMessage<T>::value;

/// The serialized bytes of one message in the ring, as a loan exposes
/// them (writable) before publish().
struct Serialized {
    uint8_t *data = nullptr;
    size_t size = 0;

    /// Overwrite header.stamp of a message that starts with a
    /// std_msgs/Header (seq u32, stamp sec u32, stamp nsec u32, ...), in
    /// place. Returns false (and writes nothing) when the bytes are too
    /// short to hold a header.
    /// Thread: the loan's owner.  RT: safe.  Signal: safe.
    bool set_stamp(uint32_t sec, uint32_t nsec) const noexcept
    {
        if (size < 12) {
            return false;
        }
        std::memcpy(data + 4, &sec, 4);
        std::memcpy(data + 8, &nsec, 4);
        return true;
    }
};

/// The header.stamp (sec, nsec) of serialized bytes of a message that
/// starts with a std_msgs/Header. False when fewer than 12 bytes.
/// Thread: any.  RT: safe.  Signal: safe.
inline bool stamp_of(const void *data, size_t len, uint32_t &sec,
                     uint32_t &nsec) noexcept
{
    if (len < 12) {
        return false;
    }
    const auto *p = static_cast<const uint8_t *>(data);
    std::memcpy(&sec, p + 4, 4);
    std::memcpy(&nsec, p + 8, 4);
    return true;
}

/// Zero-copy read of one message of reader `r`: fn(const uint8_t *data,
/// size_t len, const MsgInfo &info) is called on the serialized bytes in
/// the ring, then the view is validated. flags select the message as for
/// nerve_chan_view (NERVE_GET_NEXT, NERVE_GET_NEWEST, ... | NERVE_F_WAIT)
/// and timeout bounds a wait. The result is data when fn saw a message
/// that no writer overwrote meanwhile; NERVE_ELAPPED when it was
/// overwritten while fn ran (fn's conclusions about it must be dropped).
/// fn must not keep the pointer. A wait follows the reader's
/// WaitPolicy (r.set_wait_policy(): block at once, or poll first).
/// Thread: one caller per Reader.  Blocking: only with NERVE_F_WAIT
/// (futex wait, after the policy's busy poll).  RT: safe when fn is (no
/// allocation).  Signal: not safe.
template <class T, class F>
ReadResult read_view(Reader<T> &r, uint32_t flags, Duration timeout, F &&fn)
{
    struct nerve_view v;
    int rc = r.read_with_policy(flags, detail::timeout_ns(timeout), v.info,
                                [&](int64_t to, uint32_t fl) {
                                    return nerve_chan_view(r.native_handle(), 0,
                                                           to, &v, fl);
                                });
    if (rc < 0) {
        return ReadResult(rc, MsgInfo{}, 0);
    }
    const MsgInfo info = detail::to_info(v.info);
    fn(static_cast<const uint8_t *>(v.data), static_cast<size_t>(v.info.len),
       info);
    rc = nerve_chan_view_check(r.native_handle(), &v);
    return ReadResult(rc < 0 ? rc : 0, info, rc < 0 ? 0 : 1);
}

} // namespace ros1

namespace detail {

// Hook of codec.hpp: ROS messages take the codec below, never the raw one.
template <class T>
struct external_codec<T, std::enable_if_t<ros1::is_message_v<T>>>
    : std::true_type {
};

} // namespace detail

/// ROS 1 messages: ros::serialization bytes, encoding "ros1msg", the ROS
/// type name and full definition as metadata. See the file comment.
/// size() and encode() walk the message without allocating; decode()
/// allocates as the message's vectors and strings need (not RT-safe for
/// variable-size messages; read_view() is).
template <class T> struct Codec<T, std::enable_if_t<ros1::is_message_v<T>>> {
    using view = ros1::Serialized;

    static std::string type_name()
    {
        return ros::message_traits::DataType<T>::value();
    }
    static constexpr std::string_view encoding() noexcept
    {
        return "ros1msg";
    }
    static std::string schema()
    {
        return ros::message_traits::Definition<T>::value();
    }
    static size_t size(const T &m)
    {
        return ros::serialization::serializationLength(m);
    }
    /// len == size(m), so the stream cannot overrun.
    static void encode(const T &m, void *dst, size_t len)
    {
        ros::serialization::OStream s(static_cast<uint8_t *>(dst),
                                      static_cast<uint32_t>(len));
        ros::serialization::serialize(s, m);
    }
    /// False on a malformed (or torn) message; see the file comment.
    /// ROS reports a short buffer by throwing; built with -fno-exceptions
    /// (no try/catch possible here) such a message ends the program, so
    /// ROS message types want exceptions enabled.
    static bool decode(const void *src, size_t len, T &out) noexcept
    {
        if (len > UINT32_MAX) {
            return false;
        }
#if NERVE_CXX_EXCEPTIONS
        try {
#endif
            // IStream only reads through its pointer.
            ros::serialization::IStream s(
                const_cast<uint8_t *>(static_cast<const uint8_t *>(src)),
                static_cast<uint32_t>(len));
            ros::serialization::deserialize(s, out);
            return s.getLength() == 0; // every byte belongs to the message
#if NERVE_CXX_EXCEPTIONS
        } catch (...) {
            // StreamOverrunException (ros::Exception), std::bad_alloc,
            // std::length_error: see the file comment.
            return false;
        }
#endif
    }

    /// pub.loan(msg): room for msg's serialization, filled with it.
    static size_t loan_size(const T &m)
    {
        return ros::serialization::serializationLength(m);
    }
    static view loan_init(void *dst, size_t len, const T &m)
    {
        encode(m, dst, len);
        return view{static_cast<uint8_t *>(dst), len};
    }
};

} // namespace nerve

#endif // NERVE_CXX_HAVE_ROS1

#endif
