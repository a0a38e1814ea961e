/* Real-time helpers and periodic tasks (include/nerve/rt.h).
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
 *     stop                   [R:acq] set by nerve_task_stop() from any
 *                            thread or signal handler, SYNC(task-stop)
 *     thread, started, setup_done/setup_rc/mu/cv   start handshake
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
 * LOCK ORDER. The start handshake mutex is taken only in setup; the loop
 * itself takes no lock.
 *
 * CRASH RECOVERY. Not applicable: process-private state.
 *
 * MODEL. The seqlock is the textbook one (Boehm, "Can seqlocks get along
 * with programming language memory models?", 2012, fig. 6) and is not in
 * model/; tests/rt/test_rt_task.c reads statistics while a loop runs.
 *
 * No libm: libnerve links only libc and pthreads, so the logarithm of the
 * priority mapping and the square root of the RMS are computed here on
 * integers (both exact enough to be checked against libm in tests/rt). */
#include <errno.h>
#include <limits.h>
#include <malloc.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "nerve/rt.h"
#include "nerve/errors.h"

#include "atomics.h"

__extension__ typedef __int128 rt_i128;
__extension__ typedef unsigned __int128 rt_u128;

#define RT_NS_PER_S 1000000000LL
#define RT_PAGE 4096u
#define RT_STATS_TRIES 100000

/* ---- small helpers ----------------------------------------------------- */

static int64_t rt_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * RT_NS_PER_S + ts.tv_nsec;
}

__attribute__((format(printf, 2, 3))) static void
rt_msg(struct nerve_rt_applied *a, const char *fmt, ...)
{
    if (!a)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(a->msg, sizeof a->msg, fmt, ap);
    va_end(ap);
}

static const char *rt_policy_name(int policy)
{
    switch (policy) {
    case NERVE_RT_OTHER:
        return "SCHED_OTHER";
    case NERVE_RT_FIFO:
        return "SCHED_FIFO";
    case NERVE_RT_RR:
        return "SCHED_RR";
    default:
        return "SCHED_?";
    }
}

/* Reads `size` bytes of a caller's options struct that may be older
 * (shorter) or newer (longer) than ours: copies min(size, known) bytes over
 * `dflt` and rejects a non-zero unknown tail (STYLE.md §6). */
static int rt_opts_read(void *dst, size_t known, const void *src, size_t size)
{
    if (size < sizeof(uint32_t))
        return NERVE_EINVAL;
    const unsigned char *s = src;
    for (size_t i = known; i < size; i++) {
        if (s[i] != 0)
            return NERVE_EINVAL;
    }
    memcpy(dst, src, size < known ? size : known);
    return 0;
}

/* log2(v) for v >= 1: the integer part from the highest set bit, the
 * fraction bit by bit by repeated squaring of the mantissa in [1, 2). 52
 * fraction bits: the result is within 2^-50 of the true value. */
static double rt_log2_u64(uint64_t v)
{
    int e = 63 - __builtin_clzll(v);
    double m = (double)v / (double)(1ull << e);
    double r = e, bit = 0.5;
    for (int i = 0; i < 52; i++, bit *= 0.5) {
        m *= m;
        if (m >= 2.0) {
            m *= 0.5;
            r += bit;
        }
    }
    return r;
}

/* Integer square root, rounded down (digit-by-digit method). */
static uint64_t rt_isqrt(rt_u128 v)
{
    rt_u128 res = 0, bit = (rt_u128)1 << 126;
    while (bit > v)
        bit >>= 2;
    while (bit != 0) {
        if (v >= res + bit) {
            v -= res + bit;
            res = (res >> 1) + bit;
        } else {
            res >>= 1;
        }
        bit >>= 2;
    }
    return res > UINT64_MAX ? UINT64_MAX : (uint64_t)res;
}

/* ---- priority mapping --------------------------------------------------- */

