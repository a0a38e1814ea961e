// The generated ROS 2 message types (include/nerve/cxx/ros2.hpp) in nerve's
// typed C++ API: channel metadata, round trips through channels, the view
// twins, bounds, hand-computed bytes for what rosbags cannot check
// (wstrings), and bad input. Byte-for-byte checks against rosbags and
// rclpy are in test_ros2_types.py (through ros2types_peer).
#include "../cxx/cxx_test.hpp"

#include <nerve/ros2/nerve_test_msgs/msg/all_kinds.hpp>
#include <nerve/ros2/nerve_test_msgs/msg/blob.hpp>
#include <nerve/ros2/nerve_test_msgs/msg/empty.hpp>
#include <nerve/ros2/nerve_test_msgs/msg/w_strings.hpp>
#include <nerve/ros2/geometry_msgs/msg/vector3.hpp>
#include <nerve/ros2/sensor_msgs/msg/image.hpp>
#include <nerve/ros2/sensor_msgs/msg/imu.hpp>
#include <nerve/ros2/sensor_msgs/msg/point_cloud2.hpp>

#include <cstring>
#include <type_traits>
#include <vector>

// What rclcpp's generated headers declare, in the global namespace: nerve's
// types live in nerve::ros2, so both can be used in one translation unit.
namespace sensor_msgs {
namespace msg {
struct Imu {
    int not_nerve = 0;
};
} // namespace msg
} // namespace sensor_msgs

