/* The writer lock: a robust, process-shared, priority-inheritance pthread
 * mutex living in the channel file.
 *
 * Robust: when its owner dies, the kernel marks it and the next locker gets
 * EOWNERDEAD instead of waiting forever; chan.c then validates the ring
 * state and marks the mutex consistent (CRASH RECOVERY in chan.c).
 * Priority inheritance: a low-priority writer holding the lock runs at the
 * priority of the highest waiter, so a 1 kHz loop is not stalled by a
 * logger-priority writer being preempted (the classic inversion).
 * Uncontended lock and unlock are user-space compare-and-swaps. */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <time.h>

#include "../../platform.h"
#include "nerve/errors.h"

int nerve__mutex_init(pthread_mutex_t *m)
{
    pthread_mutexattr_t a;
    int r = pthread_mutexattr_init(&a);
    if (r == 0)
        r = pthread_mutexattr_setpshared(&a, PTHREAD_PROCESS_SHARED);
    if (r == 0)
        r = pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST);
    if (r == 0)
        r = pthread_mutexattr_setprotocol(&a, PTHREAD_PRIO_INHERIT);
    if (r == 0)
        r = pthread_mutex_init(m, &a);
    pthread_mutexattr_destroy(&a);
    return r == 0 ? 0 : -r;
}

static int64_t mono_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int nerve__mutex_lock(pthread_mutex_t *m, int64_t timeout_ns, int abstime)
{
    int r;
    if (timeout_ns > 0 && !abstime && timeout_ns > INT64_MAX - mono_now())
        timeout_ns = -1; /* beyond the clock's range: wait without bound */
    if (timeout_ns < 0) {
        r = pthread_mutex_lock(m);
    } else if (timeout_ns == 0 && !abstime) {
        r = pthread_mutex_trylock(m);
        if (r == EBUSY)
            r = ETIMEDOUT;
    } else {
        int64_t deadline = abstime ? timeout_ns : mono_now() + timeout_ns;
        struct timespec ts = {(time_t)(deadline / 1000000000),
                              (long)(deadline % 1000000000)};
#if defined(NERVE_TSAN)
        /* GCC 12's ThreadSanitizer does not intercept
         * pthread_mutex_clocklock, so a lock taken through it would later
         * look like an unlock of a free mutex; its builds take the
         * realtime-clock path below, which it does intercept. */
        r = EINVAL;
#else
        r = pthread_mutex_clocklock(m, CLOCK_MONOTONIC, &ts);
#endif
        if (r == EINVAL) {
            /* Kernels before 5.14 cannot time a PI lock on the monotonic
             * clock (no FUTEX_LOCK_PI2): convert to the realtime clock. */
            struct timespec rt;
            clock_gettime(CLOCK_REALTIME, &rt);
            int64_t left = deadline - mono_now();
            int64_t rnow = (int64_t)rt.tv_sec * 1000000000 + rt.tv_nsec;
            if (left < 0)
                left = 0;
            int64_t rdl = left > INT64_MAX - rnow ? INT64_MAX : rnow + left;
            ts.tv_sec = (time_t)(rdl / 1000000000);
            ts.tv_nsec = (long)(rdl % 1000000000);
            r = pthread_mutex_timedlock(m, &ts);
        }
    }
    switch (r) {
    case 0:
        return 0;
    case EOWNERDEAD:
        return 1;
    case ETIMEDOUT:
        return NERVE_ETIMEDOUT;
    case EDEADLK:
        return NERVE_EBUSY;
    default: /* ENOTRECOVERABLE, EINVAL: the mutex bytes are unusable */
        return NERVE_ECORRUPT;
    }
}

void nerve__mutex_consistent(pthread_mutex_t *m)
{
    (void)pthread_mutex_consistent(m);
}

void nerve__mutex_unlock(pthread_mutex_t *m)
{
    (void)pthread_mutex_unlock(m);
}