int nerve_rt_prio_from_period(int64_t period_ns,
                              const struct nerve_rt_prio_map *map)
{
    struct nerve_rt_prio_map m = NERVE_RT_PRIO_MAP_INIT;
    struct nerve_rt_prio_map dflt = NERVE_RT_PRIO_MAP_INIT;
    if (map) {
        if (rt_opts_read(&m, sizeof m, map, map->size) != 0)
            return NERVE_EINVAL;
        if (m.prio_max == 0)
            m.prio_max = dflt.prio_max;
        if (m.period_min_ns == 0)
            m.period_min_ns = dflt.period_min_ns;
        if (m.period_max_ns == 0)
            m.period_max_ns = dflt.period_max_ns;
    }
    if (period_ns <= 0 || m.reserved0 != 0 || m.period_min_ns <= 0 ||
        m.period_min_ns >= m.period_max_ns || m.prio_min < 0 ||
        m.prio_max > 99 || m.prio_min > m.prio_max)
        return NERVE_EINVAL;
    int64_t t = period_ns;
    if (t < m.period_min_ns)
        t = m.period_min_ns;
    if (t > m.period_max_ns)
        t = m.period_max_ns;
    /* Eq. 1 rearranged: the fraction of the log range between T and Tmax.
     * The base of the logarithm cancels, so log2 serves as well as log10. */
    double lmax = rt_log2_u64((uint64_t)m.period_max_ns);
    double frac = (lmax - rt_log2_u64((uint64_t)t)) /
                  (lmax - rt_log2_u64((uint64_t)m.period_min_ns));
    double p = m.prio_min + (double)(m.prio_max - m.prio_min) * frac;
    /* Round half up; the epsilon keeps an exact half (10 ms -> 37.5) from
     * rounding down through the last bit of the logarithm. */
    int r = (int)(p + 0.5 + 1e-9);
    if (r > m.prio_max)
        r = m.prio_max;
    if (r < m.prio_min)
        r = m.prio_min;
    return r;
}

/* ---- process and thread set-up ----------------------------------------- */

static void rt_sched_get(int *policy, int *priority);

/* Touch `bytes` of stack below the caller's frame so those pages are
 * mapped (and locked, under mlockall) before the loop needs them. Not
 * inlined, so the frame is popped again and the pages stay for the loop. */
__attribute__((noinline)) static void rt_prefault_stack(size_t bytes)
{
    if (bytes == 0)
        return;
    unsigned char buf[bytes];
    memset(buf, 0, bytes);
    /* The compiler must believe the bytes are used, or it drops the memset. */
    __asm__ volatile("" : : "r"(buf) : "memory");
}

static void rt_prefault_heap(size_t bytes)
{
    if (bytes == 0)
        return;
    unsigned char *p = malloc(bytes);
    if (!p)
        return;
    for (size_t i = 0; i < bytes; i += RT_PAGE)
        ((volatile unsigned char *)p)[i] = 1;
    /* Freed into malloc's arena, which (with trimming and mmap off) keeps
     * the pages for later allocations. */
    free(p);
}

int nerve_rt_lock_memory(size_t stack_bytes, size_t heap_bytes, uint32_t flags,
                         struct nerve_rt_applied *applied)
{
    if (flags & ~NERVE_RT_BEST_EFFORT)
        return NERVE_EINVAL;
    if (applied) {
        memset(applied, 0, sizeof *applied);
        rt_sched_get(&applied->policy, &applied->priority);
    }
    int rc = 0;
    if (mlockall(MCL_CURRENT | MCL_FUTURE) != 0) {
        rc = errno == ENOMEM ? NERVE_ENOMEM : NERVE_EPERM;
        rt_msg(applied,
               "memory not locked: mlockall refused (%s, code %d); needs "
               "CAP_IPC_LOCK or a larger RLIMIT_MEMLOCK",
               nerve_err_name(rc), rc);
        if (!(flags & NERVE_RT_BEST_EFFORT))
            return rc;
        if (applied)
            applied->fallback_err = rc;
    } else {
        if (applied)
            applied->mem_locked = 1;
        rt_msg(applied, "memory locked (mlockall of current and future "
                        "pages)");
    }
    /* Keep freed heap in the arena and serve large blocks from it too, so
     * a prefaulted (and locked) page is never handed back and refaulted. */
    mallopt(M_TRIM_THRESHOLD, -1);
    mallopt(M_MMAP_MAX, 0);
    rt_prefault_stack(stack_bytes);
    rt_prefault_heap(heap_bytes);
    return 0;
}

static void rt_sched_get(int *policy, int *priority)
{
    struct sched_param sp;
    int pol = 0;
    memset(&sp, 0, sizeof sp);
    if (pthread_getschedparam(pthread_self(), &pol, &sp) != 0)
        pol = SCHED_OTHER;
    if (policy)
        *policy = pol;
    if (priority)
        *priority = sp.sched_priority;
}

int nerve_rt_sched_get(int *policy, int *priority)
{
    rt_sched_get(policy, priority);
    return 0;
}

