// Unit tests of the C++ API: results and errors, type names and codecs,
// Publisher / Loan / Reader on raw and codec types, the type check at
// open, the behaviour on messages that do not fit T, loans of sizes that
// overflow, and handles that were never opened.
#include "cxx_test.hpp"

#include "msgs.hpp"

#include <nerve/nerve.h>

#include <cstring>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

using robot_msgs::Command;
using robot_msgs::Imu;
using robot_msgs::LaserScan;

namespace {

struct Named {
    uint32_t v;
};

Imu imu(uint32_t seq)
{
    Imu m{};
    m.stamp_ns = 1000 + seq;
    m.accel[0] = static_cast<float>(seq) * 0.5f;
    m.gyro[2] = -static_cast<float>(seq);
    m.temperature = 21.5f;
    m.seq = seq;
    return m;
}

class CxxApi : public nt::ChannelTest {};

} // namespace

NERVE_TYPE_NAME(Named, "test/Named");

// ---- result and errors ----------------------------------------------

TEST(Result, CarriesValueOrCode)
{
    nerve::Result<int> ok(7);
    ASSERT_TRUE(ok);
    EXPECT_EQ(*ok, 7);
    EXPECT_EQ(ok.code(), 0);

    nerve::Result<int> bad = nerve::fail(NERVE_EMISMATCH);
    ASSERT_FALSE(bad);
    EXPECT_EQ(bad.code(), NERVE_EMISMATCH);
    EXPECT_STREQ(bad.name(), "EMISMATCH");
    EXPECT_EQ(std::move(bad).value_or(3), 3);

    nerve::Result<void> v = nerve::Result<void>::from_status(NERVE_EAGAIN);
    EXPECT_EQ(v.code(), NERVE_EAGAIN);
    EXPECT_EQ(v.error_code().message(), "no new message");
    EXPECT_STREQ(v.error_code().category().name(), "nerve");
    EXPECT_TRUE(nerve::Result<void>::from_status(0));
}

TEST(Result, ValueThrowsNerveError)
{
    nerve::Result<int> bad = nerve::fail(NERVE_ENOENT);
    try {
        (void)bad.value();
        FAIL() << "value() of a failed result did not throw";
    } catch (const nerve::Error &e) {
        EXPECT_EQ(e.code(), NERVE_ENOENT);
        EXPECT_NE(std::string(e.what()).find("no such channel"),
                  std::string::npos);
    }
}

TEST(Result, HandlesAreMoveOnly)
{
    EXPECT_FALSE(std::is_copy_constructible_v<nerve::Channel>);
    EXPECT_FALSE(std::is_copy_constructible_v<nerve::Publisher<Imu>>);
    EXPECT_FALSE(std::is_copy_constructible_v<nerve::Reader<Imu>>);
    EXPECT_FALSE(std::is_copy_constructible_v<nerve::Loan<Imu>>);
    EXPECT_FALSE(std::is_copy_constructible_v<nerve::Subscriber<Imu>>);
    EXPECT_TRUE(std::is_nothrow_move_constructible_v<nerve::Publisher<Imu>>);
    EXPECT_TRUE(std::is_nothrow_move_constructible_v<nerve::Reader<Imu>>);
    EXPECT_FALSE(std::is_move_constructible_v<nerve::Node>);
}

// ---- type names and codecs ------------------------------------------

TEST(Codec, TypeNames)
{
    EXPECT_EQ(nerve::Codec<int64_t>::type_name(), "int64");
    EXPECT_EQ(nerve::Codec<uint8_t>::type_name(), "uint8");
    EXPECT_EQ(nerve::Codec<double>::type_name(), "float64");
    EXPECT_EQ(nerve::Codec<Imu>::type_name(), "robot_msgs/Imu");
    EXPECT_EQ(nerve::Codec<Named>::type_name(), "test/Named");
    EXPECT_EQ(nerve::Codec<std::string>::type_name(), "string");
    EXPECT_EQ(nerve::Codec<std::vector<float>>::type_name(), "vector<float32>");
    EXPECT_EQ(nerve::Codec<LaserScan>::type_name(), "robot_msgs/LaserScan");
    EXPECT_EQ(nerve::Codec<Imu>::encoding(), "raw");
    struct Local {
        int x;
    };
    // The compiler's spelling for an unnamed type: contains "Local".
    EXPECT_NE(nerve::Codec<Local>::type_name().find("Local"),
              std::string::npos);
    EXPECT_TRUE(nerve::detail::is_raw<Imu>::value);
    EXPECT_FALSE(nerve::detail::is_raw<std::string>::value);
}

