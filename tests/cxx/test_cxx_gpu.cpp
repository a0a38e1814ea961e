// Tests of include/nerve/cxx/gpu.hpp without a GPU: the protocol of
// put_from() and copy_view_to() driven by host copiers, including copiers
// that force a writer to overwrite the view during the copy (the case a
// device copy must survive), and the registration plan. The CUDA copier
// and the registration itself are exercised by tests/gpu on a machine
// with a GPU.
#include "cxx_test.hpp"

#include <nerve/cxx/gpu.hpp>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace gpu = nerve::gpu;

namespace {

constexpr size_t kMsg = 1000; // 5 of them wrap the 4096-byte data ring

// The payload of message number k: every byte depends on k and its index.
std::vector<uint8_t> payload(uint32_t k, size_t n = kMsg)
{
    std::vector<uint8_t> v(n);
    for (size_t i = 0; i < n; i++) {
        v[i] = static_cast<uint8_t>(i * 7 + k * 13);
    }
    return v;
}

class CxxGpu : public nt::ChannelTest {
protected:
    // A channel of 16 slots and a 4096-byte data ring, a writer handle and
    // a read-only reader handle (the reader side of the GPU path).
    void open_pair(const char *tag)
    {
        name_ = name(tag);
        nerve::ChannelOptions o;
        o.slots = 16;
        o.data_size = 4096;
        ASSERT_TRUE(nerve::Channel::create(name_, o));
        auto w = nerve::Channel::open(name_, nerve::Access::write);
        auto r = nerve::Channel::open(name_, nerve::Access::read);
        ASSERT_TRUE(w && r);
        w_ = std::move(*w);
        r_ = std::move(*r);
    }
    void put(uint32_t k, size_t n = kMsg)
    {
        auto v = payload(k, n);
        ASSERT_TRUE(w_.put(v.data(), v.size()));
    }
    // Put enough messages to overwrite every byte of the data ring.
    void overwrite_all(uint32_t first_k)
    {
        for (uint32_t i = 0; i < 5; i++) {
            put(first_k + i);
        }
    }
    uint64_t head()
    {
        return w_.stat()->head_seq;
    }

