// Sync by time: pair each laser scan with the IMU sample taken at the same
// moment, using Reader::get_by_timestamp() (fuRom (K. Irie, RSJ 2017)'s synchronisation of two
// topics). Two sensor threads stand in for driver processes: an IMU at
// 500 Hz and a laser scanner at 40 Hz whose scans are written in place
// through a loan sized at loan time (360 ranges). The main thread waits
// for each scan and asks the IMU channel for the newest sample committed
// at or before the scan's commit time.
//
//   sync_by_time [--imu NAME] [--scan NAME] [--duration 1] [--keep]
//
// Channels default to example-UID-sync-imu / -sync-scan and are removed
// on exit unless --keep.
//
// Prints each pairing's time offset (only the first few) and a summary,
// and exits 1 if no scan could be paired.
#include "example_common.hpp"
#include "msgs.hpp"

#include <atomic>
#include <cstdio>
#include <thread>
#include <vector>

static const char USAGE[] =
    "usage: sync_by_time [--imu NAME] [--scan NAME] [--duration 1] [--keep]\n"
    "Pair each laser scan with the IMU sample taken at the same moment\n"
    "(Reader::get_by_timestamp). Channels default to example-UID-sync-imu\n"
    "and example-UID-sync-scan and are removed on exit unless --keep.\n";

// The IMU driver: a sample every 2 ms (500 Hz) from t0 until end.
static void imu_sensor(nerve::Publisher<robot_msgs::Imu> &pub, int64_t t0,
                       int64_t end, std::atomic<bool> &failed)
{
    uint32_t seq = 0;
    for (int64_t t = t0; t < end; t += 2000000) { // 500 Hz
        example::sleep_until(t);
        robot_msgs::Imu m{};
        m.stamp_ns = nerve_clock_now_ns();
        m.seq = ++seq;
        if (!pub.publish(m)) {
            failed = true;
        }
    }
}

// The laser driver: a scan of 360 ranges every 25 ms (40 Hz), written in
// place through a loan.
static void laser_sensor(nerve::Publisher<robot_msgs::LaserScan> &pub,
                         int64_t t0, int64_t end, std::atomic<bool> &failed)
{
    uint32_t n = 0;
    for (int64_t t = t0 + 1000000; t < end; t += 25000000) { // 40 Hz
        example::sleep_until(t);
        auto got = pub.loan(size_t{360});
        if (!got) {
            failed = true;
            continue;
        }
        auto &loan = *got;
        loan->header->stamp_ns = nerve_clock_now_ns();
        loan->header->angle_min = -3.14159f;
        loan->header->angle_increment = 2 * 3.14159f / 360;
        for (size_t i = 0; i < loan->ranges.size(); i++) {
            loan->ranges[i] = 2.0f + 0.001f * static_cast<float>((i + n) % 360);
        }
        n++;
        if (!loan.publish()) {
            failed = true;
        }
    }
}

struct Pairs {
    uint64_t paired = 0, unpaired = 0;
    int64_t worst_ns = 0; // the largest scan - IMU sample offset
};

// Pair each scan of a batch with the newest IMU sample at or before it.
static void pair_scans(nerve::Reader<robot_msgs::Imu> &imu_rd,
                       const std::vector<robot_msgs::LaserScan> &scans,
                       int64_t t0, Pairs &pairs)
{
    robot_msgs::Imu imu{};
    // The batch's commit times are not kept per element; a scan's own
    // stamp (taken just before commit) is the time to align to.
    for (const auto &s : scans) {
        auto m = imu_rd.get_by_timestamp(imu, s.header.stamp_ns);
        if (!m) {
            pairs.unpaired++;
            continue;
        }
        const int64_t offset = s.header.stamp_ns - imu.stamp_ns;
        pairs.worst_ns = std::max(pairs.worst_ns, offset);
        if (pairs.paired < 3) {
            std::printf("scan at %+.3f ms  <->  imu #%u at %+.3f ms "
                        "(offset %.3f ms)\n",
                        static_cast<double>(s.header.stamp_ns - t0) / 1e6,
                        imu.seq, static_cast<double>(imu.stamp_ns - t0) / 1e6,
                        static_cast<double>(offset) / 1e6);
        }
        pairs.paired++;
    }
}

int main(int argc, char **argv)
{
    example::help(argc, argv, USAGE);
    const std::string imu_name =
        example::opt(argc, argv, "--imu", example::default_name("sync-imu"));
    const std::string scan_name =
        example::opt(argc, argv, "--scan", example::default_name("sync-scan"));
    const double duration = example::opt_num(argc, argv, "--duration", 1.0);

    nerve::ChannelOptions io;
    io.slots = 1024; // two seconds of IMU history to search
    auto imu_pub = nerve::Publisher<robot_msgs::Imu>::create(imu_name, io);
    auto scan_pub = nerve::Publisher<robot_msgs::LaserScan>::create(scan_name);
    if (!imu_pub || !scan_pub) {
        std::fprintf(stderr, "sync_by_time: create: %s / %s\n",
                     imu_pub.message(), scan_pub.message());
        return 1;
    }
    auto imu_rd = nerve::Reader<robot_msgs::Imu>::open(imu_name);
    auto scan_rd = nerve::Reader<robot_msgs::LaserScan>::open(scan_name);
    if (!imu_rd || !scan_rd) {
        std::fprintf(stderr, "sync_by_time: open: %s / %s\n", imu_rd.message(),
                     scan_rd.message());
        return 1;
    }

    const int64_t t0 = nerve_clock_now_ns();
    const int64_t end = t0 + static_cast<int64_t>(duration * 1e9);
    std::atomic<bool> failed{false};
    std::thread imu_thread([&] { imu_sensor(*imu_pub, t0, end, failed); });
    std::thread scan_thread([&] {
        laser_sensor(*scan_pub, t0, end, failed);
        // Wake the main thread's wait so that it sees the end promptly.
        scan_rd->cancel();
    });

    std::vector<robot_msgs::LaserScan> scans;
    Pairs pairs;
    bool ending = false;
    while (!ending) {
        auto r = scan_rd->wait_unread(scans, std::chrono::seconds(2));
        if (r.cancelled()) {
            // The scanner is done: take what arrived before its cancel.
            scan_rd->cancel_clear();
            r = scan_rd->read_unread(scans);
            ending = true;
            if (!r) {
                break;
            }
        } else if (r.timed_out()) {
            break;
        } else if (!r) {
            std::fprintf(stderr, "sync_by_time: read: %s\n", r.message());
            failed = true;
            break;
        }
        pair_scans(*imu_rd, scans, t0, pairs);
    }
    imu_thread.join();
    scan_thread.join();
    std::printf(
        "sync_by_time: paired %llu scans with IMU samples (%llu without "
        "an earlier sample), worst offset %.3f ms\n",
        static_cast<unsigned long long>(pairs.paired),
        static_cast<unsigned long long>(pairs.unpaired),
        static_cast<double>(pairs.worst_ns) / 1e6);
    if (!example::flag(argc, argv, "--keep")) {
        (void)nerve::Channel::unlink(imu_name);
        (void)nerve::Channel::unlink(scan_name);
    }
    return failed || pairs.paired == 0 ? 1 : 0;
}
