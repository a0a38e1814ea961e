// IMU publisher: a driver process that publishes a 40-byte robot_msgs::Imu
// sample at a fixed rate (2 kHz by default, fuRom (K. Irie, RSJ 2017)'s IMU benchmark rate)
// on a nerve channel, writing each sample in place through a zero-copy
// loan.
//
//   imu_publisher [--channel NAME] [--rate 2000] [--duration SECONDS]
//                 [--count N] [--keep]
//
// Runs until SIGINT / SIGTERM, --duration seconds or --count samples. The
// channel (default example-UID-imu) is created if it does not exist, and
// removed on exit only if this run created it and --keep is not given: a
// channel that was there before (made by a user, a controller or an
// earlier run) is left alone. Prints how many samples it published.
#include "example_common.hpp"
#include "msgs.hpp"

#include <cmath>
#include <csignal>
#include <cstdio>

static const char USAGE[] =
    "usage: imu_publisher [--channel NAME] [--rate 2000] [--duration SEC]\n"
    "                     [--count N] [--keep]\n"
    "Publish a 40-byte IMU sample at --rate Hz on channel NAME (default\n"
    "example-UID-imu), written in place through a zero-copy loan, until\n"
    "Ctrl-C, --duration seconds or --count samples. Creates the channel if\n"
    "it does not exist; removes it on exit only if it created it (and not\n"
    "with --keep).\n";

namespace {
volatile std::sig_atomic_t g_stop = 0;
extern "C" void on_signal(int)
{
    g_stop = 1;
}
} // namespace

int main(int argc, char **argv)
{
    example::help(argc, argv, USAGE);
    const std::string channel =
        example::opt(argc, argv, "--channel", example::default_name("imu"));
    const double rate = example::opt_num(argc, argv, "--rate", 2000.0);
    const double duration = example::opt_num(argc, argv, "--duration", 0.0);
    const double count = example::opt_num(argc, argv, "--count", 0.0);
    if (rate <= 0) {
        std::fprintf(stderr, "imu_publisher: --rate must be positive\n");
        return 2;
    }
    std::signal(SIGINT, on_signal);
    std::signal(SIGTERM, on_signal);

    // Keep one second of samples: a logger may read them all.
    nerve::ChannelOptions o;
    o.slots =
        static_cast<uint64_t>(rate) < 1024 ? 1024 : static_cast<uint64_t>(rate);
    o.data_size = o.slots * 64;
    // A restarted publisher, or a controller that started first, may have
    // made the channel already: then it is theirs, used and left in place.
    bool created = false;
    auto pub = example::open_or_create<robot_msgs::Imu>(channel, o, &created);
    if (!pub) {
        std::fprintf(stderr, "imu_publisher: %s: %s\n", channel.c_str(),
                     pub.message());
        return 1;
    }

    const int64_t period = static_cast<int64_t>(1e9 / rate);
    const int64_t start = nerve_clock_now_ns();
    const int64_t end =
        duration > 0 ? start + static_cast<int64_t>(duration * 1e9) : 0;
    int64_t next = start;
    uint32_t seq = 0;
    int rc = 0;
    while (!g_stop && (end == 0 || next < end) &&
           (count <= 0 || seq < static_cast<uint32_t>(count))) {
        example::sleep_until(next);
        auto got = pub->loan();
        if (!got) {
            std::fprintf(stderr, "imu_publisher: loan: %s\n", got.message());
            rc = 1;
            break;
        }
        auto &loan = *got;
        const double t = static_cast<double>(next - start) * 1e-9;
        loan->stamp_ns = nerve_clock_now_ns();
        loan->accel[0] = static_cast<float>(0.2 * std::sin(2 * M_PI * 1.5 * t));
        loan->accel[2] = 9.81f;
        loan->gyro[1] = static_cast<float>(0.1 * std::cos(2 * M_PI * 0.5 * t));
        loan->temperature = 35.0f;
        loan->seq = ++seq;
        auto r = loan.publish();
        if (!r) {
            std::fprintf(stderr, "imu_publisher: publish: %s\n", r.message());
            rc = 1;
            break;
        }
        next += period;
    }
    std::printf("imu_publisher: published %u samples on %s at %.0f Hz\n", seq,
                channel.c_str(), rate);
    if (created && !example::flag(argc, argv, "--keep")) {
        (void)nerve::Channel::unlink(channel);
    }
    return rc;
}
