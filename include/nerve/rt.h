/* Real-time helpers: memory locking, scheduling, rate-monotonic priorities
 * and periodic tasks with measured timing.
 *
 * A fixed-rate loop on Linux meets its deadlines when (1) its memory never
 * page-faults (lock it and touch the stack and heap it will use before the
 * loop starts), (2) it runs under SCHED_FIFO or SCHED_RR at a priority that
 * follows its rate (rate-monotonic: the shorter the period, the higher the
 * priority) and (3) it sleeps to absolute release times, so that lateness
 * never accumulates into drift. This header makes those three the easy path
 * and measures the result the way Tobar et al. ("Adding support
 * to the ALMA Common Software for real-time operations") does:
 *
 *   - absolute error  delta_abs[i] = wake[i] - release[i]             (eq. 2)
 *   - relative error  delta_rel[i] = (wake[i] - wake[i-1])
 *                                    - (release[i] - release[i-1])    (eq. 3)
 *
 * each summarised by its maximum magnitude (the "jitter") and its RMS.
 *
 * When real-time scheduling or memory locking is not permitted (no
 * CAP_SYS_NICE / CAP_IPC_LOCK and no matching RLIMIT_RTPRIO /
 * RLIMIT_MEMLOCK), every call either fails with NERVE_EPERM (the default)
 * or, given NERVE_RT_BEST_EFFORT, carries on under SCHED_OTHER / unlocked
 * memory and reports what it could not do in a struct nerve_rt_applied.
 * Nothing is ever silently downgraded.
 *
 * docs/realtime.md is the guide; tools/cyclic (`nerve cyclic`) measures
 * the loop against cyclictest. */
#ifndef NERVE_RT_H
#define NERVE_RT_H

#include <stddef.h>
#include <stdint.h>

#include "common.h"
#include "chan.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- scheduling policies and flags ------------------------------------- */

/* Scheduling policies. The values equal Linux's SCHED_OTHER, SCHED_FIFO and
 * SCHED_RR, so they can be passed where <sched.h> constants are expected. */
#define NERVE_RT_OTHER 0
#define NERVE_RT_FIFO 1
#define NERVE_RT_RR 2

/* When real-time scheduling or memory locking is refused, fall back
 * (SCHED_OTHER at nice 0, memory not locked), return 0 and report the
 * refusal in struct nerve_rt_applied instead of returning NERVE_EPERM. */
#define NERVE_RT_BEST_EFFORT 0x1u

/* What a set-up call actually applied. */
struct nerve_rt_applied {
    int32_t policy;       /* NERVE_RT_* in force after the call */
    int32_t priority;     /* its priority (0 under NERVE_RT_OTHER) */
    int32_t fallback_err; /* 0, or why the request was not applied (e.g.
                             NERVE_EPERM) and a fallback was taken */
    uint32_t mem_locked;  /* nerve_rt_lock_memory(): 1 if mlockall held */
    char msg[160];        /* one English sentence saying what happened */
    uint64_t reserved[4]; /* zero; for fields added later (docs/abi.md) */
};

/* ---- rate-monotonic priority from the period ------------------------ */

/* Bounds of the logarithmic period-to-priority mapping (Tobar et al. eq. 1).
 * Initialise with NERVE_RT_PRIO_MAP_INIT (the paper's values: 100 us maps
 * to 75, 1 s to 0); a zero field means its default. */
struct nerve_rt_prio_map {
    uint32_t size;         /* sizeof(struct nerve_rt_prio_map) */
    int32_t prio_min;      /* priority of periods >= period_max; default 0 */
    int32_t prio_max;      /* priority of periods <= period_min; default 75 */
    int32_t reserved0;     /* must be 0 */
    int64_t period_min_ns; /* default 100000 (100 us) */
    int64_t period_max_ns; /* default 1000000000 (1 s) */
};

#define NERVE_RT_PRIO_MAP_INIT                                                 \
    {                                                                          \
        sizeof(struct nerve_rt_prio_map), 0, 75, 0, 100000, 1000000000         \
    }

