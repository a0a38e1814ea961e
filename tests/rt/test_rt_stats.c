/* Timing statistics of seed 003 (eq. 2 absolute, eq. 3 relative error;
 * jitter = max |error|, RMS = sqrt(mean square)) computed by
 * nerve_rt_timing_compute() on synthetic timestamps, checked against
 * hand-computed values and a floating-point reference; and the printable
 * form of task statistics. */
#include <math.h>

#include <nerve/rt.h>

#include "nerve_test.h"

static void series_eq(const struct nerve_rt_series *s, uint64_t n, int64_t min,
                      int64_t max, int64_t max_abs, int64_t mean, int64_t rms)
{
    NT_EQ(s->n, n);
    NT_EQ(s->min_ns, min);
    NT_EQ(s->max_ns, max);
    NT_EQ(s->max_abs_ns, max_abs);
    NT_EQ(s->mean_ns, mean);
    NT_EQ(s->rms_ns, rms);
}

/* Period 1000 ns, wake-ups late by 10, 30, 5, 15, 40. */
static const int64_t rel5[5] = {0, 1000, 2000, 3000, 4000};
static const int64_t wk5[5] = {10, 1030, 2005, 3015, 4040};

/* A long pseudo-random run against a double-precision reference. */
static void test_long_run(void)
{
    struct nerve_rt_series a, r;
    enum { N = 20000 };
    static int64_t rel[N], wk[N];
    uint64_t x = 88172645463325252ull;
    double s_abs = 0, ss_abs = 0, ss_rel = 0;
    int64_t jit_abs = 0, jit_rel = 0;
    for (int i = 0; i < N; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        int64_t err = (int64_t)(x % 200000); /* 0 .. 200 us late */
        rel[i] = 5000000000LL + (int64_t)i * 1000000;
        wk[i] = rel[i] + err;
        s_abs += (double)err;
        ss_abs += (double)err * (double)err;
        if (err > jit_abs)
            jit_abs = err;
        if (i > 0) {
            int64_t d = (wk[i] - wk[i - 1]) - 1000000;
            ss_rel += (double)d * (double)d;
            if (llabs(d) > jit_rel)
                jit_rel = llabs(d);
        }
    }
    NT_OK(nerve_rt_timing_compute(rel, wk, N, &a, &r));
    NT_EQ(a.n, N);
    NT_EQ(a.max_abs_ns, jit_abs);
    NT_EQ(r.max_abs_ns, jit_rel);
    NT_CMP(llabs(a.mean_ns - (int64_t)(s_abs / N)), <=, 1);
    NT_CMP(llabs(a.rms_ns - (int64_t)sqrt(ss_abs / N)), <=, 1);
    NT_CMP(llabs(r.rms_ns - (int64_t)sqrt(ss_rel / (N - 1))), <=, 1);
}

/* The printable form names every series and the counters, and reports the
 * length it needs when the buffer is short. Prints it after "ok". */
static void test_format(void)
{
    struct nerve_task_stats st;
    memset(&st, 0, sizeof st);
    st.cycles = 5;
    st.overruns = 2;
    st.period_ns = 1000000;
    st.policy = NERVE_RT_FIFO;
    st.priority = 56;
    NT_OK(nerve_rt_timing_compute(rel5, wk5, 5, &st.abs_err, &st.rel_err));
    char buf[1024];
    int n = nerve_task_stats_format(&st, "imu", buf, sizeof buf);
    NT_CMP(n, >, 0);
    NT_CMP(n, <, (int)sizeof buf);
    NT_EQ(strlen(buf), n);
    NT_ASSERT(strstr(buf, "imu:") != NULL);
    NT_ASSERT(strstr(buf, "SCHED_FIFO prio 56") != NULL);
    NT_ASSERT(strstr(buf, "5 cycles") != NULL);
    NT_ASSERT(strstr(buf, "2 overruns") != NULL);
    NT_ASSERT(strstr(buf, "abs err") != NULL);
    NT_ASSERT(strstr(buf, "rel err") != NULL);
    NT_ASSERT(strstr(buf, "(n 5)") != NULL);
    NT_ASSERT(strstr(buf, "(n 4)") != NULL);
    char small[16];
    int n2 = nerve_task_stats_format(&st, "imu", small, sizeof small);
    NT_EQ(n2, n);
    NT_EQ(strlen(small), sizeof small - 1);
    NT_EQ(nerve_task_stats_format(&st, "imu", NULL, 0), n);

    printf("ok: timing statistics\n%s", buf);
}

int main(void)
{
    struct nerve_rt_series a, r;

    NT_OK(nerve_rt_timing_compute(rel5, wk5, 5, &a, &r));
    /* abs: mean 20, rms sqrt(2850/5 = 570) = 23.87 -> 23. */
    series_eq(&a, 5, 5, 40, 40, 20, 23);
    /* rel: 20, -25, 10, 25; mean 7.5 -> 7; rms sqrt(1750/4 = 437) -> 20. */
    series_eq(&r, 4, -25, 25, 25, 7, 20);

    /* A skipped release (2000): the relative error uses the release
     * spacing, so a wake-up exactly on a later release is not an error. */
    int64_t rel3[3] = {0, 1000, 3000};
    int64_t wk3[3] = {5, 1005, 3010};
    NT_OK(nerve_rt_timing_compute(rel3, wk3, 3, &a, &r));
    series_eq(&a, 3, 5, 10, 10, 6, 7); /* mean 20/3; rms sqrt(150/3=50) */
    series_eq(&r, 2, 0, 5, 5, 2, 3);   /* 0 and 5: mean 2.5, rms sqrt(12) */

    /* Negative errors (possible on synthetic data): magnitude for jitter,
     * mean rounded toward zero. */
    int64_t relz[2] = {100, 200};
    int64_t wkn[2] = {97, 196};
    NT_OK(nerve_rt_timing_compute(relz, wkn, 2, &a, &r));
    series_eq(&a, 2, -4, -3, 4, -3, 3);
    series_eq(&r, 1, -1, -1, 1, -1, 1);

    /* Errors of 2 s: the sum of squares (1.2e19) overflows 64 bits. */
    int64_t relb[3] = {0, 10000000000LL, 20000000000LL};
    int64_t wkb[3] = {2000000000LL, 12000000000LL, 22000000000LL};
    NT_OK(nerve_rt_timing_compute(relb, wkb, 3, &a, &r));
    series_eq(&a, 3, 2000000000LL, 2000000000LL, 2000000000LL, 2000000000LL,
              2000000000LL);
    series_eq(&r, 2, 0, 0, 0, 0, 0);

    /* Edge sizes and arguments. */
    NT_OK(nerve_rt_timing_compute(NULL, NULL, 0, &a, &r));
    series_eq(&a, 0, 0, 0, 0, 0, 0);
    series_eq(&r, 0, 0, 0, 0, 0, 0);
    NT_OK(nerve_rt_timing_compute(rel5, wk5, 1, &a, &r));
    series_eq(&a, 1, 10, 10, 10, 10, 10);
    NT_EQ(r.n, 0);
    NT_OK(nerve_rt_timing_compute(rel5, wk5, 5, NULL, &r));
    NT_RC(nerve_rt_timing_compute(NULL, wk5, 5, &a, &r), NERVE_EINVAL);
    NT_RC(nerve_rt_timing_compute(rel5, NULL, 5, &a, &r), NERVE_EINVAL);

    test_long_run();
    test_format(); /* last: prints "ok" */
    return 0;
}
