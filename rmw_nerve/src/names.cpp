// Names: how a ROS name in a domain becomes a channel name.

#include "rmw_nerve.hpp"

#include <nerve/bridge.h>

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
    // The bridge kernel's rule (include/nerve/bridge.h,
    // docs/bridge-kernel.md): every bridge in this domain maps the channel
    // back to this topic.
    char chan[NERVE_NAME_MAX + 1];
    int r = domain > UINT32_MAX
                ? NERVE_EINVAL
                : nerve_channel_of_topic(topic, static_cast<uint32_t>(domain),
                                         chan, sizeof chan);
    if (r) {
        fail(RMW_RET_ERROR, "rmw_nerve: '%s' gives no channel name: %s", topic,
             nerve_err_detail(r));
        return false;
    }
    std::string s = std::string(chan) + suffix;
    r = nerve_chan_name_check(s.c_str());
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
