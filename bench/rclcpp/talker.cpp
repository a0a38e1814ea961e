// rclcpp talker: publishes std_msgs/String "hello N" on "chatter" every
// 100 ms, COUNT times (argv[1], default 10), then exits 0.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include <rclcpp/rclcpp.hpp>
#include <std_msgs/msg/string.hpp>

int main(int argc, char **argv)
{
    rclcpp::init(argc, argv);
    int count = argc > 1 ? std::atoi(argv[1]) : 10;
    auto node = std::make_shared<rclcpp::Node>("nerve_talker");
    // Transient local, so a listener started a moment later still gets the
    // first messages, as on DDS.
    auto pub = node->create_publisher<std_msgs::msg::String>(
        "chatter", rclcpp::QoS(10).reliable().transient_local());
    int sent = 0;
    auto timer = node->create_wall_timer(std::chrono::milliseconds(100), [&]() {
        std_msgs::msg::String msg;
        msg.data = "hello " + std::to_string(++sent);
        pub->publish(msg);
        std::printf("talker: sent '%s'\n", msg.data.c_str());
        std::fflush(stdout);
        if (sent >= count)
            rclcpp::shutdown();
    });
    rclcpp::spin(node);
    std::printf("talker: done, %d sent (rmw %s)\n", sent,
                rmw_get_implementation_identifier());
    return sent == count ? 0 : 1;
}
