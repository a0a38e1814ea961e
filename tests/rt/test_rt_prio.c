/* Rate-monotonic priority from the period: nerve_rt_prio_from_period()
 * against seed 003 eq. 1 computed here with libm, at the bounds, in between,
 * outside the bounds, with custom bounds, and on invalid input. */
#include <math.h>

#include <nerve/rt.h>

#include "nerve_test.h"

/* Eq. 1 as the paper prints it, with log10(T_max) in the middle term. */
static double eq1(double t, double pmin, double pmax, double tmin, double tmax)
{
    double k = (pmax - pmin) / (log10(tmin) - log10(tmax));
    return pmin - k * log10(tmax) + k * log10(t);
}

/* The library rounds half up; allow the reference's last bits either way. */
static void check_against_eq1(int64_t period_ns,
                              const struct nerve_rt_prio_map *m, double pmin,
                              double pmax, double tmin_ns, double tmax_ns)
{
    double t = (double)period_ns;
    if (t < tmin_ns)
        t = tmin_ns;
    if (t > tmax_ns)
        t = tmax_ns;
    double want = eq1(t * 1e-9, pmin, pmax, tmin_ns * 1e-9, tmax_ns * 1e-9);
    int got = nerve_rt_prio_from_period(period_ns, m);
    NT_CMP(got, >=, 0);
    if (fabs(got - want) > 0.5 + 1e-6)
        NT_FAIL("period %lld ns: got %d, eq. 1 gives %.6f",
                (long long)period_ns, got, want);
}

int main(void)
{
    /* The paper's defaults: 100 us -> 75, 1 s -> 0. */
    NT_EQ(nerve_rt_prio_from_period(100000, NULL), 75);
    NT_EQ(nerve_rt_prio_from_period(1000000000, NULL), 0);
    /* Decades in between: 75 * (1 - k/4) for k decades above 100 us. */
    NT_EQ(nerve_rt_prio_from_period(1000000, NULL), 56);   /* 56.25 */
    NT_EQ(nerve_rt_prio_from_period(10000000, NULL), 38);  /* 37.5, half up */
    NT_EQ(nerve_rt_prio_from_period(100000000, NULL), 19); /* 18.75 */
    /* Clamped outside the bounds. */
    NT_EQ(nerve_rt_prio_from_period(1, NULL), 75);
    NT_EQ(nerve_rt_prio_from_period(99999, NULL), 75);
    NT_EQ(nerve_rt_prio_from_period(3600LL * 1000000000LL, NULL), 0);

    /* Every period on a log grid agrees with eq. 1, and a shorter period
     * never gets a lower priority (rate-monotonic order). */
    int prev = 100;
    for (double t = 50e3; t <= 2e9; t *= 1.037) {
        int64_t ns = (int64_t)t;
        check_against_eq1(ns, NULL, 0, 75, 1e5, 1e9);
        int p = nerve_rt_prio_from_period(ns, NULL);
        NT_CMP(p, <=, prev);
        prev = p;
    }

    /* Custom bounds: 50 us -> 90, 100 ms -> 10. */
    struct nerve_rt_prio_map m = NERVE_RT_PRIO_MAP_INIT;
    m.prio_min = 10;
    m.prio_max = 90;
    m.period_min_ns = 50000;
    m.period_max_ns = 100000000;
    NT_EQ(nerve_rt_prio_from_period(50000, &m), 90);
    NT_EQ(nerve_rt_prio_from_period(100000000, &m), 10);
    NT_EQ(nerve_rt_prio_from_period(1000000000, &m), 10);
    for (double t = 10e3; t <= 1e9; t *= 1.11)
        check_against_eq1((int64_t)t, &m, 10, 90, 5e4, 1e8);

    /* Zero fields mean the defaults. */
    struct nerve_rt_prio_map z;
    memset(&z, 0, sizeof z);
    z.size = sizeof z;
    NT_EQ(nerve_rt_prio_from_period(1000000, &z), 56);

    /* Invalid input. */
    NT_RC(nerve_rt_prio_from_period(0, NULL), NERVE_EINVAL);
    NT_RC(nerve_rt_prio_from_period(-5, NULL), NERVE_EINVAL);
    struct nerve_rt_prio_map bad = NERVE_RT_PRIO_MAP_INIT;
    bad.period_min_ns = bad.period_max_ns;
    NT_RC(nerve_rt_prio_from_period(1000000, &bad), NERVE_EINVAL);
    bad = (struct nerve_rt_prio_map)NERVE_RT_PRIO_MAP_INIT;
    bad.prio_min = 80; /* above prio_max 75 */
    NT_RC(nerve_rt_prio_from_period(1000000, &bad), NERVE_EINVAL);
    bad = (struct nerve_rt_prio_map)NERVE_RT_PRIO_MAP_INIT;
    bad.prio_max = 100;
    NT_RC(nerve_rt_prio_from_period(1000000, &bad), NERVE_EINVAL);
    bad = (struct nerve_rt_prio_map)NERVE_RT_PRIO_MAP_INIT;
    bad.reserved0 = 1;
    NT_RC(nerve_rt_prio_from_period(1000000, &bad), NERVE_EINVAL);
    /* A newer caller's larger struct with a non-zero unknown tail. */
    struct {
        struct nerve_rt_prio_map m;
        uint64_t extra;
    } big;
    memset(&big, 0, sizeof big);
    big.m = (struct nerve_rt_prio_map)NERVE_RT_PRIO_MAP_INIT;
    big.m.size = sizeof big;
    NT_EQ(nerve_rt_prio_from_period(1000000, &big.m), 56);
    big.extra = 1;
    NT_RC(nerve_rt_prio_from_period(1000000, &big.m), NERVE_EINVAL);

    printf("ok: priority mapping follows eq. 1\n");
    return 0;
}