/* The rate-monotonic priority of a task with period `period_ns` under `map`
 * (NULL: the defaults), by Tobar et al. eq. 1:
 *
 *   P(T) = Pmin + (Pmax - Pmin) * (log10 Tmax - log10 T)
 *                               / (log10 Tmax - log10 Tmin)
 *
 * (the paper prints the middle term with "T_max" where log10(T_max) is
 * meant; only the latter gives P(Tmax) = Pmin). Periods outside
 * [period_min, period_max] are clamped to it; the result is rounded to the
 * nearest integer, halves up, so a shorter period never gets a lower
 * priority. Returns the priority (>= 0), or NERVE_EINVAL (period <= 0,
 * period_min >= period_max, prio_min > prio_max, a priority outside 0..99,
 * or a non-zero reserved field or unknown tail).
 * Thread: any.  Blocking: no.  RT: safe.  Signal: safe. */
NERVE_NODISCARD NERVE_API int
nerve_rt_prio_from_period(int64_t period_ns,
                          const struct nerve_rt_prio_map *map);

/* ---- process and thread set-up (setup phase) ------------------------- */

/* Lock the process's memory (mlockall of current and future pages), stop
 * malloc from returning memory to the kernel or serving requests with
 * mmap, and prefault `stack_bytes` of the calling thread's stack and
 * `heap_bytes` of heap (allocated, touched page by page, freed back to
 * malloc, which keeps it). Either size may be 0. Returns 0 and fills
 * *applied (may be NULL), or NERVE_EPERM / NERVE_ENOMEM when mlockall is
 * refused (with NERVE_RT_BEST_EFFORT: returns 0, applied->mem_locked = 0,
 * applied->fallback_err says why, and the prefault is still done),
 * NERVE_EINVAL (unknown flags).
 * Thread: call before starting other threads.  Blocking: page faults.
 * RT: not safe (setup phase).  Signal: not safe. */
NERVE_NODISCARD NERVE_API int
nerve_rt_lock_memory(size_t stack_bytes, size_t heap_bytes, uint32_t flags,
                     struct nerve_rt_applied *applied);

/* Set the calling thread's scheduling policy (NERVE_RT_*) and priority
 * (1..99 for FIFO and RR, 0 for OTHER). Returns 0 and fills *applied (may be
 * NULL), or NERVE_EINVAL (bad policy or priority), NERVE_EPERM (not
 * permitted; with NERVE_RT_BEST_EFFORT the thread is put under SCHED_OTHER
 * instead, 0 is returned and applied->fallback_err = NERVE_EPERM).
 * Thread: acts on the calling thread.  Blocking: no.  RT: not safe (system
 * call; setup phase).  Signal: not safe. */
NERVE_NODISCARD NERVE_API int
nerve_rt_sched_set(int policy, int priority, uint32_t flags,
                   struct nerve_rt_applied *applied);

/* The calling thread's policy (NERVE_RT_*, or the raw SCHED_* value for any
 * other) and priority. Returns 0.
 * Thread: acts on the calling thread.  Blocking: no.  RT: not safe (system
 * call).  Signal: safe. */
NERVE_NODISCARD NERVE_API int nerve_rt_sched_get(int *policy, int *priority);

/* Pin the calling thread to the CPUs whose bits are set in `cpus` (bit i =
 * CPU i; CPUs 0..63). Returns 0, or NERVE_EINVAL (empty mask or no allowed
 * CPU in it), NERVE_EPERM.
 * Thread: acts on the calling thread.  Blocking: no.  RT: not safe (system
 * call).  Signal: not safe. */
NERVE_NODISCARD NERVE_API int nerve_rt_affinity_set(uint64_t cpus);

