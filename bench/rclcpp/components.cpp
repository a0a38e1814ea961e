// Two rclcpp components, loaded into rclcpp_components' component_container
// by nerve_rclcpp_load_component: a talker on "comp_chatter" (every 100 ms)
// and a listener that logs what it hears.
#include <chrono>
#include <memory>
#include <string>

#include <rclcpp/rclcpp.hpp>
#include <rclcpp_components/register_node_macro.hpp>
#include <std_msgs/msg/string.hpp>

namespace nerve_rclcpp_demo {

class Talker : public rclcpp::Node {
public:
    explicit Talker(const rclcpp::NodeOptions &options)
        : Node("comp_talker", options)
    {
        pub_ = create_publisher<std_msgs::msg::String>("comp_chatter", 10);
        timer_ = create_wall_timer(std::chrono::milliseconds(100), [this]() {
            std_msgs::msg::String m;
            m.data = "component hello " + std::to_string(++n_);
            RCLCPP_INFO(get_logger(), "sent '%s'", m.data.c_str());
            pub_->publish(m);
        });
    }

private:
    rclcpp::Publisher<std_msgs::msg::String>::SharedPtr pub_;
    rclcpp::TimerBase::SharedPtr timer_;
    int n_ = 0;
};

class Listener : public rclcpp::Node {
public:
    explicit Listener(const rclcpp::NodeOptions &options)
        : Node("comp_listener", options)
    {
        sub_ = create_subscription<std_msgs::msg::String>(
            "comp_chatter", 10, [this](const std_msgs::msg::String &m) {
                RCLCPP_INFO(get_logger(), "heard '%s'", m.data.c_str());
            });
    }

private:
    rclcpp::Subscription<std_msgs::msg::String>::SharedPtr sub_;
};

} // namespace nerve_rclcpp_demo

RCLCPP_COMPONENTS_REGISTER_NODE(nerve_rclcpp_demo::Talker)
RCLCPP_COMPONENTS_REGISTER_NODE(nerve_rclcpp_demo::Listener)
