/* The clock and the latency statistics of `nerve bench`: a log-linear
 * histogram that every sample goes into (fixed memory, so back-to-back
 * runs of any length are counted in full) and nearest-rank percentiles,
 * exact from the stored samples when all of them fit, else from the
 * histogram. */
#include <math.h>
#include <stdlib.h>
#include <time.h>

#include "stats.h"

int64_t bench_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

unsigned hist_index(uint32_t v)
{
    if (v < 2 * HIST_SUB) {
        return v;
    }
    unsigned e = 31u - (unsigned)__builtin_clz(v); /* >= 8 */
    unsigned m = v >> (e - 7);                     /* 128..255 */
    return 2 * HIST_SUB + (e - 8) * HIST_SUB + (m - HIST_SUB);
}

uint64_t hist_low(unsigned i)
{
    if (i < 2 * HIST_SUB) {
        return i;
    }
    unsigned k = i - 2 * HIST_SUB;
    unsigned e = k / HIST_SUB + 8;
    uint64_t m = k % HIST_SUB + HIST_SUB;
    return m << (e - 7);
}

uint64_t hist_high(unsigned i)
{
    if (i < 2 * HIST_SUB) {
        return i;
    }
    unsigned k = i - 2 * HIST_SUB;
    unsigned e = k / HIST_SUB + 8;
    uint64_t m = k % HIST_SUB + HIST_SUB;
    return ((m + 1) << (e - 7)) - 1;
}

static uint64_t rank_of(uint64_t n, double p)
{
    uint64_t rank = (uint64_t)ceil(p / 100.0 * (double)n);
    if (rank < 1) {
        rank = 1;
    }
    return rank > n ? n : rank;
}

uint64_t pct_sorted(const uint32_t *s, uint64_t n, double p)
{
    return n ? s[rank_of(n, p) - 1] : 0;
}

uint64_t pct_hist(const uint64_t *hist, uint64_t n, double p)
{
    if (n == 0) {
        return 0;
    }
    uint64_t rank = rank_of(n, p), seen = 0;
    for (unsigned i = 0; i < HIST_BUCKETS; i++) {
        seen += hist[i];
        if (seen >= rank) {
            return hist_high(i);
        }
    }
    return hist_high(HIST_BUCKETS - 1);
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

void sort_u32(uint32_t *v, uint64_t n)
{
    qsort(v, n, sizeof *v, cmp_u32);
}
