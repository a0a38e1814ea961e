// Overhead of the C++ API over the C API: typed publish + read of the
// 40-byte robot_msgs::Imu versus the same through nerve_chan_put /
// nerve_chan_get, in one run, on one channel, in one thread.
//
//   bench_cxx_overhead [--rounds 200] [--batch 2000] [--channel NAME]
//
// One operation is a put of one sample followed by a get of the newest
// (fuRom (K. Irie, RSJ 2017)'s IMU case without the wake-up, so the layer's own cost is not
// buried under a context switch). Each round times a batch of operations
// through C and a batch through C++, in alternating order so that neither
// always runs second; a batch's time / size is one sample of ns/op. The
// program prints percentiles of those samples for both APIs, the ratio of
// their medians, and the median of the per-round ratios C++ / C (the two
// batches of a round run back to back, so this pairing cancels most of
// the drift of a shared machine; it is the headline number), then one
// JSON line with the host
// description (CPU, kernel, governor, isolated CPUs, PREEMPT_RT). It makes
// no pass / fail judgement on the numbers: it exits 1 only if an
// operation fails or delivers the wrong sample.
#include "example_common.hpp"
#include "msgs.hpp"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <string>
#include <sys/utsname.h>
#include <unistd.h>
#include <vector>

namespace {

std::string first_line(const char *path, const char *key = nullptr)
{
    std::ifstream f(path);
    std::string line;
    while (std::getline(f, line)) {
        if (!key) {
            return line;
        }
        if (line.rfind(key, 0) == 0) {
            auto c = line.find(':');
            return c == std::string::npos ? line : line.substr(c + 2);
        }
    }
    return "";
}

struct stats {
    double p50, p99, p999, max, mean;
};

stats summarize(std::vector<double> v)
{
    std::sort(v.begin(), v.end());
    auto at = [&](double q) {
        size_t i =
            static_cast<size_t>(q * static_cast<double>(v.size() - 1) + 0.5);
        return v[std::min(i, v.size() - 1)];
    };
    double sum = 0;
    for (double x : v) {
        sum += x;
    }
    return {at(0.5), at(0.99), at(0.999), v.back(),
            sum / static_cast<double>(v.size())};
}

robot_msgs::Imu sample(uint32_t seq)
{
    robot_msgs::Imu m{};
    m.stamp_ns = seq;
    m.accel[2] = 9.81f;
    m.seq = seq;
    return m;
}

} // namespace