/* What this process may do. */
struct nerve_rt_caps {
    int32_t fifo_ok;       /* 1 if a thread may run under SCHED_FIFO */
    int32_t fifo_max_prio; /* highest FIFO priority permitted (0 if none) */
    int64_t memlock_max;   /* RLIMIT_MEMLOCK in bytes, -1 if unlimited or
                               CAP_IPC_LOCK is held */
    int32_t preempt_rt;    /* 1 if the kernel is PREEMPT_RT */
    int32_t reserved0;
    uint64_t reserved[4]; /* zero; for fields added later (docs/abi.md) */
};

/* Find out, without changing anything about the caller, whether real-time
 * scheduling is permitted (by trying it on a short-lived thread) and what
 * the memory-lock limit is. Returns 0, or NERVE_ENOMEM (no thread).
 * Thread: any.  Blocking: creates and joins a thread.  RT: not safe.
 * Signal: not safe. */
NERVE_NODISCARD NERVE_API int nerve_rt_probe(struct nerve_rt_caps *caps);

/* ---- timing statistics ----------------------------------------------- */

/* Summary of one series of signed nanosecond samples. */
struct nerve_rt_series {
    uint64_t n;           /* samples */
    int64_t min_ns;       /* smallest sample (0 when n == 0) */
    int64_t max_ns;       /* largest sample */
    int64_t max_abs_ns;   /* largest magnitude: the "jitter" of Tobar et al. */
    int64_t mean_ns;      /* mean, rounded toward zero */
    int64_t rms_ns;       /* square root of the mean square (Tobar et al.'s
                            sqrt(MSE)), rounded down */
    uint64_t reserved[2]; /* zero; for fields added later (docs/abi.md) */
};

/* Timing of a periodic loop from its release and wake-up times (pure; the
 * periodic task computes its own statistics with the same code, one sample
 * at a time). abs gets delta_abs[i] = wake[i] - release[i] for i in 0..n-1
 * (eq. 2); rel gets delta_rel[i] = (wake[i] - wake[i-1]) -
 * (release[i] - release[i-1]) for i in 1..n-1 (eq. 3; releases need not be
 * equally spaced, so skipped periods are allowed). Either output may be
 * NULL. Returns 0, or NERVE_EINVAL (NULL arrays with n > 0).
 * Thread: any.  Blocking: no.  RT: safe.  Signal: safe. */
NERVE_NODISCARD NERVE_API int
nerve_rt_timing_compute(const int64_t *release_ns, const int64_t *wake_ns,
                        size_t n, struct nerve_rt_series *abs,
                        struct nerve_rt_series *rel);

/* ---- periodic tasks --------------------------------------------------- */

/* A periodic (or channel-driven) loop that calls a body function. Opaque.
 * The calls below that take a task and return a status return
 * NERVE_EBADF when it is NULL (stop and close ignore NULL). */
typedef struct nerve_task nerve_task;

/* Overrun policy (nerve_task_opts.flags). An overrun is a body that ends
 * after the next release time. SKIP (the default) drops the releases that
 * have passed and waits for the next one still in the future (counting them
 * in stats.skipped); CATCH_UP runs the body once for every release, back to
 * back, until the loop is on time again. */
#define NERVE_TASK_SKIP 0x0u
#define NERVE_TASK_CATCH_UP 0x2u
/* Lock memory (best effort if NERVE_RT_BEST_EFFORT is also set) before the
 * loop starts; the loop's own stack is always prefaulted. */
#define NERVE_TASK_MLOCK 0x4u

/* Priority value meaning "derive it from the period" (rate-monotonic). */
#define NERVE_TASK_PRIO_AUTO (-1)

/* What one call of the body is about. */
struct nerve_task_tick {
    uint64_t cycle;     /* 0, 1, 2 ... bodies run so far */
    int64_t release_ns; /* when this cycle was due: the scheduled release
                             (clock) or the message's commit time (chan) */
    int64_t wake_ns;    /* when the loop woke for it (CLOCK_MONOTONIC) */
    uint64_t skipped;   /* clock, SKIP policy: releases dropped just
                             before this one */
    /* Channel-driven tasks only: */
    int32_t msg_status; /* 0: *msg holds a message; NERVE_ETIMEDOUT: the
                             deadline passed without one; NERVE_ELAPPED:
                             writers kept overwriting it (msg is NULL) */
    int32_t reserved0;
    const void *msg; /* the message (task-owned buffer, valid during
                             the call), or NULL */
    struct nerve_get_info msg_info;
    uint64_t reserved[4]; /* zero; for fields added later (docs/abi.md) */
};