int nerve_rt_sched_set(int policy, int priority, uint32_t flags,
                       struct nerve_rt_applied *applied)
{
    if (flags & ~NERVE_RT_BEST_EFFORT)
        return NERVE_EINVAL;
    if (policy == NERVE_RT_OTHER) {
        if (priority != 0)
            return NERVE_EINVAL;
    } else if (policy == NERVE_RT_FIFO || policy == NERVE_RT_RR) {
        if (priority < 1 || priority > 99)
            return NERVE_EINVAL;
    } else {
        return NERVE_EINVAL;
    }
    if (applied)
        memset(applied, 0, sizeof *applied);
    struct sched_param sp;
    memset(&sp, 0, sizeof sp);
    sp.sched_priority = priority;
    int e = pthread_setschedparam(pthread_self(), policy, &sp);
    if (e == 0) {
        if (applied) {
            applied->policy = policy;
            applied->priority = priority;
            rt_msg(applied, "%s priority %d", rt_policy_name(policy),
                   priority);
        }
        return 0;
    }
    int rc = (e == EPERM) ? NERVE_EPERM : NERVE_EINVAL;
    if (rc == NERVE_EPERM && (flags & NERVE_RT_BEST_EFFORT)) {
        memset(&sp, 0, sizeof sp);
        if (pthread_setschedparam(pthread_self(), SCHED_OTHER, &sp) != 0)
            return NERVE_EPERM;
        if (applied) {
            applied->policy = NERVE_RT_OTHER;
            applied->priority = 0;
            applied->fallback_err = rc;
            rt_msg(applied,
                   "%s refused (needs CAP_SYS_NICE or RLIMIT_RTPRIO >= %d); "
                   "running under SCHED_OTHER",
                   rt_policy_name(policy), priority);
        }
        return 0;
    }
    rt_msg(applied, "%s priority %d refused", rt_policy_name(policy),
           priority);
    return rc;
}

int nerve_rt_affinity_set(uint64_t cpus)
{
    if (cpus == 0)
        return NERVE_EINVAL;
    cpu_set_t set;
    CPU_ZERO(&set);
    for (int i = 0; i < 64; i++) {
        if (cpus & (1ull << i))
            CPU_SET(i, &set);
    }
    int e = pthread_setaffinity_np(pthread_self(), sizeof set, &set);
    if (e == 0)
        return 0;
    return e == EPERM ? NERVE_EPERM : NERVE_EINVAL;
}

struct rt_probe_arg {
    int max_ok;
};

