/* Periodic and channel-driven tasks (include/nerve/rt.h); the other parts
 * of the real-time helpers are listed in src/rt_internal.h.
 *
 * DESIGN
 *
 * LAYOUT. Nothing here lives in shared memory. A task is process-private:
 *
 *   struct nerve_task
 *     opts, fn, arg          [const] after nerve_task_open()
 *     acc                    [local] the loop thread's running statistics
 *     pub_seq, pub[]         [W:writer][R:acq] published copy of acc,
 *                            see SYNC(task-stats)
 *     stats_chan             [setup] nerve_task_publish_stats(): the loop
 *                            puts each cycle's statistics on it (its own
 *                            nerve_task_stat() copy, then nerve_chan_put)
 *     stop                   [R:acq] set by nerve_task_stop() from any
 *                            thread or signal handler, SYNC(task-stop)
 *     thread, started, setup_done/setup_rc/mu/cv   start handshake
 *     pull, in_body, cur, release ...   [local] the loop's own state
 *
 * OWNERSHIP. Only the loop thread writes acc and pub[]. Any thread reads
 * pub[] through nerve_task_stat(). nerve_task_stop() only stores `stop`
 * and cancels the channel handle, both async-signal-safe.
 *
 * PROTOCOL (statistics seqlock). After every cycle the loop publishes its
 * accumulators so readers see a consistent snapshot without ever making the
 * loop wait:
 *   writer: seq = s + 1 (odd, relaxed); release fence; store every word of
 *           pub[] relaxed; seq = s + 2 (release)            SYNC(task-stats)
 *   reader: s1 = seq (acquire); odd -> retry; load every word relaxed;
 *           acquire fence; s2 = seq (relaxed); s1 != s2 -> retry.
 * Tearing is detected by the sequence check: a reader that overlapped a
 * publication sees either an odd s1 or s1 != s2 and copies again. Every
 * word is an atomic, so the overlapping copy is not a data race. The
 * reader's retries are bounded (a reader in a signal handler on the loop
 * thread itself could otherwise spin forever) and give NERVE_EAGAIN.
 *
 * ONE LOOP, TWO DRIVERS. A cycle is rt_wait() (sleep to the release or
 * wait for the message, then fill the tick), the body, and rt_end() (its
 * bookkeeping and the publication of the statistics). nerve_task_run()
 * and the thread of nerve_task_start() call the body themselves (push);
 * nerve_task_next() returns the tick to its caller and ends the cycle when
 * it is called again (pull), so a caller's own loop, e.g. a Python `for`,
 * is the body, with no thread in between.
 *
 * LOCK ORDER. The start handshake mutex is taken only in setup; the loop
 * itself takes no lock.
 *
 * CRASH RECOVERY. Not applicable: process-private state.
 *
 * MODEL. The seqlock is the textbook one (Boehm, "Can seqlocks get along
 * with programming language memory models?", 2012, fig. 6) and is not in
 * model/; tests/rt/test_rt_task.c reads statistics while a loop runs.
 *
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "nerve/errors.h"
#include "nerve/rt.h"

#include "atomics.h"
#include "opts.h"
#include "rt_internal.h"
#include "timeconv.h"

#define RT_STATS_TRIES 100000

/* What the loop accumulates and publishes (raw sums; nerve_task_stat()
 * turns them into series, so the loop never divides or takes roots). */
struct rt_raw {
    uint64_t cycles, overruns, skipped, timeouts, missed;
    struct nerve__rt_acc abs, rel, lat, exec;
    int64_t period_ns;
    int32_t policy, priority, sched_err;
    uint32_t running;
    uint64_t stats_lost;
};

#define RT_PUB_WORDS (sizeof(struct rt_raw) / sizeof(uint64_t))
_Static_assert(sizeof(struct rt_raw) % sizeof(uint64_t) == 0,
               "rt_raw is published as whole 64-bit words");

/* nerve_task.pull */
enum { RT_PULL_NONE, RT_PULL_RUNNING, RT_PULL_ENDED };

