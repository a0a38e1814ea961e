/* Shared by the three parts of the real-time helpers (include/nerve/rt.h):
 *
 *   rt_sched.c  scheduling: rate-monotonic priorities, memory locking,
 *               policy, affinity, the capability probe
 *   rt_stats.c  statistics: running summaries of a series, eqs. 2-3 of
 *               Tobar et al., the text format of task statistics
 *   rt_task.c   periodic and channel-driven tasks: push (a thread or the
 *               caller runs the body) and pull (nerve_task_next) loops
 *
 * Times come from the channel code's clock, nerve_clock_now_ns(); options structs
 * are read by the library's one reader, nerve__opts_read() (src/opts.h).
 * No libm: libnerve links only libc and pthreads, so the logarithm of the
 * priority mapping and the square root of the RMS are computed on integers
 * (both checked against libm in tests/rt). */
#ifndef NERVE_RT_INTERNAL_H
#define NERVE_RT_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "nerve/rt.h"

__extension__ typedef __int128 nerve__i128;
__extension__ typedef unsigned __int128 nerve__u128;

#include "timeconv.h" /* NERVE__NS_PER_S */

/* Running summary of one series; exact integer sums, so a million samples
 * of a second each still cannot overflow. Plain 64-bit words only (tasks
 * publish it word by word, see rt_task.c). */
struct nerve__rt_acc {
    uint64_t n;
    int64_t min, max, max_abs;
    nerve__i128 sum;
    nerve__u128 sumsq;
};

/* Add one sample. Thread: the owner of *a.  RT: safe.  Signal: safe. */
static inline void nerve__rt_acc_add(struct nerve__rt_acc *a, int64_t x)
{
    int64_t ax = x < 0 ? -x : x;
    if (a->n == 0 || x < a->min)
        a->min = x;
    if (a->n == 0 || x > a->max)
        a->max = x;
    if (ax > a->max_abs)
        a->max_abs = ax;
    a->sum += x;
    a->sumsq += (nerve__u128)((nerve__i128)x * x);
    a->n++;
}

/* The summary of *a as a series (mean toward zero, RMS rounded down).
 * Thread: any.  RT: safe.  Signal: safe. */
void nerve__rt_acc_finish(const struct nerve__rt_acc *a,
                          struct nerve_rt_series *s);

/* "SCHED_OTHER", "SCHED_FIFO", "SCHED_RR" or "SCHED_?". */
const char *nerve__rt_policy_name(int policy);

/* Touch `bytes` of stack below the caller's frame so those pages are mapped
 * (and locked, under mlockall) before a loop needs them.
 * Thread: acts on the calling thread.  RT: not safe (page faults). */
void nerve__rt_prefault_stack(size_t bytes);

#endif
