// Types: how a typesupport handle becomes a type name, a schema and the
// Fast CDR callbacks that cdr.cpp serialises with.

#include "rmw_nerve.hpp"

#include <cstring>

#include <rosidl_runtime_c/message_type_support_struct.h>
#include <rosidl_runtime_c/type_description/type_source__struct.h>

namespace rmw_nerve {

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

} // namespace rmw_nerve