/* The body: called once per cycle from the loop's thread. Return 0 to go
 * on, a positive value to stop the loop normally, a negative nerve code to
 * stop it with that error (nerve_task_join/run return it). */
typedef int (*nerve_task_fn)(void *arg, const struct nerve_task_tick *tick);

/* Task options. Initialise with NERVE_TASK_OPTS_INIT; a zero field means
 * its default. Clock-driven when `chan` is NULL, channel-driven otherwise. */
struct nerve_task_opts {
    uint32_t size;     /* sizeof(struct nerve_task_opts) */
    uint32_t flags;    /* NERVE_TASK_*, NERVE_RT_BEST_EFFORT */
    int64_t period_ns; /* clock: the period (required). chan: the
                               nominal period, used for the priority and
                               the relative error (0: none) */
    int64_t start_ns;  /* clock: absolute CLOCK_MONOTONIC time of the
                               first release; 0 = when the loop starts */
    int64_t offset_ns; /* added to the first release (phase offset) */
    int32_t policy;    /* NERVE_RT_OTHER (default), _FIFO, _RR */
    int32_t priority;  /* FIFO/RR priority, NERVE_TASK_PRIO_AUTO (or 0)
                               = rate-monotonic from the period by
                               prio_map, raised to 1 if it maps to 0 */
    uint64_t cpus;     /* CPU affinity mask (bit i = CPU i); 0: any */
    const struct nerve_rt_prio_map *prio_map; /* NULL: the defaults */
    uint64_t stack_prefault; /* bytes of loop stack to touch; default 64 KiB */
    /* Channel-driven tasks: */
    nerve_chan *chan;    /* wake when a message arrives on it; NULL: clock */
    uint32_t chan_which; /* NERVE_GET_NEWEST (default 0 = NEXT) */
    uint32_t reserved0;  /* must be 0 */
    int64_t deadline_ns; /* wait at most this long after the previous
                               wake-up (absolute deadline, NERVE_F_ABSTIME);
                               0 = forever */
    uint64_t msg_max;    /* largest message; 0 = the channel's data size */
};

#define NERVE_TASK_OPTS_INIT                                                   \
    {                                                                          \
        sizeof(struct nerve_task_opts), 0, 0, 0, 0, NERVE_RT_OTHER,            \
            NERVE_TASK_PRIO_AUTO, 0, NULL, 0, NULL, 0, 0, 0, 0                 \
    }

/* Per-task statistics, consistent as of one cycle. */
struct nerve_task_stats {
    uint64_t cycles;   /* bodies run */
    uint64_t overruns; /* bodies that ended after the next release (clock)
                           or after the next deadline (chan) */
    uint64_t skipped;  /* clock, SKIP: releases dropped after overruns */
    uint64_t timeouts; /* chan: deadlines that passed without a message */
    uint64_t missed;   /* chan: messages the reader skipped (info.missed) */
    struct nerve_rt_series abs_err; /* eq. 2, wake - release (clock only) */
    struct nerve_rt_series rel_err; /* eq. 3 (clock; chan with a period) */
    struct nerve_rt_series latency; /* release -> body start: the timer
                                       (clock; = abs_err plus the loop's own
                                       overhead) or the message's commit
                                       (chan) */
    struct nerve_rt_series exec;    /* body start -> body end */
    int64_t period_ns;
    int32_t policy;       /* applied NERVE_RT_* */
    int32_t priority;     /* applied priority */
    int32_t sched_err;    /* 0, or why the requested policy was not
                             applied (best effort fell back to OTHER) */
    uint32_t running;     /* 1 while the loop runs */
    uint64_t stats_lost;  /* cycles whose statistics message (see
                             nerve_task_publish_stats) could not be put */
    uint64_t reserved[7]; /* zero; for fields added later (docs/abi.md) */
};

