// Tests of nerve::Node and nerve::Subscriber: one wait over many channels,
// callbacks in commit-time order, every-message and newest-only delivery,
// stopping from another thread and from a signal handler, and
// (un)subscribing while spinning, and callbacks that unsubscribe
// themselves, publish to other channels or throw.
#include "cxx_test.hpp"

#include "msgs.hpp"

#include <csignal>
#include <pthread.h>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

using robot_msgs::Command;
using robot_msgs::Imu;

namespace {

class CxxNode : public nt::ChannelTest {};

Imu imu(uint32_t seq)
{
    Imu m{};
    m.seq = seq;
    return m;
}

Command cmd(uint32_t seq)
{
    Command c{};
    c.imu_seq = seq;
    return c;
}

} // namespace

TEST_F(CxxNode, NoSubscribersIsAnError)
{
    nerve::Node node;
    EXPECT_EQ(node.spin_once(std::chrono::milliseconds(1)).code(),
              NERVE_EINVAL);
    EXPECT_EQ(node.size(), 0u);
}

TEST_F(CxxNode, SubscribeChecksTheType)
{
    const std::string n = name("type");
    auto pub = nerve::Publisher<Imu>::create(n);
    ASSERT_TRUE(pub);
    nerve::Node node;
    auto bad = node.subscribe<Command>(n, [](const Command &) {});
    EXPECT_EQ(bad.code(), NERVE_EMISMATCH);
    auto missing = node.subscribe<Imu>(name("missing"), [](const Imu &) {});
    EXPECT_EQ(missing.code(), NERVE_ENOENT);
    EXPECT_EQ(node.size(), 0u);

    // With create, a subscriber may come first.
    nerve::SubscribeOptions o;
    o.create = true;
    const std::string later = name("later");
    auto early = node.subscribe<Imu>(
        later, [](const Imu &) {}, o);
    ASSERT_TRUE(early) << early.message();
    EXPECT_EQ(node.size(), 1u);
    auto p2 = nerve::Publisher<Imu>::open(later);
    EXPECT_TRUE(p2);
}

TEST_F(CxxNode, CallbacksRunInCommitTimeOrderAcrossChannels)
{
    const std::string a = name("a"), b = name("b");
    auto pa = nerve::Publisher<Imu>::create(a);
    auto pb = nerve::Publisher<Command>::create(b);
    ASSERT_TRUE(pa && pb);
    nerve::Node node;
    std::vector<std::pair<char, uint32_t>> order;
    std::vector<int64_t> times;
    auto sa =
        node.subscribe<Imu>(a, [&](const Imu &m, const nerve::MsgInfo &i) {
            order.emplace_back('a', m.seq);
            times.push_back(i.time_ns);
        });
    auto sb = node.subscribe<Command>(
        b, [&](const Command &m, const nerve::MsgInfo &i) {
            order.emplace_back('b', m.imu_seq);
            times.push_back(i.time_ns);
        });
    ASSERT_TRUE(sa && sb);
    // Interleaved publishing: b1 a1 a2 b2 a3 b3.
    ASSERT_TRUE(pb->publish(cmd(1)));
    ASSERT_TRUE(pa->publish(imu(1)));
    ASSERT_TRUE(pa->publish(imu(2)));
    ASSERT_TRUE(pb->publish(cmd(2)));
    ASSERT_TRUE(pa->publish(imu(3)));
    ASSERT_TRUE(pb->publish(cmd(3)));
    auto r = node.spin_once(std::chrono::seconds(10));
    ASSERT_TRUE(r) << r.message();
    EXPECT_EQ(*r, 6u);
    const std::vector<std::pair<char, uint32_t>> want = {
        {'b', 1}, {'a', 1}, {'a', 2}, {'b', 2}, {'a', 3}, {'b', 3}};
    // Commit times are non-decreasing; where two are equal the order is
    // subscription order, which this publishing order does not rely on
    // unless the clock did not advance, so check times first.
    for (size_t i = 1; i < times.size(); i++) {
        EXPECT_LE(times[i - 1], times[i]);
    }
    bool strictly = true;
    for (size_t i = 1; i < times.size(); i++) {
        strictly = strictly && times[i - 1] < times[i];
    }
    if (strictly) {
        EXPECT_EQ(order, want);
    }
    EXPECT_EQ(sa->stats().received, 3u);
    EXPECT_EQ(sb->stats().received, 3u);
    // Nothing left: a short spin times out with no callbacks.
    r = node.spin_once(std::chrono::milliseconds(1));
    ASSERT_TRUE(r);
    EXPECT_EQ(*r, 0u);
}

