// Compiled, not run, by tests/cxx/compile_check.sh: the C++ headers build
// with -std=c++17 -Wall -Wextra -Wpedantic -Werror under GCC and Clang,
// and each NERVE_MISUSE_* case below must NOT compile (the check script
// builds them one at a time and expects a failure with the given text).
#include <nerve/nerve.hpp>
#include <nerve/cxx/gpu.hpp> // optional part: not in the umbrella

#include "msgs.hpp"

#include <map>
#include <string>
#include <vector>

namespace {

struct Plain {
    double x, y;
};

[[maybe_unused]] void instantiate_everything()
{
    auto pub = nerve::Publisher<Plain>::create("nt-check");
    auto rd = nerve::Reader<Plain>::open("nt-check");
    if (!pub || !rd) {
        return;
    }
    Plain p{};
    std::vector<Plain> v;
    (void)pub->publish(p);
    if (auto l = pub->loan()) {
        (void)l->publish();
    }
    if (auto u = pub->loan_uninit()) {
        (void)std::move(*u).write(p).publish();
    }
    (void)rd->get_newest(p);
    (void)rd->wait_newest(p, nerve::forever);
    (void)rd->get_next(p);
    (void)rd->read_unread(v);
    (void)rd->wait_unread(v, std::chrono::milliseconds(1));
    (void)rd->get_by_timestamp(p, nerve::Clock::now());
    (void)rd->get_seq(p, 1);

    auto sp = nerve::Publisher<robot_msgs::LaserScan>::open("nt-check");
    auto sr = nerve::Reader<robot_msgs::LaserScan>::open_or_create("nt-check");
    if (sp && sr) {
        robot_msgs::LaserScan s;
        (void)sp->publish(s);
        auto l = sp->loan(size_t{4});
        if (l) {
            (*l)->ranges[0] = 1.0f;
            (void)l->publish();
        }
        (void)sr->get_newest(s);
    }
    nerve::Node node;
    auto sub = node.subscribe<std::vector<int16_t>>(
        "nt-check", [](const std::vector<int16_t> &) {});
    (void)node.spin_once(std::chrono::milliseconds(1));
    (void)sub;
}

[[maybe_unused]] void instantiate_gpu(nerve::Channel &ch)
{
    unsigned char b[4] = {};
    (void)nerve::gpu::copy_view_to(ch, b, sizeof b, nerve::gpu::HostCopier{});
    (void)nerve::gpu::put_from(ch, b, sizeof b, nerve::gpu::HostCopier{});
}

#if defined(NERVE_MISUSE_NO_CODEC)
// A type that is neither trivially copyable nor given a codec.
[[maybe_unused]] auto misuse = nerve::Publisher<std::map<int, int>>::open("x");
#elif defined(NERVE_MISUSE_COPY)
// Handles are move-only.
[[maybe_unused]] void misuse(nerve::Publisher<Plain> &p)
{
    nerve::Publisher<Plain> copy = p;
    (void)copy;
}
#elif defined(NERVE_MISUSE_DISCARD)
// A publish result must be looked at (-Werror=unused-result).
[[maybe_unused]] void misuse(nerve::Publisher<Plain> &p)
{
    p.publish(Plain{});
}
#elif defined(NERVE_MISUSE_UNINIT_WRITE_LVALUE)
// write() consumes the uninitialized loan: std::move(loan).write(v).
[[maybe_unused]] void misuse(nerve::Publisher<Plain> &p)
{
    auto u = p.loan_uninit();
    (void)(*u).write(Plain{}).publish();
}
#elif defined(NERVE_MISUSE_RAW_LOAN_SIZE)
// A raw type's loan takes no size.
[[maybe_unused]] void misuse(nerve::Publisher<Plain> &p)
{
    (void)p.loan(size_t{3})->publish();
}
#elif defined(NERVE_MISUSE_OVERALIGNED_LOAN)
// A reservation is 64-byte aligned: no loan of a T that needs more.
struct alignas(128) Wide {
    int x;
};
[[maybe_unused]] void misuse(nerve::Publisher<Wide> &p)
{
    (void)p.loan()->publish();
}
#elif defined(NERVE_MISUSE_OVERALIGNED_UNINIT)
struct alignas(128) Wide {
    int x;
};
[[maybe_unused]] void misuse(nerve::Publisher<Wide> &p)
{
    auto u = p.loan_uninit();
    (void)std::move(*u).write(Wide{}).publish();
}
#endif

} // namespace
