// bench_ros2_cdr: encode + decode of ROS 2 messages, nerve's generated
// types (include/nerve/cxx/ros2.hpp) against Fast-CDR (Debian's
// libfastcdr 1.0.26, the serializer of Fast DDS and rmw_fastrtps) with
// types written for it by hand, side by side in one run.
//
// Cases: sensor_msgs/Imu, sensor_msgs/LaserScan (720 ranges and
// intensities) and sensor_msgs/PointCloud2 of 64 KiB, 1 MiB and 4 MiB.
// Each implementation encodes into a buffer sized beforehand and decodes
// into one reused message object (vectors keep their capacity, as a
// subscriber's would). nerve's PointCloud2 is measured twice: decoding
// into PointCloud2 (a copy of the points, like Fast-CDR) and into
// PointCloud2View (a span into the buffer, the zero-copy read path).
//
// Before timing, every case checks that both libraries write the same
// bytes and read each other's. Timing: batches of ops, per-op time of each
// batch; p50/p99/max over the batches, printed as JSON lines, then a table
// of the p50 ratios nerve / Fast-CDR.
//
//   bench_ros2_cdr [--batches N] [--quick]
#include <nerve/ros2/sensor_msgs/msg/imu.hpp>
#include <nerve/ros2/sensor_msgs/msg/laser_scan.hpp>
#include <nerve/ros2/sensor_msgs/msg/point_cloud2.hpp>

#include <fastcdr/Cdr.h>
#include <fastcdr/FastBuffer.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>
#include <vector>

namespace fc = eprosima::fastcdr;
namespace sm = nerve::ros2::sensor_msgs::msg;

// ---- the types, written for Fast-CDR -----------------------------------

namespace fcdr {

struct Header {
    int32_t sec = 0;
    uint32_t nanosec = 0;
    std::string frame_id;
    void ser(fc::Cdr &c) const
    {
        c << sec << nanosec << frame_id;
    }
    void des(fc::Cdr &c)
    {
        c >> sec >> nanosec >> frame_id;
    }
};

struct Imu {
    Header header;
    std::array<double, 4> orientation{};
    std::array<double, 9> orientation_covariance{};
    std::array<double, 3> angular_velocity{};
    std::array<double, 9> angular_velocity_covariance{};
    std::array<double, 3> linear_acceleration{};
    std::array<double, 9> linear_acceleration_covariance{};
    void ser(fc::Cdr &c) const
    {
        header.ser(c);
        c << orientation << orientation_covariance << angular_velocity
          << angular_velocity_covariance << linear_acceleration
          << linear_acceleration_covariance;
    }
    void des(fc::Cdr &c)
    {
        header.des(c);
        c >> orientation >> orientation_covariance >> angular_velocity >>
            angular_velocity_covariance >> linear_acceleration >>
            linear_acceleration_covariance;
    }
};

struct LaserScan {
    Header header;
    float angle_min = 0, angle_max = 0, angle_increment = 0, time_increment = 0,
          scan_time = 0, range_min = 0, range_max = 0;
    std::vector<float> ranges, intensities;
    void ser(fc::Cdr &c) const
    {
        header.ser(c);
        c << angle_min << angle_max << angle_increment << time_increment
          << scan_time << range_min << range_max << ranges << intensities;
    }
    void des(fc::Cdr &c)
    {
        header.des(c);
        c >> angle_min >> angle_max >> angle_increment >> time_increment >>
            scan_time >> range_min >> range_max >> ranges >> intensities;
    }
};

struct PointField {
    std::string name;
    uint32_t offset = 0;
    uint8_t datatype = 0;
    uint32_t count = 0;
    void ser(fc::Cdr &c) const
    {
        c << name << offset << datatype << count;
    }
    void des(fc::Cdr &c)
    {
        c >> name >> offset >> datatype >> count;
    }
};

struct PointCloud2 {
    Header header;
    uint32_t height = 0, width = 0;
    std::vector<PointField> fields;
    bool is_bigendian = false;
    uint32_t point_step = 0, row_step = 0;
    std::vector<uint8_t> data;
    bool is_dense = false;
    void ser(fc::Cdr &c) const
    {
        header.ser(c);
        c << height << width << static_cast<uint32_t>(fields.size());
        for (const auto &f : fields) {
            f.ser(c);
        }
        c << is_bigendian << point_step << row_step << data << is_dense;
    }
    void des(fc::Cdr &c)
    {
        header.des(c);
        uint32_t n = 0;
        c >> height >> width >> n;
        fields.resize(n);
        for (auto &f : fields) {
            f.des(c);
        }
        c >> is_bigendian >> point_step >> row_step >> data >> is_dense;
    }
};

// Encode with the encapsulation header; the length written.
template <class T> size_t encode(const T &m, std::vector<char> &buf)
{
    fc::FastBuffer fb(buf.data(), buf.size());
    fc::Cdr c(fb, fc::Cdr::DEFAULT_ENDIAN, fc::Cdr::DDS_CDR);
    c.serialize_encapsulation();
    m.ser(c);
    return c.getSerializedDataLength();
}

template <class T> void decode(const char *p, size_t n, T &m)
{
    fc::FastBuffer fb(const_cast<char *>(p), n);
    fc::Cdr c(fb, fc::Cdr::DEFAULT_ENDIAN, fc::Cdr::DDS_CDR);
    c.read_encapsulation();
    m.des(c);
}

} // namespace fcdr

