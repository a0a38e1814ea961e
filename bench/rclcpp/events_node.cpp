// One node on rclcpp's EventsExecutor: a timer publishes on "events_chatter"
// to a subscription of the same node, and calls the node's own parameter service
// (rcl_interfaces/srv/GetParameters),
// so the executor must be woken by rmw's listener callbacks for a
// subscription, a client and a service. Exits 0 once COUNT messages
// (argv[1], default 10) and COUNT service replies arrived, 1 after 20 s.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include <rclcpp/experimental/executors/events_executor/events_executor.hpp>
#include <rclcpp/rclcpp.hpp>
#include <rcl_interfaces/srv/get_parameters.hpp>
#include <std_msgs/msg/string.hpp>

int main(int argc, char **argv)
{
    rclcpp::init(argc, argv);
    int count = argc > 1 ? std::atoi(argv[1]) : 10;
    auto node = std::make_shared<rclcpp::Node>("nerve_events_node");
    node->declare_parameter("answer", 42);
    int msgs = 0, replies = 0, sent = 0;
    auto check_done = [&]() {
        if (msgs >= count && replies >= count)
            rclcpp::shutdown();
    };
    auto sub = node->create_subscription<std_msgs::msg::String>(
        "events_chatter", 10, [&](const std_msgs::msg::String &m) {
            std::printf("events_node: heard '%s'\n", m.data.c_str());
            ++msgs;
            check_done();
        });
    auto pub =
        node->create_publisher<std_msgs::msg::String>("events_chatter", 10);
    using GetParameters = rcl_interfaces::srv::GetParameters;
    auto client =
        node->create_client<GetParameters>("nerve_events_node/get_parameters");
    int calls = 0;
    // Publishes COUNT messages, and calls the service COUNT times once it is
    // discovered (service_is_ready), one of each per tick.
    auto timer = node->create_wall_timer(std::chrono::milliseconds(100), [&]() {
        if (sent < count) {
            std_msgs::msg::String m;
            m.data = "event " + std::to_string(++sent);
            pub->publish(m);
        }
        if (calls >= count || !client->service_is_ready())
            return;
        ++calls;
        auto req = std::make_shared<GetParameters::Request>();
        req->names.push_back("answer");
        client->async_send_request(
            req, [&](rclcpp::Client<GetParameters>::SharedFuture f) {
                std::printf(
                    "events_node: service replied answer=%ld\n",
                    static_cast<long>(f.get()->values.at(0).integer_value));
                ++replies;
                check_done();
            });
    });
    auto deadline = node->create_wall_timer(std::chrono::seconds(20),
                                            []() { rclcpp::shutdown(); });
    rclcpp::experimental::executors::EventsExecutor exec;
    exec.add_node(node);
    exec.spin();
    std::printf("events_node: %d messages, %d service replies of %d (rmw %s)\n",
                msgs, replies, count, rmw_get_implementation_identifier());
    return msgs >= count && replies >= count ? 0 : 1;
}
