// docs/ros.md, "Porting a roscpp node": the roscpp version. An IMU driver
// publishes sensor_msgs/Imu at 100 Hz and a consumer in the same program
// subscribes to it. Built by tests/ros/CMakeLists.txt; running it needs a
// ROS master.
#include <ros/ros.h>
#include <sensor_msgs/Imu.h>

static void on_imu(const sensor_msgs::Imu &m)
{
    ROS_INFO("imu %u: ax %.2f", m.header.seq, m.linear_acceleration.x);
}

int main(int argc, char **argv)
{
    ros::init(argc, argv, "imu_node");
    ros::NodeHandle nh;
    ros::Publisher pub = nh.advertise<sensor_msgs::Imu>("imu", 100);
    ros::Subscriber sub = nh.subscribe("imu", 100, on_imu);

    ros::Rate rate(100);
    for (uint32_t i = 1; ros::ok() && i <= 100; i++) {
        sensor_msgs::Imu m;
        m.header.seq = i;
        m.header.frame_id = "imu";
        m.orientation.w = 1.0;
        m.linear_acceleration.x = 0.01 * i;
        pub.publish(m);
        ros::spinOnce();
        rate.sleep();
    }
    return 0;
}