namespace {

namespace sm = nerve::ros2::sensor_msgs::msg;
namespace ntm = nerve::ros2::nerve_test_msgs::msg;
using Bytes = std::vector<uint8_t>;

sm::Imu make_imu(int i)
{
    sm::Imu m;
    m.header.stamp.sec = 100 + i;
    m.header.stamp.nanosec = 5000u + static_cast<uint32_t>(i);
    m.header.frame_id = "imu_link";
    m.orientation.w = 1.0;
    m.angular_velocity.x = 0.25 * i;
    m.linear_acceleration.z = 9.81;
    for (size_t k = 0; k < 9; k++) {
        m.orientation_covariance[k] = static_cast<double>(k) + i;
    }
    return m;
}

ntm::AllKinds make_all()
{
    ntm::AllKinds m;
    m.b = true;
    m.by = 0xab;
    m.c = 'x';
    m.i8 = -3;
    m.u8 = 250;
    m.i16 = -1234;
    m.u16 = 60000;
    m.i32 = -7;
    m.u32 = 4000000000u;
    m.i64 = -(int64_t(1) << 40);
    m.u64 = UINT64_MAX;
    m.f32 = 1.5f;
    m.f64 = -2.25;
    m.s = "hello";
    m.sb = "12345";
    m.i32_arr = {1, -2, 3};
    m.b_arr = {true, false};
    m.s_arr = {"", "b"};
    m.n_arr[1].c = "n";
    m.bytes = {1, 2, 3};
    m.i16_seq = {-1, 2};
    m.b_seq = {false, true, true};
    m.s_seq = {"p", "qq"};
    m.n_seq.resize(2);
    m.n_seq[0].b = 3.5;
    m.f64_bseq = {1.0, 2.0, 3.0};
    m.sb_bseq = {"abc", ""};
    m.u8_bseq = {9, 9, 9, 9};
    m.nested.a = 7;
    m.last = 1;
    return m;
}

class Ros2Types : public nt::ChannelTest {};

TEST_F(Ros2Types, ImuThroughChannelWithRos2Metadata)
{
    const std::string n = name("imu");
    auto pub = nerve::Publisher<sm::Imu>::create(n);
    ASSERT_TRUE(pub) << pub.code();
    auto meta = pub->channel().meta();
    ASSERT_TRUE(meta);
    EXPECT_EQ(meta->type, "sensor_msgs/msg/Imu");
    EXPECT_EQ(meta->encoding, "cdr");
    EXPECT_EQ(meta->schema.rfind("std_msgs/Header header\n", 0), 0u);
    EXPECT_NE(meta->schema.find("\nMSG: geometry_msgs/Quaternion\n"),
              std::string::npos);
    auto rd = nerve::Reader<sm::Imu>::open(n);
    ASSERT_TRUE(rd);
    for (int i = 0; i < 3; i++) {
        ASSERT_TRUE(pub->publish(make_imu(i)));
    }
    for (int i = 0; i < 3; i++) {
        sm::Imu got;
        auto r = rd->get_next(got);
        ASSERT_TRUE(r.has_data()) << r.code();
        EXPECT_EQ(got, make_imu(i));
    }
    // The channel holds exactly nerve::ros2::encode()'s bytes.
    nerve_chan *c = rd->native_handle();
    std::vector<uint8_t> buf(4096);
    nerve_get_info gi;
    ASSERT_EQ(nerve_chan_get(c, buf.data(), buf.size(), 0, 0, &gi,
                             NERVE_GET_NEWEST | NERVE_F_REPEAT),
              0);
    buf.resize(gi.len);
    EXPECT_EQ(buf, nerve::ros2::encode(make_imu(2)));
    EXPECT_EQ(Bytes(buf.begin(), buf.begin() + 4), Bytes({0, 1, 0, 0}));
}

TEST_F(Ros2Types, ARos1OrRawReaderCannotOpenIt)
{
    const std::string n = name("mismatch");
    auto pub = nerve::Publisher<sm::Imu>::create(n);
    ASSERT_TRUE(pub);
    auto wrong =
        nerve::Reader<nerve::ros2::geometry_msgs::msg::Vector3>::open(n);
    EXPECT_EQ(wrong.code(), NERVE_EMISMATCH);
    struct RawImu {
        double v[10];
    };
    EXPECT_EQ(nerve::Reader<RawImu>::open(n).code(), NERVE_EMISMATCH);
}

TEST_F(Ros2Types, TriviallyCopyableMessagesStillUseCdr)
{
    using V3 = nerve::ros2::geometry_msgs::msg::Vector3;
    static_assert(std::is_trivially_copyable_v<V3>);
    EXPECT_EQ(nerve::Codec<V3>::encoding(), "cdr");
    V3 v;
    v.x = 1;
    EXPECT_EQ(nerve::ros2::encoded_size(v), 4u + 24u);
    // The rclcpp-like type beside it is untouched.
    EXPECT_EQ(::sensor_msgs::msg::Imu{}.not_nerve, 0);
}

TEST_F(Ros2Types, NodeSubscribes)
{
    const std::string n = name("node");
    auto pub = nerve::Publisher<sm::Imu>::create(n);
    ASSERT_TRUE(pub);
    nerve::Node node;
    std::vector<int32_t> secs;
    auto sub = node.subscribe<sm::Imu>(
        n, [&](const sm::Imu &m) { secs.push_back(m.header.stamp.sec); });
    ASSERT_TRUE(sub);
    ASSERT_TRUE(pub->publish(make_imu(1)));
    ASSERT_TRUE(pub->publish(make_imu(2)));
    for (int i = 0; i < 10 && secs.size() < 2; i++) {
        (void)node.spin_once(std::chrono::seconds(1));
    }
    EXPECT_EQ(secs, (std::vector<int32_t>{101, 102}));
}

TEST_F(Ros2Types, AllKindsRoundTrip)
{
    const ntm::AllKinds m = make_all();
    const Bytes b = nerve::ros2::encode(m);
    ASSERT_EQ(b.size(), nerve::ros2::encoded_size(m));
    ntm::AllKinds back;
    ASSERT_EQ(nerve::ros2::decode(b.data(), b.size(), back), 0);
    EXPECT_EQ(back, m);
    // Bytes after the message (DDS padding, rclpy's slack) are ignored.
    Bytes padded = b;
    padded.insert(padded.end(), {0, 0, 0, 7, 7, 7, 7, 7});
    back = ntm::AllKinds{};
    EXPECT_EQ(nerve::ros2::decode(padded.data(), padded.size(), back), 0);
    EXPECT_EQ(back, m);
}

TEST_F(Ros2Types, ConstantsAndDefaults)
{
    EXPECT_EQ(ntm::AllKinds::U8_CONST, 200);
    EXPECT_EQ(ntm::AllKinds::I8_CONST, -5);
    EXPECT_EQ(ntm::AllKinds::U64_CONST, UINT64_MAX);
    EXPECT_EQ(ntm::AllKinds::F64_CONST, 1.5);
    EXPECT_TRUE(ntm::AllKinds::B_CONST);
    EXPECT_STREQ(ntm::AllKinds::S_CONST, "hello");
    EXPECT_EQ(sm::PointField::FLOAT32, 7);
    ntm::AllKinds a;
    EXPECT_EQ(a.with_default, 5);
    ntm::WStrings w;
    EXPECT_EQ(w.f, 2.5f);
    EXPECT_EQ(w.s, "hi");
    EXPECT_EQ(w.arr, (std::array<int16_t, 3>{1, -2, 3}));
}

// wstrings as rosidl_typesupport_fastrtps and rmw_cyclonedds write them:
// a uint32 count of UTF-16 units, each unit as a uint32. Computed by hand.
TEST_F(Ros2Types, WStringsBytesByHand)
{
    ntm::WStrings m;
    m.lead = 7;
    m.ws = u"h\u00e9";
    m.ws_arr = {u"a", u""};
    m.ws_seq = {u"xy"};
    m.tail = 9;
    // clang-format off
    const Bytes want = {
        0, 1, 0, 0,                                     // encapsulation
        7, 0, 0, 0,                                     // lead, padding
        2, 0, 0, 0, 'h', 0, 0, 0, 0xe9, 0, 0, 0,        // ws
        0, 0, 0, 0,                                     // wsb
        1, 0, 0, 0, 'a', 0, 0, 0, 0, 0, 0, 0,           // ws_arr
        1, 0, 0, 0, 2, 0, 0, 0, 'x', 0, 0, 0, 'y', 0, 0, 0, // ws_seq
        0, 0, 0x20, 0x40,                               // f = 2.5
        3, 0, 0, 0, 'h', 'i', 0,                        // s = "hi"
        0,                                              // padding
        1, 0, 0xfe, 0xff, 3, 0,                         // arr
        9};                                             // tail
    // clang-format on
    EXPECT_EQ(nerve::ros2::encode(m), want);
    ntm::WStrings back;
    ASSERT_EQ(nerve::ros2::decode(want.data(), want.size(), back), 0);
    EXPECT_EQ(back, m);
    // A unit above 0xffff is not UTF-16.
    Bytes bad = want;
    bad[14] = 1; // the unit 'h' becomes 0x10068
    EXPECT_EQ(nerve::ros2::decode(bad.data(), bad.size(), back), NERVE_EDECODE);
}

TEST_F(Ros2Types, EmptyMessageIsOneByte)
{
    EXPECT_EQ(nerve::ros2::encode(ntm::Empty{}), Bytes({0, 1, 0, 0, 0}));
}

TEST_F(Ros2Types, BoundsRefuseToEncode)
{
    const std::string n = name("bounds");
    auto pub = nerve::Publisher<ntm::AllKinds>::create(n);
    ASSERT_TRUE(pub);
    ntm::AllKinds m = make_all();
    EXPECT_NE(nerve::ros2::encoded_size(m), SIZE_MAX);
    m.sb = "123456"; // string<=5
    EXPECT_EQ(nerve::ros2::encoded_size(m), SIZE_MAX);
    auto r = pub->publish(m);
    EXPECT_EQ(r.code(), NERVE_EMSGSIZE);
    m = make_all();
    m.u8_bseq.push_back(1); // uint8[<=4]
    EXPECT_EQ(nerve::ros2::encoded_size(m), SIZE_MAX);
    m = make_all();
    m.sb_bseq[0] = "abcd"; // string<=3[<=2]
    EXPECT_EQ(nerve::ros2::encoded_size(m), SIZE_MAX);
    m = make_all();
    m.sb_bseq.push_back("c"); // string<=3[<=2]
    EXPECT_EQ(nerve::ros2::encoded_size(m), SIZE_MAX);
    // Nothing was published.
    auto info = pub->channel().stat();
    ASSERT_TRUE(info);
    EXPECT_EQ(info->head_seq, 0u);
}

TEST_F(Ros2Types, BadBytesAreDecodeErrors)
{
    const Bytes good = nerve::ros2::encode(make_all());
    ntm::AllKinds out;
    // Every truncation.
    for (size_t n = 0; n < good.size(); n++) {
        Bytes cut(good.begin(), good.begin() + static_cast<long>(n));
        ASSERT_EQ(nerve::ros2::decode(cut.data(), cut.size(), out),
                  NERVE_EDECODE)
            << "truncated to " << n;
    }
    // Big-endian or unknown encapsulation.
    Bytes be = good;
    be[1] = 0x00;
    EXPECT_EQ(nerve::ros2::decode(be.data(), be.size(), out), NERVE_EDECODE);
    // bool b is the first body byte: 2 is not a bool.
    Bytes b2 = good;
    b2[4] = 2;
    EXPECT_EQ(nerve::ros2::decode(b2.data(), b2.size(), out), NERVE_EDECODE);
    // The length of string s (at body offset 56): too long, and huge.
    for (uint32_t len : {1000u, 0xffffffffu, 7u}) {
        Bytes bad = good;
        std::memcpy(bad.data() + 4 + 56, &len, 4);
        EXPECT_EQ(nerve::ros2::decode(bad.data(), bad.size(), out),
                  NERVE_EDECODE)
            << len;
    }
}

TEST_F(Ros2Types, ReaderReportsUndecodableMessages)
{
    const std::string n = name("garbage");
    auto pub = nerve::Publisher<sm::Imu>::create(n);
    ASSERT_TRUE(pub);
    auto rd = nerve::Reader<sm::Imu>::open(n);
    ASSERT_TRUE(rd);
    const uint8_t junk[] = {0, 1, 0, 0, 1, 2, 3};
    ASSERT_EQ(nerve_chan_put(pub->channel().get(), junk, sizeof junk,
                             NERVE_FOREVER, nullptr, 0),
              0);
    ASSERT_TRUE(pub->publish(make_imu(5)));
    sm::Imu m;
    auto r = rd->get_next(m);
    EXPECT_EQ(r.code(), NERVE_EDECODE);
    r = rd->get_next(m);
    ASSERT_TRUE(r.has_data());
    EXPECT_EQ(m, make_imu(5));
}

TEST_F(Ros2Types, PointCloudViewsPublishAndReadWithoutCopies)
{
    const std::string n = name("cloud");
    nerve::ChannelOptions o;
    o.slots = 4;
    o.data_size = 8 << 20;
    auto pub = nerve::Publisher<sm::PointCloud2View>::create(n, o);
    ASSERT_TRUE(pub) << pub.code();
    auto rd = nerve::Reader<sm::PointCloud2>::open(n); // same channel type
    ASSERT_TRUE(rd) << rd.code();
    std::vector<uint8_t> points(1 << 20);
    for (size_t i = 0; i < points.size(); i++) {
        points[i] = static_cast<uint8_t>(i * 7);
    }
    sm::PointCloud2View v;
    v.header.frame_id = "lidar";
    v.height = 1;
    v.width = static_cast<uint32_t>(points.size() / 16);
    v.fields.resize(1);
    v.fields[0].name = "x";
    v.fields[0].datatype = sm::PointField::FLOAT32;
    v.point_step = 16;
    v.row_step = static_cast<uint32_t>(points.size());
    v.data = nerve::Span<const uint8_t>(points.data(), points.size());
    v.is_dense = true;
    ASSERT_TRUE(pub->publish(v));
    // Copying reader: the same message as the owning type.
    sm::PointCloud2 owned;
    ASSERT_TRUE(rd->get_newest(owned, nerve::Repeat::yes).has_data());
    EXPECT_EQ(owned.data, points);
    EXPECT_EQ(owned.fields[0].name, "x");
    // Zero-copy reader: the span points into the ring, not at a copy.
    sm::PointCloud2View scratch;
    const uint8_t *seen = nullptr;
    size_t seen_len = 0;
    bool equal = false;
    auto r = nerve::ros2::read_view(
        *rd, scratch, NERVE_GET_NEWEST | NERVE_F_REPEAT,
        std::chrono::seconds(0),
        [&](const sm::PointCloud2View &m, const nerve::MsgInfo &) {
            seen = m.data.data();
            seen_len = m.data.size();
            equal = std::memcmp(m.data.data(), points.data(), seen_len) == 0 &&
                    m.header.frame_id == "lidar" && m.width == v.width;
        });
    ASSERT_TRUE(r.has_data()) << r.code();
    EXPECT_TRUE(equal);
    EXPECT_EQ(seen_len, points.size());
    nerve_view raw;
    ASSERT_EQ(nerve_chan_view(rd->native_handle(), 0, 0, &raw,
                              NERVE_GET_NEWEST | NERVE_F_REPEAT),
              0);
    const auto *ring = static_cast<const uint8_t *>(raw.data);
    EXPECT_TRUE(seen > ring && seen + seen_len <= ring + raw.info.len);
    // A nested byte array has a view too (Blob holds an Image).
    static_assert(
        std::is_same_v<decltype(ntm::BlobView{}.image), sm::ImageView>);
    static_assert(nerve::ros2::is_view<ntm::BlobView>::value);
}

TEST_F(Ros2Types, ImageLoanIsFilledInPlace)
{
    const std::string n = name("image");
    nerve::ChannelOptions o;
    o.slots = 4;
    o.data_size = 1 << 20;
    auto pub = nerve::Publisher<sm::ImageView>::create(n, o);
    ASSERT_TRUE(pub) << pub.code();
    auto rd = nerve::Reader<sm::Image>::open(n);
    ASSERT_TRUE(rd);
    sm::ImageView v;
    v.header.frame_id = "cam";
    v.height = 4;
    v.width = 5;
    v.encoding = "rgb8";
    v.step = 15;
    v.data = nerve::Span<const uint8_t>(nullptr, 60); // filled in the ring
    // Without data the message cannot be published by copy.
    EXPECT_EQ(nerve::ros2::encoded_size(v), SIZE_MAX);
    EXPECT_EQ(pub->publish(v).code(), NERVE_EMSGSIZE);
    auto made = pub->loan(v);
    ASSERT_TRUE(made) << made.code();
    nerve::Loan<sm::ImageView> &loan = *made;
    ASSERT_EQ(loan->narrays, 1u);
    nerve::Span<uint8_t> px = loan->array(0);
    ASSERT_EQ(px.size(), 60u);
    const auto *ring = static_cast<const uint8_t *>(loan.data());
    EXPECT_TRUE(px.data() > ring && px.data() + 60 <= ring + loan.size());
    for (size_t i = 0; i < px.size(); i++) {
        px[i] = static_cast<uint8_t>(3 * i);
    }
    ASSERT_TRUE(loan.publish());
    sm::Image got;
    ASSERT_TRUE(rd->get_next(got).has_data());
    ASSERT_EQ(got.data.size(), 60u);
    for (size_t i = 0; i < 60; i++) {
        ASSERT_EQ(got.data[i], static_cast<uint8_t>(3 * i));
    }
    EXPECT_EQ(got.encoding, "rgb8");
    EXPECT_EQ(got.step, 15u);
}

TEST_F(Ros2Types, ReadViewReportsDecodeErrors)
{
    const std::string n = name("viewbad");
    auto pub = nerve::Publisher<sm::PointCloud2>::create(n);
    ASSERT_TRUE(pub);
    auto rd = nerve::Reader<sm::PointCloud2>::open(n);
    ASSERT_TRUE(rd);
    const uint8_t junk[] = {0, 1, 0, 0, 9};
    ASSERT_EQ(nerve_chan_put(pub->channel().get(), junk, sizeof junk,
                             NERVE_FOREVER, nullptr, 0),
              0);
    sm::PointCloud2View scratch;
    bool called = false;
    auto r = nerve::ros2::read_view(
        *rd, scratch, NERVE_GET_NEXT, std::chrono::seconds(0),
        [&](const sm::PointCloud2View &, const nerve::MsgInfo &) {
            called = true;
        });
    EXPECT_EQ(r.code(), NERVE_EDECODE);
    EXPECT_FALSE(called);
}

} // namespace
