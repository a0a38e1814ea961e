// The fuRom table (seed 002, table 2) on this machine: latency from a send
// timestamp to receipt for ROS 1 messages passed by
//
//   nerve     the typed C++ API between two processes (nerve::Publisher<T>
//             and nerve::Reader<T>): "copy" publishes with publish(msg)
//             (serialized into the ring after the stamp) and reads with
//             wait_next(msg) (deserialized out of the ring); "zero-copy"
//             serializes into a loan, stamps it in place, commits, and the
//             reader reads the stamp from the bytes in the ring
//             (ros1::read_view), validating them afterwards;
//   ros       two roscpp processes over TCPROS on localhost (default
//             transport hints, as fuRom measured);
//   nodelet   two nodelets in one process (nodelet::Loader, the nodelet
//             manager's callback queues and threads), passing a
//             boost::shared_ptr (roscpp's intra-process path: no copy).
//
// Every sender fills its message first, then writes CLOCK_MONOTONIC into
// header.stamp and sends; every receiver takes CLOCK_MONOTONIC when the
// message is in its hands (callback entered, read returned, view
// validated). Messages: sensor_msgs/Imu at 2 kHz, sensor_msgs/LaserScan
// with 2000 ranges (8 KB) at 100 Hz, nav_msgs/OccupancyGrid 1024 x 1024
// (1 MiB) at 10 Hz. The first 0.5 s of each run, and at least one pass
// over nerve's data ring (header.seq 0), is warm-up and not counted; every
// later message is, and messages that never arrive are counted as lost.
//
//   furom nerve-sub  MSG RATE SECONDS CHANNEL copy|view [SPIN_US [LEAD_US]]
//   furom nerve-pub  MSG RATE SECONDS CHANNEL copy|loan
//   furom ros-sub    MSG RATE SECONDS TOPIC [nodelay]
//   furom ros-pub    MSG RATE SECONDS TOPIC
//   furom nodelet    MSG RATE SECONDS TOPIC
//   furom breakdown  MSG RATE SECONDS CHANNEL
//   furom hop        - RATE SECONDS CHANNEL [SPIN_US]   (FUROM_LEAD_US=...)
//
// MSG is imu, scan or grid. Receivers print one JSON line with the
// statistics (microseconds). bench/ros/run.sh runs the whole table.
// SPIN_US / LEAD_US set the reader's nerve::WaitPolicy (default: block
// at once); `nodelay` asks roscpp for TCP_NODELAY. `breakdown` times the
// steps of a hop in one process (serialize, deserialize, publish, loan,
// read and decode, zero-copy view; medians in ns) and `hop` the bare
// wake-up between two processes (an int64_t send time).
#include <nerve/nerve.hpp>
#include <nerve/cxx/ros1.hpp>

#include <nav_msgs/OccupancyGrid.h>
#include <nodelet/loader.h>
#include <nodelet/nodelet.h>
#include <ros/callback_queue.h>
#include <ros/ros.h>
#include <sensor_msgs/Imu.h>
#include <sensor_msgs/LaserScan.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <vector>

