// rclcpp listener: prints what arrives on "chatter" and exits 0 after COUNT
// messages (argv[1], default 10), or 1 after 20 s without them.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>

#include <rclcpp/rclcpp.hpp>
#include <std_msgs/msg/string.hpp>

int main(int argc, char **argv)
{
    rclcpp::init(argc, argv);
    int count = argc > 1 ? std::atoi(argv[1]) : 10;
    auto node = std::make_shared<rclcpp::Node>("nerve_listener");
    int got = 0;
    auto sub = node->create_subscription<std_msgs::msg::String>(
        "chatter", rclcpp::QoS(10).reliable().transient_local(),
        [&](const std_msgs::msg::String &msg) {
            std::printf("listener: heard '%s'\n", msg.data.c_str());
            std::fflush(stdout);
            if (++got >= count)
                rclcpp::shutdown();
        });
    rclcpp::executors::SingleThreadedExecutor exec;
    exec.add_node(node);
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (rclcpp::ok() && std::chrono::steady_clock::now() < deadline)
        exec.spin_once(std::chrono::milliseconds(100));
    std::printf("listener: %d of %d received\n", got, count);
    return got >= count ? 0 : 1;
}
