// Deterministic ROS 1 test messages shared by the ROS tests and the peer
// program: make<T>(i) builds message number i, and the Python tests
// (tests/ros/test_ros1_cxx.py) check the same formulas after decoding
// the ros1msg bytes with rosbags.
#ifndef NERVE_TESTS_ROS1_MSGS_HPP
#define NERVE_TESTS_ROS1_MSGS_HPP

#include <nav_msgs/OccupancyGrid.h>
#include <sensor_msgs/Image.h>
#include <sensor_msgs/Imu.h>
#include <sensor_msgs/LaserScan.h>
#include <sensor_msgs/PointCloud2.h>
#include <sensor_msgs/PointField.h>

#include <cstdint>
#include <string>

namespace rtest {

inline void fill_header(std_msgs::Header &h, uint32_t i)
{
    h.seq = i;
    h.stamp.sec = 1000 + i;
    h.stamp.nsec = 7 * i;
    h.frame_id = "frame" + std::to_string(i);
}

template <class T> T make(uint32_t i);

// Imu: orientation (0, 0, 0, 1), linear_acceleration.x = i / 2.
template <> inline sensor_msgs::Imu make<sensor_msgs::Imu>(uint32_t i)
{
    sensor_msgs::Imu m;
    fill_header(m.header, i);
    m.orientation.w = 1.0;
    m.linear_acceleration.x = i * 0.5;
    m.angular_velocity.z = -1.0 * i;
    m.orientation_covariance[0] = 0.01;
    return m;
}

// LaserScan: 16 + i rays, ranges[k] = i + k / 4.
template <>
inline sensor_msgs::LaserScan make<sensor_msgs::LaserScan>(uint32_t i)
{
    sensor_msgs::LaserScan m;
    fill_header(m.header, i);
    m.angle_min = -1.0f;
    m.angle_max = 1.0f;
    m.range_max = 30.0f;
    for (uint32_t k = 0; k < 16 + i; k++) {
        m.ranges.push_back(static_cast<float>(i) + k * 0.25f);
    }
    return m;
}

// PointCloud2: 5 points x, y, z float32, data byte k = (i + k) % 251.
template <>
inline sensor_msgs::PointCloud2 make<sensor_msgs::PointCloud2>(uint32_t i)
{
    sensor_msgs::PointCloud2 m;
    fill_header(m.header, i);
    m.height = 1;
    m.width = 5;
    const char *names[] = {"x", "y", "z"};
    for (uint32_t f = 0; f < 3; f++) {
        sensor_msgs::PointField pf;
        pf.name = names[f];
        pf.offset = 4 * f;
        pf.datatype = sensor_msgs::PointField::FLOAT32;
        pf.count = 1;
        m.fields.push_back(pf);
    }
    m.point_step = 12;
    m.row_step = 60;
    m.is_dense = true;
    for (uint32_t k = 0; k < 60; k++) {
        m.data.push_back(static_cast<uint8_t>((i + k) % 251));
    }
    return m;
}

// Image: 4x3 rgb8, data byte k = (i + k) % 251.
template <> inline sensor_msgs::Image make<sensor_msgs::Image>(uint32_t i)
{
    sensor_msgs::Image m;
    fill_header(m.header, i);
    m.height = 3;
    m.width = 4;
    m.encoding = "rgb8";
    m.step = 12;
    for (uint32_t k = 0; k < 36; k++) {
        m.data.push_back(static_cast<uint8_t>((i + k) % 251));
    }
    return m;
}

// OccupancyGrid: 8x4 cells at 0.05 m, data[k] = (i + k) % 100.
template <>
inline nav_msgs::OccupancyGrid make<nav_msgs::OccupancyGrid>(uint32_t i)
{
    nav_msgs::OccupancyGrid m;
    fill_header(m.header, i);
    m.info.resolution = 0.05f;
    m.info.width = 8;
    m.info.height = 4;
    m.info.origin.orientation.w = 1.0;
    for (uint32_t k = 0; k < 32; k++) {
        m.data.push_back(static_cast<int8_t>((i + k) % 100));
    }
    return m;
}

// Run f.template operator()<T>() for the type named `name` (the short
// names the tests use); false for an unknown name.
template <class F> bool with_type(const std::string &name, F &&f)
{
    if (name == "imu") {
        f(static_cast<sensor_msgs::Imu *>(nullptr));
    } else if (name == "scan") {
        f(static_cast<sensor_msgs::LaserScan *>(nullptr));
    } else if (name == "cloud") {
        f(static_cast<sensor_msgs::PointCloud2 *>(nullptr));
    } else if (name == "image") {
        f(static_cast<sensor_msgs::Image *>(nullptr));
    } else if (name == "grid") {
        f(static_cast<nav_msgs::OccupancyGrid *>(nullptr));
    } else {
        return false;
    }
    return true;
}

} // namespace rtest

#endif
