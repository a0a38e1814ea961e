/* Pull-style tasks (nerve_task_next): the caller's own loop is the body.
 * Clock-driven: releases on the absolute schedule, statistics of the
 * caller's body (overruns under both policies, asserting counters, not
 * timing), a timeout that returns without consuming a cycle, a signal that
 * interrupts the sleep, stop before and during the loop. Channel-driven:
 * every message in order, the deadline's tick, the caller's timeout, and
 * the handle un-cancelled when the loop ends. Argument checks. */
#include <pthread.h>
#include <signal.h>
#include <time.h>

#include <nerve/rt.h>

#include "nerve_test.h"

#define MS 1000000LL
#define S 1000000000LL

static void sleep_ns(int64_t ns)
{
    struct timespec ts = {(time_t)(ns / S), (long)(ns % S)};
    while (clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, &ts) != 0) {
    }
}

static nerve_task *clock_task(int64_t period, int64_t offset, uint32_t flags)
{
    struct nerve_task_opts o = NERVE_TASK_OPTS_INIT;
    o.period_ns = period;
    o.offset_ns = offset;
    o.flags = flags;
    nerve_task *t = NULL;
    NT_OK(nerve_task_open(&o, NULL, NULL, &t));
    return t;
}

static void test_schedule_and_stats(void)
{
    nerve_task *t = clock_task(2 * MS, 3 * MS, 0);
    struct nerve_task_tick tk;
    struct nerve_task_stats st;
    int64_t before = nerve_clock_now_ns();
    int64_t first = 0, k = 0;
    for (uint64_t i = 0; i < 20; i++) {
        NT_OK(nerve_task_next(t, NERVE_FOREVER, 0, &tk));
        NT_EQ(tk.cycle, i);
        NT_CMP(tk.wake_ns, >=, tk.release_ns);
        NT_ASSERT(tk.msg == NULL);
        if (i == 0) {
            first = tk.release_ns;
            /* The first release honours the offset. */
            NT_CMP(first, >=, before + 3 * MS);
            NT_OK(nerve_task_stat(t, &st));
            NT_EQ(st.running, 1);
        }
        /* Exactly periodic (absolute times, no drift), unless a slow
         * machine made the loop skip releases, which the tick says. */
        k += (int64_t)tk.skipped;
        NT_EQ(tk.release_ns, first + k * 2 * MS);
        k++;
    }
    /* A pull task belongs to its caller: the push drivers refuse it. */
    NT_RC(nerve_task_start(t), NERVE_EBUSY);
    NT_RC(nerve_task_run(t), NERVE_EBUSY);
    NT_OK(nerve_task_stat(t, &st));
    NT_EQ(st.cycles, 19); /* the 20th body has not ended yet */
    nerve_task_stop(t);
    NT_RC(nerve_task_next(t, NERVE_FOREVER, 0, &tk), NERVE_ECANCELED);
    NT_OK(nerve_task_stat(t, &st));
    NT_EQ(st.cycles, 20);
    NT_EQ(st.abs_err.n, 20);
    NT_EQ(st.rel_err.n, 19);
    NT_EQ(st.exec.n, 20);
    NT_EQ(st.running, 0);
    NT_EQ(st.period_ns, 2 * MS);
    /* Ended: every later call says how. */
    NT_RC(nerve_task_next(t, 0, 0, &tk), NERVE_ECANCELED);
    NT_RC(nerve_task_join(t), NERVE_EINVAL); /* never started */
    nerve_task_close(t);
}

static void test_overruns(uint32_t flags)
{
    const int64_t period = 2 * MS;
    nerve_task *t = clock_task(period, 0, flags);
    struct nerve_task_tick tk;
    int64_t prev = 0;
    uint64_t gaps_ok = 0, skipped_seen = 0;
    for (uint64_t i = 0; i < 6; i++) {
        NT_OK(nerve_task_next(t, NERVE_FOREVER, 0, &tk));
        if (i > 0) {
            int64_t gap = tk.release_ns - prev;
            NT_ASSERT(gap > 0 && gap % period == 0);
            NT_EQ((uint64_t)(gap / period - 1), tk.skipped);
            gaps_ok += gap == period;
        }
        skipped_seen += tk.skipped;
        prev = tk.release_ns;
        if (i == 1)
            sleep_ns(7 * MS); /* the caller's body: well past 3 releases */
    }
    nerve_task_stop(t);
    NT_RC(nerve_task_next(t, NERVE_FOREVER, 0, &tk), NERVE_ECANCELED);
    struct nerve_task_stats st;
    NT_OK(nerve_task_stat(t, &st));
    NT_EQ(st.cycles, 6);
    NT_CMP(st.overruns, >=, 1);
    if (flags & NERVE_TASK_CATCH_UP) {
        NT_EQ(st.skipped, 0);
        NT_EQ(gaps_ok, 5); /* every release runs */
    } else {
        NT_CMP(skipped_seen, >=, 3);
        NT_CMP(st.skipped, >=, skipped_seen);
    }
    nerve_task_close(t);
}

