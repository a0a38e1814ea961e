// The ROS 1 codec of the C++ API (include/nerve/cxx/ros1.hpp): typed
// Publisher/Reader round trips of Imu, LaserScan, PointCloud2, Image and
// OccupancyGrid, the metadata a channel records (ROS type name, ros1msg,
// full definition), ROS's exact bytes on the channel, loans with an
// in-place stamp, zero-copy views, and what happens to malformed bytes and
// to a reader of the wrong type. No ROS master is needed.
#include "../cxx/cxx_test.hpp"
#include "ros1_msgs.hpp"

#include <nerve/cxx/ros1.hpp>

#include <geometry_msgs/Vector3.h>

#include <type_traits>
#include <vector>

namespace {

class Ros1Codec : public nt::ChannelTest {};

template <class T> void round_trip(const std::string &ch)
{
    auto pub = nerve::Publisher<T>::create(ch);
    ASSERT_TRUE(pub) << pub.message();
    auto rd = nerve::Reader<T>::open(ch);
    ASSERT_TRUE(rd) << rd.message();
    for (uint32_t i = 1; i <= 3; i++) {
        ASSERT_TRUE(pub->publish(rtest::make<T>(i)));
    }
    std::vector<T> got;
    auto r = rd->read_unread(got);
    ASSERT_TRUE(r) << r.message();
    ASSERT_EQ(got.size(), 3u);
    for (uint32_t i = 1; i <= 3; i++) {
        EXPECT_TRUE(got[i - 1] == rtest::make<T>(i)) << "message " << i;
    }
    // The channel records what ROS calls the type and its definition.
    auto meta = pub->channel().meta();
    ASSERT_TRUE(meta);
    EXPECT_EQ(meta->type, ros::message_traits::DataType<T>::value());
    EXPECT_EQ(meta->encoding, "ros1msg");
    EXPECT_EQ(meta->schema, ros::message_traits::Definition<T>::value());
    // The bytes are ROS's serialization, byte for byte.
    T m = rtest::make<T>(9);
    const uint32_t n = ros::serialization::serializationLength(m);
    std::vector<uint8_t> ref(n);
    ros::serialization::OStream os(ref.data(), n);
    ros::serialization::serialize(os, m);
    ASSERT_TRUE(pub->publish(m));
    std::vector<uint8_t> raw(n + 16);
    struct nerve_get_info gi;
    auto ch2 = nerve::Channel::open(ch);
    ASSERT_TRUE(ch2);
    ASSERT_EQ(nerve_chan_get(ch2->get(), raw.data(), raw.size(), 0, 0, &gi,
                             NERVE_GET_NEWEST),
              0);
    ASSERT_EQ(gi.len, n);
    EXPECT_EQ(0, std::memcmp(raw.data(), ref.data(), n));
}

TEST_F(Ros1Codec, RoundTripImu)
{
    round_trip<sensor_msgs::Imu>(name("imu"));
}
TEST_F(Ros1Codec, RoundTripLaserScan)
{
    round_trip<sensor_msgs::LaserScan>(name("scan"));
}
TEST_F(Ros1Codec, RoundTripPointCloud2)
{
    round_trip<sensor_msgs::PointCloud2>(name("cloud"));
}
TEST_F(Ros1Codec, RoundTripImage)
{
    round_trip<sensor_msgs::Image>(name("image"));
}
TEST_F(Ros1Codec, RoundTripOccupancyGrid)
{
    round_trip<nav_msgs::OccupancyGrid>(name("grid"));
}

// A trivially copyable ROS type still takes the ROS codec (the hook in
// codec.hpp), so its channel is a ROS channel and not raw struct bytes.
TEST_F(Ros1Codec, TriviallyCopyableRosTypeIsRos1msg)
{
    static_assert(std::is_trivially_copyable_v<geometry_msgs::Vector3>);
    const std::string ch = name("vec");
    auto pub = nerve::Publisher<geometry_msgs::Vector3>::create(ch);
    ASSERT_TRUE(pub);
    auto meta = pub->channel().meta();
    ASSERT_TRUE(meta);
    EXPECT_EQ(meta->type, "geometry_msgs/Vector3");
    EXPECT_EQ(meta->encoding, "ros1msg");
    geometry_msgs::Vector3 v;
    v.x = 1;
    v.y = 2;
    v.z = 3;
    ASSERT_TRUE(pub->publish(v));
    auto rd = nerve::Reader<geometry_msgs::Vector3>::open(ch);
    ASSERT_TRUE(rd);
    geometry_msgs::Vector3 out;
    ASSERT_TRUE(rd->get_newest(out, nerve::Repeat::yes));
    EXPECT_TRUE(out == v);
}

// A loan holds the serialized message; its stamp is set in place and a
// zero-copy read sees it.
TEST_F(Ros1Codec, LoanStampAndZeroCopyView)
{
    const std::string ch = name("loan");
    auto pub = nerve::Publisher<nav_msgs::OccupancyGrid>::create(ch);
    ASSERT_TRUE(pub);
    auto rd = nerve::Reader<nav_msgs::OccupancyGrid>::open(ch);
    ASSERT_TRUE(rd);
    const auto m = rtest::make<nav_msgs::OccupancyGrid>(4);
    auto loan_r = pub->loan(m);
    ASSERT_TRUE(loan_r) << loan_r.name();
    auto &loan = *loan_r;
    EXPECT_EQ(loan->size, ros::serialization::serializationLength(m));
    ASSERT_TRUE(loan->set_stamp(77, 88));
    ASSERT_TRUE(loan.publish());
    uint32_t sec = 0, nsec = 0;
    size_t len = 0;
    auto r = nerve::ros1::read_view(
        *rd, NERVE_GET_NEXT, nerve::Duration(0),
        [&](const uint8_t *p, size_t n, const nerve::MsgInfo &) {
            len = n;
            EXPECT_TRUE(nerve::ros1::stamp_of(p, n, sec, nsec));
        });
    ASSERT_TRUE(r) << r.message();
    EXPECT_EQ(len, ros::serialization::serializationLength(m));
    EXPECT_EQ(sec, 77u);
    EXPECT_EQ(nsec, 88u);
    // The typed read decodes the same message with the new stamp.
    rd->seek(0);
    nav_msgs::OccupancyGrid out;
    ASSERT_TRUE(rd->get_next(out));
    auto want = m;
    want.header.stamp.sec = 77;
    want.header.stamp.nsec = 88;
    EXPECT_TRUE(out == want);
    const nerve::ros1::Serialized short_msg{nullptr, 4};
    EXPECT_FALSE(short_msg.set_stamp(1, 2));
}

// Truncated or padded bytes are a mismatch, consumed and counted; the
// next good message is still read.
TEST_F(Ros1Codec, MalformedBytesAreMismatch)
{
    const std::string ch = name("bad");
    auto pub = nerve::Publisher<sensor_msgs::LaserScan>::create(ch);
    ASSERT_TRUE(pub);
    auto rd = nerve::Reader<sensor_msgs::LaserScan>::open(ch);
    ASSERT_TRUE(rd);
    const auto m = rtest::make<sensor_msgs::LaserScan>(2);
    const uint32_t n = ros::serialization::serializationLength(m);
    std::vector<uint8_t> buf(n + 8, 0xff);
    ros::serialization::OStream os(buf.data(), n);
    ros::serialization::serialize(os, m);
    ASSERT_TRUE(pub->channel().put(buf.data(), n - 3)); // truncated
    ASSERT_TRUE(pub->channel().put(buf.data(), n + 8)); // trailing bytes
    ASSERT_TRUE(pub->publish(m));
    sensor_msgs::LaserScan out;
    auto r1 = rd->get_next(out);
    EXPECT_TRUE(r1.decode_failed()) << r1.name();
    auto r2 = rd->get_next(out);
    EXPECT_TRUE(r2.decode_failed()) << r2.name();
    auto r3 = rd->get_next(out);
    ASSERT_TRUE(r3) << r3.name();
    EXPECT_TRUE(out == m);
}

// A reader of another ROS type cannot open the channel.
TEST_F(Ros1Codec, WrongTypeIsRefused)
{
    const std::string ch = name("imu2");
    auto pub = nerve::Publisher<sensor_msgs::Imu>::create(ch);
    ASSERT_TRUE(pub);
    auto rd = nerve::Reader<sensor_msgs::LaserScan>::open(ch);
    ASSERT_FALSE(rd);
    EXPECT_EQ(rd.code(), NERVE_EMISMATCH);
    nerve::ChannelOptions reuse;
    reuse.exist_ok = true;
    auto pub2 = nerve::Publisher<sensor_msgs::LaserScan>::create(ch, reuse);
    ASSERT_FALSE(pub2);
    EXPECT_EQ(pub2.code(), NERVE_EMISMATCH);
}

// Callback subscribers take ROS types too.
TEST_F(Ros1Codec, NodeSubscriber)
{
    const std::string ch = name("sub");
    auto pub = nerve::Publisher<sensor_msgs::Imu>::create(ch);
    ASSERT_TRUE(pub);
    nerve::Node node;
    std::vector<uint32_t> seqs;
    auto sub =
        node.subscribe<sensor_msgs::Imu>(ch, [&](const sensor_msgs::Imu &m) {
            EXPECT_TRUE(m == rtest::make<sensor_msgs::Imu>(m.header.seq));
            seqs.push_back(m.header.seq);
        });
    ASSERT_TRUE(sub) << sub.message();
    for (uint32_t i = 1; i <= 3; i++) {
        ASSERT_TRUE(pub->publish(rtest::make<sensor_msgs::Imu>(i)));
    }
    auto r = node.spin_once(std::chrono::seconds(5));
    ASSERT_TRUE(r);
    EXPECT_EQ(seqs, (std::vector<uint32_t>{1, 2, 3}));
}

} // namespace