TEST(Codec, LaserScanRejectsInconsistentCount)
{
    LaserScan s;
    s.ranges = {1.0f, 2.0f, 3.0f};
    std::vector<unsigned char> buf(nerve::Codec<LaserScan>::size(s));
    nerve::Codec<LaserScan>::encode(s, buf.data(), buf.size());
    LaserScan out;
    ASSERT_TRUE(nerve::Codec<LaserScan>::decode(buf.data(), buf.size(), out));
    EXPECT_EQ(out.ranges, s.ranges);
    EXPECT_EQ(out.header.count, 3u);
    // One float short, and a count far beyond the bytes.
    EXPECT_FALSE(
        nerve::Codec<LaserScan>::decode(buf.data(), buf.size() - 4, out));
    robot_msgs::LaserScanHeader h{};
    h.count = 0x7fffffff;
    std::memcpy(buf.data(), &h, sizeof h);
    EXPECT_FALSE(nerve::Codec<LaserScan>::decode(buf.data(), buf.size(), out));
}

// ---- channel handle -------------------------------------------------

TEST_F(CxxApi, ChannelSetupErrors)
{
    auto r = nerve::Channel::open(name("missing"));
    EXPECT_EQ(r.code(), NERVE_ENOENT);
    std::string longname(NERVE_NAME_MAX + 1, 'a');
    EXPECT_EQ(nerve::Channel::open(longname).code(), NERVE_ENAMETOOLONG);
    EXPECT_EQ(nerve::Channel::create(longname).code(), NERVE_ENAMETOOLONG);

    const std::string n = name("plain");
    nerve::ChannelOptions o;
    o.slots = 16;
    o.data_size = 4096;
    ASSERT_TRUE(nerve::Channel::create(n, o));
    o.exist_ok = false;
    EXPECT_EQ(nerve::Channel::create(n, o).code(), NERVE_EEXIST);
    auto ch = nerve::Channel::open(n, nerve::Access::write);
    ASSERT_TRUE(ch) << ch.message();
    EXPECT_EQ(ch->name(), n);
    auto st = ch->stat();
    ASSERT_TRUE(st);
    EXPECT_EQ(st->slots, 16u);
    auto pi = ch->put("abc", 3);
    ASSERT_TRUE(pi);
    EXPECT_EQ(pi->seq, 1u);
    EXPECT_TRUE(nerve::Channel::unlink(n));
    EXPECT_EQ(nerve::Channel::unlink(n).code(), NERVE_ENOENT);
}

TEST_F(CxxApi, OrThrowForms)
{
    const std::string n = name("throw");
    try {
        auto rd = nerve::Reader<Imu>::open_or_throw(n);
        FAIL() << "opened a channel that does not exist";
    } catch (const nerve::Error &e) {
        EXPECT_EQ(e.code(), NERVE_ENOENT);
        EXPECT_NE(std::string(e.what()).find(n), std::string::npos);
    }
    auto pub = nerve::Publisher<Imu>::create_or_throw(n);
    auto rd = nerve::Reader<Imu>::open_or_throw(n);
    EXPECT_THROW(nerve::Reader<Command>::open_or_throw(n), nerve::Error);
    EXPECT_TRUE(pub.publish(imu(1)));
    Imu out{};
    EXPECT_TRUE(rd.get_newest(out));
}

// ---- the type check at open -----------------------------------------