    std::string name_;
    nerve::Channel w_, r_;
};

TEST_F(CxxGpu, PutFromCopiesIntoTheReservationAndCommits)
{
    open_pair("put");
    auto src = payload(3);
    int calls = 0;
    auto copier = [&](void *dst, const void *s, size_t n) {
        calls++;
        std::memcpy(dst, s, n);
        return 0;
    };
    auto r = gpu::put_from(w_, src.data(), src.size(), copier);
    ASSERT_TRUE(r) << r.name();
    EXPECT_EQ(calls, 1);
    EXPECT_EQ(r.seq(), 1u);
    EXPECT_EQ(r.size(), kMsg);
    EXPECT_GT(r.info().time_ns, 0);

    std::vector<uint8_t> got(kMsg);
    auto c = gpu::copy_view_to(r_, got.data(), got.size(), gpu::HostCopier{});
    ASSERT_TRUE(c) << c.name();
    EXPECT_EQ(c.seq(), 1u);
    EXPECT_EQ(c.size(), kMsg);
    EXPECT_EQ(c.discarded(), 0u);
    EXPECT_EQ(got, src);
}

TEST_F(CxxGpu, PutFromCopierFailureAbortsAndReleasesTheLock)
{
    open_pair("putfail");
    auto src = payload(1);
    auto r = gpu::put_from(w_, src.data(), src.size(),
                           [](void *, const void *, size_t) { return 7; });
    EXPECT_FALSE(r);
    EXPECT_EQ(r.code(), gpu::copy_failed);
    EXPECT_EQ(r.copier_error(), 7);
    EXPECT_STREQ(r.name(), "ECOPY");
    EXPECT_EQ(head(), 0u) << "a failed copy published a message";

    // A negative copier answer is a nerve code, returned as is.
    r = gpu::put_from(
        w_, src.data(), src.size(),
        [](void *, const void *, size_t) { return NERVE_ECANCELED; });
    EXPECT_EQ(r.code(), NERVE_ECANCELED);
    EXPECT_EQ(r.copier_error(), 0);
    EXPECT_EQ(head(), 0u);

    // The writer lock was released: the next put does not time out.
    auto ok = w_.put(src.data(), src.size(), std::chrono::milliseconds(0));
    ASSERT_TRUE(ok) << ok.name();
    EXPECT_EQ(ok->seq, 1u);
}

TEST_F(CxxGpu, PutFromRejectsBadSizesAndReadOnlyHandles)
{
    open_pair("putbad");
    std::vector<uint8_t> big(8192);
    int calls = 0;
    auto copier = [&](void *, const void *, size_t) {
        calls++;
        return 0;
    };
    auto r = gpu::put_from(w_, big.data(), big.size(), copier);
    EXPECT_EQ(r.code(), NERVE_EMSGSIZE);
    r = gpu::put_from(r_, big.data(), 10, copier);
    EXPECT_EQ(r.code(), NERVE_EROFS);
    EXPECT_EQ(calls, 0);
    EXPECT_EQ(head(), 0u);
}

TEST_F(CxxGpu, CopyViewTakesMessagesInOrderAndReportsNothingNew)
{
    open_pair("order");
    put(1);
    put(2);
    std::vector<uint8_t> got(kMsg);
    for (uint32_t k = 1; k <= 2; k++) {
        auto c =
            gpu::copy_view_to(r_, got.data(), got.size(), gpu::HostCopier{});
        ASSERT_TRUE(c) << c.name();
        EXPECT_EQ(c.seq(), k);
        EXPECT_EQ(c.missed(), 0u);
        EXPECT_EQ(got, payload(k));
    }
    auto none =
        gpu::copy_view_to(r_, got.data(), got.size(), gpu::HostCopier{});
    EXPECT_TRUE(none.nothing_new());
    gpu::CopyOptions o;
    o.wait = std::chrono::milliseconds(5);
    auto waited =
        gpu::copy_view_to(r_, got.data(), got.size(), gpu::HostCopier{}, o);
    EXPECT_TRUE(waited.timed_out()) << waited.name();
}

// The copy reads the old message, then a writer overwrites it before the
// check: the check cannot know the copy came first, so the copy is
// discarded and the retry delivers the oldest message still present.
TEST_F(CxxGpu, CopyOverwrittenAfterItIsDiscardedAndRetried)
{
    open_pair("after");
    put(1);
    std::vector<uint8_t> got(kMsg);
    int calls = 0;
    auto copier = [&](void *dst, const void *src, size_t n) {
        std::memcpy(dst, src, n);
        if (calls++ == 0) {
            overwrite_all(100); // seqs 2..6; seq 1 is gone
        }
        return 0;
    };
    auto c = gpu::copy_view_to(r_, got.data(), got.size(), copier);
    ASSERT_TRUE(c) << c.name();
    EXPECT_EQ(calls, 2);
    EXPECT_EQ(c.discarded(), 1u);
    EXPECT_GT(c.seq(), 1u) << "the overwritten message was delivered";
    // What arrived is exactly the message named, seq s = payload 100+s-2,
    // and the messages skipped since the cursor are counted.
    EXPECT_EQ(got, payload(static_cast<uint32_t>(100 + c.seq() - 2)));
    EXPECT_EQ(c.missed(), c.seq() - 1);
}

// The writer overwrites the view before the copy reads it: the copy holds
// torn bytes (the test proves it), and the check throws it away.
TEST_F(CxxGpu, TornCopyIsNeverDelivered)
{
    open_pair("torn");
    put(1);
    std::vector<uint8_t> got(kMsg);
    std::vector<uint8_t> first_copy;
    int calls = 0;
    auto copier = [&](void *dst, const void *src, size_t n) {
        if (calls++ == 0) {
            overwrite_all(200);
            std::memcpy(dst, src, n);
            first_copy.assign(static_cast<uint8_t *>(dst),
                              static_cast<uint8_t *>(dst) + n);
            return 0;
        }
        std::memcpy(dst, src, n);
        return 0;
    };
    auto c = gpu::copy_view_to(r_, got.data(), got.size(), copier);
    ASSERT_TRUE(c) << c.name();
    EXPECT_EQ(c.discarded(), 1u);
    ASSERT_EQ(first_copy.size(), kMsg);
    EXPECT_NE(first_copy, payload(1))
        << "the forced overwrite did not change the viewed bytes";
    EXPECT_EQ(got, payload(static_cast<uint32_t>(200 + c.seq() - 2)));
}

TEST_F(CxxGpu, EveryAttemptOverwrittenGivesElappedAndConsumesNothing)
{
    open_pair("lapped");
    put(1);
    const uint64_t cursor = r_.cursor();
    std::vector<uint8_t> got(kMsg);
    uint32_t k = 300;
    int calls = 0;
    auto copier = [&](void *dst, const void *src, size_t n) {
        calls++;
        std::memcpy(dst, src, n);
        overwrite_all(k);
        k += 5;
        return 0;
    };
    gpu::CopyOptions o;
    o.attempts = 3;
    auto c = gpu::copy_view_to(r_, got.data(), got.size(), copier, o);
    EXPECT_FALSE(c);
    EXPECT_TRUE(c.lapped()) << c.name();
    EXPECT_EQ(c.code(), NERVE_ELAPPED);
    EXPECT_EQ(calls, 3);
    EXPECT_EQ(c.discarded(), 3u);
    EXPECT_EQ(r_.cursor(), cursor);

    // attempts = 1: no retry; the overwrite is reported the same way.
    o.attempts = 1;
    calls = 0;
    c = gpu::copy_view_to(r_, got.data(), got.size(), copier, o);
    EXPECT_TRUE(c.lapped());
    EXPECT_EQ(calls, 1);
    EXPECT_EQ(c.discarded(), 1u);

    // Without interference the next copy succeeds and counts the losses.
    c = gpu::copy_view_to(r_, got.data(), got.size(), gpu::HostCopier{});
    ASSERT_TRUE(c) << c.name();
    EXPECT_GT(c.missed(), 0u);
}

TEST_F(CxxGpu, NewestRetryDeliversTheNewNewest)
{
    open_pair("newest");
    put(1);
    put(2);
    std::vector<uint8_t> got(kMsg);
    int calls = 0;
    auto copier = [&](void *dst, const void *src, size_t n) {
        std::memcpy(dst, src, n);
        if (calls++ == 0) {
            overwrite_all(400); // seqs 3..7
        }
        return 0;
    };
    gpu::CopyOptions o;
    o.newest = true;
    auto c = gpu::copy_view_to(r_, got.data(), got.size(), copier, o);
    ASSERT_TRUE(c) << c.name();
    EXPECT_EQ(c.discarded(), 1u);
    EXPECT_EQ(c.seq(), 7u);
    EXPECT_EQ(got, payload(404));
}

TEST_F(CxxGpu, SmallDestinationConsumesNothing)
{
    open_pair("small");
    put(1);
    std::vector<uint8_t> got(kMsg);
    int calls = 0;
    auto copier = [&](void *dst, const void *src, size_t n) {
        calls++;
        std::memcpy(dst, src, n);
        return 0;
    };
    auto c = gpu::copy_view_to(r_, got.data(), kMsg - 1, copier);
    EXPECT_EQ(c.code(), NERVE_EMSGSIZE);
    EXPECT_EQ(c.size(), kMsg) << "the size needed is reported";
    EXPECT_EQ(calls, 0);
    EXPECT_EQ(r_.cursor(), 0u);
    c = gpu::copy_view_to(r_, got.data(), got.size(), copier);
    ASSERT_TRUE(c);
    EXPECT_EQ(c.seq(), 1u);
}

TEST_F(CxxGpu, CopierFailureDeliversNothingAndConsumesNothing)
{
    open_pair("copyfail");
    put(1);
    std::vector<uint8_t> got(kMsg);
    auto c = gpu::copy_view_to(r_, got.data(), got.size(),
                               [](void *, const void *, size_t) { return 2; });
    EXPECT_EQ(c.code(), gpu::copy_failed);
    EXPECT_EQ(c.copier_error(), 2);
    EXPECT_STREQ(c.message(), "the device copy failed");
    EXPECT_EQ(r_.cursor(), 0u);
    c = gpu::copy_view_to(r_, got.data(), got.size(), gpu::HostCopier{});
    ASSERT_TRUE(c);
    EXPECT_EQ(c.seq(), 1u);
}

TEST_F(CxxGpu, EmptyMessageIsDeliveredWithoutCallingTheCopier)
{
    open_pair("empty");
    ASSERT_TRUE(w_.put(nullptr, 0));
    int calls = 0;
    auto copier = [&](void *, const void *, size_t) {
        calls++;
        return 0;
    };
    uint8_t b = 0;
    auto c = gpu::copy_view_to(r_, &b, 0, copier);
    ASSERT_TRUE(c) << c.name();
    EXPECT_EQ(c.size(), 0u);
    EXPECT_EQ(calls, 0);
}

// A raw frame type: typed handles pass their native handle.
struct Frame {
    static constexpr const char *nerve_type_name = "test_msgs/Frame";
    uint8_t px[kMsg];
};

TEST_F(CxxGpu, TypedPublisherAndReaderWork)
{
    const std::string n = name("typed");
    nerve::ChannelOptions o;
    o.slots = 4;
    o.data_size = 4096;
    auto pub = nerve::Publisher<Frame>::create(n, o);
    auto rd = nerve::Reader<Frame>::open(n);
    ASSERT_TRUE(pub && rd);
    auto src = payload(9);
    auto r = gpu::put_from(*pub, src.data(), sizeof(Frame), gpu::HostCopier{});
    ASSERT_TRUE(r) << r.name();
    Frame f{};
    auto c = gpu::copy_view_to(*rd, &f, sizeof f, gpu::HostCopier{});
    ASSERT_TRUE(c) << c.name();
    EXPECT_EQ(c.seq(), 1u);
    EXPECT_EQ(0, std::memcmp(f.px, src.data(), kMsg));
}

TEST(CxxGpuPlan, RegistrationFollowsAccessAndDeviceAttributes)
{
    using gpu::RegMode;
    gpu::DeviceCaps d;
    d.host_register_supported = true;
    d.host_register_read_only_supported = true;
    EXPECT_EQ(gpu::plan_registration(true, d), RegMode::writable);
    EXPECT_EQ(gpu::plan_registration(false, d), RegMode::read_only);
    d.host_register_read_only_supported = false;
    EXPECT_EQ(gpu::plan_registration(false, d), RegMode::none);
    d.pageable_uses_host_page_tables = true;
    EXPECT_EQ(gpu::plan_registration(false, d), RegMode::host_page_tables);
    d.host_register_supported = false;
    EXPECT_EQ(gpu::plan_registration(true, d), RegMode::none);
    EXPECT_EQ(gpu::plan_registration(false, d), RegMode::none);
    EXPECT_STREQ(gpu::to_string(RegMode::read_only), "read-only");
    EXPECT_STREQ(gpu::to_string(RegMode::none), "none");
}

} // namespace