struct nerve_task {
    struct nerve_task_opts o;     /* [const] */
    nerve_task_fn fn;             /* [const] NULL for a pull-only task */
    void *arg;                    /* [const] */
    int priority;                 /* [const] resolved FIFO/RR priority */
    void *msg_buf;                /* [local] channel-driven: the message */
    nerve_chan *stats_chan;       /* [setup] nerve_task_publish_stats() */
    struct rt_raw acc;            /* [local] loop thread only */
    nerve__a64 pub_seq;           /* [W:writer][R:acq] SYNC(task-stats) */
    nerve__a64 pub[RT_PUB_WORDS]; /* [W:writer] words of acc */
    nerve__a32 stop;              /* SYNC(task-stop) */
    /* The loop's own state ([local], the loop's thread). */
    int64_t release; /* clock: the next release; chan: the next
                                 deadline (deadline_ns > 0) */
    int64_t prev_release, prev_wake;
    int have_prev; /* chan: prev_wake holds a message's wake-up */
    uint64_t cycle, skipped_now;
    int in_body; /* a tick was handed out, its cycle not ended */
    int64_t cur_release, cur_wake, cur_start;
    int32_t cur_status; /* the tick's msg_status */
    /* Pull driver (nerve_task_next). */
    int pull;    /* RT_PULL_* */
    int pull_rc; /* RT_PULL_ENDED: what every call returns */
    /* Start handshake and thread (setup phase only). */
    pthread_t thread;
    int started, joined, setup_done, setup_rc, loop_rc;
    pthread_mutex_t mu;
    pthread_cond_t cv;
};

static void rt_publish(nerve_task *t)
{
    uint64_t s = nerve__load_rlx(&t->pub_seq);
    uint64_t w[RT_PUB_WORDS];
    memcpy(w, &t->acc, sizeof w);
    /* Relaxed: only the loop thread writes pub_seq; the fence orders it. */
    nerve__store_rlx(&t->pub_seq, s + 1);
    /* SYNC(task-stats) release fence: the odd sequence is visible before any
     * word changes; pairs with the acquire fence in nerve_task_stat(). */
    nerve__fence_rel();
    for (size_t i = 0; i < RT_PUB_WORDS; i++)
        nerve__store_rlx(&t->pub[i], w[i]);
    /* SYNC(task-stats) release: every word of the snapshot is visible before
     * the even sequence; pairs with the acquire load in nerve_task_stat(). */
    nerve__store_rel(&t->pub_seq, s + 2);
}

int nerve_task_stat(const nerve_task *t, struct nerve_task_stats *st)
{
    if (!t)
        return NERVE_EBADF;
    if (!st)
        return NERVE_EINVAL;
    nerve_task *m = (nerve_task *)t; /* the atomics API takes non-const */
    uint64_t w[RT_PUB_WORDS];
    int ok = 0;
    for (int tries = 0; tries < RT_STATS_TRIES && !ok; tries++) {
        /* SYNC(task-stats) acquire: pairs with the release store of the
         * even sequence in rt_publish(). */
        uint64_t s1 = nerve__load_acq(&m->pub_seq);
        if (s1 & 1u)
            continue;
        for (size_t i = 0; i < RT_PUB_WORDS; i++)
            w[i] = nerve__load_rlx(&m->pub[i]);
        /* SYNC(task-stats) acquire fence: the word loads happen before the
         * re-check; pairs with the release fence in rt_publish(). */
        nerve__fence_acq();
        ok = nerve__load_rlx(&m->pub_seq) == s1;
    }
    if (!ok)
        return NERVE_EAGAIN;
    struct rt_raw r;
    memcpy(&r, w, sizeof r);
    memset(st, 0, sizeof *st);
    st->cycles = r.cycles;
    st->overruns = r.overruns;
    st->skipped = r.skipped;
    st->timeouts = r.timeouts;
    st->missed = r.missed;
    nerve__rt_acc_finish(&r.abs, &st->abs_err);
    nerve__rt_acc_finish(&r.rel, &st->rel_err);
    nerve__rt_acc_finish(&r.lat, &st->latency);
    nerve__rt_acc_finish(&r.exec, &st->exec);
    st->period_ns = r.period_ns;
    st->policy = r.policy;
    st->priority = r.priority;
    st->sched_err = r.sched_err;
    st->running = r.running;
    st->stats_lost = r.stats_lost;
    return 0;
}