TEST_F(CxxApi, OpeningAnotherTypeIsAMismatch)
{
    const std::string n = name("typed");
    auto pub = nerve::Publisher<Imu>::create(n);
    ASSERT_TRUE(pub) << pub.message();
    auto meta = pub->channel().meta();
    ASSERT_TRUE(meta);
    EXPECT_EQ(meta->type, "robot_msgs/Imu");
    EXPECT_EQ(meta->encoding, "raw");

    EXPECT_EQ(nerve::Reader<Command>::open(n).code(), NERVE_EMISMATCH);
    EXPECT_EQ(nerve::Publisher<Command>::open(n).code(), NERVE_EMISMATCH);
    nerve::ChannelOptions reuse;
    reuse.exist_ok = true;
    EXPECT_EQ(nerve::Publisher<Command>::create(n, reuse).code(),
              NERVE_EMISMATCH);
    EXPECT_EQ(nerve::Reader<std::string>::open(n).code(), NERVE_EMISMATCH);
    EXPECT_TRUE(nerve::Reader<Imu>::open(n));
    // exist_ok is off by default, as in C and Python.
    EXPECT_EQ(nerve::Publisher<Imu>::create(n).code(), NERVE_EEXIST);
    EXPECT_EQ(nerve::Publisher<Command>::create(n).code(), NERVE_EEXIST);
    EXPECT_TRUE(nerve::Publisher<Imu>::create(n, reuse)); // same type: reused

    // A channel made without metadata is not a channel of T.
    const std::string u = name("untyped");
    ASSERT_TRUE(nerve::Channel::create(u));
    EXPECT_EQ(nerve::Reader<Imu>::open(u).code(), NERVE_EMISMATCH);
}

TEST_F(CxxApi, SchemaFromCodecIsRecorded)
{
    const std::string n = name("schema");
    auto pub = nerve::Publisher<LaserScan>::create(n);
    ASSERT_TRUE(pub) << pub.message();
    auto meta = pub->channel().meta();
    ASSERT_TRUE(meta);
    EXPECT_EQ(meta->type, "robot_msgs/LaserScan");
    EXPECT_EQ(meta->schema, nerve::Codec<LaserScan>::schema());
}

// ---- raw publish and read -------------------------------------------

TEST_F(CxxApi, NewestSkipsAndCountsMissed)
{
    const std::string n = name("newest");
    auto pub = nerve::Publisher<Imu>::create(n);
    ASSERT_TRUE(pub);
    auto rd = nerve::Reader<Imu>::open(n);
    ASSERT_TRUE(rd);
    Imu out{};
    EXPECT_TRUE(rd->get_newest(out).nothing_new());
    for (uint32_t i = 1; i <= 3; i++) {
        auto r = pub->publish(imu(i));
        ASSERT_TRUE(r) << r.message();
        EXPECT_EQ(r->seq, i);
    }
    auto r = rd->get_newest(out);
    ASSERT_TRUE(r) << r.message();
    EXPECT_EQ(r.status(), nerve::ReadStatus::data);
    EXPECT_EQ(out.seq, 3u);
    EXPECT_EQ(r.seq(), 3u);
    EXPECT_EQ(r.missed(), 2u);
    EXPECT_EQ(r.count(), 1u);
    EXPECT_EQ(r.info().len, sizeof(Imu));
    const Imu want = imu(3);
    EXPECT_EQ(std::memcmp(&out, &want, sizeof out), 0);
    EXPECT_TRUE(rd->get_newest(out).nothing_new());
    out = Imu{};
    EXPECT_TRUE(rd->get_newest(out, nerve::Repeat::yes));
    EXPECT_EQ(out.seq, 3u);
    EXPECT_EQ(rd->cursor(), 3u);
}