// ---- the messages --------------------------------------------------------

static void fill_header(nerve::ros2::std_msgs::msg::Header &h)
{
    h.stamp.sec = 1700000000;
    h.stamp.nanosec = 123456789;
    h.frame_id = "base_link";
}

static sm::Imu nerve_imu()
{
    sm::Imu m;
    fill_header(m.header);
    m.orientation.w = 1;
    m.angular_velocity.x = 0.1;
    m.linear_acceleration.z = 9.81;
    for (int i = 0; i < 9; i++) {
        m.orientation_covariance[i] = i;
    }
    return m;
}

static fcdr::Imu fast_imu(const sm::Imu &n)
{
    fcdr::Imu m;
    m.header = {n.header.stamp.sec, n.header.stamp.nanosec, n.header.frame_id};
    m.orientation = {n.orientation.x, n.orientation.y, n.orientation.z,
                     n.orientation.w};
    m.orientation_covariance = n.orientation_covariance;
    m.angular_velocity = {n.angular_velocity.x, n.angular_velocity.y,
                          n.angular_velocity.z};
    m.angular_velocity_covariance = n.angular_velocity_covariance;
    m.linear_acceleration = {n.linear_acceleration.x, n.linear_acceleration.y,
                             n.linear_acceleration.z};
    m.linear_acceleration_covariance = n.linear_acceleration_covariance;
    return m;
}

static sm::LaserScan nerve_scan()
{
    sm::LaserScan m;
    fill_header(m.header);
    m.angle_min = -3.14f;
    m.angle_max = 3.14f;
    m.angle_increment = 6.28f / 720;
    m.range_max = 30;
    for (int i = 0; i < 720; i++) {
        m.ranges.push_back(1.0f + 0.01f * i);
        m.intensities.push_back(100.0f);
    }
    return m;
}

static fcdr::LaserScan fast_scan(const sm::LaserScan &n)
{
    fcdr::LaserScan m;
    m.header = {n.header.stamp.sec, n.header.stamp.nanosec, n.header.frame_id};
    m.angle_min = n.angle_min;
    m.angle_max = n.angle_max;
    m.angle_increment = n.angle_increment;
    m.time_increment = n.time_increment;
    m.scan_time = n.scan_time;
    m.range_min = n.range_min;
    m.range_max = n.range_max;
    m.ranges = n.ranges;
    m.intensities = n.intensities;
    return m;
}

