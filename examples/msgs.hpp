// Message types of the examples (and of tests/cxx): what a robot's IMU,
// controller and laser scanner exchange.
//
// Imu and Command are trivially copyable, so they travel as raw bytes with
// no serialization; they name themselves for the channel metadata so that
// C programs and other compilers agree on the type. LaserScan holds a
// std::vector and so needs a codec: the one below writes the fixed header
// followed by the ranges, and offers zero-copy loans sized at loan time
// (pub.loan(n) for n ranges).
#ifndef NERVE_EXAMPLES_MSGS_HPP
#define NERVE_EXAMPLES_MSGS_HPP

#include <nerve/nerve.hpp>

#include <cstdint>
#include <cstring>
#include <new>
#include <string>
#include <string_view>
#include <vector>

namespace robot_msgs {

/// One inertial sample: 40 bytes, the fuRom (K. Irie, RSJ 2017) benchmark's IMU size.
struct Imu {
    static constexpr const char *nerve_type_name = "robot_msgs/Imu";
    int64_t stamp_ns;  // sample time, CLOCK_MONOTONIC
    float accel[3];    // m/s^2
    float gyro[3];     // rad/s
    float temperature; // degrees C
    uint32_t seq;      // sample counter of the driver
};
static_assert(sizeof(Imu) == 40, "the IMU message is 40 bytes");

/// A joint torque command computed from one IMU sample.
struct Command {
    static constexpr const char *nerve_type_name = "robot_msgs/Command";
    int64_t stamp_ns;     // when the command was computed
    int64_t imu_stamp_ns; // stamp of the IMU sample it answers
    float torque[6];      // N m
    uint32_t imu_seq;     // seq of that IMU sample
    uint32_t reserved;
};

/// The fixed part of a laser scan, as laid out in the channel.
struct LaserScanHeader {
    int64_t stamp_ns;
    float angle_min, angle_max, angle_increment;
    float range_min, range_max;
    uint32_t count; // number of ranges that follow
    uint32_t reserved;
};
static_assert(sizeof(LaserScanHeader) == 40, "no hidden padding");

/// A scan: header plus a variable number of ranges (a ROS LaserScan cut
/// down to what the examples need).
struct LaserScan {
    LaserScanHeader header{};
    std::vector<float> ranges;
};

/// What a zero-copy LaserScan loan exposes: the header and the ranges,
/// both in the ring.
struct LaserScanView {
    LaserScanHeader *header;
    nerve::Span<float> ranges;
};

} // namespace robot_msgs

/// LaserScan on the wire: LaserScanHeader, then header.count floats.
template <> struct nerve::Codec<robot_msgs::LaserScan> {
    using view = robot_msgs::LaserScanView;
    static std::string type_name()
    {
        return "robot_msgs/LaserScan";
    }
    static constexpr std::string_view encoding() noexcept
    {
        return "raw";
    }
    static std::string schema()
    {
        return "LaserScanHeader{int64 stamp_ns; float32 angle_min, "
               "angle_max, angle_increment, range_min, range_max; uint32 "
               "count; uint32 reserved} float32 ranges[count]";
    }
    static size_t size(const robot_msgs::LaserScan &m) noexcept
    {
        return sizeof(robot_msgs::LaserScanHeader) +
               m.ranges.size() * sizeof(float);
    }
    static void encode(const robot_msgs::LaserScan &m, void *dst,
                       size_t) noexcept
    {
        robot_msgs::LaserScanHeader h = m.header;
        h.count = static_cast<uint32_t>(m.ranges.size());
        auto *p = static_cast<unsigned char *>(dst);
        std::memcpy(p, &h, sizeof h);
        if (!m.ranges.empty()) {
            std::memcpy(p + sizeof h, m.ranges.data(),
                        m.ranges.size() * sizeof(float));
        }
    }
    // The count is checked against the length before anything is sized
    // from it: the bytes may be a torn read (see nerve/cxx/codec.hpp).
    static bool decode(const void *src, size_t len, robot_msgs::LaserScan &out)
    {
        if (len < sizeof(robot_msgs::LaserScanHeader)) {
            return false;
        }
        const auto *p = static_cast<const unsigned char *>(src);
        std::memcpy(&out.header, p, sizeof out.header);
        const size_t n = out.header.count;
        if ((len - sizeof out.header) / sizeof(float) != n ||
            (len - sizeof out.header) % sizeof(float) != 0) {
            return false;
        }
        out.ranges.resize(n);
        if (n != 0) {
            std::memcpy(out.ranges.data(), p + sizeof out.header,
                        n * sizeof(float));
        }
        return true;
    }
    // SIZE_MAX (loan() then fails with NERVE_EMSGSIZE) when the size
    // would wrap or the count does not fit the header's uint32_t.
    static constexpr size_t loan_size(size_t n) noexcept
    {
        if (n > UINT32_MAX ||
            n > (SIZE_MAX - sizeof(robot_msgs::LaserScanHeader)) /
                    sizeof(float)) {
            return SIZE_MAX;
        }
        return sizeof(robot_msgs::LaserScanHeader) + n * sizeof(float);
    }
    static view loan_init(void *dst, size_t, size_t n) noexcept
    {
        auto *h = ::new (dst) robot_msgs::LaserScanHeader{};
        h->count = static_cast<uint32_t>(n);
        auto *r = reinterpret_cast<float *>(static_cast<unsigned char *>(dst) +
                                            sizeof *h);
        return view{h, nerve::Span<float>(r, n)};
    }
};

#endif