/* The type (nerve_chan_opts.type) of a channel that carries a task's
 * statistics (nerve_task_publish_stats): each message is one struct
 * nerve_task_stats in the host's byte order. The tools recognise it
 * (nerve blackbox triggers on its overruns, timeouts and skipped releases). */
#define NERVE_TASK_STATS_TYPE "nerve/task_stats"

/* Make a task (not started). `fn` is called with `arg` every cycle (NULL:
 * a task driven only by nerve_task_next(), which has no body to call).
 * Returns 0 and stores the task in *out, or NERVE_EINVAL (bad options:
 * no period for a clock task, unknown flags, bad policy or priority, a
 * non-zero reserved field), NERVE_ENOMEM.
 * Thread: any.  Blocking: no.  RT: not safe (allocates).  Signal: not safe. */
NERVE_NODISCARD NERVE_API int
nerve_task_open(const struct nerve_task_opts *opts, nerve_task_fn fn, void *arg,
                nerve_task **out);

/* Start the loop on a new thread, which applies the policy, priority and
 * affinity to itself, prefaults its stack and then runs. Returns once the
 * thread has applied them: 0, or NERVE_EPERM (real-time scheduling or
 * memory locking refused and NERVE_RT_BEST_EFFORT not given; no thread is
 * left running), NERVE_EBUSY (already started), NERVE_ENOMEM, NERVE_EINVAL.
 * Thread: any; one start per task.  Blocking: until the thread is set up.
 * RT: not safe.  Signal: not safe. */
NERVE_NODISCARD NERVE_API int nerve_task_start(nerve_task *t);

/* Run the loop on the calling thread (applying the policy, priority and
 * affinity to it, and leaving them applied) until it is stopped or the
 * body stops it. Returns 0 (stopped), the body's negative code, a channel
 * error that ended a channel-driven loop, or a set-up error as
 * nerve_task_start().
 * Thread: the caller becomes the loop.  Blocking: yes, until stopped.
 * RT: the loop is (no allocation; clock_nanosleep or the channel's futex
 * wait).  Signal: not safe. */
NERVE_NODISCARD NERVE_API int nerve_task_run(nerve_task *t);

/* Pull-style driving: the caller's own loop is the body. Each call ends the
 * cycle of the tick the previous call returned (its end is the body's end:
 * execution time and overruns are measured up to this call), waits for the
 * next cycle (clock: sleeps to its absolute release; channel-driven: waits
 * for the message or the deadline, as nerve_task_run() does) and fills
 * *tick. The first call applies the memory, scheduling and affinity
 * settings to the calling thread, which keeps them, as nerve_task_run().
 *
 *   for (;;) {
 *       rc = nerve_task_next(t, NERVE_FOREVER, 0, &tick);
 *       if (rc == NERVE_EINTR) continue;       (a signal; call again)
 *       if (rc != 0) break;                    (NERVE_ECANCELED: stopped)
 *       ... the body, with tick ...
 *   }
 *
 * `timeout_ns` bounds this call's wait only (NERVE_FOREVER, 0 to poll,
 * relative or with NERVE_F_ABSTIME absolute CLOCK_MONOTONIC ns); it never
 * moves a release or a deadline. tick->msg points into the task's buffer
 * and stays valid until the next call. Returns 0 (*tick filled: the cycle
 * is due), NERVE_ETIMEDOUT (the timeout came first; nothing consumed, call
 * again), NERVE_EINTR (a signal handler interrupted the clock sleep; call
 * again), NERVE_ECANCELED (nerve_task_stop() was called, also before the
 * first call: the loop has ended and statistics say running = 0), a
 * channel error that ended the loop, a set-up error as nerve_task_start()
 * (first call; call again to retry), NERVE_EBUSY (the task was started
 * with nerve_task_start() or nerve_task_run()), NERVE_EBADF (NULL task),
 * NERVE_EINVAL (NULL tick, unknown flags). Once the loop has ended every
 * call returns how it ended.
 * Thread: the loop's: one thread at a time (the first call's, for the
 * scheduling to hold).  Blocking: until the cycle is due or the timeout.
 * RT: the wait is (clock_nanosleep or the channel's futex wait; no
 * allocation), the first call is not (set-up).  Signal: not safe. */