static sm::PointCloud2 nerve_cloud(size_t bytes)
{
    sm::PointCloud2 m;
    fill_header(m.header);
    const char *names[] = {"x", "y", "z", "intensity"};
    for (uint32_t i = 0; i < 4; i++) {
        sm::PointField f;
        f.name = names[i];
        f.offset = 4 * i;
        f.datatype = sm::PointField::FLOAT32;
        f.count = 1;
        m.fields.push_back(f);
    }
    m.height = 1;
    m.point_step = 16;
    m.width = static_cast<uint32_t>(bytes / 16);
    m.row_step = static_cast<uint32_t>(bytes);
    m.data.resize(bytes);
    for (size_t i = 0; i < bytes; i++) {
        m.data[i] = static_cast<uint8_t>(i * 31);
    }
    m.is_dense = true;
    return m;
}

static fcdr::PointCloud2 fast_cloud(const sm::PointCloud2 &n)
{
    fcdr::PointCloud2 m;
    m.header = {n.header.stamp.sec, n.header.stamp.nanosec, n.header.frame_id};
    m.height = n.height;
    m.width = n.width;
    for (const auto &f : n.fields) {
        m.fields.push_back({f.name, f.offset, f.datatype, f.count});
    }
    m.is_bigendian = n.is_bigendian;
    m.point_step = n.point_step;
    m.row_step = n.row_step;
    m.data = n.data;
    m.is_dense = n.is_dense;
    return m;
}

// ---- timing ----------------------------------------------------------------

static double now_ns()
{
    timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e9 + t.tv_nsec;
}

static volatile size_t sink;

struct Stats {
    double p50, p99, max;
    size_t samples;
};

template <class F> static Stats measure(F &&op, int batches, int per_batch)
{
    std::vector<double> v;
    for (int w = 0; w < per_batch; w++) {
        op(); // warm caches and capacities
    }
    for (int b = 0; b < batches; b++) {
        const double t0 = now_ns();
        for (int i = 0; i < per_batch; i++) {
            op();
        }
        v.push_back((now_ns() - t0) / per_batch);
    }
    std::sort(v.begin(), v.end());
    auto pct = [&](double p) {
        return v[std::min(v.size() - 1, static_cast<size_t>(p * v.size()))];
    };
    return Stats{pct(0.50), pct(0.99), v.back(), v.size()};
}

static void fail(const char *what)
{
    std::fprintf(stderr, "bench_ros2_cdr: %s\n", what);
    std::exit(1);
}

struct Row {
    std::string name;
    Stats nerve, fast;
    std::string note;
};

static void print_json(const std::string &c, const char *impl, const Stats &s,
                       size_t bytes)
{
    std::printf("{\"case\":\"%s\",\"impl\":\"%s\",\"bytes\":%zu,"
                "\"unit\":\"ns per encode+decode\",\"batches\":%zu,"
                "\"p50\":%.1f,\"p99\":%.1f,\"max\":%.1f}\n",
                c.c_str(), impl, bytes, s.samples, s.p50, s.p99, s.max);
}

