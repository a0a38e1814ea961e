/* Futex wait and wake on Linux.
 *
 * A reader waits on the low 32 bits of the channel's head sequence number
 * (in a mapping that may be read-only: FUTEX_WAIT only reads the word) and,
 * with futex_waitv (Linux 5.16), on its handle's private cancel word at the
 * same time. Wake-ups are FUTEX_WAKE on the word, which the kernel delivers
 * in priority order for real-time waiters; a put wakes a bounded batch
 * (chan.c, NERVE__WAKE_BATCH) and woken readers pass the wake on. */
#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "../../platform.h"
#include "nerve/errors.h"

#ifndef SYS_futex_waitv
#define SYS_futex_waitv 449
#endif
#ifndef FUTEX_32
#define FUTEX_32 2
#endif

struct nerve__kernel_waitv {
    uint64_t val;
    uint64_t uaddr;
    uint32_t flags;
    uint32_t reserved;
};

static struct timespec to_ts(int64_t ns)
{
    struct timespec ts = {(time_t)(ns / 1000000000), (long)(ns % 1000000000)};
    return ts;
}

static int map_errno(int e)
{
    switch (e) {
    case ETIMEDOUT: return NERVE_ETIMEDOUT;
    case EINTR: return NERVE_EINTR;
    case EAGAIN:
        /* A word already differed from its expected value: a wake-up. */
        return 0;
    default:
        /* ENOSYS (kernel before 5.16), or EPERM/EINVAL/EFAULT (a seccomp
         * filter, an unusual mapping): the caller must not treat it as a
         * wake-up, or its wait loop would spin. */
        return NERVE_ENOSYS;
    }
}

static int linux_waitv(const struct nerve__wait_word *w, unsigned n,
                       int64_t deadline_ns)
{
    struct nerve__kernel_waitv v[2 * 64 + 2];
    if (n > sizeof v / sizeof v[0])
        return NERVE_EINVAL;
    for (unsigned i = 0; i < n; i++) {
        v[i].val = w[i].expect;
        v[i].uaddr = (uint64_t)(uintptr_t)w[i].word;
        v[i].flags = FUTEX_32 | (w[i].shared ? 0 : FUTEX_PRIVATE_FLAG);
        v[i].reserved = 0;
    }
    struct timespec ts, *tsp = NULL;
    if (deadline_ns >= 0) {
        ts = to_ts(deadline_ns);
        tsp = &ts;
    }
    long r = syscall(SYS_futex_waitv, v, n, 0, tsp, CLOCK_MONOTONIC);
    return r >= 0 ? 0 : map_errno(errno);
}

static int linux_wait1(const struct nerve__wait_word *w, int64_t deadline_ns)
{
    struct timespec ts, *tsp = NULL;
    if (deadline_ns >= 0) {
        ts = to_ts(deadline_ns);
        tsp = &ts;
    }
    int op = FUTEX_WAIT_BITSET | (w->shared ? 0 : FUTEX_PRIVATE_FLAG);
    long r = syscall(SYS_futex, w->word, op, w->expect, tsp, NULL,
                     FUTEX_BITSET_MATCH_ANY);
    return r >= 0 ? 0 : map_errno(errno);
}

/* Async-signal-safe: one system call, no state. */
static void linux_wake_all(const uint32_t *word, int shared)
{
    int op = FUTEX_WAKE | (shared ? 0 : FUTEX_PRIVATE_FLAG);
    (void)syscall(SYS_futex, word, op, INT_MAX, NULL, NULL, 0);
}

/* Async-signal-safe: one system call. The kernel walks the word's hash
 * bucket only until n sleepers are woken, so the cost is bounded by n. */
static int linux_wake(const uint32_t *word, int shared, int n)
{
    int op = FUTEX_WAKE | (shared ? 0 : FUTEX_PRIVATE_FLAG);
    long r = syscall(SYS_futex, word, op, n, NULL, NULL, 0);
    return r > 0 ? (int)r : 0;
}

const struct nerve__futex_ops nerve__futex_linux = {
    linux_waitv,
    linux_wait1,
    linux_wake_all,
    linux_wake,
};

const struct nerve__futex_ops *nerve__futex = &nerve__futex_linux;