int nerve_task_publish_stats(nerve_task *t, nerve_chan *chan)
{
    if (!t)
        return NERVE_EBADF;
    /* Setup phase only: the loop reads stats_chan unsynchronised, after the
     * pthread_create (or, for run and next, on the caller's own thread)
     * that follows, which orders this store before it. */
    if (t->started || t->pull != RT_PULL_NONE)
        return NERVE_EBUSY;
    /* A data ring is at least a page, which holds a nerve_task_stats: any
     * open channel takes the message. */
    _Static_assert(sizeof(struct nerve_task_stats) <= 4096,
                   "the statistics fit the smallest data ring");
    if (chan) {
        struct nerve_stats cs;
        int rc = nerve_chan_stat(chan, &cs);
        if (rc != 0)
            return rc;
    }
    t->stats_chan = chan;
    return 0;
}

/* Put this cycle's statistics on the stats channel (the loop thread, right
 * after rt_publish(): nerve_task_stat() succeeds at once, as nothing else
 * writes the seqlock). A failed put is counted, published at once and
 * carried by the next message. */
static void rt_put_stats(nerve_task *t)
{
    struct nerve_task_stats st;
    if (nerve_task_stat(t, &st) != 0 ||
        nerve_chan_put(t->stats_chan, &st, sizeof st, 0, NULL, 0) != 0) {
        t->acc.stats_lost++;
        rt_publish(t); /* nerve_task_stat() counts it at once */
    }
}

#define RT_KNOWN_FLAGS                                                         \
    (NERVE_RT_BEST_EFFORT | NERVE_TASK_CATCH_UP | NERVE_TASK_MLOCK)

int nerve_task_open(const struct nerve_task_opts *opts, nerve_task_fn fn,
                    void *arg, nerve_task **out)
{
    if (!opts || !out)
        return NERVE_EINVAL;
    struct nerve_task_opts o = NERVE_TASK_OPTS_INIT;
    if (nerve__opts_read(&o, sizeof o, opts, opts->size) != 0)
        return NERVE_EINVAL;
    if ((o.flags & ~RT_KNOWN_FLAGS) || o.reserved0 != 0 || o.period_ns < 0 ||
        o.deadline_ns < 0 || o.offset_ns < 0 || o.start_ns < 0)
        return NERVE_EINVAL;
    if (!o.chan && o.period_ns == 0)
        return NERVE_EINVAL;
    if (o.chan && o.chan_which != NERVE_GET_NEXT &&
        o.chan_which != NERVE_GET_NEWEST)
        return NERVE_EINVAL;
    int prio = 0;
    if (o.policy == NERVE_RT_FIFO || o.policy == NERVE_RT_RR) {
        prio = o.priority;
        if (prio == NERVE_TASK_PRIO_AUTO || prio == 0) {
            if (o.period_ns == 0)
                return NERVE_EINVAL;
            prio = nerve_rt_prio_from_period(o.period_ns, o.prio_map);
            if (prio < 0)
                return prio;
            /* Linux's lowest real-time priority is 1; eq. 1 maps the longest
             * periods to 0, which would mean SCHED_OTHER. */
            if (prio < 1)
                prio = 1;
        }
        if (prio < 1 || prio > 99)
            return NERVE_EINVAL;
    } else if (o.policy != NERVE_RT_OTHER) {
        return NERVE_EINVAL;
    } else if (o.priority > 0) {
        return NERVE_EINVAL;
    }
    if (o.stack_prefault == 0)
        o.stack_prefault = 64 * 1024;
    if (o.stack_prefault > 16u * 1024 * 1024)
        return NERVE_EINVAL;

    nerve_task *t = calloc(1, sizeof *t);
    if (!t)
        return NERVE_ENOMEM;
    t->o = o;
    t->o.size = sizeof o;
    t->fn = fn;
    t->arg = arg;
    t->priority = prio;
    if (o.chan) {
        uint64_t max = o.msg_max;
        if (max == 0) {
            struct nerve_stats cs;
            int rc = nerve_chan_stat(o.chan, &cs);
            if (rc != 0) {
                free(t);
                return rc;
            }
            max = cs.data_size;
        }
        t->o.msg_max = max;
        t->msg_buf = malloc(max ? max : 1);
        if (!t->msg_buf) {
            free(t);
            return NERVE_ENOMEM;
        }
    }
    t->acc.period_ns = o.period_ns;
    t->acc.policy = o.policy;
    t->acc.priority = prio;
    pthread_mutex_init(&t->mu, NULL);
    pthread_cond_init(&t->cv, NULL);
    rt_publish(t);
    *out = t;
    return 0;
}

