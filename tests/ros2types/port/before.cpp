// docs/ros2.md, "Porting an rclcpp node": an rclcpp program publishing
// sensor_msgs/msg/Imu at 100 Hz with a subscriber in the same program.
// Kept for the comparison with after.cpp; it needs a ROS 2 installation
// (rclcpp, sensor_msgs), so nerve's build does not compile it.
#include <rclcpp/rclcpp.hpp>
#include <sensor_msgs/msg/imu.hpp>

#include <chrono>
#include <cstdio>

static void on_imu(const sensor_msgs::msg::Imu &m)
{
    std::printf("imu %d: ax %.2f\n", m.header.stamp.sec,
                m.linear_acceleration.x);
}

int main(int argc, char **argv)
{
    rclcpp::init(argc, argv);
    auto node = rclcpp::Node::make_shared("imu_node");
    auto pub = node->create_publisher<sensor_msgs::msg::Imu>("imu", 100);
    auto sub = node->create_subscription<sensor_msgs::msg::Imu>(
        "imu", 100, [](const sensor_msgs::msg::Imu &m) { on_imu(m); });
    rclcpp::WallRate rate(std::chrono::milliseconds(10));
    for (int i = 1; i <= 100 && rclcpp::ok(); i++) {
        sensor_msgs::msg::Imu m;
        m.header.stamp.sec = i;
        m.header.frame_id = "imu";
        m.orientation.w = 1.0;
        m.linear_acceleration.x = 0.01 * i;
        pub->publish(m);
        rclcpp::spin_some(node);
        rate.sleep();
    }
    rclcpp::shutdown();
    return 0;
}
