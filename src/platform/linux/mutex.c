/* The writer lock: a robust, process-shared, priority-inheritance lock
 * owned by nerve, directly on a PI futex in the channel file.
 *
 * Why not pthread_mutex_t: glibc's robust PI mutex aborts the process
 * (assert) when the kernel answers FUTEX_LOCK_PI with ESRCH (the lock word
 * names a thread that does not exist: a corrupted word, a mapping dropped
 * while held, a writer in another PID namespace) and hangs forever on
 * EDEADLK (the caller already holds it). Every kernel answer is an error
 * code or a recovery here.
 *
 * THE WORD (struct nerve__shm_lock.word; the kernel's PI futex format,
 * Documentation/locking/pi-futex.rst and robust-futex-ABI.rst):
 *     0                       free
 *     TID                     held by thread TID, nobody queued
 *     TID | FUTEX_WAITERS     held, lockers queued in the kernel (PI boost)
 *     FUTEX_OWNER_DIED [| W]  free; its owner died holding it (the kernel
 *                             cleared the TID from the owner's robust list)
 *     TID | FUTEX_OWNER_DIED  the kernel handed a dead owner's lock to TID
 *   TIDs are in the PID namespace of the channel's writers: the one
 *   recorded in lock.pidns, which WRITERS' NAMESPACE below keeps true.
 *
 * LOCK: user-space CAS 0 -> TID; a word with OWNER_DIED and no TID is taken
 * by CAS too (recovered); a locker that is not real-time first spins a
 * bounded time for the word to come free (see spin_for_free()); anything
 * else goes to the kernel, FUTEX_LOCK_PI2
 * (CLOCK_MONOTONIC deadline; FUTEX_LOCK_PI with a CLOCK_REALTIME deadline on
 * kernels before 5.14), or FUTEX_TRYLOCK_PI when the deadline has passed.
 * Kernel answers: 0 taken (OWNER_DIED in the word: recovered); ETIMEDOUT /
 * EWOULDBLOCK timeout; EAGAIN / EINTR retry; ESRCH the named owner does not
 * exist, so it cannot be alive: take the word by CAS (recovered); EDEADLK
 * the caller holds it: NERVE_EDEADLK; EINVAL, EPERM, EFAULT: the word does
 * not match the kernel's state: NERVE_ECORRUPT (nerve check reports it,
 * nerve check --repair resets it).
 *
 * ROBUSTNESS: the kernel releases a dead thread's PI futexes through that
 * thread's robust list. glibc registers one list head per thread
 * (set_robust_list) and links its robust mutexes into it; nerve links its
 * lock into the same list, in the same format glibc uses (a doubly linked
 * list whose entries sit at word - futex_offset, with the previous pointer
 * one pointer before the entry, bit 0 set for PI), so glibc's own list
 * operations and the kernel's walk at thread exit both see a well-formed
 * list. list_op_pending covers a death between the CAS and the list
 * update. The entry's pointers are process-local and live in the shared
 * lock, written only by the owner ([W:lock]), as glibc's are.
 *
 * UNLOCK: dequeue, then CAS TID -> 0, or FUTEX_UNLOCK_PI when lockers are
 * queued (the kernel hands the lock to the highest-priority one). Only the
 * owning thread can unlock a PI futex: chan.c refuses commit, abort and
 * close with a reservation from any other thread.
 *
 * WRITERS' NAMESPACE: the TIDs in the word are those of one PID
 * namespace, which claim.c keeps true (nerve__mutex_claim(),
 * model/claim.pml). */

#include <errno.h>
#include <linux/futex.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "../../atomics.h"
#include "../../platform.h"
#include "../../shm.h"
#include "../../timeconv.h"
#include "nerve/errors.h"

#ifndef FUTEX_LOCK_PI2
#define FUTEX_LOCK_PI2 13
#endif

/* The kernel's struct robust_list / robust_list_head (linux/futex.h). */
struct rl_head {
    void *next;
    long futex_offset;
    void *op_pending;
};

