// Serialisation: a message to CDR bytes and back.
//
// Serialisation goes through rosidl_typesupport_fastrtps_c/cpp, the Fast
// CDR callbacks every message package of a ROS 2 installation carries,
// with the encapsulation and CDR version rmw_fastrtps_cpp uses (XCDRv1,
// little-endian on this host): the bytes in a channel are byte for byte
// what rmw_fastrtps_cpp puts in a DDS sample, so `nerve ros2` passes them
// to DDS untouched. Introspection would need a CDR writer of our own that
// would have to match Fast CDR's padding rules; the generated callbacks
// are that writer already, and are faster.

#include "rmw_nerve.hpp"

#include <fastcdr/Cdr.h>
#include <fastcdr/FastBuffer.h>
#include <rmw/serialized_message.h>

namespace rmw_nerve {

RMW_NERVE_HOT size_t serialized_size(const MsgType &t, const void *msg)
{
    return 4 + t.cb->get_serialized_size(msg);
}

RMW_NERVE_HOT long serialize(const MsgType &t, const void *msg, void *buf,
                             size_t cap)
{
    try {
        eprosima::fastcdr::FastBuffer fb(static_cast<char *>(buf), cap);
        eprosima::fastcdr::Cdr cdr(fb, eprosima::fastcdr::Cdr::DEFAULT_ENDIAN,
                                   eprosima::fastcdr::CdrVersion::XCDRv1);
        cdr.serialize_encapsulation();
        if (!t.cb->cdr_serialize(msg, cdr))
            return -1;
        return long(cdr.get_serialized_data_length());
    } catch (...) {
        return -1;
    }
}

RMW_NERVE_HOT bool deserialize(const MsgType &t, const void *buf, size_t len,
                               void *msg)
{
    try {
        eprosima::fastcdr::FastBuffer fb(
            const_cast<char *>(static_cast<const char *>(buf)), len);
        eprosima::fastcdr::Cdr cdr(fb, eprosima::fastcdr::Cdr::DEFAULT_ENDIAN,
                                   eprosima::fastcdr::CdrVersion::XCDRv1);
        cdr.read_encapsulation();
        return t.cb->cdr_deserialize(cdr, msg);
    } catch (...) {
        return false;
    }
}

} // namespace rmw_nerve

using namespace rmw_nerve;

extern "C" {

rmw_ret_t rmw_serialize(const void *msg,
                        const rosidl_message_type_support_t *ts,
                        rmw_serialized_message_t *out)
{
    if (!msg || !ts || !out)
        return fail(RMW_RET_INVALID_ARGUMENT, "rmw_nerve: NULL argument");
    MsgType t;
    if (!msg_type(ts, &t))
        return RMW_RET_ERROR;
    size_t len = serialized_size(t, msg);
    if (out->buffer_capacity < len &&
        rmw_serialized_message_resize(out, len) != RMW_RET_OK)
        return fail(RMW_RET_BAD_ALLOC, "rmw_nerve: out of memory");
    long n = serialize(t, msg, out->buffer, out->buffer_capacity);
    if (n < 0)
        return fail(RMW_RET_ERROR, "rmw_nerve: cannot serialise the %s",
                    t.name.c_str());
    out->buffer_length = size_t(n);
    return RMW_RET_OK;
}

rmw_ret_t rmw_deserialize(const rmw_serialized_message_t *in,
                          const rosidl_message_type_support_t *ts, void *msg)
{
    if (!in || !ts || !msg)
        return fail(RMW_RET_INVALID_ARGUMENT, "rmw_nerve: NULL argument");
    MsgType t;
    if (!msg_type(ts, &t))
        return RMW_RET_ERROR;
    if (!deserialize(t, in->buffer, in->buffer_length, msg))
        return fail(RMW_RET_ERROR, "rmw_nerve: the bytes are not a CDR %s",
                    t.name.c_str());
    return RMW_RET_OK;
}

} // extern "C"
