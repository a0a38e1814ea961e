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
