/* Clock-driven periodic tasks: cycle counting and per-cycle statistics,
 * overrun detection under both policies (asserting counters, not timing),
 * stop from another thread and from a signal handler, statistics read while
 * the loop runs, and option validation. */
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <time.h>

#include <nerve/rt.h>

#include "nerve_test.h"

#define MS 1000000LL

static void sleep_ns(int64_t ns)
{
    struct timespec ts = {(time_t)(ns / 1000000000LL),
                          (long)(ns % 1000000000LL)};
    while (clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, &ts) != 0) {
    }
}

/* ---- N cycles, then the body stops the loop ---------------------------- */

struct count_arg {
    uint64_t n, stop_at;
    int64_t first_release, last_release;
    int order_ok;
};

static int count_body(void *p, const struct nerve_task_tick *tk)
{
    struct count_arg *a = p;
    if (tk->cycle != a->n)
        a->order_ok = 0;
    if (tk->wake_ns < tk->release_ns) /* clock_nanosleep never wakes early */
        a->order_ok = 0;
    if (a->n == 0)
        a->first_release = tk->release_ns;
    a->last_release = tk->release_ns;
    a->n++;
    return a->n >= a->stop_at ? 1 : 0;
}

static void test_counts(void)
{
    struct nerve_task_opts o = NERVE_TASK_OPTS_INIT;
    o.period_ns = 2 * MS;
    o.offset_ns = 3 * MS;
    struct count_arg a = {0, 20, 0, 0, 1};
    nerve_task *t;
    int64_t before = nerve_clock_now_ns();
    NT_OK(nerve_task_open(&o, count_body, &a, &t));
    NT_OK(nerve_task_start(t));
    NT_RC(nerve_task_start(t), NERVE_EBUSY);
    NT_OK(nerve_task_join(t));
    NT_EQ(a.n, 20);
    NT_ASSERT(a.order_ok);
    /* The first release honours the offset; the releases are exactly
     * periodic (absolute times, no drift) unless periods were skipped. */
    NT_CMP(a.first_release, >=, before + 3 * MS);
    struct nerve_task_stats st;
    NT_OK(nerve_task_stat(t, &st));
    NT_EQ(st.cycles, 20);
    NT_EQ(a.last_release - a.first_release,
          (int64_t)(19 + st.skipped) * 2 * MS);
    NT_EQ(st.abs_err.n, 20);
    NT_EQ(st.rel_err.n, 19);
    NT_EQ(st.latency.n, 20);
    NT_EQ(st.exec.n, 20);
    NT_CMP(st.abs_err.min_ns, >=, 0);
    NT_CMP(st.abs_err.max_abs_ns, >=, st.abs_err.rms_ns);
    NT_EQ(st.period_ns, 2 * MS);
    NT_EQ(st.policy, NERVE_RT_OTHER);
    NT_EQ(st.running, 0);
    nerve_task_close(t);
}

/* ---- overruns ----------------------------------------------------------- */

struct slow_arg {
    uint64_t n;
    int64_t period;
    int64_t releases[16];
    uint64_t skipped_seen;
};

/* Cycles 2 and 5 sleep for 3.5 periods from their wake-up. */
static int slow_body(void *p, const struct nerve_task_tick *tk)
{
    struct slow_arg *a = p;
    a->releases[a->n] = tk->release_ns;
    a->skipped_seen += tk->skipped;
    a->n++;
    if (tk->cycle == 2 || tk->cycle == 5)
        sleep_ns(a->period * 7 / 2);
    return a->n >= 10 ? 1 : 0;
}

static void test_overrun(uint32_t policy_flag)
{
    struct nerve_task_opts o = NERVE_TASK_OPTS_INIT;
    o.period_ns = 5 * MS;
    o.flags = policy_flag;
    struct slow_arg a;
    memset(&a, 0, sizeof a);
    a.period = o.period_ns;
    nerve_task *t;
    NT_OK(nerve_task_open(&o, slow_body, &a, &t));
    NT_OK(nerve_task_run(t));
    struct nerve_task_stats st;
    NT_OK(nerve_task_stat(t, &st));
    NT_EQ(st.cycles, 10);
    /* The two slow bodies overran; a loaded machine may add more. */
    NT_CMP(st.overruns, >=, 2);
    if (policy_flag == NERVE_TASK_CATCH_UP) {
        /* Every release runs, back to back after an overrun. */
        NT_EQ(st.skipped, 0);
        NT_EQ(a.skipped_seen, 0);
        for (int i = 1; i < 10; i++)
            NT_EQ(a.releases[i] - a.releases[i - 1], o.period_ns);
    } else {
        /* Each slow body (3.5 periods) drops at least 3 releases, and the
         * body is told how many were dropped before its own. */
        NT_CMP(st.skipped, >=, 6);
        NT_EQ(a.skipped_seen, st.skipped);
        int64_t span = a.releases[9] - a.releases[0];
        NT_EQ(span, (int64_t)(9 + st.skipped) * o.period_ns);
        NT_CMP(a.releases[3] - a.releases[2], >=, 4 * o.period_ns);
    }
    nerve_task_close(t);
}

