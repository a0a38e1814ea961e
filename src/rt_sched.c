/* Scheduling (include/nerve/rt.h): the rate-monotonic priority of a period,
 * memory locking, a thread's policy, priority and affinity, and the probe of
 * what this process may do. Nothing here keeps state; every call acts on
 * the calling thread or the process. See src/rt_internal.h for the parts. */
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>

#include "nerve/errors.h"
#include "nerve/rt.h"

#include "opts.h"
#include "rt_internal.h"

#define RT_PAGE 4096u

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

const char *nerve__rt_policy_name(int policy)
{
    switch (policy) {
    case NERVE_RT_OTHER: return "SCHED_OTHER";
    case NERVE_RT_FIFO: return "SCHED_FIFO";
    case NERVE_RT_RR: return "SCHED_RR";
    default: return "SCHED_?";
    }
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

/* ---- priority mapping --------------------------------------------------- */

int nerve_rt_prio_from_period(int64_t period_ns,
                              const struct nerve_rt_prio_map *map)
{
    struct nerve_rt_prio_map m = NERVE_RT_PRIO_MAP_INIT;
    struct nerve_rt_prio_map dflt = NERVE_RT_PRIO_MAP_INIT;
    if (map) {
        if (nerve__opts_read(&m, sizeof m, map, map->size) != 0)
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

/* Not inlined, so the frame is popped again and the pages stay for the
 * loop that runs after it. */
__attribute__((noinline)) void nerve__rt_prefault_stack(size_t bytes)
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
    nerve__rt_prefault_stack(stack_bytes);
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
            rt_msg(applied, "%s priority %d", nerve__rt_policy_name(policy),
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
                   nerve__rt_policy_name(policy), priority);
        }
        return 0;
    }
    rt_msg(applied, "%s priority %d refused", nerve__rt_policy_name(policy),
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
