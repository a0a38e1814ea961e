/* A task's statistics published to a channel (nerve_task_publish_stats):
 * one message per cycle, in order, each as nerve_task_stat() gives it, so
 * an overrun shows in the message of the cycle it happened in (asserting
 * counters, not timing: a slow host may add overruns, never remove one);
 * a put that fails is counted in stats_lost; argument and phase checks. */
#include <string.h>
#include <time.h>

#include <nerve/chan.h>
#include <nerve/rt.h>

#include "nerve_test.h"

#define MS 1000000LL

static void sleep_ns(int64_t ns)
{
    struct timespec ts = {0, (long)ns};
    while (clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, &ts) != 0) {
    }
}

static nerve_task *clock_task(void)
{
    struct nerve_task_opts o = NERVE_TASK_OPTS_INIT;
    o.period_ns = 2 * MS;
    nerve_task *t = NULL;
    NT_OK(nerve_task_open(&o, NULL, NULL, &t));
    return t;
}

static void test_every_cycle_in_order(void)
{
    const char *name = nt_name("taskstats");
    struct nerve_chan_opts co = NERVE_CHAN_OPTS_INIT;
    co.slots = 64;
    co.type = NERVE_TASK_STATS_TYPE;
    NT_OK(nerve_chan_create(name, &co));
    nerve_chan *w = NULL, *r = NULL;
    NT_OK(nerve_chan_open(name, NERVE_O_WRITE, &w));
    NT_OK(nerve_chan_open(name, NERVE_O_READ, &r));
    nerve_task *t = clock_task();
    NT_RC(nerve_task_publish_stats(NULL, w), NERVE_EBADF);
    NT_OK(nerve_task_publish_stats(t, w));
    struct nerve_task_tick tk;
    enum { CYCLES = 12, SLOW = 5 };
    for (int i = 0; i < CYCLES; i++) {
        NT_OK(nerve_task_next(t, NERVE_FOREVER, 0, &tk));
        if (i == 0) /* the loop runs: too late to change the channel */
            NT_RC(nerve_task_publish_stats(t, NULL), NERVE_EBUSY);
        if (i == SLOW)
            sleep_ns(6 * MS); /* ends after the next release: an overrun */
    }
    /* This call ends the last cycle (its statistics are put) and stops. */
    nerve_task_stop(t);
    NT_RC(nerve_task_next(t, NERVE_FOREVER, 0, &tk), NERVE_ECANCELED);

    struct nerve_task_stats st, last;
    struct nerve_get_info gi;
    memset(&last, 0, sizeof last);
    uint64_t n = 0;
    int rc;
    while ((rc = nerve_chan_get(r, &st, sizeof st, 0, 0, &gi,
                                NERVE_GET_NEXT)) == 0) {
        n++;
        NT_EQ(gi.len, sizeof st);
        NT_EQ(gi.missed, 0);
        NT_EQ(st.cycles, n); /* one message per cycle, in order */
        NT_CMP(st.overruns, >=, last.overruns);
        NT_EQ(st.period_ns, 2 * MS);
        NT_EQ(st.running, 1);
        NT_EQ(st.stats_lost, 0);
        if (st.cycles == SLOW + 1) /* the slow cycle's own message */
            NT_CMP(st.overruns, >, last.overruns);
        last = st;
    }
    NT_RC(rc, NERVE_EAGAIN);
    NT_EQ(n, CYCLES);
    /* The last message is what nerve_task_stat() says, less running. */
    NT_OK(nerve_task_stat(t, &st));
    NT_EQ(st.cycles, last.cycles);
    NT_EQ(st.overruns, last.overruns);
    NT_EQ(st.exec.n, last.exec.n);
    nerve_task_close(t);
    nerve_chan_close(w);
    nerve_chan_close(r);
    NT_OK(nerve_chan_unlink(name));
}

static void test_failed_puts_are_counted(void)
{
    const char *name = nt_name("taskstats-ro");
    struct nerve_chan_opts co = NERVE_CHAN_OPTS_INIT;
    co.slots = 8;
    NT_OK(nerve_chan_create(name, &co));
    nerve_chan *ro = NULL;
    NT_OK(nerve_chan_open(name, NERVE_O_READ, &ro));
    nerve_task *t = clock_task();
    NT_OK(nerve_task_publish_stats(t, ro)); /* every put fails */
    struct nerve_task_tick tk;
    for (int i = 0; i < 4; i++)
        NT_OK(nerve_task_next(t, NERVE_FOREVER, 0, &tk));
    struct nerve_task_stats st;
    NT_OK(nerve_task_stat(t, &st));
    NT_EQ(st.stats_lost, 3); /* three cycles ended, none put */
    struct nerve_stats cs;
    NT_OK(nerve_chan_stat(ro, &cs));
    NT_EQ(cs.head_seq, 0);
    nerve_task_close(t);
    nerve_chan_close(ro);
    NT_OK(nerve_chan_unlink(name));
}

int main(void)
{
    nt_watchdog(50);
    test_every_cycle_in_order();
    test_failed_puts_are_counted();
    printf("ok: task statistics published to a channel\n");
    return 0;
}
