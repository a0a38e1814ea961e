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

#define NERVE__NS_PER_S 1000000000LL

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
