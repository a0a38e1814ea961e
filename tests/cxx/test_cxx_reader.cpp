// Tests of nerve::Reader's delivery and missed() counts when messages do
// not fit T or are overwritten while being read: a valid message after an
// oversized one is delivered, get_seq / get_by_timestamp do not count a
// message they did not consume as missed, and ELAPSED does not report a
// loss twice. Two cases interpose core functions (the library is shared)
// to force a race deterministically.
#include "cxx_test.hpp"

#include "msgs.hpp"

#include <cstdint>
#include <dlfcn.h>
#include <string>

using robot_msgs::Imu;

namespace {

class CxxReader : public nt::ChannelTest {};

Imu imu(uint32_t seq)
{
    Imu m{};
    m.seq = seq;
    return m;
}

// Interposition state: publish `race_msg` on `race_pub` inside the next
// nerve_chan_get() (after the real call), and make the next `stale`
// nerve_chan_view_check() calls report an overwrite.
nerve::Publisher<Imu> *race_pub = nullptr;
int stale = 0;

} // namespace

extern "C" int nerve_chan_get(nerve_chan *c, void *buf, size_t len, int64_t arg,
                              int64_t timeout, struct nerve_get_info *info,
                              uint32_t flags)
{
    using fn = int (*)(nerve_chan *, void *, size_t, int64_t, int64_t,
                       struct nerve_get_info *, uint32_t);
    static fn real = reinterpret_cast<fn>(dlsym(RTLD_NEXT, "nerve_chan_get"));
    int rc = real(c, buf, len, arg, timeout, info, flags);
    if (race_pub != nullptr) {
        nerve::Publisher<Imu> *p = race_pub;
        race_pub = nullptr;
        (void)p->publish(imu(42)); // a writer races in right after
    }
    return rc;
}

extern "C" int nerve_chan_view_check(const nerve_chan *c,
                                     const struct nerve_view *v)
{
    using fn = int (*)(const nerve_chan *, const struct nerve_view *);
    static fn real =
        reinterpret_cast<fn>(dlsym(RTLD_NEXT, "nerve_chan_view_check"));
    if (stale > 0) {
        stale--;
        return NERVE_ESTALE;
    }
    return real(c, v);
}

TEST_F(CxxReader, ValidMessageAfterOversizedOneIsDelivered)
{
    const std::string n = name("big");
    auto pub = nerve::Publisher<Imu>::create(n);
    ASSERT_TRUE(pub);
    auto rd = nerve::Reader<Imu>::open(n);
    ASSERT_TRUE(rd);
    auto raw = nerve::Channel::open(n, nerve::Access::write);
    ASSERT_TRUE(raw);
    char big[sizeof(Imu) + 64] = {};
    ASSERT_TRUE(raw->put(big, sizeof big)); // seq 1: too large for Imu
    Imu m{};
    race_pub = &*pub; // seq 2 arrives right after the get saw seq 1
    auto r = rd->get_newest(m);
    EXPECT_EQ(r.code(), NERVE_EDECODE);
    EXPECT_EQ(rd->cursor(), 1u); // stepped over the bad one only
    auto r2 = rd->get_newest(m);
    ASSERT_TRUE(r2.has_data()) << r2.name();
    EXPECT_EQ(r2.seq(), 2u);
    EXPECT_EQ(m.seq, 42u);
}

TEST_F(CxxReader, GetSeqAndByTimestampDoNotCountMissed)
{
    const std::string n = name("miss");
    auto pub = nerve::Publisher<Imu>::create(n);
    ASSERT_TRUE(pub);
    auto rd = nerve::Reader<Imu>::open(n);
    ASSERT_TRUE(rd);
    auto raw = nerve::Channel::open(n, nerve::Access::write);
    ASSERT_TRUE(raw);
    char big[sizeof(Imu) + 64] = {};
    ASSERT_TRUE(raw->put(big, sizeof big));
    Imu m{};
    for (int i = 0; i < 3; i++) {
        auto r = rd->get_seq(m, 1);
        EXPECT_EQ(r.code(), NERVE_EDECODE);
        EXPECT_EQ(r.missed(), 0u);
    }
    auto t = rd->get_by_timestamp(m, nerve::Clock::now());
    EXPECT_EQ(t.code(), NERVE_EDECODE);
    EXPECT_EQ(t.missed(), 0u);
    EXPECT_EQ(rd->cursor(), 0u);
    auto r = rd->get_next(m); // the one read that consumes it counts it
    EXPECT_EQ(r.code(), NERVE_EDECODE);
    EXPECT_EQ(r.missed(), 1u);
}