static void test_timeout_consumes_nothing(void)
{
    /* The first release an hour away. */
    nerve_task *t = clock_task(S, 3600 * S, 0);
    struct nerve_task_tick tk;
    NT_RC(nerve_task_next(t, 0, 0, &tk), NERVE_ETIMEDOUT);      /* poll */
    NT_RC(nerve_task_next(t, 2 * MS, 0, &tk), NERVE_ETIMEDOUT); /* relative */
    NT_RC(nerve_task_next(t, nerve_clock_now_ns() + MS, NERVE_F_ABSTIME, &tk),
          NERVE_ETIMEDOUT);
    NT_RC(nerve_task_next(t, 0, 0x4000u, &tk), NERVE_EINVAL);
    NT_RC(nerve_task_next(t, 0, 0, NULL), NERVE_EINVAL);
    NT_RC(nerve_task_next(NULL, 0, 0, &tk), NERVE_EBADF); /* as every handle */
    struct nerve_task_stats st;
    NT_OK(nerve_task_stat(t, &st));
    NT_EQ(st.cycles, 0);
    NT_EQ(st.running, 1);
    nerve_task_stop(t);
    NT_RC(nerve_task_next(t, 0, 0, &tk), NERVE_ECANCELED);
    nerve_task_close(t);

    /* Stopped before the first call: no set-up, no cycle. */
    t = clock_task(MS, 0, 0);
    nerve_task_stop(t);
    NT_RC(nerve_task_next(t, NERVE_FOREVER, 0, &tk), NERVE_ECANCELED);
    NT_OK(nerve_task_stat(t, &st));
    NT_EQ(st.cycles, 0);
    NT_EQ(st.running, 0);
    nerve_task_close(t);
}

/* ---- a signal interrupts the sleep; a stop ends it ----------------------- */

static volatile sig_atomic_t g_sigs;
static void on_usr1(int sig)
{
    (void)sig;
    g_sigs++;
}

struct poker {
    pthread_t target;
    nerve_task *t;
    int done; /* __atomic: set by the test's thread */
    int stop_instead;
};

static void *poke(void *p)
{
    struct poker *k = p;
    /* Bounded: at most 30 s of pokes (the watchdog ends the test first). */
    for (int i = 0; i < 3000 && !__atomic_load_n(&k->done, __ATOMIC_ACQUIRE);
         i++) {
        sleep_ns(10 * MS);
        if (k->stop_instead)
            nerve_task_stop(k->t);
        else
            pthread_kill(k->target, SIGUSR1);
    }
    return NULL;
}

static void test_signal_and_stop(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_usr1; /* no SA_RESTART: the sleep returns EINTR */
    sigemptyset(&sa.sa_mask);
    NT_OK(sigaction(SIGUSR1, &sa, NULL));
    nerve_task *t = clock_task(S, 3600 * S, 0);
    struct nerve_task_tick tk;
    struct poker k = {pthread_self(), t, 0, 0};
    pthread_t th;
    NT_OK(pthread_create(&th, NULL, poke, &k));
    NT_RC(nerve_task_next(t, NERVE_FOREVER, 0, &tk), NERVE_EINTR);
    __atomic_store_n(&k.done, 1, __ATOMIC_RELEASE);
    pthread_join(th, NULL);
    NT_CMP(g_sigs, >=, 1);
    struct nerve_task_stats st;
    NT_OK(nerve_task_stat(t, &st));
    NT_EQ(st.cycles, 0);
    nerve_task_close(t);
    signal(SIGUSR1, SIG_DFL);

    /* A stop from another thread ends a loop within one period. */
    t = clock_task(20 * MS, 0, 0);
    struct poker s = {pthread_self(), t, 0, 1};
    NT_OK(pthread_create(&th, NULL, poke, &s));
    int rc;
    uint64_t n = 0;
    while ((rc = nerve_task_next(t, NERVE_FOREVER, 0, &tk)) == 0)
        NT_CMP(++n, <, 100000u);
    __atomic_store_n(&s.done, 1, __ATOMIC_RELEASE);
    pthread_join(th, NULL);
    NT_RC(rc, NERVE_ECANCELED);
    NT_OK(nerve_task_stat(t, &st));
    NT_EQ(st.cycles, n);
    NT_EQ(st.running, 0);
    nerve_task_close(t);
}

/* ---- channel-driven ------------------------------------------------------ */

static void *stop_later(void *p)
{
    sleep_ns(20 * MS);
    nerve_task_stop(p);
    return NULL;
}

/* test_channel's reader task (o->chan; w writes its channel) under
 * deadlines too far away to come during the test. */