int nerve__mutex_init(struct nerve__shm_lock *l)
{
    memset(l, 0, sizeof *l);
    return 0;
}

/* This thread's robust list head, and the address of the entry for `l`
 * (word - futex_offset), or NULL if this thread has no list or the entry
 * would not fit the lock's robust area. */
static NERVE__TLS struct rl_head *head_cache;

static struct rl_head *robust_head(struct nerve__shm_lock *l, void ***entry)
{
    /* The head is fixed for a thread's life (glibc: in its descriptor,
     * which a fork child keeps at the same address), so it is looked up
     * once per thread. */
    struct rl_head *h = head_cache;
    if (!h) {
        size_t len = 0;
        if (syscall(SYS_get_robust_list, 0, &h, &len) != 0 || !h ||
            len != sizeof *h)
            return NULL;
        head_cache = h;
    }
    long off = -h->futex_offset; /* entry - word */
    if (off < (long)(8 + sizeof(void *)) ||
        off + (long)sizeof(void *) >
            (long)offsetof(struct nerve__shm_lock, pidns) ||
        off % (long)sizeof(void *) != 0)
        return NULL;
    *entry = (void **)((char *)&l->word + off);
    return h;
}

#define PI_BIT ((uintptr_t)1)
#define PTR(v) ((void **)((uintptr_t)(v) & ~PI_BIT))

/* glibc's ENQUEUE_MUTEX_PI: link entry at the head of the list. */
static void rl_enqueue(struct rl_head *h, void **entry)
{
    void **next = PTR(h->next);
    next[-1] = entry;   /* next->prev (glibc keeps a slot before the head) */
    entry[0] = h->next; /* entry->next */
    entry[-1] = h;      /* entry->prev */
    __asm__ __volatile__("" ::: "memory");
    h->next = (void *)((uintptr_t)entry | PI_BIT);
}

/* glibc's DEQUEUE_MUTEX. */
static void rl_dequeue(void **entry)
{
    void **next = PTR(entry[0]);
    void **prev = PTR(entry[-1]);
    next[-1] = entry[-1];
    prev[0] = entry[0];
    __asm__ __volatile__("" ::: "memory");
    entry[0] = NULL;
    entry[-1] = NULL;
}

static long futex(nerve__a32 *w, int op, uint32_t val,
                  const struct timespec *ts)
{
    return syscall(SYS_futex, w, op, val, ts, NULL, 0);
}

/* Took the lock (word now names this thread): finish the robust-list
 * bookkeeping, clear OWNER_DIED. Returns 1 if the previous owner died. */
static int taken(struct nerve__shm_lock *l, struct rl_head *h, void **entry,
                 int recovered)
{
    /* Acquire: the previous owner's stores under the lock happen before
     * this owner's (the kernel hand-over path has no user-space RMW; this
     * load pairs with the release RMW in nerve__mutex_unlock()). */
    uint32_t v = nerve__load32_acq(&l->word);
    if (v & FUTEX_OWNER_DIED) {
        recovered = 1;
        nerve__and32_rel(&l->word, ~(uint32_t)FUTEX_OWNER_DIED);
    }
    rl_enqueue(h, entry);
    __asm__ __volatile__("" ::: "memory");
    h->op_pending = NULL;
    return recovered;
}