TEST_F(CxxNode, NewestOnlySkipsUnneededCalls)
{
    const std::string n = name("newest");
    auto pub = nerve::Publisher<Imu>::create(n);
    ASSERT_TRUE(pub);
    nerve::Node node;
    std::vector<uint32_t> every, newest;
    auto s1 =
        node.subscribe<Imu>(n, [&](const Imu &m) { every.push_back(m.seq); });
    auto s2 = node.subscribe<Imu>(
        n, [&](const Imu &m) { newest.push_back(m.seq); },
        nerve::Delivery::newest);
    ASSERT_TRUE(s1 && s2);
    for (uint32_t i = 1; i <= 5; i++) {
        ASSERT_TRUE(pub->publish(imu(i)));
    }
    auto r = node.spin_once(std::chrono::seconds(10));
    ASSERT_TRUE(r) << r.message();
    EXPECT_EQ(every, (std::vector<uint32_t>{1, 2, 3, 4, 5}));
    EXPECT_EQ(newest, (std::vector<uint32_t>{5}));
    EXPECT_EQ(s2->stats().missed, 4u);
    EXPECT_EQ(s1->stats().missed, 0u);
    EXPECT_EQ(s2->mode(), nerve::Delivery::newest);
}

TEST_F(CxxNode, StopFromAnotherThread)
{
    const std::string n = name("stop");
    auto pub = nerve::Publisher<Imu>::create(n);
    ASSERT_TRUE(pub);
    nerve::Node node;
    size_t calls = 0;
    auto s = node.subscribe<Imu>(n, [&](const Imu &) { calls++; });
    ASSERT_TRUE(s);
    // The stopper publishes one message and stops; whether spin() sees the
    // message before the stop or not, it must return success.
    std::thread stopper([&] {
        EXPECT_TRUE(pub->publish(imu(1)));
        node.stop();
    });
    auto r = node.spin();
    stopper.join();
    EXPECT_TRUE(r) << r.message();
    EXPECT_TRUE(node.stopped());
    EXPECT_LE(calls, 1u);
    // Sticky until reset().
    EXPECT_EQ(node.spin_once(nerve::forever).code(), NERVE_ECANCELED);
    node.reset();
    // If spin() did not deliver the message, this spin_once() must.
    const size_t before = calls;
    auto once = node.spin_once(
        before == 0 ? nerve::Duration(std::chrono::seconds(10))
                    : nerve::Duration(std::chrono::milliseconds(1)));
    ASSERT_TRUE(once) << once.message();
    EXPECT_EQ(calls, 1u);
}

namespace {
nerve::Node *g_node;
extern "C" void on_usr1(int)
{
    g_node->stop();
}
} // namespace

TEST_F(CxxNode, StopFromASignalHandler)
{
    const std::string n = name("signal");
    auto pub = nerve::Publisher<Imu>::create(n);
    ASSERT_TRUE(pub);
    nerve::Node node;
    g_node = &node;
    auto s = node.subscribe<Imu>(n, [](const Imu &) {});
    ASSERT_TRUE(s);
    struct sigaction sa = {};
    sa.sa_handler = on_usr1;
    sigemptyset(&sa.sa_mask);
    ASSERT_EQ(sigaction(SIGUSR1, &sa, nullptr), 0);
    // The signal goes to the spinning (main) thread: it may land before
    // spin() or during its wait; stop() is sticky either way.
    pthread_t self = pthread_self();
    std::thread sender([self] { pthread_kill(self, SIGUSR1); });
    auto r = node.spin();
    sender.join();
    signal(SIGUSR1, SIG_DFL);
    EXPECT_TRUE(r) << r.message();
    EXPECT_TRUE(node.stopped());
}

