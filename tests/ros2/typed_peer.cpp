// The nerve side of the typed interop test (test_ros2_typed.py): a C++
// program on nerve's generated ROS 2 types (include/nerve/cxx/ros2.hpp,
// issue 25) whose channels `nerve ros2` carries to and from the DDS peers
// of this directory. No DDS here: only nerve::Publisher / nerve::Reader.
//
//   typed_peer create KIND CHANNEL   create the channel (Publisher<T>)
//   typed_peer pub KIND CHANNEL N    publish messages 0..N-1, 20 a second
//                                    (PointCloud2 as a PointCloud2View
//                                    whose data spans a caller's buffer)
//   typed_peer read KIND CHANNEL N   read what the channel holds with
//                                    Reader<T> (waiting up to 30 s for N)
//                                    and compare every field with message
//                                    i; PointCloud2 also through
//                                    ros2::read_view (spans into the ring)
//
// KIND is Imu or PointCloud2; message i is the same function of i as
// rclpy_peer.make() and cyclone_peer's make_*(). read prints one JSON line
// {"n": .., "bad": .., "idx": [..]} (idx: the stamp.sec of each message
// in channel order). Exit status 0, 1 on a failure, 2 on bad usage.
#include <nerve/nerve.hpp>
#include <nerve/ros2/sensor_msgs/msg/imu.hpp>
#include <nerve/ros2/sensor_msgs/msg/point_cloud2.hpp>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

namespace sm = nerve::ros2::sensor_msgs::msg;

constexpr uint32_t kCloudPoints = 65536; // 16-byte points: 1 MiB of data
constexpr int kMaxN = 64;

sm::Imu make_imu(int i)
{
    sm::Imu m;
    m.header.stamp.sec = i;
    m.header.stamp.nanosec = 1000u + static_cast<uint32_t>(i);
    m.header.frame_id = "imu" + std::string(static_cast<size_t>(i % 3), '_');
    m.orientation.w = 1.0;
    m.orientation.x = 0.25 * i;
    m.angular_velocity.x = 0.5 * i;
    m.linear_acceleration.z = 9.81;
    for (size_t k = 0; k < 9; k++) {
        m.orientation_covariance[k] = static_cast<double>(i + int(k));
        m.angular_velocity_covariance[k] = 0.1 * static_cast<double>(k);
        m.linear_acceleration_covariance[k] = -1.0;
    }
    return m;
}

std::vector<uint8_t> cloud_data(int i)
{
    std::vector<uint8_t> d(16 * kCloudPoints);
    for (uint32_t k = 0; k < d.size(); k++) {
        d[k] = static_cast<uint8_t>((k + static_cast<uint32_t>(i)) % 251);
    }
    return d;
}

// Everything of message i but its data (the caller's span or vector).
template <class C> void cloud_head(C &m, int i)
{
    static const char *const names[4] = {"x", "y", "z", "intensity"};
    m.header.stamp.sec = i;
    m.header.frame_id = "lidar";
    m.height = 1;
    m.width = kCloudPoints;
    m.fields.resize(4);
    for (uint32_t k = 0; k < 4; k++) {
        m.fields[k].name = names[k];
        m.fields[k].offset = 4 * k;
        m.fields[k].datatype = sm::PointField::FLOAT32;
        m.fields[k].count = 1;
    }
    m.is_bigendian = false;
    m.point_step = 16;
    m.row_step = 16 * kCloudPoints;
    m.is_dense = true;
}

sm::PointCloud2 make_cloud(int i)
{
    sm::PointCloud2 m;
    cloud_head(m, i);
    m.data = cloud_data(i);
    return m;
}

// A view read from the ring against message i, field by field.
bool same_view(const sm::PointCloud2View &v, int i)
{
    const sm::PointCloud2 e = make_cloud(i);
    if (v.header.stamp.sec != e.header.stamp.sec ||
        v.header.stamp.nanosec != e.header.stamp.nanosec ||
        v.header.frame_id != e.header.frame_id || v.height != e.height ||
        v.width != e.width || v.fields.size() != e.fields.size() ||
        v.is_bigendian != e.is_bigendian || v.point_step != e.point_step ||
        v.row_step != e.row_step || v.is_dense != e.is_dense ||
        v.data.size() != e.data.size() ||
        std::memcmp(v.data.data(), e.data.data(), e.data.size()) != 0) {
        return false;
    }
    for (size_t k = 0; k < e.fields.size(); k++) {
        if (!(v.fields[k] == e.fields[k])) {
            return false;
        }
    }
    return true;
}

int usage()
{
    std::fprintf(stderr, "usage: typed_peer create|pub|read Imu|PointCloud2 "
                         "CHANNEL [N]\n");
    return 2;
}

