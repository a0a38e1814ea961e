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
 * WRITERS' NAMESPACE (nerve__mutex_claim(); model/claim.pml). A TID means
 * a thread only in one PID namespace: the kernel resolves the word's TID
 * in the caller's namespace (FUTEX_LOCK_PI boosts and waits for whatever
 * thread has that number there, or answers ESRCH, which a locker takes for
 * a dead owner), writes a new owner's TID as the unlocker sees it
 * (FUTEX_UNLOCK_PI), and the robust list clears a TID as the dying thread
 * sees it. So the lockers of one word must share a PID namespace, and
 * containers that share /dev/shm but not their PID namespace (Docker's
 * default) would corrupt each other's lock. lock.pidns records the
 * namespace whose threads the word may name; the claim keeps it true and
 * hands the channel to another namespace as soon as no writer of the
 * recorded one is left, with no manual step:
 *   - every writer handle holds a shared open-file-description (OFD)
 *     byte-range lock on byte NERVE__CLAIM_BYTE of the channel file from
 *     its open to its close. The kernel drops it when the last descriptor
 *     of that open goes, so also when the process dies by any means, in
 *     any namespace: it is the liveness test that /proc cannot give across
 *     namespaces (a container does not see the host's PIDs, and a
 *     namespace's inode number is reused once it is gone);
 *   - openers pass N2-N5 one at a time, holding an exclusive OFD lock on
 *     byte NERVE__CLAIM_GATE, so that every other holder of the claim
 *     byte is an admitted writer handle (never an opener midway);
 *   N1  take the gate (F_OFD_SETLK F_WRLCK, not waiting). EAGAIN: another
 *       opener is in N2-N5, a few system calls: retry for up to
 *       NERVE__CLAIM_WAIT_NS (then NERVE_EXDEV: that opener is stopped);
 *   N2  take the claim byte shared (cannot conflict: only a gate holder
 *       takes it exclusively) and read pidns (acquire; SYNC(ns-claim));
 *       0: set it to ours by CAS;
 *   N3  convert the shared lock to exclusive, not waiting. EAGAIN: another
 *       writer handle is open, an admitted one (the gate keeps openers
 *       out): if pidns is ours, we are admitted beside it (go to N5,
 *       keeping the shared lock); if it is another namespace's, drop both
 *       locks and return NERVE_EXDEV. Success: no other writer handle is
 *       open anywhere;
 *   N4  so no thread can hold or wait for the word, and whatever TID it
 *       names is stale (its owner died with its robust entry lost, or
 *       lived in another namespace). Reset a non-zero word to
 *       FUTEX_OWNER_DIED (free; the next locker recovers and validates the
 *       ring). This is done even when pidns reads as ours: a namespace's
 *       inode number is reused once it is gone, so a restarted container
 *       may look like the dead one while the word still names the dead
 *       one's PID 1 -- in the new namespace, likely its own writer. If
 *       pidns is another namespace's, store ours with release:
 *       SYNC(ns-claim), pairs with N2's acquire, so a writer that sees the
 *       new owner also sees the reset word (when pidns stays, lockers
 *       reach the reset word by their CAS, which reads its newest value);
 *   N5  keep the claim byte shared (a downgrade never conflicts) and drop
 *       the gate.
 *   INVARIANT: every admitted writer handle -- every holder of the claim
 *   byte outside the gate -- runs in namespace pidns (a writer without
 *   /proc, id 0, is admitted unchecked, as before), and the word names no
 *   thread but one of theirs. N3 admits only pidns's writers beside
 *   others; pidns changes, and the word is reset, only in N4, under the
 *   exclusive claim byte, when there is no other holder. Every thread that locks or waits
 *   on the word does so through an admitted handle, so all of them share
 *   one namespace: within it the lock keeps all its guarantees (mutual
 *   exclusion, robust recovery, priority inheritance, the dead-owner check
 *   of nerve check).
 *   Two namespaces never write at once: the second is refused with
 *   NERVE_EXDEV exactly while a writer handle of the first is open (a PI
 *   word cannot be shared, see above; a lock without PI for mixed
 *   namespaces would give up the real-time guarantee silently). Openers
 *   of one new namespace that race to take a channel over all get it: the
 *   gate makes the first take it and the others find it theirs in N2.
 *   Any descriptor open for reading may take the claim byte shared, so a
 *   local user who may only read the channel can keep it from passing to
 *   another namespace (N3 then refuses as if a writer were open); it
 *   cannot admit a second namespace or touch the admitted writers.
 *   A death anywhere in N1-N5 leaves a state N1-N5 continue from: the
 *   kernel drops the dead opener's OFD locks; a reset word is a recovered
 *   lock whether or not pidns was stored; pidns is one word. Crash points
 *   claim.exclusive, claim.after-reset and claim.after-ns (torture). */

#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "../../atomics.h"
#include "../../crashpoint.h"
#include "../../platform.h"
#include "../../shm.h"
#include "../../timeconv.h"
#include "nerve/chan.h"
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

static int64_t mono_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* The calling thread's TID, cached per thread so that the put path makes
 * no system call for it. A fork child's only thread inherits the forking
 * thread's cache: the atfork handler clears it. */
/* initial-exec: one %fs-relative load instead of a __tls_get_addr call
 * (the default model in a shared object) on every lock and unlock; the
 * two variables take 12 bytes of the static TLS that glibc keeps for
 * libraries loaded later (dlopen, e.g. the Python module). */
#define NERVE__TLS __thread __attribute__((tls_model("initial-exec")))
static NERVE__TLS uint32_t tid_cache;
static pthread_once_t tid_once = PTHREAD_ONCE_INIT;

static void tid_forked(void)
{
    tid_cache = 0;
}

static void tid_init(void)
{
    (void)pthread_atfork(NULL, NULL, tid_forked);
}

uint32_t nerve__tid(void)
{
    if (!tid_cache) {
        pthread_once(&tid_once, tid_init);
        tid_cache = (uint32_t)syscall(SYS_gettid);
    }
    return tid_cache;
}

uint64_t nerve__pidns_id(void)
{
    struct stat st;
    if (stat("/proc/self/ns/pid", &st) != 0)
        return 0;
    return (uint64_t)st.st_ino;
}

/* ---- the writers' namespace (WRITERS' NAMESPACE above) ---------------- */

/* How long N1 waits for another opener's N2-N5. */
#define NERVE__CLAIM_WAIT_NS 1000000000ll

/* Set (F_RDLCK, F_WRLCK) or drop (F_UNLCK) this open file description's
 * lock on byte `at` of the file, never waiting. 0 or -1 with errno. */
static int ofd_lock(int fd, off_t at, short type)
{
    struct flock fl;
    memset(&fl, 0, sizeof fl); /* l_pid must be 0 for OFD locks */
    fl.l_type = type;
    fl.l_whence = SEEK_SET;
    fl.l_start = at;
    fl.l_len = 1;
    return fcntl(fd, F_OFD_SETLK, &fl);
}

/* Without OFD locks (Linux before 3.15) there is no takeover: the
 * namespace record alone decides, as it did before the claim. */
static int claim_by_record(struct nerve__shm_lock *l, uint64_t ns)
{
    if (ns == 0)
        return 0;
    uint64_t cur = nerve__load_acq(&l->pidns);
    if (cur == 0 && nerve__cas_rlx(&l->pidns, &cur, ns))
        return 0;
    return cur == ns ? 0 : NERVE_EXDEV;
}

int nerve__mutex_claim(struct nerve__shm_lock *l, int fd, uint64_t ns)
{
    /* N1: the gate. */
    int64_t give_up = -1;
    while (ofd_lock(fd, NERVE__CLAIM_GATE, F_WRLCK) != 0) {
        int e = errno;
        if (e == EINVAL)
            return claim_by_record(l, ns);
        if (e != EAGAIN && e != EACCES && e != EINTR)
            return nerve__err_from_errno(e);
        int64_t now = mono_now();
        if (give_up < 0) {
            give_up = now + NERVE__CLAIM_WAIT_NS;
        } else if (now >= give_up) {
            return NERVE_EXDEV;
        }
        struct timespec ms = {0, 1000000};
        nanosleep(&ms, NULL);
    }
    /* N2: the claim byte, shared; only a gate holder takes it exclusively,
     * and the gate is ours. */
    int r = 0;
    if (ofd_lock(fd, NERVE__CLAIM_BYTE, F_RDLCK) != 0) {
        r = nerve__err_from_errno(errno);
        goto out;
    }
    if (ns == 0)
        goto out; /* no /proc: cannot tell, not checked (as before) */
    /* SYNC(ns-claim) acquire: a takeover's word reset (N4) is visible to
     * the writer that sees its namespace; pairs with N4's release. */
    uint64_t cur = nerve__load_acq(&l->pidns);
    /* Relaxed CAS: a first claim publishes nothing (the word is fresh). A
     * failed CAS leaves the recorded namespace in cur. */
    if (cur == 0 && nerve__cas_rlx(&l->pidns, &cur, ns))
        cur = ns;
    /* N3: is this the only writer handle? Any other holder of the byte is
     * an admitted writer (the gate keeps openers out). */
    if (ofd_lock(fd, NERVE__CLAIM_BYTE, F_WRLCK) != 0) {
        int e = errno;
        if (e != EAGAIN && e != EACCES) {
            r = nerve__err_from_errno(e);
        } else if (cur != ns) {
            r = NERVE_EXDEV; /* writers of another namespace are open */
        } else {
            goto out; /* admitted beside the open writers of ours */
        }
        (void)ofd_lock(fd, NERVE__CLAIM_BYTE, F_UNLCK);
        goto out;
    }
    NERVE_CRASHPOINT("claim.exclusive");
    /* N4: no other writer handle is open anywhere, so no thread holds or
     * waits for the word; any TID in it is stale -- also when the
     * recorded namespace looks like ours, for an inode number is reused
     * once its namespace is gone (a restarted container may get the old
     * number while the word still names the old PID 1). */
    if (nerve__load32_rlx(&l->word) != 0)
        nerve__store32_rel(&l->word, FUTEX_OWNER_DIED);
    NERVE_CRASHPOINT("claim.after-reset");
    if (cur != ns) {
        /* SYNC(ns-claim) release: the reset word is visible to any writer
         * that reads this namespace in N2; pairs with N2's acquire. (When
         * the namespace stays, later lockers reach the reset word by their
         * CAS, which reads the newest value of the word.) */
        nerve__store_rel(&l->pidns, ns);
        r = 1;
    }
    NERVE_CRASHPOINT("claim.after-ns");
    /* N5: keep the claim byte shared for the handle's life. */
    if (ofd_lock(fd, NERVE__CLAIM_BYTE, F_RDLCK) != 0)
        r = nerve__err_from_errno(errno);
out:
    (void)ofd_lock(fd, NERVE__CLAIM_GATE, F_UNLCK);
    return r;
}

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
    int64_t now = mono_now();
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
            now = mono_now();
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
    /* Uncontended: one CAS on a free word, no clock read, no reload (the
     * CAS is the acquire, and a word that was 0 carries no OWNER_DIED).
     * The robust-list steps are those of taken(), so a death at any point
     * is recovered exactly as on the general path. */
    uint32_t v0 = 0;
    if (nerve__cas32_acq(&l->word, &v0, tid)) {
        rl_enqueue(h, entry);
        __asm__ __volatile__("" ::: "memory");
        h->op_pending = NULL;
        return 0;
    }
    /* A relative timeout counts from here: the fast path took no time
     * worth measuring. */
    int64_t deadline; /* absolute CLOCK_MONOTONIC; -1: none */
    if (timeout_ns == NERVE_FOREVER) {
        deadline = -1;
    } else if (abstime) {
        deadline = timeout_ns < 0 ? 0 : timeout_ns;
    } else if (timeout_ns <= 0) {
        deadline = 0; /* passed: one try */
    } else {
        int64_t now = mono_now();
        deadline = timeout_ns > INT64_MAX - now ? -1 : now + timeout_ns;
    }
    if (deadline != 0)
        spin_for_free(l, tid, deadline);
    int pi2 = 1;
    int r;
    for (int spins = 0;; spins++) {
        uint32_t v = nerve__load32_rlx(&l->word);
        uint32_t owner = v & FUTEX_TID_MASK;
        if (v == 0) {
            if (nerve__cas32_acq(&l->word, &v, tid))
                return taken(l, h, entry, 0);
            continue;
        }
        if (owner == 0 && v == FUTEX_OWNER_DIED) {
            /* Freed by the kernel after its owner died; nobody queued. */
            if (nerve__cas32_acq(&l->word, &v, tid))
                return taken(l, h, entry, 1);
            continue;
        }
        if (owner == tid) {
            r = NERVE_EDEADLK;
            break;
        }
        long k;
        int passed = deadline >= 0 && mono_now() >= deadline;
        if (passed) {
            k = futex(&l->word, FUTEX_TRYLOCK_PI, 0, NULL);
        } else if (deadline < 0) {
            k = futex(&l->word, FUTEX_LOCK_PI2, 0, NULL);
            if (k != 0 && errno == ENOSYS)
                k = futex(&l->word, FUTEX_LOCK_PI, 0, NULL);
        } else {
            struct timespec ts = {(time_t)(deadline / 1000000000),
                                  (long)(deadline % 1000000000)};
            k = -1;
            errno = ENOSYS;
            if (pi2)
                k = futex(&l->word, FUTEX_LOCK_PI2, 0, &ts);
            if (k != 0 && errno == ENOSYS) {
                /* Before Linux 5.14 FUTEX_LOCK_PI times out on
                 * CLOCK_REALTIME only. */
                pi2 = 0;
                struct timespec rt;
                clock_gettime(CLOCK_REALTIME, &rt);
                int64_t left = deadline - mono_now();
                int64_t rnow = 0;
                (void)nerve__ns_from_timespec(&rt, &rnow);
                if (left < 0)
                    left = 0;
                /* Saturated: a deadline near INT64_MAX on the monotonic
                 * clock is still far in the future on the real-time one. */
                int64_t rdl = nerve__ns_add_sat(rnow, left);
                ts.tv_sec = (time_t)(rdl / 1000000000);
                ts.tv_nsec = (long)(rdl % 1000000000);
                k = futex(&l->word, FUTEX_LOCK_PI, 0, &ts);
            }
        }
        if (k == 0)
            return taken(l, h, entry, 0);
        int e = errno;
        if (e == ESRCH) {
            /* The word names a thread that does not exist in this PID
             * namespace (the only one writers run in): it cannot be alive
             * and the kernel will never release the lock. Take it over. */
            v = nerve__load32_rlx(&l->word);
            if ((v & FUTEX_TID_MASK) == owner && owner != 0 &&
                nerve__cas32_acq(&l->word, &v, tid | (v & FUTEX_WAITERS)))
                return taken(l, h, entry, 1);
            continue;
        }
        if (e == EINTR || (e == EAGAIN && !passed)) {
            /* EAGAIN: the owner is exiting; its robust list is being
             * walked. Bounded by the deadline; yield between tries. */
            if (e == EAGAIN && spins > 16)
                sched_yield();
            if (deadline >= 0 && mono_now() >= deadline && spins > 1000) {
                r = NERVE_ETIMEDOUT;
                break;
            }
            continue;
        }
        if (e == ETIMEDOUT || e == EWOULDBLOCK || e == EBUSY) {
            r = NERVE_ETIMEDOUT;
            break;
        }
        if (e == EDEADLK) {
            r = NERVE_EDEADLK;
            break;
        }
        if (e == ENOSYS) {
            r = NERVE_ENOSYS;
            break;
        }
        r = NERVE_ECORRUPT; /* EINVAL, EPERM, EFAULT */
        break;
    }
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

/* Does an open file description other than fd's hold the claim byte, that
 * is, is a writer handle open anywhere? 1 yes, 0 no, -1 cannot tell. */
static int claim_held(int fd)
{
    if (fd < 0)
        return -1;
    struct flock fl;
    memset(&fl, 0, sizeof fl);
    fl.l_type = F_WRLCK; /* conflicts with any holder */
    fl.l_whence = SEEK_SET;
    fl.l_start = NERVE__CLAIM_BYTE;
    fl.l_len = 1;
    if (fcntl(fd, F_OFD_GETLK, &fl) != 0)
        return -1;
    return fl.l_type != F_UNLCK;
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
        int held = claim_held(fd);
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

int nerve__mutex_repair(struct nerve__shm_lock *l, int force)
{
    for (int i = 0; i < 1000; i++) {
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