TEST_F(CxxApi, ReadUnreadReturnsEveryMessageInOrder)
{
    const std::string n = name("unread");
    nerve::ChannelOptions o;
    o.slots = 8;
    auto pub = nerve::Publisher<Imu>::create(n, o);
    ASSERT_TRUE(pub) << pub.message();
    auto rd = nerve::Reader<Imu>::open(n);
    ASSERT_TRUE(rd);
    std::vector<Imu> v;
    EXPECT_TRUE(rd->read_unread(v).nothing_new());
    EXPECT_TRUE(v.empty());
    for (uint32_t i = 1; i <= 5; i++) {
        ASSERT_TRUE(pub->publish(imu(i)));
    }
    auto r = rd->read_unread(v);
    ASSERT_TRUE(r);
    ASSERT_EQ(r.count(), 5u);
    ASSERT_EQ(v.size(), 5u);
    for (uint32_t i = 0; i < 5; i++) {
        EXPECT_EQ(v[i].seq, i + 1);
    }
    EXPECT_EQ(r.missed(), 0u);
    EXPECT_EQ(r.seq(), 5u);
    EXPECT_TRUE(rd->read_unread(v).nothing_new());
    EXPECT_TRUE(v.empty());

    // Overrun the 8-slot ring: what is left comes in order, the rest is
    // counted as missed, and nothing is delivered twice.
    for (uint32_t i = 6; i <= 30; i++) {
        ASSERT_TRUE(pub->publish(imu(i)));
    }
    r = rd->read_unread(v);
    ASSERT_TRUE(r);
    EXPECT_LE(v.size(), 8u);
    EXPECT_EQ(v.back().seq, 30u);
    EXPECT_EQ(r.missed() + r.count(), 25u);
    for (size_t i = 1; i < v.size(); i++) {
        EXPECT_EQ(v[i].seq, v[i - 1].seq + 1);
    }
}

TEST_F(CxxApi, WaitUnreadTimesOutThenGetsData)
{
    const std::string n = name("wait");
    auto pub = nerve::Publisher<Imu>::create(n);
    ASSERT_TRUE(pub);
    auto rd = nerve::Reader<Imu>::open(n);
    ASSERT_TRUE(rd);
    std::vector<Imu> v;
    auto r = rd->wait_unread(v, std::chrono::milliseconds(2));
    EXPECT_TRUE(r.timed_out()) << r.name();
    EXPECT_EQ(r.count(), 0u);
    std::thread writer([&] { EXPECT_TRUE(pub->publish(imu(42))); });
    r = rd->wait_unread(v, std::chrono::seconds(30));
    writer.join();
    ASSERT_TRUE(r) << r.name();
    ASSERT_EQ(v.size(), 1u);
    EXPECT_EQ(v[0].seq, 42u);
}

TEST_F(CxxApi, ReaderCancelWakesAWaiter)
{
    const std::string n = name("cancel");
    auto pub = nerve::Publisher<Imu>::create(n);
    ASSERT_TRUE(pub);
    auto rd = nerve::Reader<Imu>::open(n);
    ASSERT_TRUE(rd);
    std::thread canceller([&] { rd->cancel(); });
    Imu out{};
    auto r = rd->wait_next(out, nerve::forever);
    canceller.join();
    EXPECT_TRUE(r.cancelled()) << r.name();
    // Sticky until cleared.
    EXPECT_TRUE(rd->wait_newest(out, nerve::forever).cancelled());
    rd->cancel_clear();
    EXPECT_TRUE(rd->wait_newest(out, std::chrono::milliseconds(1)).timed_out());
}

TEST_F(CxxApi, ByTimestampAndBySeq)
{
    const std::string n = name("time");
    nerve::ChannelOptions o;
    o.slots = 4;
    auto pub = nerve::Publisher<Imu>::create(n, o);
    ASSERT_TRUE(pub);
    auto rd = nerve::Reader<Imu>::open(n);
    ASSERT_TRUE(rd);
    std::vector<nerve::PublishInfo> pi;
    for (uint32_t i = 1; i <= 3; i++) {
        auto r = pub->publish(imu(i));
        ASSERT_TRUE(r);
        pi.push_back(*r);
    }
    Imu out{};
    auto r = rd->get_by_timestamp(out, pi[1].time_ns);
    ASSERT_TRUE(r) << r.name();
    EXPECT_EQ(out.seq, 2u);
    EXPECT_EQ(r.info().time_ns, pi[1].time_ns);
    ASSERT_TRUE(
        rd->get_by_timestamp(out, pi[2].time() + std::chrono::hours(1)));
    EXPECT_EQ(out.seq, 3u);
    EXPECT_TRUE(rd->get_by_timestamp(out, pi[0].time_ns - 1).nothing_new());
    EXPECT_EQ(rd->cursor(), 0u); // AT does not move the cursor

    ASSERT_TRUE(rd->get_seq(out, 2));
    EXPECT_EQ(out.seq, 2u);
    EXPECT_TRUE(rd->get_seq(out, 4).nothing_new());
    for (uint32_t i = 4; i <= 12; i++) {
        ASSERT_TRUE(pub->publish(imu(i)));
    }
    r = rd->get_seq(out, 1);
    EXPECT_EQ(r.status(), nerve::ReadStatus::error);
    EXPECT_EQ(r.code(), NERVE_EOVERWRITTEN);
}