TEST_F(CxxNode, UnsubscribeFromACallbackAndOutliveTheNode)
{
    const std::string a = name("a"), b = name("b");
    auto pa = nerve::Publisher<Imu>::create(a);
    auto pb = nerve::Publisher<Imu>::create(b);
    ASSERT_TRUE(pa && pb);
    nerve::Subscriber<Imu> sb;
    size_t a_calls = 0, b_calls = 0;
    {
        nerve::Node node;
        auto sa = node.subscribe<Imu>(a, [&](const Imu &) {
            a_calls++;
            sb.unsubscribe(); // drop the other subscriber mid-spin
        });
        ASSERT_TRUE(sa);
        auto r = node.subscribe<Imu>(b, [&](const Imu &) { b_calls++; });
        ASSERT_TRUE(r);
        sb = std::move(*r);
        EXPECT_EQ(node.size(), 2u);
        ASSERT_TRUE(pa->publish(imu(1)));
        ASSERT_TRUE(pb->publish(imu(2)));
        ASSERT_TRUE(pb->publish(imu(3)));
        auto n = node.spin_once(std::chrono::seconds(10));
        ASSERT_TRUE(n) << n.message();
        EXPECT_EQ(a_calls, 1u);
        EXPECT_EQ(b_calls, 0u); // a's message was older, then b was gone
        EXPECT_EQ(node.size(), 1u);
        EXPECT_FALSE(sb);
        // A subscriber that outlives its node.
        auto late = node.subscribe<Imu>(b, [](const Imu &) {});
        ASSERT_TRUE(late);
        sb = std::move(*late);
    }
    sb.unsubscribe(); // the node is gone: must not touch it
    EXPECT_FALSE(sb);
}

TEST_F(CxxNode, TooManySubscribers)
{
    const std::string n = name("many");
    auto pub = nerve::Publisher<Imu>::create(n);
    ASSERT_TRUE(pub);
    nerve::Node node;
    std::vector<nerve::Subscriber<Imu>> subs;
    for (int i = 0; i < NERVE_WAIT_MAX; i++) {
        auto s = node.subscribe<Imu>(n, [](const Imu &) {});
        ASSERT_TRUE(s) << i << ": " << s.message();
        subs.push_back(std::move(*s));
    }
    EXPECT_EQ(node.subscribe<Imu>(n, [](const Imu &) {}).code(), NERVE_EINVAL);
    ASSERT_TRUE(pub->publish(imu(1)));
    auto r = node.spin_once(std::chrono::seconds(10));
    ASSERT_TRUE(r) << r.message();
    EXPECT_EQ(*r, static_cast<size_t>(NERVE_WAIT_MAX));
}

// ---- callbacks that unsubscribe, publish or throw ----------------------

TEST_F(CxxNode, CallbackMayUnsubscribeItself)
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

TEST_F(CxxNode, MessagesPublishedByACallbackWaitForTheNextSpin)
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
    auto sb = node.subscribe<Imu>(
        b, [&](const Imu &m) { order += "b" + std::to_string(m.seq) + " "; });
    ASSERT_TRUE(sa && sb);
    ASSERT_TRUE(pa->publish(imu(1)));
    for (int k = 0; k < 2; k++) {
        auto r = node.spin_once(std::chrono::seconds(5));
        ASSERT_TRUE(r);
        order += "| ";
    }
    EXPECT_EQ(order, "a1 | b1 a2 | ");
}

TEST_F(CxxNode, NewestModeIgnoresMessagesAfterTheWait)
{
    const std::string a = name("na"), b = name("nb");
    auto pa = nerve::Publisher<Imu>::create(a);
    auto pb = nerve::Publisher<Imu>::create(b);
    ASSERT_TRUE(pa && pb);
    nerve::Node node;
    std::string order;
    auto sa = node.subscribe<Imu>(
        a,
        [&](const Imu &m) {
            order += "a" + std::to_string(m.seq) + " ";
            ASSERT_TRUE(pb->publish(imu(m.seq + 10)));
        },
        nerve::Delivery::newest);
    auto sb = node.subscribe<Imu>(
        b, [&](const Imu &m) { order += "b" + std::to_string(m.seq) + " "; },
        nerve::Delivery::newest);
    ASSERT_TRUE(sa && sb);
    ASSERT_TRUE(pb->publish(imu(1)));
    ASSERT_TRUE(pa->publish(imu(1)));
    ASSERT_TRUE(node.spin_once(std::chrono::seconds(5)));
    ASSERT_TRUE(node.spin_once(std::chrono::seconds(5)));
    EXPECT_EQ(order, "b1 a1 b11 ");
    EXPECT_EQ(sb->stats().missed, 0u);
}

#if NERVE_CXX_EXCEPTIONS
TEST_F(CxxNode, ThrowingCallbackLosesNoOtherMessage)
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
