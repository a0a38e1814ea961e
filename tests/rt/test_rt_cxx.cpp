// The C++ layer of the real-time helpers (include/nerve/cxx/rt.hpp): the
// priority mapping, a lambda task that stops itself, stop/join from another
// thread, and move semantics.
#include <atomic>
#include <cstdio>
#include <cstdlib>

#include <nerve/cxx/rt.hpp>

#define CHECK(c)                                                               \
    do {                                                                       \
        if (!(c)) {                                                            \
            std::fprintf(stderr, "%s:%d: FAIL: %s\n", __FILE__, __LINE__, #c); \
            std::exit(1);                                                      \
        }                                                                      \
    } while (0)

int main()
{
    using namespace std::chrono_literals;
    auto p = nerve::rt::prio_from_period(1ms);
    CHECK(p.ok() && *p == 56);
    CHECK(!nerve::rt::prio_from_period(0ns).ok());
    CHECK(nerve::rt::prio_from_period(0ns).code() == NERVE_EINVAL);

    nerve_task_opts o = NERVE_TASK_OPTS_INIT;
    o.period_ns = 1000000;
    int seen = 0;
    auto t = nerve::rt::make_task(o, [&seen](const nerve_task_tick &k) {
        seen++;
        return k.cycle >= 9 ? 1 : 0;
    });
    CHECK(t.ok());
    auto moved = std::move(*t); // the body's address survives the move
    CHECK(moved.run().ok());
    CHECK(seen == 10);
    auto st = moved.stats();
    CHECK(st.ok() && st->cycles == 10 && st->abs_err.n == 10);
    CHECK(moved.format("cxx").find("10 cycles") != std::string::npos);

    std::atomic<uint64_t> n{0};
    auto t2 = nerve::rt::make_task(o, [&n](const nerve_task_tick &) {
        n++;
        return 0;
    });
    CHECK(t2.ok());
    CHECK(t2->start().ok());
    while (n.load() < 3) {
    }
    t2->stop();
    CHECK(t2->join().ok());
    CHECK(t2->stats()->cycles >= 3);
    std::printf("ok: C++ real-time layer\n");
    return 0;
}