// ---- loans ----------------------------------------------------------

// An empty handle (default-constructed or moved from) is NERVE_EBADF
// in every call, as a NULL handle is in C.
TEST_F(CxxApi, EmptyHandlesAreBadHandles)
{
    const std::string n = name("badf");
    auto pub = nerve::Publisher<Imu>::create(n);
    ASSERT_TRUE(pub) << pub.message();
    nerve::Publisher<Imu> moved = std::move(*pub);
    EXPECT_FALSE(*pub);
    EXPECT_EQ(pub->publish(imu(1)).code(), NERVE_EBADF);
    EXPECT_EQ(pub->loan().code(), NERVE_EBADF);
    EXPECT_EQ(pub->loan_uninit().code(), NERVE_EBADF);
    EXPECT_TRUE(moved.publish(imu(2)));

    nerve::Reader<Imu> rd;
    Imu m{};
    EXPECT_EQ(rd.get_newest(m).code(), NERVE_EBADF);
    EXPECT_EQ(rd.get_next(m).code(), NERVE_EBADF);
    nerve::Reader<std::string> srd; // codec path: view, cursor
    std::string str;
    EXPECT_EQ(srd.get_next(str).code(), NERVE_EBADF);
    EXPECT_EQ(srd.get_newest(str).code(), NERVE_EBADF);
    std::vector<std::string> all;
    EXPECT_EQ(srd.read_unread(all).code(), NERVE_EBADF);
    nerve::Channel ch;
    EXPECT_EQ(ch.put("x", 1).code(), NERVE_EBADF);
    EXPECT_EQ(ch.stat().code(), NERVE_EBADF);
    EXPECT_EQ(ch.meta().code(), NERVE_EBADF);
}

TEST_F(CxxApi, LoansPublishInPlaceOrNotAtAll)
{
    const std::string n = name("loan");
    auto pub = nerve::Publisher<Imu>::create(n);
    ASSERT_TRUE(pub);
    auto rd = nerve::Reader<Imu>::open(n);
    ASSERT_TRUE(rd);
    Imu out{};
    {
        auto loan_r = pub->loan();
        ASSERT_TRUE(loan_r) << loan_r.name();
        auto &loan = *loan_r;
        EXPECT_EQ(loan->seq, 0u); // value-initialized
        EXPECT_EQ(loan.size(), sizeof(Imu));
        // The writer lock is held: a publish on the same handle is refused.
        EXPECT_EQ(pub->publish(imu(9)).code(), NERVE_EBUSY);
        // Dropped without publish(): nothing is published.
    }
    EXPECT_TRUE(rd->get_next(out).nothing_new());

    auto loan_r = pub->loan();
    ASSERT_TRUE(loan_r) << loan_r.name();
    auto &loan = *loan_r;
    loan->seq = 7;
    (*loan).temperature = 3.0f;
    auto moved = std::move(loan);
    EXPECT_FALSE(loan);
    EXPECT_EQ(loan.publish().code(), NERVE_EBADF); // moved from
    auto r = moved.publish();
    ASSERT_TRUE(r) << r.message();
    EXPECT_EQ(r->seq, 1u);
    EXPECT_EQ(moved.publish().code(), NERVE_EBADF); // used up
    ASSERT_TRUE(rd->get_next(out));
    EXPECT_EQ(out.seq, 7u);
    EXPECT_EQ(out.temperature, 3.0f);

    auto u8 = pub->loan_uninit();
    ASSERT_TRUE(u8) << u8.name();
    auto l2 = std::move(*u8).write(imu(8));
    ASSERT_TRUE(l2);
    ASSERT_TRUE(l2.publish());
    auto u_r = pub->loan_uninit();
    ASSERT_TRUE(u_r) << u_r.name();
    auto &u = *u_r;
    Imu v = imu(10);
    std::memcpy(u.ptr(), &v, sizeof v);
    ASSERT_TRUE(std::move(u).assume_init().publish());
    std::vector<Imu> all;
    ASSERT_TRUE(rd->read_unread(all));
    ASSERT_EQ(all.size(), 2u);
    EXPECT_EQ(all[0].seq, 8u);
    EXPECT_EQ(all[1].seq, 10u);
}

