// docs/ros2.md, "Porting an rclcpp node": the nerve version of before.cpp.
// Same message type (nerve's generated sensor_msgs::msg::Imu, in namespace
// nerve::ros2), same structure; create_publisher becomes
// nerve::Publisher<T>, create_subscription becomes nerve::Node's
// subscribe, spin_some becomes node.spin_once(). No ROS 2 installation, no
// DDS: the channel lives in /dev/shm, and `nerve ros2` can make it a ROS 2
// topic. `--self-test` (ctest ros2_port_after) runs it on a private
// channel, checks that every message came back, and removes it.
#include <nerve/nerve.hpp>
#include <nerve/ros2/sensor_msgs/msg/imu.hpp>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <unistd.h>

namespace sensor_msgs = nerve::ros2::sensor_msgs;

static int received = 0;

static void on_imu(const sensor_msgs::msg::Imu &m)
{
    std::printf("imu %d: ax %.2f\n", m.header.stamp.sec,
                m.linear_acceleration.x);
    received++;
}

int main(int argc, char **argv)
{
    const bool self_test = argc > 1 && std::strcmp(argv[1], "--self-test") == 0;
    const std::string name =
        self_test ? "nt-" + std::to_string(getpid()) + "-ros2-port" : "imu";
    const int count = self_test ? 5 : 100;

    nerve::Node node;
    auto pub = nerve::Publisher<sensor_msgs::msg::Imu>::create_or_throw(name);
    auto sub = node.subscribe<sensor_msgs::msg::Imu>(name, on_imu);
    if (!sub) {
        std::fprintf(stderr, "subscribe: %s\n", sub.message());
        return 1;
    }

    for (int i = 1; i <= count; i++) {
        sensor_msgs::msg::Imu m;
        m.header.stamp.sec = i;
        m.header.frame_id = "imu";
        m.orientation.w = 1.0;
        m.linear_acceleration.x = 0.01 * i;
        (void)pub.publish(m);
        (void)node.spin_once(std::chrono::milliseconds(100));
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    if (self_test) {
        (void)nerve::Channel::unlink(name);
        if (received != count) {
            std::fprintf(stderr, "received %d of %d\n", received, count);
            return 1;
        }
    }
    return 0;
}
