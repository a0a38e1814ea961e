// A Fast DDS (2.9) type whose samples are CDR bytes, encapsulation header
// included: what a ROS 2 message is on the wire, without its type code.
// Used by nerve-ros2-dds (ros2_services.cpp), tests/ros2/fastdds_peer.cpp
// and bench/ros2/fastdds_lat.cpp.
#ifndef NERVE_TOOLS_ROS2_FASTDDS_RAW_HPP
#define NERVE_TOOLS_ROS2_FASTDDS_RAW_HPP

#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include <fastdds/dds/topic/TopicDataType.hpp>

namespace nerve_fastdds {

using Bytes = std::vector<unsigned char>;

/// A type whose samples are CDR bytes, encapsulation header included.
class RawCdr : public eprosima::fastdds::dds::TopicDataType {
public:
    explicit RawCdr(const std::string &name)
    {
        setName(name.c_str());
        m_typeSize = 64; // grown per sample (dynamic memory policies)
        m_isGetKeyDefined = false;
    }
    bool
    serialize(void *data,
              eprosima::fastrtps::rtps::SerializedPayload_t *payload) override
    {
        const Bytes &b = *static_cast<Bytes *>(data);
        if (b.size() < 4) {
            return false;
        }
        if (payload->max_size < b.size()) {
            payload->reserve(static_cast<uint32_t>(b.size()));
        }
        std::memcpy(payload->data, b.data(), b.size());
        payload->length = static_cast<uint32_t>(b.size());
        payload->encapsulation = b[1] == 1 ? CDR_LE : CDR_BE;
        return true;
    }
    bool deserialize(eprosima::fastrtps::rtps::SerializedPayload_t *payload,
                     void *data) override
    {
        static_cast<Bytes *>(data)->assign(payload->data,
                                           payload->data + payload->length);
        return true;
    }
    std::function<uint32_t()> getSerializedSizeProvider(void *data) override
    {
        return [data] {
            return static_cast<uint32_t>(static_cast<Bytes *>(data)->size());
        };
    }
    void *createData() override
    {
        return new Bytes();
    }
    void deleteData(void *data) override
    {
        delete static_cast<Bytes *>(data);
    }
    bool getKey(void *, eprosima::fastrtps::rtps::InstanceHandle_t *,
                bool) override
    {
        return false;
    }
};

} // namespace nerve_fastdds

#endif