// ---- codec types ----------------------------------------------------

TEST_F(CxxApi, StringsRoundTrip)
{
    const std::string n = name("string");
    auto pub = nerve::Publisher<std::string>::create(n);
    ASSERT_TRUE(pub) << pub.message();
    auto rd = nerve::Reader<std::string>::open(n);
    ASSERT_TRUE(rd);
    const std::vector<std::string> msgs = {"a", "hello, robot",
                                           std::string(5000, 'x'), "z"};
    for (const auto &m : msgs) {
        ASSERT_TRUE(pub->publish(m));
    }
    auto loan_r = pub->loan(size_t{4});
    ASSERT_TRUE(loan_r) << loan_r.name();
    auto &loan = *loan_r;
    ASSERT_EQ(loan->size(), 4u);
    std::memcpy(loan->data(), "loan", 4);
    ASSERT_TRUE(loan.publish());
    std::vector<std::string> got;
    auto r = rd->read_unread(got);
    ASSERT_TRUE(r) << r.name();
    ASSERT_EQ(got.size(), 5u);
    for (size_t i = 0; i < msgs.size(); i++) {
        EXPECT_EQ(got[i], msgs[i]);
    }
    EXPECT_EQ(got[4], "loan");
    std::string newest;
    ASSERT_TRUE(rd->get_newest(newest, nerve::Repeat::yes));
    EXPECT_EQ(newest, "loan");
}

TEST_F(CxxApi, VectorsRoundTripAndMatchTheCLayout)
{
    const std::string n = name("vector");
    auto pub = nerve::Publisher<std::vector<float>>::create(n);
    ASSERT_TRUE(pub);
    auto rd = nerve::Reader<std::vector<float>>::open(n);
    ASSERT_TRUE(rd);
    ASSERT_TRUE(pub->publish({1.0f, 2.0f, 3.0f}));
    auto loan_r = pub->loan(size_t{100});
    ASSERT_TRUE(loan_r) << loan_r.name();
    auto &loan = *loan_r;
    for (size_t i = 0; i < loan->size(); i++) {
        (*loan)[i] = static_cast<float>(i);
    }
    ASSERT_TRUE(loan.publish());
    std::vector<float> v;
    ASSERT_TRUE(rd->get_next(v));
    EXPECT_EQ(v, (std::vector<float>{1.0f, 2.0f, 3.0f}));
    ASSERT_TRUE(rd->get_next(v));
    ASSERT_EQ(v.size(), 100u);
    EXPECT_EQ(v[99], 99.0f);

    // The bytes are the elements, as a C reader sees them.
    auto c = nerve::Channel::open(n);
    ASSERT_TRUE(c);
    float raw[3];
    struct nerve_get_info gi;
    ASSERT_EQ(
        nerve_chan_get(c->get(), raw, sizeof raw, 1, 0, &gi, NERVE_GET_SEQ), 0);
    EXPECT_EQ(gi.len, sizeof raw);
    EXPECT_EQ(raw[2], 3.0f);
}

