/* Deadline arithmetic: the one place where times in nanoseconds are added,
 * subtracted or made from a struct timespec. Every conversion saturates at
 * INT64_MIN / INT64_MAX instead of overflowing: a caller's time far in the
 * past stays in the past (a wait that returns a timeout at once) and one far
 * in the future stays in the future (a wait without a bound), whatever its
 * magnitude. Signed overflow is undefined in C, and before this helper
 * ach_get() with tv_sec = -9223372037 computed tv_sec * 1e9 as a large
 * positive time and waited forever (issue 28, item 5).
 *
 * Private to the library and to libach (src/ach), which include it from
 * src/; header-only so that libach needs no internal symbol. */
#ifndef NERVE_TIMECONV_H
#define NERVE_TIMECONV_H

#include <stdint.h>
#include <time.h>

#include "nerve/chan.h" /* NERVE_FOREVER */

#define NERVE__NS_PER_S 1000000000LL

/* CLOCK_MONOTONIC now, in nanoseconds (nerve_clock_now_ns()'s time base;
 * inline, for the lock's and the waits' deadline checks). */
static inline int64_t nerve__mono_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * NERVE__NS_PER_S + ts.tv_nsec;
}

/* The absolute CLOCK_MONOTONIC deadline of a caller's timeout, by the one
 * rule of every wait and lock in the library (include/nerve/chan.h): -1
 * for none (NERVE_FOREVER, or a relative timeout that reaches
 * past the clock's range), 0 for one that has already passed (a relative
 * timeout <= 0, an absolute time <= 0), so that a late caller gets one try
 * and a timeout, else the absolute time (`abstime`) or now + timeout_ns.
 * Reads the clock only for a positive relative timeout. */
static inline int64_t nerve__deadline_ns(int64_t timeout_ns, int abstime)
{
    if (timeout_ns == NERVE_FOREVER)
        return -1;
    if (timeout_ns <= 0)
        return 0;
    if (abstime)
        return timeout_ns;
    int64_t now = nerve__mono_now();
    return timeout_ns > INT64_MAX - now ? -1 : now + timeout_ns;
}

/* a + b, clamped to [INT64_MIN, INT64_MAX]. */
static inline int64_t nerve__ns_add_sat(int64_t a, int64_t b)
{
    int64_t r;
    if (__builtin_add_overflow(a, b, &r))
        return b > 0 ? INT64_MAX : INT64_MIN;
    return r;
}

/* a - b, clamped to [INT64_MIN, INT64_MAX]. */
static inline int64_t nerve__ns_sub_sat(int64_t a, int64_t b)
{
    int64_t r;
    if (__builtin_sub_overflow(a, b, &r))
        return b < 0 ? INT64_MAX : INT64_MIN;
    return r;
}

/* t as nanoseconds into *ns, clamped to [INT64_MIN, INT64_MAX]. Returns 0,
 * or -1 (and leaves *ns alone) if t->tv_nsec is outside [0, 1e9): POSIX
 * calls such a timespec invalid (EINVAL), and it is refused rather than
 * normalised. */
static inline int nerve__ns_from_timespec(const struct timespec *t, int64_t *ns)
{
    if (t->tv_nsec < 0 || t->tv_nsec >= NERVE__NS_PER_S)
        return -1;
    int64_t s;
    if (__builtin_mul_overflow((int64_t)t->tv_sec, (int64_t)NERVE__NS_PER_S,
                               &s)) {
        *ns = t->tv_sec > 0 ? INT64_MAX : INT64_MIN;
        return 0;
    }
    *ns = nerve__ns_add_sat(s, (int64_t)t->tv_nsec);
    return 0;
}

#endif