namespace {

int64_t now_ns()
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return int64_t(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

void stamp(std_msgs::Header &h, int64_t t)
{
    h.stamp.sec = uint32_t(t / 1000000000);
    h.stamp.nsec = uint32_t(t % 1000000000);
}

int64_t stamp_ns(uint32_t sec, uint32_t nsec)
{
    return int64_t(sec) * 1000000000 + nsec;
}

template <class T> T proto();
template <> sensor_msgs::Imu proto<sensor_msgs::Imu>()
{
    sensor_msgs::Imu m;
    m.header.frame_id = "imu";
    m.orientation.w = 1;
    m.linear_acceleration.z = 9.81;
    return m;
}
template <> sensor_msgs::LaserScan proto<sensor_msgs::LaserScan>()
{
    sensor_msgs::LaserScan m;
    m.header.frame_id = "laser";
    m.angle_min = -2.0f;
    m.angle_max = 2.0f;
    m.ranges.assign(2000, 5.0f);
    return m;
}
template <> nav_msgs::OccupancyGrid proto<nav_msgs::OccupancyGrid>()
{
    nav_msgs::OccupancyGrid m;
    m.header.frame_id = "map";
    m.info.width = 1024;
    m.info.height = 1024;
    m.info.resolution = 0.05f;
    m.data.assign(1024 * 1024, 50);
    return m;
}

// nerve's data ring for messages of `bytes`: 1 MiB or four messages.
uint64_t ring_bytes(size_t bytes)
{
    return std::max<uint64_t>(1 << 20, uint64_t(bytes) * 4);
}

struct run_spec {
    double rate = 0;
    double seconds = 0;
    size_t bytes = 0; // serialized message size
    // Warm-up: 0.5 s, and at least one pass over nerve's data ring, so
    // that no column pays first-touch page faults in counted messages.
    uint32_t warmup() const
    {
        const uint64_t ring =
            ring_bytes(bytes) / std::max<size_t>(bytes, 1) + 1;
        return uint32_t(std::max<uint64_t>({3, uint64_t(rate * 0.5), ring}));
    }
    uint32_t count() const
    {
        return uint32_t(rate * seconds);
    }
};

// Latencies of the counted messages, in ns, and the statistics line.
struct recorder {
    std::vector<int64_t> lat;
    uint32_t expected = 0;
    explicit recorder(uint32_t n) : expected(n)
    {
        lat.reserve(n);
    }
    void add(uint32_t seq, int64_t sent)
    {
        if (seq != 0 && lat.size() < lat.capacity()) {
            lat.push_back(now_ns() - sent);
        }
    }
    bool done() const
    {
        return lat.size() >= expected;
    }
    void print(const char *column, const char *msg, size_t bytes) const
    {
        std::vector<int64_t> v = lat;
        std::sort(v.begin(), v.end());
        const size_t n = v.size();
        double mean = 0, sd = 0;
        for (int64_t x : v) {
            mean += double(x);
        }
        mean = n ? mean / double(n) : 0;
        for (int64_t x : v) {
            sd += (double(x) - mean) * (double(x) - mean);
        }
        sd = n > 1 ? std::sqrt(sd / double(n - 1)) : 0;
        auto pct = [&](double p) {
            return n ? double(v[std::min(n - 1,
                                         size_t(p * double(n - 1) + 0.5))]) /
                           1e3
                     : 0.0;
        };
        std::printf("{\"column\": \"%s\", \"msg\": \"%s\", \"bytes\": %zu, "
                    "\"count\": %zu, "
                    "\"lost\": %zu, \"mean_us\": %.2f, \"sd_us\": %.2f, "
                    "\"p50_us\": %.2f, "
                    "\"p99_us\": %.2f, \"max_us\": %.2f}\n",
                    column, msg, bytes, n, size_t(expected) - n, mean / 1e3,
                    sd / 1e3, pct(0.5), pct(0.99),
                    n ? double(v[n - 1]) / 1e3 : 0.0);
        std::fflush(stdout);
    }
};

// Calls send(seq) at `rate` (absolute deadlines): warm-up messages with
// seq 0, then count() counted ones numbered from 1.
template <class F> void paced(const run_spec &r, F &&send)
{
    const int64_t period = int64_t(1e9 / r.rate);
    struct timespec next;
    clock_gettime(CLOCK_MONOTONIC, &next);
    const uint32_t total = r.warmup() + r.count();
    for (uint32_t i = 0; i < total; i++) {
        send(i < r.warmup() ? 0u : i - r.warmup() + 1);
        next.tv_nsec += period;
        while (next.tv_nsec >= 1000000000) {
            next.tv_nsec -= 1000000000;
            next.tv_sec++;
        }
        clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, nullptr);
    }
}

// ---- nerve ---------------------------------------------------------------

template <class T> nerve::ChannelOptions geometry()
{
    nerve::ChannelOptions o;
    o.data_size =
        ring_bytes(ros::serialization::serializationLength(proto<T>()));
    o.slots = 1024;
    o.exist_ok = true; // the subscriber may have created it first
    return o;
}

template <class T>
int nerve_sub(const run_spec &r, const char *name, bool view, const char *msg,
              long spin_us, long lead_us)
{
    auto rd = nerve::Reader<T>::open_or_create(name, geometry<T>());
    if (!rd) {
        std::fprintf(stderr, "open %s: %s\n", name, rd.message());
        return 1;
    }
    if (spin_us > 0) {
        // Opt-in busy polling (nerve::WaitPolicy): poll for up to
        // spin_us before blocking in the futex wait.
        rd->set_wait_policy(
            nerve::WaitPolicy{std::chrono::microseconds(spin_us),
                              std::chrono::microseconds(lead_us)});
    }
    std::printf("ready\n");
    std::fflush(stdout);
    recorder rec(r.count());
    T m;
    const size_t bytes = ros::serialization::serializationLength(proto<T>());
    while (!rec.done()) {
        if (view) {
            int64_t sent = 0;
            uint32_t seq = 0;
            auto res = nerve::ros1::read_view(
                *rd, NERVE_GET_NEXT | NERVE_F_WAIT, std::chrono::seconds(3),
                [&](const uint8_t *p, size_t len, const nerve::MsgInfo &) {
                    uint32_t s = 0, ns = 0;
                    if (nerve::ros1::stamp_of(p, len, s, ns)) {
                        std::memcpy(&seq, p, 4);
                        sent = stamp_ns(s, ns);
                    }
                });
            if (!res) {
                if (res.timed_out()) {
                    break;
                }
                continue; // overwritten while looked at: not delivered
            }
            rec.add(seq, sent);
        } else {
            auto res = rd->wait_next(m, std::chrono::seconds(3));
            if (!res) {
                if (res.timed_out()) {
                    break;
                }
                continue;
            }
            rec.add(m.header.seq,
                    stamp_ns(m.header.stamp.sec, m.header.stamp.nsec));
        }
    }
    const char *col =
        spin_us > 0 && lead_us > 0
            ? (view ? "nerve zero-copy, lead+spin" : "nerve copy, lead+spin")
        : spin_us > 0 ? (view ? "nerve zero-copy, spin" : "nerve copy, spin")
                      : (view ? "nerve zero-copy" : "nerve copy");
    rec.print(col, msg, bytes);
    return 0;
}

template <class T> int nerve_pub(const run_spec &r, const char *name, bool loan)
{
    auto pub = nerve::Publisher<T>::create(name, geometry<T>());
    if (!pub) {
        std::fprintf(stderr, "create %s: %s\n", name, pub.message());
        return 1;
    }
    T m = proto<T>();
    paced(r, [&](uint32_t seq) {
        m.header.seq = seq;
        if (loan) {
            auto l = pub->loan(m); // serialized into the ring
            if (l) {
                const int64_t t = now_ns();
                (*l)->set_stamp(uint32_t(t / 1000000000),
                                uint32_t(t % 1000000000));
                (void)l->publish();
            }
        } else {
            stamp(m.header, now_ns());
            (void)pub->publish(m);
        }
    });
    return 0;
}

// ---- roscpp over TCPROS ------------------------------------------------

template <class T>
int ros_sub(const run_spec &r, const char *topic, const char *msg, bool nodelay)
{
    ros::NodeHandle nh;
    recorder rec(r.count());
    // Default transport hints, as fuRom measured (Nagle's algorithm on),
    // or TCP_NODELAY on the connection (the subscriber asks for it).
    ros::TransportHints hints;
    if (nodelay) {
        hints = hints.tcpNoDelay();
    }
    ros::Subscriber sub = nh.subscribe<T>(
        topic, 1000,
        boost::function<void(const typename T::ConstPtr &)>(
            [&](const typename T::ConstPtr &m) {
                rec.add(m->header.seq,
                        stamp_ns(m->header.stamp.sec, m->header.stamp.nsec));
            }),
        ros::VoidConstPtr(), hints);
    std::printf("ready\n");
    std::fflush(stdout);
    ros::WallTime idle_end = ros::WallTime::now() + ros::WallDuration(30);
    size_t last = 0;
    while (ros::ok() && !rec.done() && ros::WallTime::now() < idle_end) {
        // Blocks on the callback queue's condition variable: no polling
        // delay is added to the latency.
        ros::getGlobalCallbackQueue()->callAvailable(ros::WallDuration(0.1));
        if (rec.lat.size() != last) {
            last = rec.lat.size();
            idle_end = ros::WallTime::now() + ros::WallDuration(3);
        }
    }
    rec.print(nodelay ? "ROS roscpp TCPROS, tcp_nodelay" : "ROS roscpp TCPROS",
              msg, ros::serialization::serializationLength(proto<T>()));
    return 0;
}

template <class T> int ros_pub(const run_spec &r, const char *topic)
{
    ros::NodeHandle nh;
    ros::Publisher pub = nh.advertise<T>(topic, 1000);
    const ros::WallTime end = ros::WallTime::now() + ros::WallDuration(20);
    while (pub.getNumSubscribers() == 0 && ros::WallTime::now() < end) {
        ros::WallDuration(0.01).sleep();
    }
    T m = proto<T>();
    paced(r, [&](uint32_t seq) {
        m.header.seq = seq; // roscpp leaves seq to the caller
        stamp(m.header, now_ns());
        pub.publish(m);
    });
    ros::WallDuration(0.5).sleep(); // let the last messages leave
    return 0;
}

// ---- nodelets passing pointers -----------------------------------------

std::atomic<bool> g_done{false};
run_spec g_run;
std::string g_topic, g_msg;

template <class T> class SubNodelet : public nodelet::Nodelet {
    recorder rec_{g_run.count()};
    ros::Subscriber sub_;
    void onInit() override
    {
        sub_ =
            getNodeHandle().subscribe<T>(g_topic, 1000, &SubNodelet::cb, this);
    }
    void cb(const boost::shared_ptr<const T> &m)
    {
        rec_.add(m->header.seq,
                 stamp_ns(m->header.stamp.sec, m->header.stamp.nsec));
        if (rec_.done() && !g_done.exchange(true)) {
            rec_.print("ROS nodelet pointer", g_msg.c_str(),
                       ros::serialization::serializationLength(proto<T>()));
        }
    }

public:
    void finish()
    {
        if (!g_done.exchange(true)) {
            rec_.print("ROS nodelet pointer", g_msg.c_str(),
                       ros::serialization::serializationLength(proto<T>()));
        }
    }
};

template <class T> class PubNodelet : public nodelet::Nodelet {
    ros::Publisher pub_;
    std::thread th_;
    void onInit() override
    {
        pub_ = getNodeHandle().advertise<T>(g_topic, 1000);
        th_ = std::thread([this] { run(); });
    }
    void run()
    {
        const ros::WallTime end = ros::WallTime::now() + ros::WallDuration(20);
        while (pub_.getNumSubscribers() == 0 && ros::WallTime::now() < end) {
            ros::WallDuration(0.01).sleep();
        }
        const T p = proto<T>();
        paced(g_run, [&](uint32_t seq) {
            // A new message each time (the receiver keeps a pointer to it),
            // filled, then stamped and handed over.
            auto m = boost::make_shared<T>(p);
            m->header.seq = seq;
            stamp(m->header, now_ns());
            pub_.publish(m);
        });
    }

public:
    ~PubNodelet() override
    {
        if (th_.joinable()) {
            th_.join();
        }
    }
};

template <class T> int nodelets()
{
    boost::shared_ptr<SubNodelet<T>> sub;
    nodelet::Loader loader(
        [&](const std::string &type) -> boost::shared_ptr<nodelet::Nodelet> {
            if (type == "bench/Sub") {
                sub = boost::make_shared<SubNodelet<T>>();
                return sub;
            }
            return boost::make_shared<PubNodelet<T>>();
        });
    nodelet::M_string remap;
    nodelet::V_string argv;
    if (!loader.load("/bench_sub", "bench/Sub", remap, argv) ||
        !loader.load("/bench_pub", "bench/Pub", remap, argv)) {
        std::fprintf(stderr, "nodelet load failed\n");
        return 1;
    }
    std::printf("ready\n");
    std::fflush(stdout);
    const ros::WallTime end =
        ros::WallTime::now() + ros::WallDuration(g_run.seconds + 25);
    while (!g_done && ros::WallTime::now() < end) {
        ros::WallDuration(0.05).sleep();
    }
    if (sub) {
        sub->finish();
    }
    sub.reset(); // the loader owns the nodelets and must destroy them
    loader.clear();
    return 0;
}

// ---- where a nerve hop's time goes ---------------------------------------

// Median of `n` timings of f(), in ns (each timing is one call).
template <class F> double median_ns(int n, F &&f)
{
    std::vector<int64_t> v(static_cast<size_t>(n));
    for (auto &x : v) {
        const int64_t t0 = now_ns();
        f();
        x = now_ns() - t0;
    }
    std::sort(v.begin(), v.end());
    return double(v[v.size() / 2]);
}

// One process, one message type: the steps of a hop timed one by one
// (median of many), apart from the wake-up (see `hop`). RATE and SECONDS
// are unused but kept for the common argument list.
template <class T>
int breakdown(const run_spec &, const char *name, const char *msg)
{
    auto pub = nerve::Publisher<T>::create(name, geometry<T>());
    if (!pub) {
        std::fprintf(stderr, "breakdown %s: %s\n", name, pub.message());
        return 1;
    }
    auto rd = nerve::Reader<T>::open(name);
    if (!rd) {
        std::fprintf(stderr, "breakdown %s: %s\n", name, rd.message());
        return 1;
    }
    T m = proto<T>(), in;
    const size_t bytes = ros::serialization::serializationLength(m);
    std::vector<uint8_t> buf(bytes);
    const int n = bytes > 100000 ? 200 : 20000;
    int64_t sink = 0;
    const double clk = median_ns(n, [&] { sink += now_ns(); });
    const double ser = median_ns(n, [&] {
        const uint32_t len = ros::serialization::serializationLength(m);
        ros::serialization::OStream os(buf.data(), len);
        ros::serialization::serialize(os, m);
    });
    const double des = median_ns(n, [&] {
        ros::serialization::IStream is(buf.data(), uint32_t(buf.size()));
        ros::serialization::deserialize(is, in);
    });
    // A fresh T each time, as a subscriber that hands messages on must.
    const double des_new = median_ns(n, [&] {
        T fresh;
        ros::serialization::IStream is(buf.data(), uint32_t(buf.size()));
        ros::serialization::deserialize(is, fresh);
        sink += fresh.header.seq;
    });
    const double put = median_ns(n, [&] { (void)pub->publish(m); });
    const double loan = median_ns(n, [&] {
        auto l = pub->loan(m);
        if (l) {
            (*l)->set_stamp(1, 2);
            (void)l->publish();
        }
    });
    std::vector<int64_t> g(static_cast<size_t>(n)), vw(static_cast<size_t>(n));
    for (int i = 0; i < n; i++) {
        (void)pub->publish(m);
        int64_t t0 = now_ns();
        auto res = rd->get_next(in);
        g[size_t(i)] = now_ns() - t0;
        sink += res ? 1 : 0;
        (void)pub->publish(m);
        t0 = now_ns();
        (void)nerve::ros1::read_view(
            *rd, NERVE_GET_NEXT, std::chrono::seconds(0),
            [&](const uint8_t *p, size_t len, const nerve::MsgInfo &) {
                uint32_t a = 0, b = 0;
                nerve::ros1::stamp_of(p, len, a, b);
                sink += a;
            });
        vw[size_t(i)] = now_ns() - t0;
    }
    std::sort(g.begin(), g.end());
    std::sort(vw.begin(), vw.end());
    std::printf(
        "{\"breakdown\": \"%s\", \"bytes\": %zu, \"clock_ns\": %.0f, "
        "\"ros_serialize_ns\": %.0f, \"ros_deserialize_reuse_ns\": %.0f, "
        "\"ros_deserialize_fresh_ns\": %.0f, \"nerve_publish_copy_ns\": %.0f, "
        "\"nerve_loan_publish_ns\": %.0f, \"nerve_get_next_decode_ns\": %.0f, "
        "\"nerve_view_stamp_check_ns\": %.0f, \"sink\": %lld}\n",
        msg, bytes, clk, ser, des, des_new, put, loan, double(g[g.size() / 2]),
        double(vw[vw.size() / 2]), (long long)(sink & 1));
    return 0;
}

// The bare wake-up hop between two processes: an int64_t (the send time)
// at RATE for SECONDS, read with wait_next() blocking (SPIN_US 0) or with
// a spin of SPIN_US first. Prints one statistics line.
int hop(const run_spec &r, const char *name, long spin_us)
{
    nerve::ChannelOptions o;
    o.slots = 1024;
    auto rd = nerve::Reader<int64_t>::open_or_create(name, o);
    if (!rd) {
        std::fprintf(stderr, "hop %s: %s\n", name, rd.message());
        return 1;
    }
    const long lead_us = std::getenv("FUROM_LEAD_US")
                             ? std::atol(std::getenv("FUROM_LEAD_US"))
                             : 0;
    rd->set_wait_policy(nerve::WaitPolicy{std::chrono::microseconds(spin_us),
                                          std::chrono::microseconds(lead_us)});
    const pid_t child = fork();
    if (child == 0) {
        auto pub = nerve::Publisher<int64_t>::open(name);
        if (!pub) {
            _exit(1);
        }
        paced(r, [&](uint32_t seq) {
            (void)pub->publish(seq == 0 ? int64_t(0) : now_ns());
        });
        _exit(0);
    }
    recorder rec(r.count());
    int64_t sent = 0;
    while (!rec.done()) {
        auto res = rd->wait_next(sent, std::chrono::seconds(3));
        if (!res) {
            if (res.timed_out()) {
                break;
            }
            continue;
        }
        if (sent != 0) {
            rec.add(1, sent);
        }
    }
    int st = 0;
    waitpid(child, &st, 0);
    rec.print(spin_us > 0
                  ? (lead_us > 0 ? "hop int64, lead+spin" : "hop int64, spin")
                  : "hop int64, blocking",
              "int64", 8);
    return 0;
}

template <class F> int with_msg(const std::string &msg, F &&f)
{
    if (msg == "imu") {
        return f(static_cast<sensor_msgs::Imu *>(nullptr));
    }
    if (msg == "scan") {
        return f(static_cast<sensor_msgs::LaserScan *>(nullptr));
    }
    if (msg == "grid") {
        return f(static_cast<nav_msgs::OccupancyGrid *>(nullptr));
    }
    std::fprintf(stderr, "furom: MSG is imu, scan or grid\n");
    return 2;
}

} // namespace