static int rt_task_setup(nerve_task *t)
{
    uint32_t be = t->o.flags & NERVE_RT_BEST_EFFORT;
    struct nerve_rt_applied ap;
    int rc;
    if (t->o.flags & NERVE_TASK_MLOCK) {
        rc = nerve_rt_lock_memory(0, 0, be, &ap);
        if (rc != 0)
            return rc;
    }
    if (t->o.cpus != 0) {
        rc = nerve_rt_affinity_set(t->o.cpus);
        if (rc != 0)
            return rc;
    }
    rc = nerve_rt_sched_set(t->o.policy, t->priority, be, &ap);
    if (rc != 0)
        return rc;
    t->acc.policy = ap.policy;
    t->acc.priority = ap.priority;
    t->acc.sched_err = ap.fallback_err;
    nerve__rt_prefault_stack((size_t)t->o.stack_prefault);
    return 0;
}

static int rt_stopping(nerve_task *t)
{
    /* SYNC(task-stop) acquire: pairs with the release store in
     * nerve_task_stop(); nothing else is published by it. */
    return nerve__load32_acq(&t->stop) != 0;
}

/* The loop begins: first release (clock) or deadline (chan). */
static void rt_begin(nerve_task *t)
{
    int64_t now = nerve_clock_now_ns();
    if (t->o.chan)
        t->release = nerve__ns_add_sat(nerve__ns_add_sat(now, t->o.offset_ns),
                                       t->o.deadline_ns);
    else
        t->release = nerve__ns_add_sat(t->o.start_ns ? t->o.start_ns : now,
                                       t->o.offset_ns);
    t->acc.running = 1;
    rt_publish(t);
}

/* The loop has ended: un-cancel the channel handle, publish running = 0. */
static void rt_finish(nerve_task *t)
{
    if (t->o.chan)
        nerve_chan_cancel_clear(t->o.chan);
    t->acc.running = 0;
    rt_publish(t);
}

/* Hand out the tick of a cycle that is due now. */
static void rt_tick(nerve_task *t, struct nerve_task_tick *tick,
                    int64_t release, int64_t wake)
{
    tick->cycle = t->cycle;
    tick->release_ns = release;
    tick->wake_ns = wake;
    tick->skipped = t->skipped_now;
    t->cur_release = release;
    t->cur_wake = wake;
    t->cur_status = tick->msg_status;
    t->in_body = 1;
    t->cur_start = nerve_clock_now_ns();
}

/* Wait for the next cycle, but not past `until` (absolute; -1: no limit).
 * Returns 0 (*tick filled: the cycle is due), NERVE_ETIMEDOUT (`until`
 * came first; nothing consumed), NERVE_EINTR (a signal interrupted the
 * sleep), NERVE_ECANCELED (stopped) or the channel's error. */
static int rt_wait_clock(nerve_task *t, int64_t until,
                         struct nerve_task_tick *tick)
{
    if (rt_stopping(t))
        return NERVE_ECANCELED;
    int64_t target = t->release;
    int caller_first = until >= 0 && until < target;
    if (caller_first)
        target = until;
    struct timespec ts = {(time_t)(target / NERVE__NS_PER_S),
                          (long)(target % NERVE__NS_PER_S)};
    /* Absolute sleep: a late wake-up never shifts later releases. */
    int e = clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
    if (e == EINTR)
        return NERVE_EINTR;
    if (rt_stopping(t))
        return NERVE_ECANCELED;
    if (caller_first)
        return NERVE_ETIMEDOUT;
    memset(tick, 0, sizeof *tick);
    rt_tick(t, tick, t->release, nerve_clock_now_ns());
    return 0;
}