TEST_F(CxxApi, LaserScanByCopyAndByLoan)
{
    const std::string n = name("scan");
    auto pub = nerve::Publisher<LaserScan>::create(n);
    ASSERT_TRUE(pub) << pub.message();
    auto rd = nerve::Reader<LaserScan>::open(n);
    ASSERT_TRUE(rd);
    LaserScan s;
    s.header.stamp_ns = 77;
    s.header.angle_min = -1.5f;
    s.ranges.assign(2000, 4.25f);
    ASSERT_TRUE(pub->publish(s));

    auto loan_r = pub->loan(size_t{360});
    ASSERT_TRUE(loan_r) << loan_r.name();
    auto &loan = *loan_r;
    loan->header->stamp_ns = 78;
    loan->header->angle_increment = 0.0175f;
    for (size_t i = 0; i < loan->ranges.size(); i++) {
        loan->ranges[i] = static_cast<float>(i) / 10.0f;
    }
    EXPECT_EQ(loan->header->count, 360u);
    ASSERT_TRUE(loan.publish());

    LaserScan out;
    ASSERT_TRUE(rd->get_next(out));
    EXPECT_EQ(out.header.stamp_ns, 77);
    EXPECT_EQ(out.header.count, 2000u);
    EXPECT_EQ(out.ranges, s.ranges);
    ASSERT_TRUE(rd->get_next(out));
    EXPECT_EQ(out.header.stamp_ns, 78);
    ASSERT_EQ(out.ranges.size(), 360u);
    EXPECT_FLOAT_EQ(out.ranges[359], 35.9f);
}

// ---- messages that do not fit T ---------------------------------------

TEST_F(CxxApi, WrongSizedMessagesAreConsumedAndReported)
{
    const std::string n = name("badsize");
    auto pub = nerve::Publisher<Imu>::create(n);
    ASSERT_TRUE(pub);
    auto rd = nerve::Reader<Imu>::open(n);
    ASSERT_TRUE(rd);
    auto raw = nerve::Channel::open(n, nerve::Access::write);
    ASSERT_TRUE(raw);
    char big[100] = {0};
    ASSERT_TRUE(raw->put(big, 13));         // too small for an Imu
    ASSERT_TRUE(raw->put(big, sizeof big)); // too large
    ASSERT_TRUE(pub->publish(imu(3)));

    Imu out{};
    auto r = rd->get_next(out);
    EXPECT_TRUE(r.decode_failed()) << r.name();
    EXPECT_EQ(r.seq(), 1u);
    r = rd->get_next(out);
    EXPECT_TRUE(r.decode_failed()) << r.name();
    EXPECT_EQ(rd->cursor(), 2u); // consumed, not stuck
    r = rd->get_next(out);
    ASSERT_TRUE(r) << r.name();
    EXPECT_EQ(out.seq, 3u);

    // In a batch the bad ones count as missed.
    ASSERT_TRUE(raw->put(big, 13));
    ASSERT_TRUE(pub->publish(imu(5)));
    std::vector<Imu> v;
    r = rd->read_unread(v);
    ASSERT_TRUE(r);
    ASSERT_EQ(v.size(), 1u);
    EXPECT_EQ(v[0].seq, 5u);
    EXPECT_EQ(r.missed(), 1u);
}

TEST_F(CxxApi, MalformedCodecMessageIsAMismatch)
{
    const std::string n = name("badscan");
    auto pub = nerve::Publisher<LaserScan>::create(n);
    ASSERT_TRUE(pub);
    auto rd = nerve::Reader<LaserScan>::open(n);
    ASSERT_TRUE(rd);
    auto raw = nerve::Channel::open(n, nerve::Access::write);
    ASSERT_TRUE(raw);
    robot_msgs::LaserScanHeader h{};
    h.count = 1000; // but no ranges follow
    ASSERT_TRUE(raw->put(&h, sizeof h));
    LaserScan out;
    auto r = rd->get_newest(out);
    EXPECT_TRUE(r.decode_failed()) << r.name();
    EXPECT_EQ(r.missed(), 1u);
    EXPECT_TRUE(rd->get_newest(out).nothing_new());
}

// ---- loans of sizes that overflow; handles never opened ---------------

