// Names and types: how a ROS name in a domain becomes a channel name, how a
// typesupport handle becomes a type name, a schema and CDR bytes.
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

#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <ctime>

#include <fastcdr/Cdr.h>
#include <fastcdr/FastBuffer.h>
#include <rosidl_runtime_c/message_type_support_struct.h>
#include <rosidl_runtime_c/type_description/type_source__struct.h>

namespace rmw_nerve {

const char *const kIdentifier = "rmw_nerve_cpp";

rmw_ret_t fail(rmw_ret_t ret, const char *fmt, ...)
{
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    rmw_reset_error();
    RMW_SET_ERROR_MSG(buf);
    return ret;
}

int64_t mono_ns()
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return int64_t(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

int64_t real_ns()
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return int64_t(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

std::string domain_prefix(size_t domain)
{
    if (domain == 0)
        return "";
    return "ros2-d" + std::to_string(domain) + ".";
}

bool topic_channel(size_t domain, const char *topic, const char *suffix,
                   std::string *out)
{
    std::string s = domain_prefix(domain);
    const char *p = topic;
    while (*p == '/')
        p++;
    for (; *p; p++)
        s += (*p == '/') ? '.' : *p;
    s += suffix;
    int r = nerve_chan_name_check(s.c_str());
    if (r) {
        fail(RMW_RET_ERROR, "rmw_nerve: '%s' gives channel name '%s': %s",
             topic, s.c_str(), nerve_strerror(r));
        return false;
    }
    *out = s;
    return true;
}

std::string graph_prefix(size_t domain)
{
    return "ros2-graph-d" + std::to_string(domain) + ".";
}

// "std_msgs::msg" + "String" -> "std_msgs/msg/String"
static std::string ros_type_name(const char *ns, const char *name)
{
    std::string s;
    for (const char *p = ns; *p; p++) {
        if (p[0] == ':' && p[1] == ':') {
            s += '/';
            p++;
        } else {
            s += *p;
        }
    }
    return s + "/" + name;
}

// The definition in MCAP's ros2msg form: the type's own text, then each
// dependency after a line of 80 '=' and "MSG: pkg/Name".
static std::string ros2msg_schema(const rosidl_message_type_support_t *ts)
{
    if (!ts->get_type_description_sources_func)
        return "";
    const auto *src = ts->get_type_description_sources_func(ts);
    if (!src || src->size == 0 || !src->data[0].raw_file_contents.data)
        return "";
    // A source's size may count a terminating NUL: take the text up to it
    // (a channel's schema holds no NUL).
    auto text = [](const rosidl_runtime_c__String &t) {
        return std::string(t.data, strnlen(t.data, t.size));
    };
    std::string s = text(src->data[0].raw_file_contents);
    for (size_t i = 1; i < src->size; i++) {
        const auto &t = src->data[i];
        if (!t.raw_file_contents.data || t.raw_file_contents.size == 0)
            continue;
        std::string tn(t.type_name.data, t.type_name.size);
        size_t a = tn.find('/'), b = tn.rfind('/');
        if (a != std::string::npos && b != a)
            tn = tn.substr(0, a) + tn.substr(b);
        if (!s.empty() && s.back() != '\n')
            s += '\n';
        s += std::string(80, '=') + "\nMSG: " + tn + "\n";
        s += text(t.raw_file_contents);
    }
    return s;
}

bool msg_type(const rosidl_message_type_support_t *ts, MsgType *out)
{
    const rosidl_message_type_support_t *h =
        get_message_typesupport_handle(ts, "rosidl_typesupport_fastrtps_c");
    if (!h) {
        rcutils_reset_error();
        h = get_message_typesupport_handle(ts,
                                           "rosidl_typesupport_fastrtps_cpp");
    }
    if (!h) {
        rcutils_reset_error();
        fail(RMW_RET_UNSUPPORTED,
             "rmw_nerve: type support '%s' has no Fast CDR callbacks "
             "(rosidl_typesupport_fastrtps_c/cpp), which rmw_nerve "
             "serialises with",
             ts->typesupport_identifier);
        return false;
    }
    out->cb = static_cast<const message_type_support_callbacks_t *>(h->data);
    out->ts = ts;
    out->name =
        ros_type_name(out->cb->message_namespace_, out->cb->message_name_);
    out->schema = ros2msg_schema(ts);
    if (ts->get_type_hash_func && ts->get_type_hash_func(ts))
        out->hash = *ts->get_type_hash_func(ts);
    char bounds = 0;
    out->max_size = out->cb->max_serialized_size(bounds);
    // ROSIDL_TYPESUPPORT_FASTRTPS_BOUNDED_TYPE (0x01) is set for bounded and
    // plain types, clear for ones with an unbounded string or sequence.
    out->bounded = (bounds & 0x01) != 0;
    return true;
}

size_t serialized_size(const MsgType &t, const void *msg)
{
    return 4 + t.cb->get_serialized_size(msg);
}

long serialize(const MsgType &t, const void *msg, void *buf, size_t cap)
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

bool deserialize(const MsgType &t, const void *buf, size_t len, void *msg)
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
