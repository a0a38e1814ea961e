// The C++ side of the ROS 1 tests (tests/ros/test_ros1_*.py):
//
//   ros1_peer write CHANNEL TYPE N [HZ]     nerve::Publisher<T>: messages 1..N
//   ros1_peer read CHANNEL TYPE N SECONDS   nerve::Reader<T>: N messages
//   ros1_peer rossub TOPIC TYPE N SECONDS   a roscpp subscriber node
//   ros1_peer rospub TOPIC TYPE N HZ        a roscpp publisher node; starts
//                                           once a subscriber is connected
//
// TYPE is imu, scan, cloud, image or grid (ros1_msgs.hpp). Readers print
// "ok I" for each message equal to make<T>(I) and "bad I" otherwise,
// and exit 0 once N good messages came, 1 on a bad one or a timeout, 2 on
// usage errors. roscpp takes ROS_MASTER_URI from the environment; it checks
// the md5sum of what it receives against T's, so `rossub` only gets data
// from a publisher that announced the right type.
#include "ros1_msgs.hpp"

#include <nerve/nerve.hpp>
#include <nerve/cxx/ros1.hpp>
#include <ros/ros.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

namespace {

int usage()
{
    std::fprintf(
        stderr,
        "usage: ros1_peer write|read|rossub|rospub NAME TYPE N [SECONDS|HZ]\n");
    return 2;
}

// Message i carries frame_id "frame<i>"; header.seq may have been set by
// a ROS publisher on the way (roscpp numbers the messages it sends), so
// it is taken as received.
template <class T> bool check(const T &m)
{
    const std::string &f = m.header.frame_id;
    const uint32_t i =
        f.rfind("frame", 0) == 0
            ? static_cast<uint32_t>(std::strtoul(f.c_str() + 5, nullptr, 10))
            : 0;
    T want = rtest::make<T>(i);
    want.header.seq = m.header.seq;
    const bool good = i != 0 && m == want;
    std::printf("%s %u\n", good ? "ok" : "bad", i);
    std::fflush(stdout);
    return good;
}

template <class T> int write(const std::string &ch, uint32_t n, double hz)
{
    // The tests write to a channel in several runs: reuse it if it exists.
    nerve::ChannelOptions o;
    o.exist_ok = true;
    auto pub = nerve::Publisher<T>::create(ch, o);
    if (!pub) {
        std::fprintf(stderr, "create %s: %s\n", ch.c_str(), pub.message());
        return 1;
    }
    for (uint32_t i = 1; i <= n; i++) {
        auto r = pub->publish(rtest::make<T>(i));
        if (!r) {
            std::fprintf(stderr, "publish: %s\n", r.message());
            return 1;
        }
        if (hz > 0) {
            std::this_thread::sleep_for(
                std::chrono::duration<double>(1.0 / hz));
        }
    }
    return 0;
}

template <class T> int read(const std::string &ch, uint32_t n, double secs)
{
    const auto end =
        std::chrono::steady_clock::now() +
        std::chrono::duration_cast<std::chrono::steady_clock::duration>(
            std::chrono::duration<double>(secs));
    nerve::Result<nerve::Reader<T>> rd = nerve::Reader<T>::open(ch);
    while (!rd && rd.code() == NERVE_ENOENT &&
           std::chrono::steady_clock::now() < end) {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        rd = nerve::Reader<T>::open(ch);
    }
    if (!rd) {
        std::fprintf(stderr, "open %s: %s\n", ch.c_str(), rd.message());
        return 1;
    }
    uint32_t good = 0;
    T m;
    while (good < n) {
        const auto left = end - std::chrono::steady_clock::now();
        if (left <= std::chrono::steady_clock::duration::zero()) {
            std::fprintf(stderr, "timeout after %u messages\n", good);
            return 1;
        }
        auto r =
            rd->wait_next(m, std::chrono::duration_cast<nerve::Duration>(left));
        if (r.timed_out()) {
            continue;
        }
        if (!r) {
            std::fprintf(stderr, "read: %s\n", r.message());
            return 1;
        }
        if (!check(m)) {
            return 1;
        }
        good++;
    }
    return 0;
}

template <class T> int rossub(const std::string &topic, uint32_t n, double secs)
{
    ros::NodeHandle nh;
    uint32_t good = 0;
    bool failed = false;
    ros::Subscriber sub =
        nh.subscribe<T>(topic, 100, [&](const typename T::ConstPtr &m) {
            if (check(*m)) {
                good++;
            } else {
                failed = true;
            }
        });
    const ros::WallTime end = ros::WallTime::now() + ros::WallDuration(secs);
    while (ros::ok() && good < n && !failed && ros::WallTime::now() < end) {
        ros::spinOnce();
        ros::WallDuration(0.005).sleep();
    }
    if (good < n) {
        std::fprintf(stderr, "rossub: %u of %u messages\n", good, n);
        return 1;
    }
    return 0;
}

template <class T> int rospub(const std::string &topic, uint32_t n, double hz)
{
    ros::NodeHandle nh;
    ros::Publisher pub = nh.advertise<T>(topic, 100);
    const ros::WallTime end = ros::WallTime::now() + ros::WallDuration(20.0);
    while (pub.getNumSubscribers() == 0 && ros::WallTime::now() < end) {
        ros::WallDuration(0.01).sleep();
    }
    if (pub.getNumSubscribers() == 0) {
        std::fprintf(stderr, "rospub: no subscriber on %s\n", topic.c_str());
        return 1;
    }
    ros::WallRate rate(hz);
    for (uint32_t i = 1; i <= n && ros::ok(); i++) {
        pub.publish(rtest::make<T>(i));
        rate.sleep();
    }
    return 0;
}

} // namespace

int main(int argc, char **argv)
{
    if (argc < 5) {
        return usage();
    }
    const std::string verb = argv[1], name = argv[2], type = argv[3];
    const uint32_t n =
        static_cast<uint32_t>(std::strtoul(argv[4], nullptr, 10));
    const double arg = argc > 5          ? std::strtod(argv[5], nullptr)
                       : verb == "write" ? 0.0
                                         : 10.0;
    if (verb == "rossub" || verb == "rospub") {
        int rargc = 1;
        ros::init(rargc, argv, "nerve_ros1_peer",
                  ros::init_options::AnonymousName |
                      ros::init_options::NoSigintHandler);
    }
    int rc = 2;
    const bool known = rtest::with_type(type, [&](auto *tag) {
        using T = std::remove_pointer_t<decltype(tag)>;
        if (verb == "write") {
            rc = write<T>(name, n, arg);
        } else if (verb == "read") {
            rc = read<T>(name, n, arg);
        } else if (verb == "rossub") {
            rc = rossub<T>(name, n, arg);
        } else if (verb == "rospub") {
            rc = rospub<T>(name, n, arg);
        } else {
            rc = usage();
        }
    });
    return known ? rc : usage();
}
