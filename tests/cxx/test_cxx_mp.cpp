// Multi-process test mixing C and C++ on one channel: a C writer
// (mp_peer.c) and a C++ Publisher write, while a C reader, a C++ Reader
// and a C++ Node subscriber, each in its own process, read. Every reader
// must get every sample of both writers intact, in each writer's order,
// with nothing missed (the ring holds all of them), which shows that the
// two languages agree on the bytes, the metadata and the protocol.
#include "cxx_test.hpp"

#include "mp_peer.h"

#include <nerve/nerve.h>

// tests/lib/nerve_test.h has no extern "C" block of its own.
extern "C" {
#include "nerve_test.h"
}

#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <vector>

namespace {

// The C side's 40-byte sample, named as the C side expects.
struct Sample {
    static constexpr const char *nerve_type_name = MP_SAMPLE_TYPE;
    unsigned char bytes[MP_SAMPLE_LEN];
};

constexpr uint64_t kCount = 2000; // per writer
constexpr uint32_t kWriters = 2;  // id 1: C, id 2: C++

// Checks samples from writers 1..kWriters: intact and in order per writer.
struct Checker {
    uint64_t next[kWriters + 1] = {};
    uint64_t total = 0;
    bool ok = true;
    void add(const Sample &s)
    {
        uint32_t id = 0;
        uint64_t counter = 0;
        if (!nt_payload_check(s.bytes, sizeof s.bytes, &id, &counter) ||
            id < 1 || id > kWriters || counter != next[id]) {
            ok = false;
            return;
        }
        next[id]++;
        total++;
    }
};

// The C++ writer: half the samples by publish(), half by loans.
int cxx_writer(const std::string &name)
{
    auto pub = nerve::Publisher<Sample>::open(name);
    if (!pub) {
        std::fprintf(stderr, "c++ writer: open: %s\n", pub.message());
        return 1;
    }
    for (uint64_t i = 0; i < kCount; i++) {
        if (i % 2 == 0) {
            Sample s;
            nt_payload_fill(s.bytes, sizeof s.bytes, 2, i);
            if (!pub->publish(s)) {
                return 1;
            }
        } else {
            auto got = pub->loan_uninit();
            if (!got) {
                return 1;
            }
            auto &loan = *got;
            nt_payload_fill(loan.ptr(), sizeof(Sample), 2, i);
            if (!std::move(loan).assume_init().publish()) {
                return 1;
            }
        }
    }
    return 0;
}

// A C++ Node subscriber in its own process.
int cxx_subscriber(const std::string &name)
{
    nerve::Node node;
    Checker check;
    uint64_t missed = 0;
    auto sub = node.subscribe<Sample>(
        name, [&](const Sample &s, const nerve::MsgInfo &i) {
            missed += i.missed;
            check.add(s);
            if (!check.ok || check.total == kWriters * kCount) {
                node.stop();
            }
        });
    if (!sub) {
        std::fprintf(stderr, "c++ subscriber: %s\n", sub.message());
        return 1;
    }
    while (!node.stopped()) {
        // 60 s: writers may be descheduled for seconds on a loaded host.
        auto r = node.spin_once(std::chrono::seconds(60));
        if (!r && r.code() != NERVE_ECANCELED) {
            std::fprintf(stderr, "c++ subscriber: spin: %s\n", r.message());
            return 1;
        }
        if (r && *r == 0) {
            std::fprintf(stderr, "c++ subscriber: no data for 60 s\n");
            return 1;
        }
    }
    return check.ok && missed == 0 && check.total == kWriters * kCount ? 0 : 1;
}

pid_t spawn(int (*fn)(const std::string &), const std::string &name)
{
    pid_t pid = fork();
    if (pid == 0) {
        alarm(240); // a bound for a hung child, far above a loaded host's time
        _exit(fn(name));
    }
    return pid;
}

int c_writer(const std::string &name)
{
    return mp_c_writer(name.c_str(), 1, kCount);
}

int c_reader(const std::string &name)
{
    return mp_c_reader(name.c_str(), kWriters, kCount);
}

class CxxMultiProcess : public nt::ChannelTest {};

} // namespace

TEST_F(CxxMultiProcess, CAndCxxWritersAndReadersShareAChannel)
{
    const std::string n = name("mixed");
    nerve::ChannelOptions o;
    o.slots = 8192; // more than kWriters * kCount: no reader misses one
    o.data_size = 8192 * 128;
    auto pub = nerve::Publisher<Sample>::create(n, o);
    ASSERT_TRUE(pub) << pub.message();
    // Readers first, so that they also exercise waiting.
    auto rd = nerve::Reader<Sample>::open(n);
    ASSERT_TRUE(rd);
    std::vector<pid_t> kids;
    kids.push_back(spawn(c_reader, n));
    kids.push_back(spawn(cxx_subscriber, n));
    kids.push_back(spawn(c_writer, n));
    kids.push_back(spawn(cxx_writer, n));
    for (pid_t k : kids) {
        ASSERT_GT(k, 0);
    }

    Checker check;
    uint64_t missed = 0;
    std::vector<Sample> batch;
    batch.reserve(1024);
    while (check.ok && check.total < kWriters * kCount) {
        auto r = rd->wait_unread(batch, std::chrono::seconds(60));
        ASSERT_TRUE(r) << "after " << check.total << ": " << r.name();
        missed += r.missed();
        for (const auto &s : batch) {
            check.add(s);
        }
    }
    EXPECT_TRUE(check.ok);
    EXPECT_EQ(check.total, kWriters * kCount);
    EXPECT_EQ(missed, 0u);

    for (pid_t k : kids) {
        int status = 0;
        ASSERT_EQ(waitpid(k, &status, 0), k);
        EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
            << "child " << k << " status " << status;
    }
    auto st = rd->channel().stat();
    ASSERT_TRUE(st);
    EXPECT_EQ(st->head_seq, kWriters * kCount);
}