int main(int argc, char **argv)
{
    if (argc < 6) {
        std::fprintf(stderr,
                     "usage: furom nerve-sub|nerve-pub|ros-sub|ros-pub|nodelet "
                     "MSG RATE SECONDS NAME [copy|view|loan]\n");
        return 2;
    }
    const std::string mode = argv[1], msg = argv[2];
    if (mode == "hop") {
        run_spec hr;
        hr.rate = std::atof(argv[3]);
        hr.seconds = std::atof(argv[4]);
        hr.bytes = 8;
        return hr.rate > 0 && hr.seconds > 0
                   ? hop(hr, argv[5], argc > 6 ? std::atol(argv[6]) : 0)
                   : 2;
    }
    run_spec r;
    r.rate = std::atof(argv[3]);
    r.seconds = std::atof(argv[4]);
    const char *name = argv[5];
    const std::string how = argc > 6 ? argv[6] : "copy";
    if (r.rate <= 0 || r.seconds <= 0) {
        std::fprintf(stderr, "furom: RATE and SECONDS must be > 0\n");
        return 2;
    }
    if (mode.rfind("ros", 0) == 0 || mode == "nodelet") {
        int rargc = 1;
        std::string node = "furom_" + mode;
        std::replace(node.begin(), node.end(), '-', '_');
        ros::init(rargc, argv, node,
                  ros::init_options::AnonymousName |
                      ros::init_options::NoSigintHandler);
        ros::start();
    }
    g_run = r;
    g_topic = name;
    g_msg = msg;
    return with_msg(msg, [&](auto *tag) -> int {
        using T = std::remove_pointer_t<decltype(tag)>;
        r.bytes = ros::serialization::serializationLength(proto<T>());
        g_run = r;
        if (mode == "nerve-sub") {
            const long spin_us = argc > 7 ? std::atol(argv[7]) : 0;
            const long lead_us = argc > 8 ? std::atol(argv[8]) : 0;
            return nerve_sub<T>(r, name, how == "view", msg.c_str(), spin_us,
                                lead_us);
        }
        if (mode == "breakdown") {
            return breakdown<T>(r, name, msg.c_str());
        }
        if (mode == "nerve-pub") {
            return nerve_pub<T>(r, name, how == "loan");
        }
        if (mode == "ros-sub") {
            return ros_sub<T>(r, name, msg.c_str(), how == "nodelay");
        }
        if (mode == "ros-pub") {
            return ros_pub<T>(r, name);
        }
        if (mode == "nodelet") {
            return nodelets<T>();
        }
        std::fprintf(stderr, "furom: unknown mode %s\n", mode.c_str());
        return 2;
    });
}