/* SPIN BEFORE THE KERNEL. A put holds the lock for well under a
 * microsecond, but a locker queued in the kernel makes every later unlock
 * a handover: FUTEX_UNLOCK_PI gives the lock to the queued thread, which
 * must first be woken, and the kernel leaves FUTEX_WAITERS in the word so
 * that the new owner's unlock goes through the kernel too. Two writers
 * putting back to back then fall into a convoy, one sleep and wake-up per
 * message: 0.39 M puts/s for two writers on two CPUs where one alone does
 * 12.1 M (bench/results/lock-spin-devvm-2026-11-23.md). Spinning until the
 * word reads 0 instead takes the lock by CAS as soon as the owner lets go,
 * which breaks the convoy; the spin ignores FUTEX_WAITERS for that reason
 * (after a handover the bit is set with nobody queued).
 *
 * For the first NERVE__LOCK_PAUSE_NS the spin only reads the word (an
 * owner on another CPU is done by then); after that it yields the CPU
 * between reads, so that an owner preempted on this CPU, or waiting for
 * one, can finish: with more busy threads than CPUs that is where the
 * time goes (four writers and a polling reader on 2 CPUs: 1.19 M msg/s
 * with reads alone, 3.06 M with the yields). Bounded by NERVE__LOCK_SPIN_NS
 * and the caller's deadline; it ends at once on a dead owner (the general
 * path recovers) or on the caller's own TID (EDEADLK). Real-time callers (SCHED_FIFO, SCHED_RR, SCHED_DEADLINE)
 * never spin: the owner may be a lower-priority thread preempted on their
 * own CPU, which only the kernel's priority inheritance lets run, and a
 * spin would add its whole bound to their worst case. sched_getscheduler
 * costs one system call, paid only when the lock is contended. */
#define NERVE__LOCK_SPIN_NS 20000
#define NERVE__LOCK_PAUSE_NS 2000

static void spin_for_free(struct nerve__shm_lock *l, uint32_t tid,
                          int64_t deadline)
{
    int policy = sched_getscheduler(0);
    if (policy != SCHED_OTHER && policy != SCHED_BATCH && policy != SCHED_IDLE)
        return;
    int64_t now = nerve__mono_now();
    int64_t pause_end = now + NERVE__LOCK_PAUSE_NS;
    int64_t end = now + NERVE__LOCK_SPIN_NS;
    if (deadline >= 0 && deadline < end)
        end = deadline;
    int yielding = 0;
    for (unsigned i = 1;; i++) {
        uint32_t v = nerve__load32_rlx(&l->word);
        if (v == 0 || (v & FUTEX_OWNER_DIED) || (v & FUTEX_TID_MASK) == tid)
            return;
        if (yielding || i % 16 == 0) {
            now = nerve__mono_now();
            if (now >= end)
                return;
            yielding = now >= pause_end;
        }
        if (yielding) {
            sched_yield();
            continue;
        }
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#elif defined(__aarch64__)
        __asm__ __volatile__("yield" ::: "memory");
#endif
    }
}

/* Uncontended: one CAS on a free word, no clock read, no reload (the CAS
 * is the acquire, and a word that was 0 carries no OWNER_DIED). The
 * robust-list steps are those of taken(), so a death at any point is
 * recovered exactly as on the general path. Returns 1 if taken. */
static inline int take_uncontended(struct nerve__shm_lock *l, struct rl_head *h,
                                   void **entry, uint32_t tid)
{
    uint32_t v0 = 0;
    if (!nerve__cas32_acq(&l->word, &v0, tid))
        return 0;
    rl_enqueue(h, entry);
    __asm__ __volatile__("" ::: "memory");
    h->op_pending = NULL;
    return 1;
}

/* A locker on the general path: its robust entry is announced in
 * h->op_pending, and stays so until taken() or an error return. */
struct locker {
    struct nerve__shm_lock *l;
    struct rl_head *h;
    void **entry;
    uint32_t tid;
    int64_t deadline; /* absolute CLOCK_MONOTONIC; -1: none; 0: passed */
    int pi2;          /* 0 once the kernel answered ENOSYS to LOCK_PI2 */
};

/* Answers of one step of the general path besides a final status (taken()'s
 * 0 or 1, or a negative error). */
#define LOCK_AGAIN 2  /* the word changed: look at it again */
#define LOCK_KERNEL 3 /* another thread holds it: ask the kernel */

/* The user-space step, on the word's value v: a free word, or one the
 * kernel freed after its owner died with nobody queued, is taken by CAS
 * (the second as recovered); a word naming the caller is its own. Returns
 * taken()'s status, NERVE_EDEADLK, LOCK_AGAIN (the CAS lost) or
 * LOCK_KERNEL. */