static int rt_wait_chan(nerve_task *t, int64_t until,
                        struct nerve_task_tick *tick)
{
    if (rt_stopping(t))
        return NERVE_ECANCELED;
    int64_t w = t->o.deadline_ns > 0 ? t->release : -1;
    int caller_first = until >= 0 && (w < 0 || until < w);
    if (caller_first)
        w = until;
    uint32_t fl = t->o.chan_which | NERVE_F_WAIT;
    int64_t to = NERVE_FOREVER;
    if (w >= 0) {
        fl |= NERVE_F_ABSTIME;
        to = w;
    }
    struct nerve_get_info info;
    memset(&info, 0, sizeof info);
    int rc = nerve_chan_get(t->o.chan, t->msg_buf, (size_t)t->o.msg_max, 0, to,
                            &info, fl);
    int64_t wake = nerve_clock_now_ns();
    if (rc == NERVE_ECANCELED || rc == NERVE_EINTR)
        return rc;
    if (rc == NERVE_ETIMEDOUT && caller_first)
        return NERVE_ETIMEDOUT;
    if (rc != 0 && rc != NERVE_ETIMEDOUT && rc != NERVE_ELAPPED)
        return rc;
    memset(tick, 0, sizeof *tick);
    tick->msg_status = rc;
    int64_t release = wake;
    if (rc == 0) {
        release = info.time_ns;
        tick->msg = t->msg_buf;
        tick->msg_info = info;
        t->acc.missed += info.missed;
    } else if (rc == NERVE_ETIMEDOUT) {
        release = t->release;
        t->acc.timeouts++;
    }
    rt_tick(t, tick, release, wake);
    return 0;
}

static int rt_wait(nerve_task *t, int64_t until, struct nerve_task_tick *tick)
{
    return t->o.chan ? rt_wait_chan(t, until, tick)
                     : rt_wait_clock(t, until, tick);
}

/* End the cycle whose body ended at `end`; `brc` is the body's return
 * (the loop goes on only if it is 0). Publishes the statistics. */
static void rt_end(nerve_task *t, int64_t end, int brc)
{
    struct rt_raw *a = &t->acc;
    const int64_t release = t->cur_release, wake = t->cur_wake;
    const int64_t start = t->cur_start;
    t->in_body = 0;
    a->cycles++;
    nerve__rt_acc_add(&a->exec, end - start);
    if (!t->o.chan) {
        const int64_t period = t->o.period_ns;
        nerve__rt_acc_add(&a->abs, wake - release);
        if (t->cycle > 0)
            nerve__rt_acc_add(&a->rel, (wake - t->prev_wake) -
                                           (release - t->prev_release));
        nerve__rt_acc_add(&a->lat, start - release);
        t->prev_release = release;
        t->prev_wake = wake;
        int64_t next = nerve__ns_add_sat(release, period);
        t->skipped_now = 0;
        if (end > next) {
            a->overruns++;
            /* Periods are skipped only if the loop goes on. */
            if (brc == 0 && !(t->o.flags & NERVE_TASK_CATCH_UP)) {
                /* The first release still in the future. */
                int64_t k = (end - release) / period + 1;
                t->skipped_now = (uint64_t)(k - 1);
                a->skipped += t->skipped_now;
                /* (k - 1) * period <= end - release: no overflow. */
                next = nerve__ns_add_sat(release + (k - 1) * period, period);
            }
        }
        t->release = next;
    } else {
        if (t->cur_status == 0) {
            nerve__rt_acc_add(&a->lat, start - release);
            if (t->o.period_ns > 0 && t->have_prev)
                nerve__rt_acc_add(&a->rel,
                                  (wake - t->prev_wake) - t->o.period_ns);
            t->prev_wake = wake;
            t->have_prev = 1;
        }
        if (t->o.deadline_ns > 0) {
            t->release = nerve__ns_add_sat(wake, t->o.deadline_ns);
            if (end > t->release)
                a->overruns++;
        }
    }
    t->cycle++;
    rt_publish(t);
    if (t->stats_chan)
        rt_put_stats(t);
}

/* The push driver: the loop calls the body itself until it is stopped. */
static int rt_loop(nerve_task *t)
{
    rt_begin(t);
    int rc;
    for (;;) {
        struct nerve_task_tick tick;
        rc = rt_wait(t, -1, &tick);
        if (rc == NERVE_EINTR)
            continue; /* re-checks the stop flag and sleeps again */
        if (rc != 0)
            break;
        int brc = t->fn(t->arg, &tick);
        rt_end(t, nerve_clock_now_ns(), brc);
        if (brc != 0) {
            rc = brc > 0 ? 0 : brc;
            break;
        }
    }
    if (rc == NERVE_ECANCELED && rt_stopping(t))
        rc = 0;
    rt_finish(t);
    return rc;
}