static void *rt_probe_thread(void *p)
{
    struct rt_probe_arg *a = p;
    struct rlimit rl;
    int tries[3] = {99, 0, 1};
    if (getrlimit(RLIMIT_RTPRIO, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
        tries[1] = rl.rlim_cur > 99 ? 99 : (int)rl.rlim_cur;
    for (int i = 0; i < 3; i++) {
        struct sched_param sp;
        memset(&sp, 0, sizeof sp);
        sp.sched_priority = tries[i];
        if (tries[i] >= 1 &&
            pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp) == 0) {
            a->max_ok = tries[i];
            break;
        }
    }
    return NULL;
}

/* Whether CapEff in /proc/self/status holds capability `bit`. */
static int rt_has_cap(int bit)
{
    FILE *f = fopen("/proc/self/status", "r");
    if (!f)
        return 0;
    char line[256];
    unsigned long long caps = 0;
    while (fgets(line, sizeof line, f)) {
        if (sscanf(line, "CapEff: %llx", &caps) == 1)
            break;
    }
    fclose(f);
    return (int)((caps >> bit) & 1u);
}

int nerve_rt_probe(struct nerve_rt_caps *caps)
{
    if (!caps)
        return NERVE_EINVAL;
    memset(caps, 0, sizeof *caps);
    struct rt_probe_arg a = {0};
    pthread_t th;
    if (pthread_create(&th, NULL, rt_probe_thread, &a) != 0)
        return NERVE_ENOMEM;
    pthread_join(th, NULL);
    caps->fifo_ok = a.max_ok > 0;
    caps->fifo_max_prio = a.max_ok;
    struct rlimit rl;
    caps->memlock_max = -1;
    /* CAP_IPC_LOCK is capability 14. */
    if (!rt_has_cap(14) && getrlimit(RLIMIT_MEMLOCK, &rl) == 0 &&
        rl.rlim_cur != RLIM_INFINITY)
        caps->memlock_max = (int64_t)rl.rlim_cur;
    FILE *f = fopen("/sys/kernel/realtime", "r");
    if (f) {
        caps->preempt_rt = fgetc(f) == '1';
        fclose(f);
    }
    return 0;
}

/* ---- timing statistics --------------------------------------------------- */

/* Running summary of one series; exact integer sums, so a million samples
 * of a second each still cannot overflow. */
struct rt_acc {
    uint64_t n;
    int64_t min, max, max_abs;
    rt_i128 sum;
    rt_u128 sumsq;
};

static void rt_acc_add(struct rt_acc *a, int64_t x)
{
    int64_t ax = x < 0 ? -x : x;
    if (a->n == 0 || x < a->min)
        a->min = x;
    if (a->n == 0 || x > a->max)
        a->max = x;
    if (ax > a->max_abs)
        a->max_abs = ax;
    a->sum += x;
    a->sumsq += (rt_u128)((rt_i128)x * x);
    a->n++;
}

static void rt_acc_finish(const struct rt_acc *a, struct nerve_rt_series *s)
{
    memset(s, 0, sizeof *s);
    s->n = a->n;
    if (a->n == 0)
        return;
    s->min_ns = a->min;
    s->max_ns = a->max;
    s->max_abs_ns = a->max_abs;
    s->mean_ns = (int64_t)(a->sum / (rt_i128)a->n);
    s->rms_ns = (int64_t)rt_isqrt(a->sumsq / a->n);
}

int nerve_rt_timing_compute(const int64_t *release_ns, const int64_t *wake_ns,
                            size_t n, struct nerve_rt_series *abs,
                            struct nerve_rt_series *rel)
{
    if (n > 0 && (!release_ns || !wake_ns))
        return NERVE_EINVAL;
    struct rt_acc aa, ar;
    memset(&aa, 0, sizeof aa);
    memset(&ar, 0, sizeof ar);
    for (size_t i = 0; i < n; i++) {
        rt_acc_add(&aa, wake_ns[i] - release_ns[i]);
        if (i > 0)
            rt_acc_add(&ar, (wake_ns[i] - wake_ns[i - 1]) -
                                (release_ns[i] - release_ns[i - 1]));
    }
    if (abs)
        rt_acc_finish(&aa, abs);
    if (rel)
        rt_acc_finish(&ar, rel);
    return 0;
}

/* ---- periodic tasks ---------------------------------------------------- */

/* What the loop accumulates and publishes (raw sums; nerve_task_stat()
 * turns them into series, so the loop never divides or takes roots). */
struct rt_raw {
    uint64_t cycles, overruns, skipped, timeouts, missed;
    struct rt_acc abs, rel, lat, exec;
    int64_t period_ns;
    int32_t policy, priority, sched_err;
    uint32_t running;
};

#define RT_PUB_WORDS (sizeof(struct rt_raw) / sizeof(uint64_t))
_Static_assert(sizeof(struct rt_raw) % sizeof(uint64_t) == 0,
               "rt_raw is published as whole 64-bit words");

struct nerve_task {
    struct nerve_task_opts o; /* [const] */
    nerve_task_fn fn;         /* [const] */
    void *arg;                /* [const] */
    int priority;             /* [const] resolved FIFO/RR priority */
    void *msg_buf;            /* [local] channel-driven: the message */
    struct rt_raw acc;        /* [local] loop thread only */
    nerve__a64 pub_seq;       /* [W:writer][R:acq] SYNC(task-stats) */
    nerve__a64 pub[RT_PUB_WORDS]; /* [W:writer] words of acc */
    nerve__a32 stop;          /* SYNC(task-stop) */
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
    rt_acc_finish(&r.abs, &st->abs_err);
    rt_acc_finish(&r.rel, &st->rel_err);
    rt_acc_finish(&r.lat, &st->latency);
    rt_acc_finish(&r.exec, &st->exec);
    st->period_ns = r.period_ns;
    st->policy = r.policy;
    st->priority = r.priority;
    st->sched_err = r.sched_err;
    st->running = r.running;
    return 0;
}

#define RT_KNOWN_FLAGS                                                         \
    (NERVE_RT_BEST_EFFORT | NERVE_TASK_CATCH_UP | NERVE_TASK_MLOCK)

int nerve_task_open(const struct nerve_task_opts *opts, nerve_task_fn fn,
                      void *arg, nerve_task **out)
{
    if (!opts || !fn || !out)
        return NERVE_EINVAL;
    struct nerve_task_opts o = NERVE_TASK_OPTS_INIT;
    if (rt_opts_read(&o, sizeof o, opts, opts->size) != 0)
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

/* Apply the task's memory, scheduling and affinity settings to the calling
 * thread. Returns 0 or the error that strict mode must report. */
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
    rt_prefault_stack((size_t)t->o.stack_prefault);
    return 0;
}

static int rt_stopping(nerve_task *t)
{
    /* SYNC(task-stop) acquire: pairs with the release store in
     * nerve_task_stop(); nothing else is published by it. */
    return nerve__load32_acq(&t->stop) != 0;
}

/* One cycle's bookkeeping, shared by both loop kinds. */
static void rt_account(nerve_task *t, int64_t release, int64_t start,
                       int64_t end)
{
    struct rt_raw *a = &t->acc;
    a->cycles++;
    rt_acc_add(&a->lat, start - release);
    rt_acc_add(&a->exec, end - start);
}

static int rt_loop_clock(nerve_task *t)
{
    const int64_t period = t->o.period_ns;
    int64_t release = (t->o.start_ns ? t->o.start_ns : rt_now()) +
                      t->o.offset_ns;
    int64_t prev_release = 0, prev_wake = 0;
    uint64_t skipped_now = 0;
    struct nerve_task_tick tick;
    memset(&tick, 0, sizeof tick);
    for (;;) {
        if (rt_stopping(t))
            return 0;
        struct timespec ts = {(time_t)(release / RT_NS_PER_S),
                              (long)(release % RT_NS_PER_S)};
        int e;
        /* Absolute sleep: a late wake-up never shifts later releases. A
         * signal (EINTR) re-checks the stop flag and sleeps again. */
        while ((e = clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts,
                                    NULL)) == EINTR) {
            if (rt_stopping(t))
                return 0;
        }
        if (rt_stopping(t))
            return 0;
        int64_t wake = rt_now();
        tick.release_ns = release;
        tick.wake_ns = wake;
        tick.skipped = skipped_now;
        int64_t start = rt_now();
        int rc = t->fn(t->arg, &tick);
        int64_t end = rt_now();

        struct rt_raw *a = &t->acc;
        rt_acc_add(&a->abs, wake - release);
        if (tick.cycle > 0)
            rt_acc_add(&a->rel, (wake - prev_wake) - (release - prev_release));
        rt_account(t, release, start, end);
        prev_release = release;
        prev_wake = wake;
        tick.cycle++;

        int64_t next = release + period;
        skipped_now = 0;
        if (end > next) {
            a->overruns++;
            /* Periods are skipped only if the loop goes on. */
            if (rc == 0 && !(t->o.flags & NERVE_TASK_CATCH_UP)) {
                /* The first release still in the future. */
                int64_t k = (end - release) / period + 1;
                skipped_now = (uint64_t)(k - 1);
                a->skipped += skipped_now;
                next = release + k * period;
            }
        }
        release = next;
        rt_publish(t);
        if (rc != 0)
            return rc > 0 ? 0 : rc;
    }
}