TEST_F(CxxReader, ElapsedDoesNotReportMissedTwice)
{
    const std::string n = name("elap");
    nerve::ChannelOptions o;
    o.slots = 2;
    auto pub = nerve::Publisher<std::string>::create(n, o);
    ASSERT_TRUE(pub);
    auto rd = nerve::Reader<std::string>::open(n);
    ASSERT_TRUE(rd);
    for (const char *s : {"one", "two", "three"}) {
        ASSERT_TRUE(pub->publish(std::string(s)));
    }
    std::string m;
    stale = 4; // every attempt of the first read sees an overwrite
    auto r = rd->get_next(m);
    EXPECT_EQ(r.code(), NERVE_ELAPPED);
    auto r2 = rd->get_next(m);
    ASSERT_TRUE(r2.has_data()) << r2.name();
    EXPECT_EQ(m, "two");
    EXPECT_EQ(r.missed() + r2.missed(), 1u); // only "one" was lost
}

// "missed" has one meaning (include/nerve/chan.h, beside
// nerve_chan_cursor): the history a reader finds when it opens is not
// loss. The same steps give the same numbers from C and from C++ here, and
// from Python and the nerve command in tests/python/test_interop.py.
TEST_F(CxxReader, MissedHasOneMeaningInCAndCxx)
{
    const std::string n = name("one");
    nerve::ChannelOptions o;
    o.slots = 4;
    auto pub = nerve::Publisher<Imu>::create(n, o);
    ASSERT_TRUE(pub);
    for (uint32_t i = 1; i <= 3; i++) {
        ASSERT_TRUE(pub->publish(imu(i)));
    }
    auto rd = nerve::Reader<Imu>::open(n);
    ASSERT_TRUE(rd);
    nerve_chan *c = nullptr;
    ASSERT_EQ(nerve_chan_open(n.c_str(), NERVE_O_READ, &c), 0);
    Imu m{};
    struct nerve_get_info gi = {};
    // First NEWEST on 3 messages present at open: message 3, missed 0.
    auto r = rd->get_newest(m);
    ASSERT_TRUE(r.has_data()) << r.name();
    EXPECT_EQ(r.seq(), 3u);
    EXPECT_EQ(r.missed(), 0u);
    ASSERT_EQ(nerve_chan_get(c, &m, sizeof m, 0, 0, &gi, NERVE_GET_NEWEST), 0);
    EXPECT_EQ(gi.seq, 3u);
    EXPECT_EQ(gi.missed, 0u);
    // Three more after the open: NEWEST skips 4 and 5, missed 2.
    for (uint32_t i = 4; i <= 6; i++) {
        ASSERT_TRUE(pub->publish(imu(i)));
    }
    r = rd->get_newest(m);
    ASSERT_TRUE(r.has_data()) << r.name();
    EXPECT_EQ(r.seq(), 6u);
    EXPECT_EQ(r.missed(), 2u);
    ASSERT_EQ(nerve_chan_get(c, &m, sizeof m, 0, 0, &gi, NERVE_GET_NEWEST), 0);
    EXPECT_EQ(gi.seq, 6u);
    EXPECT_EQ(gi.missed, 2u);
    nerve_chan_close(c);
    // A new handle on a ring that has lapped (oldest present: 3): the
    // first NEXT returns the oldest present with missed 0.
    auto rd2 = nerve::Reader<Imu>::open(n);
    ASSERT_TRUE(rd2);
    ASSERT_EQ(nerve_chan_open(n.c_str(), NERVE_O_READ, &c), 0);
    r = rd2->get_next(m);
    ASSERT_TRUE(r.has_data()) << r.name();
    EXPECT_EQ(r.seq(), 3u);
    EXPECT_EQ(r.missed(), 0u);
    ASSERT_EQ(nerve_chan_get(c, &m, sizeof m, 0, 0, &gi, NERVE_GET_NEXT), 0);
    EXPECT_EQ(gi.seq, 3u);
    EXPECT_EQ(gi.missed, 0u);
    nerve_chan_close(c);
}