static int take_word(struct locker *k, uint32_t v)
{
    if (v == 0 || v == FUTEX_OWNER_DIED) {
        int died = v != 0;
        if (nerve__cas32_acq(&k->l->word, &v, k->tid))
            return taken(k->l, k->h, k->entry, died);
        return LOCK_AGAIN;
    }
    if ((v & FUTEX_TID_MASK) == k->tid)
        return NERVE_EDEADLK;
    return LOCK_KERNEL;
}

/* The monotonic `deadline` as a CLOCK_REALTIME time, for FUTEX_LOCK_PI,
 * which before Linux 5.14 times out on that clock only: the real-time now
 * plus the time left (none if passed), saturated, so that a deadline near
 * INT64_MAX on the monotonic clock is still far in the future on the
 * real-time one. */
static struct timespec realtime_deadline(int64_t deadline)
{
    struct timespec rt;
    clock_gettime(CLOCK_REALTIME, &rt);
    int64_t left = deadline - nerve__mono_now();
    int64_t rnow = 0;
    (void)nerve__ns_from_timespec(&rt, &rnow);
    if (left < 0)
        left = 0;
    int64_t rdl = nerve__ns_add_sat(rnow, left);
    struct timespec ts = {(time_t)(rdl / NERVE__NS_PER_S),
                          (long)(rdl % NERVE__NS_PER_S)};
    return ts;
}

/* The kernel's timed lock: FUTEX_LOCK_PI2 until the CLOCK_MONOTONIC
 * deadline, or, on a kernel without it (ENOSYS, remembered in k->pi2),
 * FUTEX_LOCK_PI until the same time on CLOCK_REALTIME. 0 or -1 with
 * errno. */
static long lock_until(struct locker *k)
{
    struct timespec ts = {(time_t)(k->deadline / NERVE__NS_PER_S),
                          (long)(k->deadline % NERVE__NS_PER_S)};
    long r = -1;
    errno = ENOSYS;
    if (k->pi2)
        r = futex(&k->l->word, FUTEX_LOCK_PI2, 0, &ts);
    if (r != 0 && errno == ENOSYS) {
        k->pi2 = 0;
        ts = realtime_deadline(k->deadline);
        r = futex(&k->l->word, FUTEX_LOCK_PI, 0, &ts);
    }
    return r;
}

/* The kernel step (PI: it boosts the owner while this thread waits):
 * FUTEX_TRYLOCK_PI once the deadline has `passed`, an untimed
 * FUTEX_LOCK_PI2 (FUTEX_LOCK_PI before Linux 5.14) without a deadline,
 * else lock_until(). Returns 0 (taken) or the errno of the answer. */
static int lock_in_kernel(struct locker *k, int passed)
{
    long r;
    if (passed) {
        r = futex(&k->l->word, FUTEX_TRYLOCK_PI, 0, NULL);
    } else if (k->deadline < 0) {
        r = futex(&k->l->word, FUTEX_LOCK_PI2, 0, NULL);
        if (r != 0 && errno == ENOSYS)
            r = futex(&k->l->word, FUTEX_LOCK_PI, 0, NULL);
    } else {
        r = lock_until(k);
    }
    return r == 0 ? 0 : errno;
}

/* Dead-thread recovery, on ESRCH: the word names `owner`, a thread that
 * does not exist in this PID namespace (the only one writers run in,
 * claim.c): it cannot be alive and the kernel will never release the
 * lock. Take it over by CAS, keeping FUTEX_WAITERS for the lockers queued
 * behind it: taken()'s status (recovered), or LOCK_AGAIN when the word no
 * longer names that owner. */
static int take_from_missing(struct locker *k, uint32_t owner)
{
    uint32_t v = nerve__load32_rlx(&k->l->word);
    if ((v & FUTEX_TID_MASK) == owner && owner != 0 &&
        nerve__cas32_acq(&k->l->word, &v, k->tid | (v & FUTEX_WAITERS)))
        return taken(k->l, k->h, k->entry, 1);
    return LOCK_AGAIN;
}