/* ---- stop from another thread and from a signal handler --------------- */

static sem_t reached;
static nerve_task *sig_task;

static int forever_body(void *p, const struct nerve_task_tick *tk)
{
    (void)p;
    if (tk->cycle == 3)
        sem_post(&reached);
    return 0;
}

static void on_usr1(int sig)
{
    (void)sig;
    nerve_task_stop(sig_task);
}

static volatile sig_atomic_t run_done;

/* Signals the loop until it has ended: a signal that lands between the
 * loop's stop check and its entry into clock_nanosleep() is not seen until
 * the next release, so one signal alone could leave it asleep. */
static void *kicker(void *p)
{
    pthread_t main_thread = *(pthread_t *)p;
    while (sem_wait(&reached) != 0) {
    }
    while (!__atomic_load_n(&run_done, __ATOMIC_ACQUIRE)) {
        pthread_kill(main_thread, SIGUSR1);
        sleep_ns(20 * MS);
    }
    return NULL;
}

static int first_body(void *p, const struct nerve_task_tick *tk)
{
    (void)p;
    if (tk->cycle == 0)
        sem_post(&reached);
    return 0;
}

static void test_stop(void)
{
    NT_OK(sem_init(&reached, 0, 0) == 0 ? 0 : -1);
    struct nerve_task_opts o = NERVE_TASK_OPTS_INIT;
    o.period_ns = 1 * MS;
    nerve_task *t;
    NT_OK(nerve_task_open(&o, forever_body, NULL, &t));
    NT_OK(nerve_task_start(t));
    while (sem_wait(&reached) != 0) {
    }
    struct nerve_task_stats st;
    NT_OK(nerve_task_stat(t, &st));
    NT_EQ(st.running, 1);
    nerve_task_stop(t);
    NT_OK(nerve_task_join(t));
    NT_OK(nerve_task_stat(t, &st));
    NT_EQ(st.running, 0);
    NT_CMP(st.cycles, >=, 4);
    nerve_task_close(t);

    /* A long period: the signal interrupts the sleep, so the loop ends
     * without waiting for the next release. */
    o.period_ns = 30000 * MS;
    o.start_ns = 0;
    NT_OK(nerve_task_open(&o, first_body, NULL, &sig_task));
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_usr1;
    sigaction(SIGUSR1, &sa, NULL);
    pthread_t me = pthread_self(), k;
    /* The first release is now; cycle 0 lets the kicker go, which then
     * interrupts the 30 s sleep that follows. */
    NT_OK(pthread_create(&k, NULL, kicker, &me));
    NT_OK(nerve_task_run(sig_task));
    __atomic_store_n(&run_done, 1, __ATOMIC_RELEASE);
    pthread_join(k, NULL);
    NT_OK(nerve_task_stat(sig_task, &st));
    NT_CMP(st.cycles, >=, 1);
    NT_EQ(st.running, 0);
    nerve_task_close(sig_task);

    /* Stopped before it starts: runs no body. */
    o.period_ns = 1 * MS;
    NT_OK(nerve_task_open(&o, forever_body, NULL, &t));
    nerve_task_stop(t);
    NT_OK(nerve_task_run(t));
    NT_OK(nerve_task_stat(t, &st));
    NT_EQ(st.cycles, 0);
    nerve_task_close(t);
    /* Destroying a running task stops and joins it. */
    NT_OK(nerve_task_open(&o, forever_body, NULL, &t));
    NT_OK(nerve_task_start(t));
    nerve_task_close(t);
    sem_destroy(&reached);
}

/* ---- statistics are consistent while the loop runs -------------------- */