static int rt_loop_chan(nerve_task *t)
{
    const int64_t dl = t->o.deadline_ns;
    int64_t deadline = rt_now() + t->o.offset_ns + dl;
    int64_t prev_wake = 0;
    int have_prev = 0;
    struct nerve_task_tick tick;
    memset(&tick, 0, sizeof tick);
    for (;;) {
        if (rt_stopping(t))
            return 0;
        struct nerve_get_info info;
        memset(&info, 0, sizeof info);
        uint32_t fl = t->o.chan_which | NERVE_F_WAIT;
        int64_t to = NERVE_FOREVER;
        if (dl > 0) {
            fl |= NERVE_F_ABSTIME;
            to = deadline;
        }
        int rc = nerve_chan_get(t->o.chan, t->msg_buf, (size_t)t->o.msg_max,
                                0, to, &info, fl);
        int64_t wake = rt_now();
        if (rc == NERVE_ECANCELED)
            return rt_stopping(t) ? 0 : rc;
        if (rc != 0 && rc != NERVE_ETIMEDOUT && rc != NERVE_ELAPPED)
            return rc;
        struct rt_raw *a = &t->acc;
        int64_t release = wake;
        tick.msg_status = rc;
        tick.msg = NULL;
        memset(&tick.msg_info, 0, sizeof tick.msg_info);
        if (rc == 0) {
            release = info.time_ns;
            tick.msg = t->msg_buf;
            tick.msg_info = info;
            a->missed += info.missed;
        } else if (rc == NERVE_ETIMEDOUT) {
            release = deadline;
            a->timeouts++;
        }
        tick.release_ns = release;
        tick.wake_ns = wake;
        int64_t start = rt_now();
        int brc = t->fn(t->arg, &tick);
        int64_t end = rt_now();
        if (rc == 0) {
            rt_acc_add(&a->lat, start - release);
            if (t->o.period_ns > 0 && have_prev)
                rt_acc_add(&a->rel, (wake - prev_wake) - t->o.period_ns);
            prev_wake = wake;
            have_prev = 1;
        }
        a->cycles++;
        rt_acc_add(&a->exec, end - start);
        tick.cycle++;
        if (dl > 0) {
            deadline = wake + dl;
            if (end > deadline)
                a->overruns++;
        }
        rt_publish(t);
        if (brc != 0)
            return brc > 0 ? 0 : brc;
    }
}