template <class T> int create(const std::string &chan)
{
    nerve::ChannelOptions o;
    o.slots = 32;
    o.data_size = 8 << 20;
    auto pub = nerve::Publisher<T>::create(chan, o);
    if (!pub) {
        std::fprintf(stderr, "typed_peer: create %s: %s\n", chan.c_str(),
                     nerve_err_name(pub.code()));
        return 1;
    }
    return 0;
}

int publish(bool imu, const std::string &chan, int n)
{
    auto each = [&](auto &pub, auto &&make) {
        if (!pub) {
            std::fprintf(stderr, "typed_peer: open %s: %s\n", chan.c_str(),
                         nerve_err_name(pub.code()));
            return 1;
        }
        for (int i = 0; i < n; i++) {
            auto r = make(*pub, i);
            if (!r) {
                std::fprintf(stderr, "typed_peer: publish %d: %s\n", i,
                             nerve_err_name(r.code()));
                return 1;
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
        }
        std::printf("{\"published\": %d}\n", n);
        return 0;
    };
    if (imu) {
        auto pub = nerve::Publisher<sm::Imu>::open(chan);
        return each(pub, [](nerve::Publisher<sm::Imu> &p, int i) {
            return p.publish(make_imu(i));
        });
    }
    // The view publisher of the same channel type: data is a span over
    // this buffer, encoded straight into the ring.
    auto pub = nerve::Publisher<sm::PointCloud2View>::open(chan);
    return each(pub, [](nerve::Publisher<sm::PointCloud2View> &p, int i) {
        const std::vector<uint8_t> data = cloud_data(i);
        sm::PointCloud2View v;
        cloud_head(v, i);
        v.data = nerve::Span<const uint8_t>(data.data(), data.size());
        return p.publish(v);
    });
}

template <class T>
int read(const std::string &chan, int n, T (*make)(int),
         void (*also)(const std::string &, int, int &))
{
    auto rd = nerve::Reader<T>::open(chan);
    if (!rd) {
        std::fprintf(stderr, "typed_peer: open %s: %s\n", chan.c_str(),
                     nerve_err_name(rd.code()));
        return 1;
    }
    rd->seek(0);
    const auto end =
        std::chrono::steady_clock::now() + std::chrono::seconds(30);
    int got = 0, bad = 0, idx[kMaxN];
    T m;
    while (got < n && std::chrono::steady_clock::now() < end) {
        auto r = rd->wait_next(m, std::chrono::milliseconds(200));
        if (r.timed_out() || r.nothing_new()) {
            continue;
        }
        if (!r) {
            std::fprintf(stderr, "typed_peer: read: %s\n",
                         nerve_err_name(r.code()));
            bad++;
            break;
        }
        const int i = m.header.stamp.sec;
        idx[got++] = i;
        bad += i < 0 || i >= kMaxN || !(m == make(i));
    }
    if (also != nullptr) {
        also(chan, got, bad);
    }
    std::printf("{\"n\": %d, \"bad\": %d, \"idx\": [", got, bad);
    for (int k = 0; k < got; k++) {
        std::printf("%s%d", k ? ", " : "", idx[k]);
    }
    std::printf("]}\n");
    return 0;
}

// The same messages again through ros2::read_view: a PointCloud2View
// whose spans point into the ring, checked before the read is validated.
void read_cloud_views(const std::string &chan, int n, int &bad)
{
    auto rd = nerve::Reader<sm::PointCloud2>::open(chan);
    if (!rd) {
        bad++;
        return;
    }
    rd->seek(0);
    sm::PointCloud2View scratch;
    for (int k = 0; k < n; k++) {
        bool ok = false;
        auto r = nerve::ros2::read_view(
            *rd, scratch, NERVE_GET_NEXT, std::chrono::seconds(0),
            [&](const sm::PointCloud2View &v, const nerve::MsgInfo &) {
                ok = same_view(v, v.header.stamp.sec);
            });
        if (!r || !ok) {
            std::fprintf(stderr, "typed_peer: view %d: %s\n", k,
                         r ? "fields differ" : nerve_err_name(r.code()));
            bad++;
        }
    }
}

} // namespace

int main(int argc, char **argv)
{
    if (argc < 4) {
        return usage();
    }
    const std::string mode = argv[1], kind = argv[2], chan = argv[3];
    const bool imu = kind == "Imu";
    if (!imu && kind != "PointCloud2") {
        return usage();
    }
    if (mode == "create" && argc == 4) {
        return imu ? create<sm::Imu>(chan) : create<sm::PointCloud2>(chan);
    }
    const int n = argc == 5 ? std::atoi(argv[4]) : -1;
    if (n < 0 || n > kMaxN) {
        return usage();
    }
    if (mode == "pub") {
        return publish(imu, chan, n);
    }
    if (mode == "read") {
        return imu ? read<sm::Imu>(chan, n, make_imu, nullptr)
                   : read<sm::PointCloud2>(chan, n, make_cloud,
                                           read_cloud_views);
    }
    return usage();
}
