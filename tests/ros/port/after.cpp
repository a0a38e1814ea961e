// docs/ros.md, "Porting a roscpp node": the nerve version of before.cpp.
// Same message type, same structure; ros::Publisher becomes
// nerve::Publisher<T>, the NodeHandle's subscribe becomes nerve::Node's,
// ros::spinOnce() becomes node.spin_once(). No master: the channel lives
// in /dev/shm. `--self-test` (ctest ros1_port_after) runs it on a
// private channel, checks that every message came back, and removes it.
#include <nerve/nerve.hpp>
#include <nerve/cxx/ros1.hpp>
#include <sensor_msgs/Imu.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <unistd.h>

static uint32_t received = 0;

static void on_imu(const sensor_msgs::Imu &m)
{
    std::printf("imu %u: ax %.2f\n", m.header.seq, m.linear_acceleration.x);
    received++;
}

int main(int argc, char **argv)
{
    const bool self_test = argc > 1 && std::strcmp(argv[1], "--self-test") == 0;
    const std::string name =
        self_test ? "nt-" + std::to_string(getpid()) + "-ros-port" : "imu";
    const uint32_t count = self_test ? 5 : 100;

    nerve::Node node;
    auto pub = nerve::Publisher<sensor_msgs::Imu>::create_or_throw(name);
    auto sub = node.subscribe<sensor_msgs::Imu>(name, on_imu);
    if (!sub) {
        std::fprintf(stderr, "subscribe: %s\n", sub.message());
        return 1;
    }

    for (uint32_t i = 1; i <= count; i++) {
        sensor_msgs::Imu m;
        m.header.seq = i;
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
            std::fprintf(stderr, "received %u of %u\n", received, count);
            return 1;
        }
    }
    return 0;
}