static void channel_long_deadlines(struct nerve_task_opts *o, nerve_chan *w)
{
    nerve_task *t;
    struct nerve_task_tick tk;
    struct nerve_task_stats st;
    unsigned char buf[64];
    /* A long deadline: the caller's shorter timeout returns first, and
     * consumes nothing. */
    o->deadline_ns = 3600 * S;
    NT_OK(nerve_task_open(o, NULL, NULL, &t));
    NT_RC(nerve_task_next(t, MS, 0, &tk), NERVE_ETIMEDOUT);
    NT_OK(nerve_task_stat(t, &st));
    NT_EQ(st.cycles, 0);
    NT_EQ(st.timeouts, 0);
    nt_payload_fill(buf, 64, 3, 6);
    NT_OK(nerve_chan_put(w, buf, 64, NERVE_FOREVER, NULL, 0));
    NT_OK(nerve_task_next(t, NERVE_FOREVER, 0, &tk));
    NT_EQ(tk.msg_status, 0);
    /* No message, no deadline that comes soon: a stop ends it at once. */
    pthread_t th;
    NT_OK(pthread_create(&th, NULL, stop_later, t));
    NT_RC(nerve_task_next(t, NERVE_FOREVER, 0, &tk), NERVE_ECANCELED);
    pthread_join(th, NULL);
    NT_OK(nerve_task_stat(t, &st));
    NT_EQ(st.cycles, 1);
    NT_EQ(st.running, 0);
    nerve_task_close(t);
    /* A deadline and an offset at the end of int64: the release time
     * saturates (src/timeconv.h) instead of wrapping into the past, which
     * gave a deadline tick at once. */
    o->deadline_ns = INT64_MAX;
    o->offset_ns = INT64_MAX;
    NT_OK(nerve_task_open(o, NULL, NULL, &t));
    NT_RC(nerve_task_next(t, MS, 0, &tk), NERVE_ETIMEDOUT);
    NT_OK(nerve_task_stat(t, &st));
    NT_EQ(st.cycles, 0);
    NT_EQ(st.timeouts, 0);
    nerve_task_close(t);
    o->offset_ns = 0;
}

static void test_channel(void)
{
    const char *name = nt_name("next");
    nt_create(name, 64, 1 << 16);
    nerve_chan *r, *w;
    NT_OK(nerve_chan_open(name, NERVE_O_READ, &r));
    NT_OK(nerve_chan_open(name, NERVE_O_WRITE, &w));
    unsigned char buf[128];
    for (uint64_t i = 1; i <= 5; i++) {
        nt_payload_fill(buf, 64 + (size_t)i, 3, i);
        NT_OK(nerve_chan_put(w, buf, 64 + (size_t)i, NERVE_FOREVER, NULL, 0));
    }
    struct nerve_task_opts o = NERVE_TASK_OPTS_INIT;
    o.chan = r;
    o.deadline_ns = 5 * MS;
    nerve_task *t;
    NT_OK(nerve_task_open(&o, NULL, NULL, &t));
    struct nerve_task_tick tk;
    for (uint64_t i = 1; i <= 5; i++) {
        NT_OK(nerve_task_next(t, NERVE_FOREVER, 0, &tk));
        NT_EQ(tk.msg_status, 0);
        NT_ASSERT(tk.msg != NULL);
        NT_EQ(tk.msg_info.len, 64 + i);
        NT_EQ(tk.release_ns, tk.msg_info.time_ns);
        uint32_t id;
        uint64_t counter;
        NT_ASSERT(
            nt_payload_check(tk.msg, (size_t)tk.msg_info.len, &id, &counter));
        NT_EQ(counter, i);
    }
    /* Nothing more: the deadline's tick, without a message. */
    NT_OK(nerve_task_next(t, NERVE_FOREVER, 0, &tk));
    NT_EQ(tk.msg_status, NERVE_ETIMEDOUT);
    NT_ASSERT(tk.msg == NULL);
    struct nerve_task_stats st;
    NT_OK(nerve_task_stat(t, &st));
    NT_EQ(st.cycles, 5); /* as of the last ended cycle */
    NT_EQ(st.timeouts, 0);
    nerve_task_stop(t);
    NT_RC(nerve_task_next(t, NERVE_FOREVER, 0, &tk), NERVE_ECANCELED);
    NT_OK(nerve_task_stat(t, &st));
    NT_EQ(st.cycles, 6);
    NT_EQ(st.timeouts, 1);
    NT_EQ(st.latency.n, 5);
    nerve_task_close(t);

    channel_long_deadlines(&o, w);
    /* The handle was un-cancelled: a get polls normally again. */
    NT_RC(nerve_chan_get(r, buf, sizeof buf, 0, 0, NULL, NERVE_GET_NEWEST),
          NERVE_EAGAIN);
    nerve_chan_close(w);
    nerve_chan_close(r);
    NT_OK(nerve_chan_unlink(name));
}

int main(void)
{
    nt_watchdog(50);
    test_schedule_and_stats();
    test_overruns(0);
    test_overruns(NERVE_TASK_CATCH_UP);
    test_timeout_consumes_nothing();
    test_signal_and_stop();
    test_channel();
    printf("ok: pull-style tasks (nerve_task_next)\n");
    return 0;
}