static int until_body(void *p, const struct nerve_task_tick *tk)
{
    return tk->cycle + 1 >= *(uint64_t *)p ? 1 : 0;
}

static void test_live_stats(void)
{
    struct nerve_task_opts o = NERVE_TASK_OPTS_INIT;
    o.period_ns = MS / 4;
    uint64_t stop_at = 400;
    nerve_task *t;
    NT_OK(nerve_task_open(&o, until_body, &stop_at, &t));
    NT_OK(nerve_task_start(t));
    uint64_t last = 0, reads = 0;
    for (;;) {
        struct nerve_task_stats st;
        NT_OK(nerve_task_stat(t, &st));
        reads++;
        /* One snapshot: every series was updated in the same cycle. */
        NT_EQ(st.abs_err.n, st.cycles);
        NT_EQ(st.latency.n, st.cycles);
        NT_EQ(st.exec.n, st.cycles);
        NT_EQ(st.rel_err.n, st.cycles ? st.cycles - 1 : 0);
        NT_CMP(st.cycles, >=, last);
        last = st.cycles;
        if (!st.running && st.cycles == stop_at)
            break;
    }
    NT_OK(nerve_task_join(t));
    NT_CMP(reads, >, 1);
    nerve_task_close(t);
}

/* ---- options ------------------------------------------------------------ */

static int noop_body(void *p, const struct nerve_task_tick *tk)
{
    (void)p;
    (void)tk;
    return 1;
}

static void test_options(void)
{
    nerve_task *t = NULL;
    struct nerve_task_opts o = NERVE_TASK_OPTS_INIT;
    NT_RC(nerve_task_open(&o, noop_body, NULL, &t),
          NERVE_EINVAL); /* no period */
    o.period_ns = MS;
    /* No body: a task for nerve_task_next() only; start and run refuse. */
    NT_OK(nerve_task_open(&o, NULL, NULL, &t));
    NT_RC(nerve_task_start(t), NERVE_EINVAL);
    NT_RC(nerve_task_run(t), NERVE_EINVAL);
    nerve_task_close(t);
    NT_RC(nerve_task_open(NULL, noop_body, NULL, &t), NERVE_EINVAL);
    o.flags = 0x80000000u;
    NT_RC(nerve_task_open(&o, noop_body, NULL, &t), NERVE_EINVAL);
    o.flags = 0;
    o.policy = 7;
    NT_RC(nerve_task_open(&o, noop_body, NULL, &t), NERVE_EINVAL);
    o.policy = NERVE_RT_FIFO;
    o.priority = 100;
    NT_RC(nerve_task_open(&o, noop_body, NULL, &t), NERVE_EINVAL);
    o.policy = NERVE_RT_OTHER;
    o.priority = 5;
    NT_RC(nerve_task_open(&o, noop_body, NULL, &t), NERVE_EINVAL);
    o.priority = NERVE_TASK_PRIO_AUTO;
    o.reserved0 = 1;
    NT_RC(nerve_task_open(&o, noop_body, NULL, &t), NERVE_EINVAL);
    o.reserved0 = 0;
    o.period_ns = -1;
    NT_RC(nerve_task_open(&o, noop_body, NULL, &t), NERVE_EINVAL);
    /* Rate-monotonic priority: a 1 s period maps to 0 and is raised to 1. */
    o.period_ns = 1000 * MS;
    o.policy = NERVE_RT_FIFO;
    NT_OK(nerve_task_open(&o, noop_body, NULL, &t));
    struct nerve_task_stats st;
    NT_OK(nerve_task_stat(t, &st));
    NT_EQ(st.priority, 1);
    nerve_task_close(t);
    o.period_ns = MS;
    NT_OK(nerve_task_open(&o, noop_body, NULL, &t));
    NT_OK(nerve_task_stat(t, &st));
    NT_EQ(st.priority, 56);
    NT_EQ(st.cycles, 0);
    NT_RC(nerve_task_join(t), NERVE_EINVAL); /* never started */
    nerve_task_close(t);
    nerve_task_close(NULL);
}

int main(void)
{
    nt_watchdog(50);
    test_options();
    test_counts();
    test_overrun(NERVE_TASK_SKIP);
    test_overrun(NERVE_TASK_CATCH_UP);
    test_stop();
    test_live_stats();
    printf("ok: periodic tasks\n");
    return 0;
}