NERVE_NODISCARD NERVE_API int nerve_task_next(nerve_task *t, int64_t timeout_ns,
                                              uint32_t flags,
                                              struct nerve_task_tick *tick);

/* Ask the loop to stop. It finishes the current body, if any, and does not
 * start another; a clock-driven loop leaves its sleep at the next release
 * (within one period), a channel-driven one at once (its handle is
 * cancelled with nerve_chan_cancel(), and un-cancelled when the loop ends).
 * Thread: any.  Blocking: no.  RT: safe.  Signal: safe (atomic stores and
 * nerve_chan_cancel()). */
NERVE_API void nerve_task_stop(nerve_task *t);

/* Wait for a started loop to end and return how it ended (as
 * nerve_task_run()). NERVE_EINVAL if it was never started.
 * Thread: one joiner.  Blocking: yes.  RT: not safe.  Signal: not safe. */
NERVE_NODISCARD NERVE_API int nerve_task_join(nerve_task *t);

/* Copy the task's statistics, without a lock (the loop publishes them with
 * a sequence counter after every cycle and is never held up by a reader).
 * Returns 0.
 * Thread: any, also while the loop runs.  Blocking: no.  RT: safe.
 * Signal: safe. */
NERVE_NODISCARD NERVE_API int nerve_task_stat(const nerve_task *t,
                                              struct nerve_task_stats *st);

/* Opt in to publishing: at the end of every cycle the loop puts its
 * statistics (struct nerve_task_stats, as nerve_task_stat() gives them) as
 * one message on `chan`, so another process sees each overrun, timeout and
 * skipped release in the cycle it happens (nerve blackbox triggers on
 * them). NULL turns it off. `chan` is the caller's handle, opened with
 * NERVE_O_WRITE; it must stay open until the task is closed, and should be
 * made with type NERVE_TASK_STATS_TYPE and have this task as its only
 * writer. A put that fails (any error of nerve_chan_put: a read-only
 * handle, a ring found corrupt) loses that cycle's message only and is
 * counted in stats_lost, which the next message carries. Costs one
 * nerve_chan_put() per cycle (an uncontended lock, one copy of the struct).
 * Returns 0, NERVE_EBADF (t NULL), the error of nerve_chan_stat() on
 * `chan`, or NERVE_EBUSY (the task was started, run or pulled already).
 * Thread: setup phase (before nerve_task_start/run/next).  Blocking: no.
 * RT: not safe.  Signal: not safe.
 * In the loop: no allocation; nerve_chan_put's futex use only. */
NERVE_NODISCARD NERVE_API int nerve_task_publish_stats(nerve_task *t,
                                                       nerve_chan *chan);

/* Format statistics as a few lines of text headed by `name` (may be NULL)
 * into buf[0..len), NUL-terminated. Returns the length the full text needs
 * (as snprintf), so a return >= len means it was cut short.
 * Thread: any.  Blocking: no.  RT: safe (no allocation).  Signal: not safe. */
NERVE_API int nerve_task_stats_format(const struct nerve_task_stats *st,
                                      const char *name, char *buf, size_t len);

/* Free a task. Stops and joins it first if it was started and not joined.
 * NULL is ignored.
 * Thread: no other call on the task may run.  Blocking: joins.  RT: not
 * safe.  Signal: not safe. */
NERVE_API void nerve_task_close(nerve_task *t);

#ifdef __cplusplus
}
#endif

#endif
