// Regression tests of reviewed C++ API bugs: loan size overflow, a valid
// message lost after an oversized raw one, missed() counts of get_seq /
// get_by_timestamp and of ELAPPED, and the Node's self-unsubscribe,
// cross-channel order and throwing callbacks. Two cases interpose core
// functions (the library is shared) to force a race deterministically.
#include "cxx_test.hpp"

#include "msgs.hpp"

#include <cstdint>
#include <dlfcn.h>
#include <stdexcept>
#include <string>
#include <vector>

using robot_msgs::Imu;

namespace {

class CxxFix : public nt::ChannelTest {};

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

extern "C" int nerve_chan_get(nerve_chan *c, void *buf, size_t len,
                              int64_t arg, int64_t timeout,
                              struct nerve_get_info *info, uint32_t flags)
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

TEST_F(CxxFix, LoanSizeOverflowFailsWithEmsgsize)
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
    auto ls = ps->loan((SIZE_MAX - sizeof(robot_msgs::LaserScanHeader)) /
                           sizeof(float) + 1);
    EXPECT_FALSE(ls.ok());
    EXPECT_EQ(ls.code(), NERVE_EMSGSIZE);
    // A size that fits still works after the failures.
    auto ok = pub->loan(size_t{4});
    ASSERT_TRUE(ok.ok());
    EXPECT_EQ((**ok).size(), 4u);
    ok->discard();
}

TEST_F(CxxFix, ValidMessageAfterOversizedOneIsDelivered)
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

TEST_F(CxxFix, GetSeqAndByTimestampDoNotCountMissed)
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

TEST_F(CxxFix, ElapsedDoesNotReportMissedTwice)
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

TEST_F(CxxFix, CallbackMayUnsubscribeItself)
{
    const std::string n = name("self");
    auto pub = nerve::Publisher<Imu>::create(n);
    ASSERT_TRUE(pub);
    nerve::Node node;
    nerve::Subscriber<Imu> sub;
    uint32_t seen = 0;
    auto r = node.subscribe<Imu>(n, [&](const Imu &m) {
        sub.unsubscribe();
        seen = m.seq; // m lives in the subscriber's state: still valid
    });
    ASSERT_TRUE(r);
    sub = std::move(*r);
    ASSERT_TRUE(pub->publish(imu(7)));
    auto s = node.spin_once(std::chrono::seconds(5));
    ASSERT_TRUE(s);
    EXPECT_EQ(*s, 1u);
    EXPECT_EQ(seen, 7u);
    EXPECT_FALSE(sub);
    EXPECT_EQ(node.size(), 0u);
}

TEST_F(CxxFix, MessagesPublishedByACallbackWaitForTheNextSpin)
{
    const std::string a = name("oa"), b = name("ob");
    auto pa = nerve::Publisher<Imu>::create(a);
    auto pb = nerve::Publisher<Imu>::create(b);
    ASSERT_TRUE(pa && pb);
    nerve::Node node;
    std::string order;
    auto sa = node.subscribe<Imu>(a, [&](const Imu &m) {
        order += "a" + std::to_string(m.seq) + " ";
        if (m.seq == 1) { // b1 is committed before a2
            ASSERT_TRUE(pb->publish(imu(1)));
            ASSERT_TRUE(pa->publish(imu(2)));
        }
    });
    auto sb = node.subscribe<Imu>(b, [&](const Imu &m) {
        order += "b" + std::to_string(m.seq) + " ";
    });
    ASSERT_TRUE(sa && sb);
    ASSERT_TRUE(pa->publish(imu(1)));
    for (int k = 0; k < 2; k++) {
        auto r = node.spin_once(std::chrono::seconds(5));
        ASSERT_TRUE(r);
        order += "| ";
    }
    EXPECT_EQ(order, "a1 | b1 a2 | ");
}

TEST_F(CxxFix, NewestModeIgnoresMessagesAfterTheWait)
{
    const std::string a = name("na"), b = name("nb");
    auto pa = nerve::Publisher<Imu>::create(a);
    auto pb = nerve::Publisher<Imu>::create(b);
    ASSERT_TRUE(pa && pb);
    nerve::Node node;
    std::string order;
    auto sa = node.subscribe<Imu>(a, [&](const Imu &m) {
        order += "a" + std::to_string(m.seq) + " ";
        ASSERT_TRUE(pb->publish(imu(m.seq + 10)));
    }, nerve::Delivery::newest);
    auto sb = node.subscribe<Imu>(b, [&](const Imu &m) {
        order += "b" + std::to_string(m.seq) + " ";
    }, nerve::Delivery::newest);
    ASSERT_TRUE(sa && sb);
    ASSERT_TRUE(pb->publish(imu(1)));
    ASSERT_TRUE(pa->publish(imu(1)));
    ASSERT_TRUE(node.spin_once(std::chrono::seconds(5)));
    ASSERT_TRUE(node.spin_once(std::chrono::seconds(5)));
    EXPECT_EQ(order, "b1 a1 b11 ");
    EXPECT_EQ(sb->stats().missed, 0u);
}

#if NERVE_CXX_EXCEPTIONS
TEST_F(CxxFix, ThrowingCallbackLosesNoOtherMessage)
{
    const std::string a = name("ta"), b = name("tb");
    auto pa = nerve::Publisher<Imu>::create(a);
    auto pb = nerve::Publisher<Imu>::create(b);
    ASSERT_TRUE(pa && pb);
    nerve::Node node;
    int acalls = 0, bcalls = 0;
    auto sa = node.subscribe<Imu>(a, [&](const Imu &) {
        if (acalls++ == 0) {
            throw std::runtime_error("callback failed");
        }
    });
    auto sb = node.subscribe<Imu>(b, [&](const Imu &) { bcalls++; });
    ASSERT_TRUE(sa && sb);
    ASSERT_TRUE(pa->publish(imu(1))); // a is older: its callback runs first
    ASSERT_TRUE(pb->publish(imu(1)));
    EXPECT_THROW((void)node.spin_once(std::chrono::seconds(5)),
                 std::runtime_error);
    EXPECT_EQ(bcalls, 0);
    auto r = node.spin_once(std::chrono::seconds(5));
    ASSERT_TRUE(r);
    EXPECT_EQ(*r, 1u);
    EXPECT_EQ(bcalls, 1);
    EXPECT_EQ(acalls, 1); // the thrown-on message counts as delivered
    EXPECT_EQ(sb->stats().missed, 0u);
    EXPECT_EQ(sb->stats().received, 1u);
}
#endif

TEST_F(CxxFix, EmptyHandlesAreSafe)
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
