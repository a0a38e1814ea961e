// ros1.hpp with ROS message types compiles with the strict flags the C++
// headers promise (tests/ros/header_check.sh), with and without exceptions.
#include <nerve/nerve.hpp>
#include <nerve/cxx/ros1.hpp>
#include <sensor_msgs/Imu.h>
#include <nav_msgs/OccupancyGrid.h>
int main()
{
    auto p = nerve::Publisher<sensor_msgs::Imu>::create("x");
    auto r = nerve::Reader<nav_msgs::OccupancyGrid>::open("y");
    (void)p;
    (void)r;
    return 0;
}