static void *rt_thread(void *p)
{
    nerve_task *t = p;
    int rc = rt_task_setup(t);
    pthread_mutex_lock(&t->mu);
    t->setup_rc = rc;
    t->setup_done = 1;
    pthread_cond_signal(&t->cv);
    pthread_mutex_unlock(&t->mu);
    if (rc == 0)
        t->loop_rc = rt_loop(t);
    return NULL;
}

/* Whether t may be started or run: not yet started, nor pulled with
 * nerve_task_next(), and with a cycle function. */
static int rt_startable(const nerve_task *t)
{
    if (!t)
        return NERVE_EBADF;
    if (t->started || t->pull != RT_PULL_NONE)
        return NERVE_EBUSY;
    return t->fn ? 0 : NERVE_EINVAL;
}

int nerve_task_start(nerve_task *t)
{
    int rc = rt_startable(t);
    if (rc != 0)
        return rc;
    if (pthread_create(&t->thread, NULL, rt_thread, t) != 0)
        return NERVE_ENOMEM;
    t->started = 1;
    pthread_mutex_lock(&t->mu);
    while (!t->setup_done)
        pthread_cond_wait(&t->cv, &t->mu);
    rc = t->setup_rc;
    pthread_mutex_unlock(&t->mu);
    if (rc != 0) {
        pthread_join(t->thread, NULL);
        t->joined = 1;
    }
    return rc;
}

int nerve_task_run(nerve_task *t)
{
    int rc = rt_startable(t);
    if (rc != 0)
        return rc;
    rc = rt_task_setup(t);
    return rc != 0 ? rc : rt_loop(t);
}

int nerve_task_next(nerve_task *t, int64_t timeout_ns, uint32_t flags,
                    struct nerve_task_tick *tick)
{
    if (!t)
        return NERVE_EBADF;
    if (!tick || (flags & ~NERVE_F_ABSTIME))
        return NERVE_EINVAL;
    if (t->started)
        return NERVE_EBUSY;
    if (t->pull == RT_PULL_ENDED)
        return t->pull_rc;
    int64_t until =
        nerve__deadline_ns(timeout_ns, (flags & NERVE_F_ABSTIME) != 0);
    int rc;
    if (t->pull == RT_PULL_NONE) {
        if (rt_stopping(t)) {
            /* Stopped before its first cycle: no set-up, nothing run. */
            rc = NERVE_ECANCELED;
            goto ended;
        }
        rc = rt_task_setup(t);
        if (rc != 0)
            return rc;
        rt_begin(t);
        t->pull = RT_PULL_RUNNING;
    } else if (t->in_body) {
        /* The caller's body of the previous tick ends now. */
        rt_end(t, nerve_clock_now_ns(), 0);
    }
    rc = rt_wait(t, until, tick);
    if (rc == 0 || rc == NERVE_ETIMEDOUT || rc == NERVE_EINTR)
        return rc;
ended:
    rt_finish(t);
    t->pull = RT_PULL_ENDED;
    t->pull_rc = rc;
    return rc;
}

void nerve_task_stop(nerve_task *t)
{
    if (!t)
        return;
    /* SYNC(task-stop) release: pairs with the acquire in rt_stopping(). */
    nerve__store32_rel(&t->stop, 1);
    if (t->o.chan)
        nerve_chan_cancel(t->o.chan);
}

int nerve_task_join(nerve_task *t)
{
    if (!t)
        return NERVE_EBADF;
    if (!t->started)
        return NERVE_EINVAL;
    if (!t->joined) {
        pthread_join(t->thread, NULL);
        t->joined = 1;
    }
    return t->setup_rc != 0 ? t->setup_rc : t->loop_rc;
}

void nerve_task_close(nerve_task *t)
{
    if (!t)
        return;
    if (t->started && !t->joined) {
        nerve_task_stop(t);
        pthread_join(t->thread, NULL);
    }
    pthread_mutex_destroy(&t->mu);
    pthread_cond_destroy(&t->cv);
    free(t->msg_buf);
    free(t);
}