static int rt_loop(nerve_task *t)
{
    t->acc.running = 1;
    rt_publish(t);
    int rc = t->o.chan ? rt_loop_chan(t) : rt_loop_clock(t);
    if (t->o.chan)
        nerve_chan_cancel_clear(t->o.chan);
    t->acc.running = 0;
    rt_publish(t);
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

int nerve_task_start(nerve_task *t)
{
    if (!t)
        return NERVE_EBADF;
    if (t->started)
        return NERVE_EBUSY;
    if (pthread_create(&t->thread, NULL, rt_thread, t) != 0)
        return NERVE_ENOMEM;
    t->started = 1;
    pthread_mutex_lock(&t->mu);
    while (!t->setup_done)
        pthread_cond_wait(&t->cv, &t->mu);
    int rc = t->setup_rc;
    pthread_mutex_unlock(&t->mu);
    if (rc != 0) {
        pthread_join(t->thread, NULL);
        t->joined = 1;
    }
    return rc;
}

int nerve_task_run(nerve_task *t)
{
    if (!t)
        return NERVE_EBADF;
    if (t->started)
        return NERVE_EBUSY;
    int rc = rt_task_setup(t);
    if (rc != 0)
        return rc;
    return rt_loop(t);
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

/* ---- printing ------------------------------------------------------------ */

static int rt_fmt_series(char *buf, size_t len, const char *what,
                         const struct nerve_rt_series *s)
{
    if (s->n == 0)
        return snprintf(buf, len, "  %-9s (no samples)\n", what);
    return snprintf(buf, len,
                    "  %-9s us: min %9.1f  mean %9.1f  max %9.1f  "
                    "|max| %9.1f  rms %9.1f  (n %llu)\n",
                    what, s->min_ns / 1e3, s->mean_ns / 1e3, s->max_ns / 1e3,
                    s->max_abs_ns / 1e3, s->rms_ns / 1e3,
                    (unsigned long long)s->n);
}

int nerve_task_stats_format(const struct nerve_task_stats *st,
                            const char *name, char *buf, size_t len)
{
    if (!st)
        return NERVE_EINVAL;
    char dummy[1];
    if (!buf || len == 0) {
        buf = dummy;
        len = sizeof dummy;
    }
    size_t used = 0;
    int total = 0;
#define RT_EMIT(expr)                                                          \
    do {                                                                       \
        int n_ = (expr);                                                       \
        if (n_ > 0) {                                                          \
            total += n_;                                                       \
            used = (size_t)total < len ? (size_t)total : len - 1;              \
        }                                                                      \
    } while (0)
    RT_EMIT(snprintf(buf + used, len - used,
                     "%s: period %.1f us, %s prio %d%s, %llu cycles, "
                     "%llu overruns, %llu skipped, %llu timeouts, "
                     "%llu missed\n",
                     name ? name : "task", st->period_ns / 1e3,
                     rt_policy_name(st->policy), st->priority,
                     st->sched_err ? " (real-time refused: fell back)" : "",
                     (unsigned long long)st->cycles,
                     (unsigned long long)st->overruns,
                     (unsigned long long)st->skipped,
                     (unsigned long long)st->timeouts,
                     (unsigned long long)st->missed));
    RT_EMIT(rt_fmt_series(buf + used, len - used, "abs err", &st->abs_err));
    RT_EMIT(rt_fmt_series(buf + used, len - used, "rel err", &st->rel_err));
    RT_EMIT(rt_fmt_series(buf + used, len - used, "latency", &st->latency));
    RT_EMIT(rt_fmt_series(buf + used, len - used, "exec", &st->exec));
#undef RT_EMIT
    return total;
}
