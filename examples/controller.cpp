// Controller: subscribes to the IMU channel through a nerve::Node and, for
// each sample, computes a torque command and publishes it on the command
// channel. The subscription takes only the newest sample (a controller
// acts on the current state and would only fall behind by handling every
// queued one); pass --every to get every sample instead.
//
//   controller [--imu NAME] [--cmd NAME] [--duration SECONDS] [--count N]
//              [--every] [--keep]
//
// Default names example-UID-imu and example-UID-cmd (imu_publisher's
// default is the same IMU channel). A channel is removed on exit only if
// this run created it and --keep is not given: a channel that existed
// before it started (a user's, or the publisher's) is left alone.
//
// Stops on SIGINT / SIGTERM (the handler calls Node::stop(), which is
// async-signal-safe), after --duration seconds (a timer thread calls
// Node::stop()), or after --count commands. Creates the IMU channel if the
// publisher has not yet, so the two may start in any order. Prints the
// number of samples received and missed and of commands published, and
// exits 1 if it published none.
#include "example_common.hpp"
#include "msgs.hpp"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <csignal>
#include <cstdio>
#include <mutex>
#include <thread>

static const char USAGE[] =
    "usage: controller [--imu NAME] [--cmd NAME] [--duration SEC] [--count N]\n"
    "                  [--every] [--keep]\n"
    "Subscribe to the IMU channel (default example-UID-imu), publish a\n"
    "torque command per sample on the command channel (default\n"
    "example-UID-cmd); the newest sample only unless --every. Stops on\n"
    "Ctrl-C, after --duration seconds or --count commands. Creates the\n"
    "channels that do not exist, and removes on exit only those it created\n"
    "(none with --keep).\n";

namespace {
nerve::Node *g_node = nullptr;
extern "C" void on_signal(int)
{
    if (g_node) {
        g_node->stop();
    }
}
} // namespace

int main(int argc, char **argv)
{
    example::help(argc, argv, USAGE);
    const std::string imu_name =
        example::opt(argc, argv, "--imu", example::default_name("imu"));
    const std::string cmd_name =
        example::opt(argc, argv, "--cmd", example::default_name("cmd"));
    const double duration = example::opt_num(argc, argv, "--duration", 0.0);
    const double count = example::opt_num(argc, argv, "--count", 0.0);

    bool made_cmd = false;
    auto pub =
        example::open_or_create<robot_msgs::Command>(cmd_name, {}, &made_cmd);
    if (!pub) {
        std::fprintf(stderr, "controller: %s: %s\n", cmd_name.c_str(),
                     pub.message());
        return 1;
    }

    nerve::Node node;
    uint64_t commands = 0;
    int64_t worst_age_ns = 0;
    int rc = 0;
    nerve::SubscribeOptions so;
    so.mode = example::flag(argc, argv, "--every") ? nerve::Delivery::every
                                                   : nerve::Delivery::newest;
    // Create the IMU channel if the publisher has not yet (same geometry
    // as imu_publisher's default), remembering whether this run made it.
    nerve::ChannelOptions imu_o;
    imu_o.slots = 2000;
    imu_o.data_size = 2000 * 64;
    bool made_imu = false;
    {
        auto made = example::create_if_missing<robot_msgs::Imu>(imu_name, imu_o,
                                                                &made_imu);
        if (!made) {
            std::fprintf(stderr, "controller: %s: %s\n", imu_name.c_str(),
                         made.message());
            if (made_cmd) {
                (void)nerve::Channel::unlink(cmd_name);
            }
            return 1;
        }
    }
    auto sub = node.subscribe<robot_msgs::Imu>(
        imu_name,
        [&](const robot_msgs::Imu &imu, const nerve::MsgInfo &info) {
            // A PD-like law on the angular rate: enough to show the flow.
            robot_msgs::Command c{};
            c.imu_stamp_ns = imu.stamp_ns;
            c.imu_seq = imu.seq;
            for (int j = 0; j < 3; j++) {
                c.torque[j] = -2.0f * imu.gyro[j];
                c.torque[3 + j] = -0.5f * imu.accel[j];
            }
            c.stamp_ns = nerve_clock_now_ns();
            worst_age_ns = std::max(worst_age_ns, c.stamp_ns - info.time_ns);
            auto r = pub->publish(c);
            if (!r) {
                std::fprintf(stderr, "controller: publish: %s\n", r.message());
                rc = 1;
                node.stop();
                return;
            }
            commands++;
            if (count > 0 && commands >= static_cast<uint64_t>(count)) {
                node.stop();
            }
        },
        so);
    if (!sub) {
        std::fprintf(stderr, "controller: %s: %s\n", imu_name.c_str(),
                     sub.message());
        if (made_cmd) {
            (void)nerve::Channel::unlink(cmd_name);
        }
        if (made_imu) {
            (void)nerve::Channel::unlink(imu_name);
        }
        return 1;
    }

    g_node = &node;
    std::signal(SIGINT, on_signal);
    std::signal(SIGTERM, on_signal);

    // --duration: a timer thread stops the node (stop() from another thread).
    std::mutex m;
    std::condition_variable cv;
    bool done = false;
    std::thread timer;
    if (duration > 0) {
        timer = std::thread([&] {
            std::unique_lock<std::mutex> lk(m);
            cv.wait_for(lk, std::chrono::duration<double>(duration),
                        [&] { return done; });
            node.stop();
        });
    }

    auto r = node.spin();
    if (!r) {
        std::fprintf(stderr, "controller: spin: %s\n", r.message());
        rc = 1;
    }
    if (timer.joinable()) {
        {
            std::lock_guard<std::mutex> lk(m);
            done = true;
        }
        cv.notify_one();
        timer.join();
    }
    g_node = nullptr;

    const auto &st = sub->stats();
    std::printf(
        "controller: received %llu imu samples (missed %llu, errors %llu), "
        "published %llu commands, worst sample age %.1f us\n",
        static_cast<unsigned long long>(st.received),
        static_cast<unsigned long long>(st.missed),
        static_cast<unsigned long long>(st.errors),
        static_cast<unsigned long long>(commands),
        static_cast<double>(worst_age_ns) / 1e3);
    if (!example::flag(argc, argv, "--keep")) {
        if (made_cmd) {
            (void)nerve::Channel::unlink(cmd_name);
        }
        if (made_imu) {
            (void)nerve::Channel::unlink(imu_name);
        }
    }
    if (commands == 0) {
        std::fprintf(stderr, "controller: no command published\n");
        rc = 1;
    }
    return rc;
}