/* What the kernel's answer e (not 0) means (LOCK above), on try `spins`
 * of the general path, for a word that named `owner`: a final status, or
 * LOCK_AGAIN. Retries are bounded by the deadline. */
static int kernel_answer(struct locker *k, int e, uint32_t owner, int passed,
                         int spins)
{
    if (e == ESRCH)
        return take_from_missing(k, owner);
    if (e == EINTR || (e == EAGAIN && !passed)) {
        /* EAGAIN: the owner is exiting; its robust list is being walked.
         * Yield between tries. */
        if (e == EAGAIN && spins > 16)
            sched_yield();
        if (k->deadline >= 0 && nerve__mono_now() >= k->deadline &&
            spins > 1000)
            return NERVE_ETIMEDOUT;
        return LOCK_AGAIN;
    }
    if (e == ETIMEDOUT || e == EWOULDBLOCK || e == EBUSY)
        return NERVE_ETIMEDOUT;
    if (e == EDEADLK)
        return NERVE_EDEADLK;
    if (e == ENOSYS)
        return NERVE_ENOSYS;
    return NERVE_ECORRUPT; /* EINVAL, EPERM, EFAULT */
}

/* The general path: the user-space step, then the kernel step, until one
 * of them gives a final status. */
static int lock_contended(struct locker *k)
{
    for (int spins = 0;; spins++) {
        uint32_t v = nerve__load32_rlx(&k->l->word);
        int r = take_word(k, v);
        if (r == LOCK_AGAIN)
            continue;
        if (r != LOCK_KERNEL)
            return r;
        int passed = k->deadline >= 0 && nerve__mono_now() >= k->deadline;
        int e = lock_in_kernel(k, passed);
        if (e == 0)
            return taken(k->l, k->h, k->entry, 0);
        r = kernel_answer(k, e, v & FUTEX_TID_MASK, passed, spins);
        if (r != LOCK_AGAIN)
            return r;
    }
}

int nerve__mutex_lock(struct nerve__shm_lock *l, int64_t timeout_ns,
                      int abstime)
{
    void **entry;
    struct rl_head *h = robust_head(l, &entry);
    if (!h)
        return NERVE_ENOSYS; /* no robust list: a death could not be healed */
    uint32_t tid = nerve__tid();
    /* Glibc's order: announce the entry before the word can name us. */
    h->op_pending = (void *)((uintptr_t)entry | PI_BIT);
    __asm__ __volatile__("" ::: "memory");
    if (take_uncontended(l, h, entry, tid))
        return 0;
    /* A relative timeout counts from here: the fast path took no time
     * worth measuring. */
    struct locker k = {
        l, h, entry, tid, nerve__deadline_ns(timeout_ns, abstime), 1};
    if (k.deadline != 0)
        spin_for_free(l, tid, k.deadline);
    int r = lock_contended(&k);
    if (r < 0)
        h->op_pending = NULL;
    return r;
}

int nerve__mutex_unlock(struct nerve__shm_lock *l)
{
    void **entry;
    struct rl_head *h = robust_head(l, &entry);
    uint32_t tid = nerve__tid();
    if (h) {
        h->op_pending = (void *)((uintptr_t)entry | PI_BIT);
        __asm__ __volatile__("" ::: "memory");
        if (entry[0])
            rl_dequeue(entry);
    }
    uint32_t v = tid;
    int r = 0;
    /* Release RMW: pairs with the acquire in taken(), also on the kernel
     * path (which stores the word itself). */
    if (!nerve__cas32_rel(&l->word, &v, 0)) {
        (void)nerve__or32_rel(&l->word, 0);
        if (futex(&l->word, FUTEX_UNLOCK_PI, 0, NULL) != 0)
            r = NERVE_ECORRUPT; /* EPERM: the word no longer names us */
    }
    if (h) {
        __asm__ __volatile__("" ::: "memory");
        h->op_pending = NULL;
    }
    return r;
}