TEST_F(CxxApi, LoanSizeOverflowFailsWithEmsgsize)
{
    const std::string n = name("ovf");
    auto pub = nerve::Publisher<std::vector<float>>::create(n);
    ASSERT_TRUE(pub);
    auto l = pub->loan(SIZE_MAX / sizeof(float) + 2); // n * 4 wraps to 4
    EXPECT_FALSE(l.ok());
    EXPECT_EQ(l.code(), NERVE_EMSGSIZE);

    const std::string s = name("ovfscan");
    auto ps = nerve::Publisher<robot_msgs::LaserScan>::create(s);
    ASSERT_TRUE(ps);
    auto ls = ps->loan(
        (SIZE_MAX - sizeof(robot_msgs::LaserScanHeader)) / sizeof(float) + 1);
    EXPECT_FALSE(ls.ok());
    EXPECT_EQ(ls.code(), NERVE_EMSGSIZE);
    // A size that fits still works after the failures.
    auto ok = pub->loan(size_t{4});
    ASSERT_TRUE(ok.ok());
    EXPECT_EQ((**ok).size(), 4u);
    ok->discard();
}

TEST_F(CxxApi, EmptyHandlesAreSafe)
{
    nerve::Reader<Imu> rd;
    EXPECT_EQ(rd.cursor(), 0u);
    rd.seek(5);
    rd.cancel();
    rd.cancel_clear();
    EXPECT_FALSE(rd);
    nerve::Subscriber<Imu> sub;
    EXPECT_EQ(sub.stats().received, 0u);
    EXPECT_TRUE(sub.name().empty());
    EXPECT_FALSE(sub);
}

// The five mistakes every binding's error test makes (tests/unit
// test_chan_basic.c, tests/python test_api.py, tests/cli test_cli.py):
// message() is the library's detail, naming what was wrong, what is
// accepted and what to do; for a typed open of another type, both types.
TEST_F(CxxApi, ErrorsCarryTheDetail)
{
    auto has = [](const char *text, const char *part) {
        EXPECT_NE(std::strstr(text, part), nullptr) << text;
    };
    const std::string n = name("detail");
    // 1. A name that breaks the rule.
    auto bad = nerve::Reader<Imu>::open("bad name");
    EXPECT_EQ(bad.code(), NERVE_EINVAL);
    has(bad.message(), "a space is not allowed");
    has(bad.message(), "names use A-Z a-z 0-9 _ . -");
    // 2. No such channel.
    auto none = nerve::Reader<Imu>::open(n);
    EXPECT_EQ(none.code(), NERVE_ENOENT);
    has(none.message(), "no such channel");
    // 3. It exists already.
    nerve::ChannelOptions o;
    o.slots = 8;
    o.data_size = 4096;
    auto pub = nerve::Publisher<Imu>::create(n, o);
    ASSERT_TRUE(pub) << pub.message();
    auto again = nerve::Publisher<Imu>::create(n, o);
    EXPECT_EQ(again.code(), NERVE_EEXIST);
    has(again.message(), "exists (open it; or reuse it");
    // 4. Another type: both are named.
    auto other = nerve::Reader<Command>::open(n);
    EXPECT_EQ(other.code(), NERVE_EMISMATCH);
    has(other.message(), "carries type 'robot_msgs/Imu'");
    has(other.message(), "not 'robot_msgs/Command'");
    // 5. Larger than the ring.
    auto raw = nerve::Channel::open(n, nerve::Access::write);
    ASSERT_TRUE(raw);
    static char big[5000];
    auto put = raw->put(big, sizeof big);
    EXPECT_EQ(put.code(), NERVE_EMSGSIZE);
    has(put.message(), "a message of 5000 bytes does not fit: the channel's "
                       "data ring is 4096 bytes");
#if NERVE_CXX_EXCEPTIONS
    try {
        (void)nerve::Reader<Command>::open_or_throw(n);
        ADD_FAILURE() << "no exception";
    } catch (const nerve::Error &e) {
        has(e.what(), "EMISMATCH: the channel carries type 'robot_msgs/Imu'");
    }
#endif
}