template <class N, class V, class FT>
static void run_case(const std::string &name, const N &nmsg, const FT &fmsg,
                     int batches, int per_batch, std::vector<Row> &rows)
{
    const size_t n = nerve::ros2::encoded_size(nmsg);
    std::vector<uint8_t> nb(n);
    std::vector<char> fb(n + 64);
    nerve::ros2::encode(nmsg, nb.data(), n);
    const size_t fl = fcdr::encode(fmsg, fb);
    // Same bytes, each reads the other's.
    if (fl != n || std::memcmp(fb.data(), nb.data(), n) != 0) {
        fail(("bytes differ from Fast-CDR's for " + name).c_str());
    }
    N back;
    if (nerve::ros2::decode(fb.data(), fl, back) != 0 || !(back == nmsg)) {
        fail(("nerve does not read Fast-CDR's bytes of " + name).c_str());
    }
    FT fback;
    fcdr::decode(reinterpret_cast<const char *>(nb.data()), n, fback);

    N out;
    Stats sn = measure(
        [&] {
            const size_t len = nerve::ros2::encoded_size(nmsg);
            nerve::ros2::encode(nmsg, nb.data(), len);
            if (nerve::ros2::decode(nb.data(), len, out) != 0) {
                fail("decode");
            }
            sink = out.header.frame_id.size();
        },
        batches, per_batch);
    FT fout;
    Stats sf = measure(
        [&] {
            const size_t len = fcdr::encode(fmsg, fb);
            fcdr::decode(fb.data(), len, fout);
            sink = fout.header.frame_id.size();
        },
        batches, per_batch);
    print_json(name, "nerve", sn, n);
    print_json(name, "fastcdr", sf, n);
    rows.push_back({name, sn, sf, "decode into the owning type"});
    if constexpr (!std::is_same_v<V, N>) {
        V vout;
        Stats sv = measure(
            [&] {
                const size_t len = nerve::ros2::encoded_size(nmsg);
                nerve::ros2::encode(nmsg, nb.data(), len);
                if (nerve::ros2::decode(nb.data(), len, vout) != 0) {
                    fail("decode view");
                }
                sink = vout.data.size();
            },
            batches, per_batch);
        // The zero-copy read alone: what a subscriber of the ring pays.
        Stats sd = measure(
            [&] {
                if (nerve::ros2::decode(nb.data(), n, vout) != 0) {
                    fail("decode view");
                }
                sink = vout.data.size();
            },
            batches, per_batch);
        FT fd;
        Stats sfd = measure(
            [&] {
                fcdr::decode(reinterpret_cast<const char *>(nb.data()), n, fd);
                sink = fd.data.size();
            },
            batches, per_batch);
        print_json(name + " (view decode)", "nerve", sv, n);
        print_json(name + " decode only (view)", "nerve", sd, n);
        print_json(name + " decode only", "fastcdr", sfd, n);
        rows.push_back({name + ", view decode", sv, sf,
                        "nerve decodes into PointCloud2View"});
        rows.push_back({name + ", decode only", sd, sfd,
                        "nerve: view (span into the buffer); Fast-CDR: copy"});
    }
}

int main(int argc, char **argv)
{
    int batches = 200;
    bool quick = false;
    for (int i = 1; i < argc; i++) {
        if (std::strcmp(argv[i], "--batches") == 0 && i + 1 < argc) {
            batches = std::atoi(argv[++i]);
        } else if (std::strcmp(argv[i], "--quick") == 0) {
            quick = true;
        } else {
            std::fprintf(stderr, "usage: %s [--batches N] [--quick]\n",
                         argv[0]);
            return 2;
        }
    }
    if (quick) {
        batches = 5;
    }
    std::vector<Row> rows;
    const auto imu = nerve_imu();
    run_case<sm::Imu, sm::Imu>("Imu", imu, fast_imu(imu), batches,
                               quick ? 10 : 2000, rows);
    const auto scan = nerve_scan();
    run_case<sm::LaserScan, sm::LaserScan>("LaserScan 720", scan,
                                           fast_scan(scan), batches,
                                           quick ? 10 : 500, rows);
    for (size_t kib : {64, 1024, 4096}) {
        const auto c = nerve_cloud(kib << 10);
        run_case<sm::PointCloud2, sm::PointCloud2View>(
            "PointCloud2 " + std::to_string(kib) + " KiB", c, fast_cloud(c),
            quick ? batches : std::max(20, batches / 4),
            quick ? 2 : (kib >= 1024 ? 10 : 100), rows);
    }
    std::printf("\n| case | nerve p50 ns | Fast-CDR p50 ns | ratio | note |\n"
                "|---|---:|---:|---:|---|\n");
    for (const auto &r : rows) {
        std::printf("| %s | %.1f | %.1f | %.2f | %s |\n", r.name.c_str(),
                    r.nerve.p50, r.fast.p50, r.nerve.p50 / r.fast.p50,
                    r.note.c_str());
    }
    return 0;
}