/* Does thread `tid` of this PID namespace exist? 1 yes, 0 no. */
static int tid_alive(uint32_t tid)
{
    if (tid == 0)
        return 0;
    if (kill((pid_t)tid, 0) == 0 || errno == EPERM)
        return 1;
    return 0;
}

int nerve__mutex_state(const struct nerve__shm_lock *l, uint64_t chan_ns,
                       int fd, char *msg, size_t len)
{
    uint32_t v = nerve__load32_rlx((nerve__a32 *)&l->word);
    uint32_t owner = v & FUTEX_TID_MASK;
    uint64_t ns = nerve__pidns_id();
    int same_ns = chan_ns == 0 || ns == 0 || chan_ns == ns;
    if (v == 0) {
        snprintf(msg, len, "free");
        return NERVE__LOCK_FREE;
    }
    if (owner == 0) {
        snprintf(msg, len,
                 "free; its owner died holding it (the next "
                 "writer recovers it)");
        return NERVE__LOCK_DEAD;
    }
    if (!same_ns) {
        /* The TID means nothing here, but the claim byte tells whether
         * any writer handle, in any namespace, is open. */
        int held = nerve__claim_held(fd);
        if (held == 0) {
            snprintf(msg, len,
                     "held by thread %u of another PID namespace, which "
                     "has no writer open: owner dead (the next writer "
                     "takes the channel over)",
                     owner);
            return NERVE__LOCK_DEAD;
        }
        snprintf(msg, len,
                 "held by thread %u of another PID namespace "
                 "(cannot tell whether it is alive%s)",
                 owner, held > 0 ? "; a writer has the channel open" : "");
        return NERVE__LOCK_HELD;
    }
    if (tid_alive(owner)) {
        snprintf(msg, len, "held by thread %u (alive)%s", owner,
                 v & FUTEX_WAITERS ? ", writers waiting" : "");
        return NERVE__LOCK_HELD;
    }
    snprintf(msg, len,
             "held by thread %u, which does not exist: owner "
             "dead (the next writer recovers; "
             "nerve_chan_repair resets it)",
             owner);
    return NERVE__LOCK_DEAD;
}

uint32_t nerve__mutex_owner(const struct nerve__shm_lock *l, uint32_t *flags)
{
    uint32_t v = nerve__load32_rlx((nerve__a32 *)&l->word);
    *flags = ((v & FUTEX_OWNER_DIED) ? NERVE_LOCK_OWNER_DIED : 0) |
             ((v & FUTEX_WAITERS) ? NERVE_LOCK_WAITERS : 0);
    return v & FUTEX_TID_MASK;
}

/* How many times repair re-reads the lock word after a failed CAS. A CAS
 * fails only when another thread changed the word in between (a locker,
 * an unlocker, a waiter queueing): a few failures are a race with a live
 * writer; this many in a row mean the lock is in constant use, not
 * abandoned, and repair answers NERVE_ELAPPED instead of spinning on. */
#define REPAIR_TRIES 1000

int nerve__mutex_repair(struct nerve__shm_lock *l, int force)
{
    for (int i = 0; i < REPAIR_TRIES; i++) {
        uint32_t v = nerve__load32_rlx(&l->word);
        uint32_t owner = v & FUTEX_TID_MASK;
        if (v == 0 || (owner == 0 && !(v & FUTEX_WAITERS)))
            return 0; /* free, or freed by the kernel: nothing to do */
        if (owner && tid_alive(owner) && !force)
            return NERVE_EBUSY;
        /* Mark it free with a dead owner: the next locker takes it (by CAS
         * or, when lockers are queued, through the kernel) as recovered
         * and validates the ring state before writing. */
        uint32_t nv = FUTEX_OWNER_DIED | (v & FUTEX_WAITERS);
        if (nerve__cas32_acq(&l->word, &v, nv))
            return 1;
    }
    return NERVE_ELAPPED;
}