int main(int argc, char **argv)
{
    example::help(
        argc, argv,
        "usage: bench_cxx_overhead [--rounds 200] [--batch 2000] "
        "[--channel NAME]\n"
        "Time a put + newest get of a 40-byte IMU sample through the C++\n"
        "API against the same through the C API, alternating, and print\n"
        "the ratio. The channel (default bench-cxx-PID) is removed.\n");
    const long rounds =
        static_cast<long>(example::opt_num(argc, argv, "--rounds", 200));
    const long batch =
        static_cast<long>(example::opt_num(argc, argv, "--batch", 2000));
    const std::string name = example::opt(
        argc, argv, "--channel", "bench-cxx-" + std::to_string(getpid()));
    if (rounds < 1 || batch < 1) {
        std::fprintf(stderr,
                     "bench_cxx_overhead: --rounds and --batch must be >= 1\n");
        return 2;
    }

    auto pub = nerve::Publisher<robot_msgs::Imu>::create(name);
    if (!pub) {
        std::fprintf(stderr, "bench_cxx_overhead: %s: %s\n", name.c_str(),
                     pub.message());
        return 1;
    }
    auto rd = nerve::Reader<robot_msgs::Imu>::open(name);
    nerve_chan *cw = nullptr, *cr = nullptr;
    if (!rd || nerve_chan_open(name.c_str(), NERVE_O_WRITE, &cw) != 0 ||
        nerve_chan_open(name.c_str(), NERVE_O_READ, &cr) != 0) {
        std::fprintf(stderr, "bench_cxx_overhead: open failed\n");
        (void)nerve::Channel::unlink(name);
        return 1;
    }

    uint32_t seq = 0;
    bool bad = false;
    // One batch through the C API; returns ns per operation.
    auto run_c = [&]() {
        const int64_t t = nerve_clock_now_ns();
        for (long i = 0; i < batch; i++) {
            robot_msgs::Imu m = sample(++seq), out;
            struct nerve_put_info pi;
            struct nerve_get_info gi;
            if (nerve_chan_put(cw, &m, sizeof m, NERVE_FOREVER, &pi, 0) != 0 ||
                nerve_chan_get(cr, &out, sizeof out, 0, 0, &gi,
                               NERVE_GET_NEWEST) != 0 ||
                gi.len != sizeof out || out.seq != seq) {
                bad = true;
            }
        }
        return static_cast<double>(nerve_clock_now_ns() - t) /
               static_cast<double>(batch);
    };
    // The same through the C++ API.
    auto run_cxx = [&]() {
        const int64_t t = nerve_clock_now_ns();
        for (long i = 0; i < batch; i++) {
            robot_msgs::Imu m = sample(++seq), out;
            if (!pub->publish(m) || !rd->get_newest(out) || out.seq != seq) {
                bad = true;
            }
        }
        return static_cast<double>(nerve_clock_now_ns() - t) /
               static_cast<double>(batch);
    };

    // Warm up caches, page mappings and the branch predictors of both.
    run_c();
    run_cxx();
    std::vector<double> c_ns, cxx_ns;
    for (long r = 0; r < rounds; r++) {
        if (r % 2 == 0) {
            c_ns.push_back(run_c());
            cxx_ns.push_back(run_cxx());
        } else {
            cxx_ns.push_back(run_cxx());
            c_ns.push_back(run_c());
        }
    }
    nerve_chan_close(cw);
    nerve_chan_close(cr);
    (void)nerve::Channel::unlink(name);
    if (bad) {
        std::fprintf(
            stderr,
            "bench_cxx_overhead: an operation failed or read a wrong sample\n");
        return 1;
    }

    const stats c = summarize(c_ns), x = summarize(cxx_ns);
    const double ratio = x.p50 / c.p50;
    std::vector<double> paired;
    for (size_t i = 0; i < c_ns.size(); i++) {
        paired.push_back(cxx_ns[i] / c_ns[i]);
    }
    const stats pr = summarize(paired);
    std::printf(
        "put + get newest of a %zu-byte IMU sample, %ld rounds x %ld ops "
        "(ns/op per batch)\n",
        sizeof(robot_msgs::Imu), rounds, batch);
    std::printf("%-6s %9s %9s %9s %9s %9s\n", "api", "p50", "p99", "p99.9",
                "max", "mean");
    std::printf("%-6s %9.1f %9.1f %9.1f %9.1f %9.1f\n", "C", c.p50, c.p99,
                c.p999, c.max, c.mean);
    std::printf("%-6s %9.1f %9.1f %9.1f %9.1f %9.1f\n", "C++", x.p50, x.p99,
                x.p999, x.max, x.mean);
    std::printf("ratio of medians C++ / C: %.4f\n", ratio);
    std::printf("overhead of C++ (median of per-round ratios): %+.2f %% "
                "(goal <= +5 %%)\n",
                (pr.p50 - 1) * 100);

    struct utsname u;
    uname(&u);
    const std::string cpu = first_line("/proc/cpuinfo", "model name");
    const std::string gov =
        first_line("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor");
    const std::string iso = first_line("/sys/devices/system/cpu/isolated");
    const bool rt =
        std::string(u.version).find("PREEMPT_RT") != std::string::npos;
    std::printf(
        "{\"bench\":\"cxx_overhead\",\"msg_bytes\":%zu,\"rounds\":%ld,"
        "\"batch\":%ld,"
        "\"c_ns\":{\"p50\":%.1f,\"p99\":%.1f,\"p999\":%.1f,\"max\":%.1f},"
        "\"cxx_ns\":{\"p50\":%.1f,\"p99\":%.1f,\"p999\":%.1f,\"max\":%.1f},"
        "\"ratio_p50\":%.4f,\"paired_ratio_p50\":%.4f,\"host\":{\"cpu\":\"%s\","
        "\"ncpu\":%ld,\"kernel\":\"%s\","
        "\"governor\":\"%s\",\"isolated\":\"%s\",\"preempt_rt\":%s}}\n",
        sizeof(robot_msgs::Imu), rounds, batch, c.p50, c.p99, c.p999, c.max,
        x.p50, x.p99, x.p999, x.max, ratio, pr.p50, cpu.c_str(),
        sysconf(_SC_NPROCESSORS_ONLN), u.release, gov.c_str(), iso.c_str(),
        rt ? "true" : "false");
    return 0;
}
