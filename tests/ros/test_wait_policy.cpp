// The opt-in busy poll of nerve::WaitPolicy (include/nerve/cxx/reader.hpp)
// as the fuRom benchmark uses it: Reader<T>::set_wait_policy() for ROS
// and raw types, ros1::read_view() through its Reader, and
// SubscribeOptions::wait on a Node. What is checked is behaviour, never
// time: every message is delivered in order whether it arrives during the
// poll or after it (in the blocking wait) and, with a lead, whether the
// learnt period predicted it right or not; a wait ends at its timeout even
// when the spin is far longer (a spin that ignored the timeout would hang
// the test until the watchdog ends it), cancel() and Node::stop() end a
// spinning wait, and a zero timeout never waits.
#include "../cxx/cxx_test.hpp"
#include "ros1_msgs.hpp"

#include <nerve/cxx/ros1.hpp>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

namespace {

using namespace std::chrono_literals;

class WaitPolicy : public nt::ChannelTest {};

// Publishes make<T>(1..n); every tenth message after a pause longer than
// the reader's spin, so that both paths (taken while polling, woken in the
// blocking wait) deliver messages.
template <class T> std::thread publisher(nerve::Publisher<T> &pub, uint32_t n)
{
    return std::thread([&pub, n] {
        for (uint32_t i = 1; i <= n; i++) {
            std::this_thread::sleep_for(i % 10 == 0 ? 5ms : 50us);
            if (!pub.publish(rtest::make<T>(i))) {
                ADD_FAILURE() << "publish " << i;
            }
        }
    });
}

TEST_F(WaitPolicy, ReaderSpinDeliversEveryRosMessage)
{
    const std::string ch = name("imu");
    auto pub = nerve::Publisher<sensor_msgs::Imu>::create(ch);
    ASSERT_TRUE(pub) << pub.message();
    auto rd = nerve::Reader<sensor_msgs::Imu>::open(ch);
    ASSERT_TRUE(rd) << rd.message();
    EXPECT_EQ(rd->get_wait_policy().spin.count(), 0); // default: block at once
    rd->set_wait_policy(nerve::WaitPolicy{1ms});
    EXPECT_EQ(rd->get_wait_policy().spin, nerve::Duration(1ms));
    const uint32_t n = 100;
    std::thread t = publisher(*pub, n);
    sensor_msgs::Imu m;
    uint32_t got = 0;
    for (uint32_t i = 1; i <= n; i++) {
        auto r = rd->wait_next(m, 10s);
        if (!r) {
            ADD_FAILURE() << "message " << i << ": " << r.message();
            break;
        }
        EXPECT_EQ(r.missed(), 0u);
        EXPECT_TRUE(m == rtest::make<sensor_msgs::Imu>(i)) << "message " << i;
        got++;
    }
    t.join();
    EXPECT_EQ(got, n);
}

TEST_F(WaitPolicy, ReaderSpinDeliversEveryRawMessage)
{
    const std::string ch = name("raw");
    auto pub = nerve::Publisher<int64_t>::create(ch);
    ASSERT_TRUE(pub) << pub.message();
    auto rd = nerve::Reader<int64_t>::open(ch);
    ASSERT_TRUE(rd) << rd.message();
    rd->set_wait_policy(nerve::WaitPolicy{1ms});
    const int64_t n = 100;
    std::thread t([&] {
        for (int64_t i = 1; i <= n; i++) {
            std::this_thread::sleep_for(i % 10 == 0 ? 5ms : 50us);
            ASSERT_TRUE(pub->publish(i));
        }
    });
    int64_t v = 0;
    for (int64_t i = 1; i <= n; i++) {
        auto r = rd->wait_next(v, 10s);
        ASSERT_TRUE(r) << "message " << i << ": " << r.message();
        EXPECT_EQ(v, i);
    }
    t.join();
}

TEST_F(WaitPolicy, WaitNewestAndUnreadSpin)
{
    const std::string ch = name("newest");
    auto pub = nerve::Publisher<sensor_msgs::LaserScan>::create(ch);
    ASSERT_TRUE(pub) << pub.message();
    auto rd = nerve::Reader<sensor_msgs::LaserScan>::open(ch);
    ASSERT_TRUE(rd) << rd.message();
    rd->set_wait_policy(nerve::WaitPolicy{2ms});
    std::thread t([&] {
        std::this_thread::sleep_for(1ms);
        ASSERT_TRUE(pub->publish(rtest::make<sensor_msgs::LaserScan>(1)));
        ASSERT_TRUE(pub->publish(rtest::make<sensor_msgs::LaserScan>(2)));
    });
    std::vector<sensor_msgs::LaserScan> got, batch;
    while (got.size() < 2) {
        auto r = rd->wait_unread(batch, 10s);
        ASSERT_TRUE(r) << r.message();
        ASSERT_EQ(batch.size(), r.count());
        got.insert(got.end(), batch.begin(), batch.end());
    }
    t.join();
    ASSERT_EQ(got.size(), 2u);
    EXPECT_TRUE(got[0] == rtest::make<sensor_msgs::LaserScan>(1));
    EXPECT_TRUE(got[1] == rtest::make<sensor_msgs::LaserScan>(2));
    // wait_newest: nothing newer than the cursor, then a new message.
    std::thread t2([&] {
        std::this_thread::sleep_for(3ms);
        ASSERT_TRUE(pub->publish(rtest::make<sensor_msgs::LaserScan>(3)));
    });
    sensor_msgs::LaserScan m;
    auto r = rd->wait_newest(m, 10s);
    t2.join();
    ASSERT_TRUE(r) << r.message();
    EXPECT_TRUE(m == rtest::make<sensor_msgs::LaserScan>(3));
}

// The spin never outlasts the wait's timeout: with an hour of spin a
// 20 ms wait on an empty channel still returns (timed out).
TEST_F(WaitPolicy, SpinEndsAtTheTimeout)
{
    const std::string ch = name("empty");
    auto pub = nerve::Publisher<sensor_msgs::Imu>::create(ch);
    ASSERT_TRUE(pub) << pub.message();
    auto rd = nerve::Reader<sensor_msgs::Imu>::open(ch);
    ASSERT_TRUE(rd) << rd.message();
    rd->set_wait_policy(nerve::WaitPolicy{std::chrono::hours(1)});
    sensor_msgs::Imu m;
    auto r = rd->wait_next(m, 20ms);
    EXPECT_EQ(r.code(), NERVE_ETIMEDOUT) << r.message();
    std::vector<sensor_msgs::Imu> v;
    auto ru = rd->wait_unread(v, 20ms);
    EXPECT_EQ(ru.code(), NERVE_ETIMEDOUT) << ru.message();
    EXPECT_TRUE(v.empty());
    auto rv = nerve::ros1::read_view(
        *rd, NERVE_GET_NEXT | NERVE_F_WAIT, 20ms,
        [](const uint8_t *, size_t, const nerve::MsgInfo &) {
            ADD_FAILURE() << "no message was published";
        });
    EXPECT_EQ(rv.code(), NERVE_ETIMEDOUT) << rv.message();
}

// A spin shorter than the timeout: when it runs out the wait blocks for
// the rest and still times out (empty channel) or delivers (a message
// published after the spin).
TEST_F(WaitPolicy, SpinThenBlock)
{
    const std::string ch = name("block");
    auto pub = nerve::Publisher<sensor_msgs::Imu>::create(ch);
    ASSERT_TRUE(pub) << pub.message();
    auto rd = nerve::Reader<sensor_msgs::Imu>::open(ch);
    ASSERT_TRUE(rd) << rd.message();
    rd->set_wait_policy(nerve::WaitPolicy{100us});
    sensor_msgs::Imu m;
    EXPECT_EQ(rd->wait_next(m, 10ms).code(), NERVE_ETIMEDOUT);
    std::thread t([&] {
        std::this_thread::sleep_for(20ms);
        ASSERT_TRUE(pub->publish(rtest::make<sensor_msgs::Imu>(7)));
    });
    auto r = rd->wait_next(m, 10s);
    t.join();
    ASSERT_TRUE(r) << r.message();
    EXPECT_TRUE(m == rtest::make<sensor_msgs::Imu>(7));
}

// A zero timeout does not wait, spin or not: the same answer as without
// a policy.
TEST_F(WaitPolicy, ZeroTimeoutDoesNotSpin)
{
    const std::string ch = name("zero");
    auto pub = nerve::Publisher<sensor_msgs::Imu>::create(ch);
    ASSERT_TRUE(pub) << pub.message();
    auto rd = nerve::Reader<sensor_msgs::Imu>::open(ch);
    ASSERT_TRUE(rd) << rd.message();
    sensor_msgs::Imu m;
    const int plain = rd->wait_next(m, 0ms).code();
    EXPECT_NE(plain, 0);
    rd->set_wait_policy(nerve::WaitPolicy{std::chrono::hours(1)});
    EXPECT_EQ(rd->wait_next(m, 0ms).code(), plain);
    ASSERT_TRUE(pub->publish(rtest::make<sensor_msgs::Imu>(1)));
    ASSERT_TRUE(rd->wait_next(m, 0ms));
    EXPECT_TRUE(m == rtest::make<sensor_msgs::Imu>(1));
}

// cancel() is sticky, so a spinning wait sees it when its spin ends.
TEST_F(WaitPolicy, CancelEndsASpinningWait)
{
    const std::string ch = name("cancel");
    auto pub = nerve::Publisher<sensor_msgs::Imu>::create(ch);
    ASSERT_TRUE(pub) << pub.message();
    auto rd = nerve::Reader<sensor_msgs::Imu>::open(ch);
    ASSERT_TRUE(rd) << rd.message();
    rd->set_wait_policy(nerve::WaitPolicy{5ms});
    std::thread t([&] {
        std::this_thread::sleep_for(1ms);
        rd->cancel();
    });
    sensor_msgs::Imu m;
    auto r = rd->wait_next(m, nerve::forever);
    t.join();
    EXPECT_EQ(r.code(), NERVE_ECANCELED) << r.message();
    rd->cancel_clear();
}

// Zero-copy reads spin too: every message seen in place, in order.
TEST_F(WaitPolicy, ReadViewSpins)
{
    const std::string ch = name("view");
    auto pub = nerve::Publisher<sensor_msgs::LaserScan>::create(ch);
    ASSERT_TRUE(pub) << pub.message();
    auto rd = nerve::Reader<sensor_msgs::LaserScan>::open(ch);
    ASSERT_TRUE(rd) << rd.message();
    rd->set_wait_policy(nerve::WaitPolicy{1ms});
    const uint32_t n = 40;
    std::thread t = publisher(*pub, n);
    for (uint32_t i = 1; i <= n; i++) {
        uint32_t seq = 0, sec = 0, nsec = 0;
        auto r = nerve::ros1::read_view(
            *rd, NERVE_GET_NEXT | NERVE_F_WAIT, 10s,
            [&](const uint8_t *p, size_t len, const nerve::MsgInfo &) {
                if (nerve::ros1::stamp_of(p, len, sec, nsec)) {
                    std::memcpy(&seq, p, 4);
                }
            });
        if (!r) {
            ADD_FAILURE() << "message " << i << ": " << r.message();
            break;
        }
        EXPECT_EQ(seq, i);
        EXPECT_EQ(sec, 1000 + i);
        EXPECT_EQ(nsec, 7 * i);
    }
    t.join();
}

// lead: the reader learns the period, naps until just before the next
// message is due, then polls. Every message of a periodic publisher (with
// a longer pause in the middle, so that some predictions are wrong both
// ways) is delivered in order, through wait_next and read_view; when the
// publisher stops, a wait still ends at its timeout.
TEST_F(WaitPolicy, LeadDeliversEveryPeriodicMessage)
{
    const std::string ch = name("lead");
    auto pub = nerve::Publisher<sensor_msgs::Imu>::create(ch);
    ASSERT_TRUE(pub) << pub.message();
    auto rd = nerve::Reader<sensor_msgs::Imu>::open(ch);
    ASSERT_TRUE(rd) << rd.message();
    rd->set_wait_policy(nerve::WaitPolicy{2ms, 500us});
    EXPECT_EQ(rd->get_wait_policy().lead, nerve::Duration(500us));
    const uint32_t n = 60;
    std::thread t([&] {
        auto next = std::chrono::steady_clock::now();
        for (uint32_t i = 1; i <= n; i++) {
            next += i == n / 2 ? 20ms : 2ms;
            std::this_thread::sleep_until(next);
            ASSERT_TRUE(pub->publish(rtest::make<sensor_msgs::Imu>(i)));
        }
    });
    sensor_msgs::Imu m;
    for (uint32_t i = 1; i <= n; i++) {
        if (i % 2 == 0) {
            auto r = rd->wait_next(m, 10s);
            ASSERT_TRUE(r) << "message " << i << ": " << r.message();
            EXPECT_TRUE(m == rtest::make<sensor_msgs::Imu>(i))
                << "message " << i;
        } else {
            uint32_t seq = 0;
            auto r = nerve::ros1::read_view(
                *rd, NERVE_GET_NEXT | NERVE_F_WAIT, 10s,
                [&](const uint8_t *p, size_t len, const nerve::MsgInfo &) {
                    ASSERT_GE(len, 4u);
                    std::memcpy(&seq, p, 4);
                });
            ASSERT_TRUE(r) << "message " << i << ": " << r.message();
            EXPECT_EQ(seq, i);
        }
    }
    t.join();
    EXPECT_EQ(rd->wait_next(m, 30ms).code(), NERVE_ETIMEDOUT);
    EXPECT_EQ(rd->wait_next(m, 1ms).code(), NERVE_ETIMEDOUT);
}

// A Node polls for the longest spin of its subscribers: every message of
// two channels is delivered, and stop() ends a spin_once() that would
// otherwise poll for an hour.
TEST_F(WaitPolicy, NodeSubscriberSpins)
{
    const std::string a = name("na"), b = name("nb");
    auto pa = nerve::Publisher<sensor_msgs::Imu>::create(a);
    auto pb = nerve::Publisher<sensor_msgs::Imu>::create(b);
    ASSERT_TRUE(pa && pb);
    nerve::Node node;
    std::vector<uint32_t> ga, gb;
    nerve::SubscribeOptions o;
    o.wait.spin = 1ms;
    auto sa = node.subscribe<sensor_msgs::Imu>(
        a, [&](const sensor_msgs::Imu &m) { ga.push_back(m.header.seq); }, o);
    auto sb = node.subscribe<sensor_msgs::Imu>(
        b, [&](const sensor_msgs::Imu &m) { gb.push_back(m.header.seq); });
    ASSERT_TRUE(sa && sb);
    const uint32_t n = 50;
    std::thread t([&] {
        for (uint32_t i = 1; i <= n; i++) {
            std::this_thread::sleep_for(i % 10 == 0 ? 5ms : 50us);
            ASSERT_TRUE(pa->publish(rtest::make<sensor_msgs::Imu>(i)));
            ASSERT_TRUE(pb->publish(rtest::make<sensor_msgs::Imu>(i)));
        }
    });
    for (int rounds = 0; (ga.size() < n || gb.size() < n) && rounds < 10000;
         rounds++) {
        auto r = node.spin_once(10s);
        ASSERT_TRUE(r) << r.message();
        ASSERT_GT(*r, 0u); // a 10 s wait ends with callbacks here
    }
    t.join();
    std::vector<uint32_t> want;
    for (uint32_t i = 1; i <= n; i++) {
        want.push_back(i);
    }
    EXPECT_EQ(ga, want);
    EXPECT_EQ(gb, want);

    nerve::SubscribeOptions forever_spin;
    forever_spin.wait.spin = std::chrono::hours(1);
    auto sc = node.subscribe<sensor_msgs::Imu>(
        name("nc"), [](const sensor_msgs::Imu &) {},
        [&] {
            forever_spin.create = true;
            return forever_spin;
        }());
    ASSERT_TRUE(sc) << sc.message();
    std::thread stopper([&] {
        std::this_thread::sleep_for(5ms);
        node.stop();
    });
    auto r = node.spin_once(nerve::forever);
    stopper.join();
    EXPECT_EQ(r.code(), NERVE_ECANCELED) << r.message();
}

} // namespace
