// What `ros2 component load` does, without ros2cli (not in the wheels): asks
// a component container (service <container>/_container/load_node) to load
// PLUGIN from the nerve_rclcpp_demo package.
// usage: nerve_rclcpp_load_component CONTAINER PLUGIN
// Exits 0 when the container loaded it, 1 otherwise or after 20 s.
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>

#include <composition_interfaces/srv/load_node.hpp>
#include <rclcpp/rclcpp.hpp>

int main(int argc, char **argv)
{
    rclcpp::init(argc, argv);
    if (argc < 3) {
        std::fprintf(stderr, "usage: %s CONTAINER PLUGIN\n", argv[0]);
        return 2;
    }
    using LoadNode = composition_interfaces::srv::LoadNode;
    auto node = std::make_shared<rclcpp::Node>("nerve_load_component");
    auto client = node->create_client<LoadNode>(std::string(argv[1]) +
                                                "/_container/load_node");
    if (!client->wait_for_service(std::chrono::seconds(20))) {
        std::fprintf(stderr, "load_component: no service %s\n",
                     client->get_service_name());
        return 1;
    }
    auto req = std::make_shared<LoadNode::Request>();
    req->package_name = "nerve_rclcpp_demo";
    req->plugin_name = argv[2];
    auto future = client->async_send_request(req);
    if (rclcpp::spin_until_future_complete(node, future,
                                           std::chrono::seconds(20)) !=
        rclcpp::FutureReturnCode::SUCCESS) {
        std::fprintf(stderr, "load_component: no reply from %s\n",
                     client->get_service_name());
        return 1;
    }
    auto res = future.get();
    std::printf("load_component: %s: success=%d unique_id=%lu node='%s' %s\n",
                argv[2], res->success,
                static_cast<unsigned long>(res->unique_id),
                res->full_node_name.c_str(), res->error_message.c_str());
    rclcpp::shutdown();
    return res->success ? 0 : 1;
}
