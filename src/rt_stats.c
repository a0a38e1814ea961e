/* Statistics (include/nerve/rt.h): running summaries of signed nanosecond
 * series, the timing errors of a periodic loop (Tobar et al. eqs. 2-3) and
 * the text form of a task's statistics. Pure functions; the tasks of
 * rt_task.c accumulate with nerve__rt_acc_add() and publish the sums. */
#include <stdio.h>
#include <string.h>

#include "nerve/errors.h"
#include "nerve/rt.h"

#include "rt_internal.h"

/* Integer square root, rounded down (digit-by-digit method). */
static uint64_t isqrt(nerve__u128 v)
{
    nerve__u128 res = 0, bit = (nerve__u128)1 << 126;
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

/* ---- timing statistics --------------------------------------------------- */

void nerve__rt_acc_finish(const struct nerve__rt_acc *a,
                          struct nerve_rt_series *s)
{
    memset(s, 0, sizeof *s);
    s->n = a->n;
    if (a->n == 0)
        return;
    s->min_ns = a->min;
    s->max_ns = a->max;
    s->max_abs_ns = a->max_abs;
    s->mean_ns = (int64_t)(a->sum / (nerve__i128)a->n);
    s->rms_ns = (int64_t)isqrt(a->sumsq / a->n);
}

int nerve_rt_timing_compute(const int64_t *release_ns, const int64_t *wake_ns,
                            size_t n, struct nerve_rt_series *abs,
                            struct nerve_rt_series *rel)
{
    if (n > 0 && (!release_ns || !wake_ns))
        return NERVE_EINVAL;
    struct nerve__rt_acc aa, ar;
    memset(&aa, 0, sizeof aa);
    memset(&ar, 0, sizeof ar);
    for (size_t i = 0; i < n; i++) {
        nerve__rt_acc_add(&aa, wake_ns[i] - release_ns[i]);
        if (i > 0)
            nerve__rt_acc_add(&ar, (wake_ns[i] - wake_ns[i - 1]) -
                                       (release_ns[i] - release_ns[i - 1]));
    }
    if (abs)
        nerve__rt_acc_finish(&aa, abs);
    if (rel)
        nerve__rt_acc_finish(&ar, rel);
    return 0;
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

int nerve_task_stats_format(const struct nerve_task_stats *st, const char *name,
                            char *buf, size_t len)
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
    RT_EMIT(snprintf(
        buf + used, len - used,
        "%s: period %.1f us, %s prio %d%s, %llu cycles, "
        "%llu overruns, %llu skipped, %llu timeouts, "
        "%llu missed\n",
        name ? name : "task", st->period_ns / 1e3,
        nerve__rt_policy_name(st->policy), st->priority,
        st->sched_err ? " (real-time refused: fell back)" : "",
        (unsigned long long)st->cycles, (unsigned long long)st->overruns,
        (unsigned long long)st->skipped, (unsigned long long)st->timeouts,
        (unsigned long long)st->missed));
    RT_EMIT(rt_fmt_series(buf + used, len - used, "abs err", &st->abs_err));
    RT_EMIT(rt_fmt_series(buf + used, len - used, "rel err", &st->rel_err));
    RT_EMIT(rt_fmt_series(buf + used, len - used, "latency", &st->latency));
    RT_EMIT(rt_fmt_series(buf + used, len - used, "exec", &st->exec));
#undef RT_EMIT
    return total;
}
