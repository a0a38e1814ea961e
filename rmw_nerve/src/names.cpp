// Names: how a ROS name in a domain becomes a channel name.

#include "rmw_nerve.hpp"

namespace rmw_nerve {

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

} // namespace rmw_nerve
