/* The clock and the statistics of `nerve bench` (stats.c): every
 * timestamp, the latency histogram and the percentiles, shared by the
 * latency plan, ping-pong and ach-bench. Not installed. */
#ifndef NERVE_BENCH_STATS_H
#define NERVE_BENCH_STATS_H

#include <stdint.h>

/* Clock of every timestamp: CLOCK_MONOTONIC ns. */
int64_t bench_now(void);

/* Latency histogram: exact below 256 ns, then 128 linear sub-buckets per
 * power of two (relative error below 0.8 %), up to 2^32 ns (latencies are
 * saturated at 4.29 s). */
#define HIST_SUB 128
#define HIST_BUCKETS (2 * HIST_SUB + 24 * HIST_SUB)

unsigned hist_index(uint32_t v);
uint64_t hist_low(unsigned i);
uint64_t hist_high(unsigned i);
/* Percentile p (0..100) by nearest rank of n sorted samples. */
uint64_t pct_sorted(const uint32_t *s, uint64_t n, double p);
uint64_t pct_hist(const uint64_t *hist, uint64_t n, double p);
void sort_u32(uint32_t *v, uint64_t n);

#endif
