/* The writer lock under every state a local user or a misusing program can
 * leave it in (issue 11, defects 2 and 7): no state aborts or hangs.
 *   - a lock word naming a thread that does not exist (corrupted, or left
 *     by a mapping dropped while held): the next put recovers it;
 *     nerve_chan_check reports it, nerve_chan_repair resets it;
 *   - a thread that exits holding a reservation: the kernel's robust list
 *     releases it and the next put recovers (glibc's own robust mutexes
 *     used around it keep working: the lists are shared);
 *   - commit / abort / close from another thread than the reserving one:
 *     NERVE_EPERM / NERVE_EBUSY, the reservation stays usable;
 *   - a second put by the reservation holder on another handle: EDEADLK;
 *   - timeouts that have already passed (negative relative, past absolute)
 *     in get, view, put, reserve and nerve_chan_wait_any: NERVE_ETIMEDOUT after
 *     one try. The watchdog (alarm) fails the test if any call blocks;
 *   - contention: a locker spins only a bounded time, then queues in the
 *     kernel (the word shows FUTEX_WAITERS) and gets the lock handed over;
 *     two writers putting back to back get distinct, gapless sequence
 *     numbers and leave the lock free. */
#include "nerve_test.h"

#include <fcntl.h>
#include <linux/futex.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define LOCK_OFF 128 /* struct nerve__shm_hdr.lock (docs/design/0001) */

static const char *g_name;

/* The lock word, through a private read-write mapping of the file (what a
 * hostile or buggy process with write access could do). */
static volatile uint32_t *map_word(void **base)
{
    *base = nt_map_header(g_name);
    return (volatile uint32_t *)((char *)*base + LOCK_OFF);
}

static void expect_check(const char *want)
{
    char msg[512];
    NT_OK(nerve_chan_check(g_name, msg, sizeof msg));
    if (!strstr(msg, want))
        NT_FAIL("check said \"%s\", expected \"%s\" in it", msg, want);
}

struct res_arg {
    nerve_chan *w;
    int phase; /* 0 reserve, then wait for 1, then commit (2: exit) */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int exit_holding;
    int rc;
};

static void set_phase(struct res_arg *a, int p)
{
    pthread_mutex_lock(&a->mu);
    a->phase = p;
    pthread_cond_broadcast(&a->cv);
    pthread_mutex_unlock(&a->mu);
}

static void wait_phase(struct res_arg *a, int p)
{
    pthread_mutex_lock(&a->mu);
    while (a->phase < p)
        pthread_cond_wait(&a->cv, &a->mu);
    pthread_mutex_unlock(&a->mu);
}

/* Reserve, report, wait to be told, then commit (or exit holding it). */
static void *reserver(void *arg)
{
    struct res_arg *a = arg;
    void *p;
    /* A glibc robust mutex locked around ours: both live in this thread's
     * robust list, in the same format. */
    pthread_mutexattr_t at;
    pthread_mutexattr_init(&at);
    pthread_mutexattr_setrobust(&at, PTHREAD_MUTEX_ROBUST);
    pthread_mutex_t gm;
    pthread_mutex_init(&gm, &at);
    NT_EQ(pthread_mutex_lock(&gm), 0);
    NT_OK(nerve_chan_reserve(a->w, 16, NERVE_FOREVER, &p, 0));
    memcpy(p, "reserved-message", 16);
    pthread_mutex_t gm2;
    pthread_mutex_init(&gm2, &at);
    NT_EQ(pthread_mutex_lock(&gm2), 0);
    NT_EQ(pthread_mutex_unlock(&gm), 0);
    set_phase(a, 1);
    wait_phase(a, 2);
    NT_EQ(pthread_mutex_unlock(&gm2), 0);
    if (a->exit_holding)
        return NULL; /* the thread ends holding the writer lock */
    a->rc = nerve_chan_commit(a->w, 16, NULL);
    set_phase(a, 3);
    return NULL;
}

static void start_reserver(struct res_arg *a, pthread_t *t, nerve_chan *w,
                           int exit_holding)
{
    memset(a, 0, sizeof *a);
    pthread_mutex_init(&a->mu, NULL);
    pthread_cond_init(&a->cv, NULL);
    a->w = w;
    a->exit_holding = exit_holding;
    a->rc = 1;
    NT_EQ(pthread_create(t, NULL, reserver, a), 0);
    wait_phase(a, 1);
}

/* Put `n` messages back to back; record each sequence number. */
struct putter_arg {
    nerve_chan *w;
    unsigned n;
    uint64_t *seqs;
    int rc;
};

static void *putter(void *arg)
{
    struct putter_arg *a = arg;
    struct nerve_put_info pi;
    a->rc = 0;
    for (unsigned i = 0; i < a->n && a->rc == 0; i++) {
        a->rc = nerve_chan_put(a->w, "contended", 9, NERVE_FOREVER, &pi, 0);
        a->seqs[i] = pi.seq;
    }
    return NULL;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* 1. A lock word naming threads that do not exist (word is w's lock
 * word): recovered by a put, reset by a repair. */
static void bogus_lock_words(nerve_chan *w, volatile uint32_t *word)
{
    struct nerve_put_info pi;
    static const uint32_t bogus[] = {
        0x3ffffff0u,               /* beyond any pid_max */
        0x3ffffff0u | 0x80000000u, /* ... with FUTEX_WAITERS */
        0x40000000u | 0x80000000u, /* owner died, waiters, no kernel state */
    };
    for (unsigned i = 0; i < sizeof bogus / sizeof bogus[0]; i++) {
        *word = bogus[i];
        if (i < 2)
            expect_check("does not exist");
        NT_OK(nerve_chan_put(w, "x", 1, 1000000000, &pi, 0));
        NT_EQ(pi.recovered, 1);
        NT_EQ(*word, 0);
        expect_check("writer lock: free");
    }
    /* Repair (writers only) resets such a word; a free lock needs none. */
    char msg[512];
    NT_EQ(nerve_chan_repair(g_name, 0, msg, sizeof msg), 0);
    *word = 0x3ffffff0u;
    NT_EQ(nerve_chan_repair(g_name, 0, msg, sizeof msg), 1);
    NT_EQ(*word, 0x40000000u);
    expect_check("owner died");
    NT_OK(nerve_chan_put(w, "y", 1, 0, &pi, 0));
    NT_EQ(pi.recovered, 1);
    NT_RC(nerve_chan_repair(g_name, 0x80, msg, sizeof msg), NERVE_EINVAL);
}

/* 4. Passed timeouts on the read side: get, view, wait_any. */
static void read_timeouts(nerve_chan *r)
{
    char buf[64];
    struct nerve_get_info gi;
    NT_OK(nerve_chan_get(r, buf, sizeof buf, 0, 0, &gi, NERVE_GET_NEWEST));
    uint32_t wf = NERVE_GET_NEXT | NERVE_F_WAIT;
    NT_RC(nerve_chan_get(r, buf, sizeof buf, 0, -1, &gi, wf), NERVE_ETIMEDOUT);
    NT_RC(nerve_chan_get(r, buf, sizeof buf, 0, -123456789, &gi, wf),
          NERVE_ETIMEDOUT);
    NT_RC(nerve_chan_get(r, buf, sizeof buf, 0, 1, &gi, wf | NERVE_F_ABSTIME),
          NERVE_ETIMEDOUT);
    struct nerve_view v;
    NT_RC(nerve_chan_view(r, 0, -1, &v, wf), NERVE_ETIMEDOUT);
    uint64_t ready = 7;
    NT_RC(nerve_chan_wait_any(&r, 1, -1, &ready, 0), NERVE_ETIMEDOUT);
    NT_EQ(ready, 0);
    NT_RC(nerve_chan_wait_any(&r, 1, -1000000000, &ready, 0), NERVE_ETIMEDOUT);
    NT_RC(nerve_chan_wait_any(&r, 1, nerve_clock_now_ns() - 1000, &ready,
                              NERVE_F_ABSTIME),
          NERVE_ETIMEDOUT);
    /* NERVE_FOREVER is not a time any subtraction gives. */
    NT_EQ(NERVE_FOREVER, INT64_MIN);
}

/* 5. Contention. A put that waits longer than the spin bound queues in
 * the kernel, so the word gains FUTEX_WAITERS (an unbounded spin would
 * never set it), and gets the lock when the holder commits. */
static void contention(nerve_chan *w, nerve_chan *w2, nerve_chan *r,
                       volatile uint32_t *word)
{
    char buf[64];
    struct nerve_get_info gi;
    struct res_arg a;
    pthread_t t;
    start_reserver(&a, &t, w, 0);
    uint64_t one_seq;
    struct putter_arg q = {w2, 1, &one_seq, 1};
    pthread_t qt;
    NT_EQ(pthread_create(&qt, NULL, putter, &q), 0);
    int64_t give_up = nerve_clock_now_ns() + 10000000000ll;
    while (!(*word & FUTEX_WAITERS) && nerve_clock_now_ns() < give_up)
        usleep(1000);
    NT_ASSERT(*word & FUTEX_WAITERS);
    set_phase(&a, 2);
    wait_phase(&a, 3);
    NT_EQ(pthread_join(t, NULL), 0);
    NT_EQ(pthread_join(qt, NULL), 0);
    NT_EQ(a.rc, 0);
    NT_EQ(q.rc, 0);
    NT_OK(nerve_chan_get(r, buf, sizeof buf, 0, 0, &gi, NERVE_GET_NEWEST));
    NT_EQ(gi.seq, one_seq);
    NT_ASSERT(memcmp(buf, "contended", 9) == 0);
    NT_EQ(*word, 0);
    /* Two writers back to back: every put succeeds under the lock, the
     * sequence numbers are one gapless run, and the lock ends free. */
    enum { N = 20000 };
    static uint64_t seqs[2 * N];
    uint64_t first = one_seq + 1;
    struct putter_arg pa[2] = {{w, N, seqs, 1}, {w2, N, seqs + N, 1}};
    pthread_t pt[2];
    for (int i = 0; i < 2; i++)
        NT_EQ(pthread_create(&pt[i], NULL, putter, &pa[i]), 0);
    for (int i = 0; i < 2; i++) {
        NT_EQ(pthread_join(pt[i], NULL), 0);
        NT_EQ(pa[i].rc, 0);
    }
    qsort(seqs, 2 * N, sizeof seqs[0], cmp_u64);
    for (unsigned i = 0; i < 2 * N; i++)
        NT_EQ(seqs[i], first + i);
    NT_EQ(*word, 0);
    expect_check("writer lock: free");
}

/* 3. A thread that ends holding a reservation of w2: the kernel releases
 * the lock through its robust list; the next put (by w) recovers. */
static void dead_holder(nerve_chan *w, nerve_chan *w2)
{
    struct nerve_put_info pi;
    struct res_arg a;
    pthread_t t;
    start_reserver(&a, &t, w2, 1);
    set_phase(&a, 2);
    NT_EQ(pthread_join(t, NULL), 0);
    expect_check("owner died");
    NT_OK(nerve_chan_put(w, "after", 5, 1000000000, &pi, 0));
    NT_EQ(pi.recovered, 1);
    /* w2's reservation belonged to the dead thread: commit from here is
     * refused (never an unlock of a lock this thread does not hold); a put
     * or close finds it orphaned and drops it. */
    NT_RC(nerve_chan_commit(w2, 1, NULL), NERVE_EPERM);
    NT_OK(nerve_chan_put(w2, "w2", 2, 1000000000, &pi, 0));
    NT_EQ(pi.recovered, 0);
}

int main(void)
{
    nt_watchdog(60);
    g_name = nt_name("lock");
    nt_create(g_name, 8, 4096);
    nerve_chan *w, *w2, *r;
    NT_OK(nerve_chan_open(g_name, NERVE_O_WRITE, &w));
    NT_OK(nerve_chan_open(g_name, NERVE_O_WRITE, &w2));
    NT_OK(nerve_chan_open(g_name, NERVE_O_READ, &r));
    struct nerve_put_info pi;
    char buf[64];
    struct nerve_get_info gi;
    void *p;
    char msg[512];
    expect_check("writer lock: free");

    void *base;
    volatile uint32_t *word = map_word(&base);
    bogus_lock_words(w, word);

    /* 2. Misuse across threads: commit, abort and close from a thread that
     * does not hold the reservation are refused and leave it usable; a
     * second put by the holder is EDEADLK; passed timeouts return at once. */
    struct res_arg a;
    pthread_t t;
    start_reserver(&a, &t, w, 0);
    expect_check("(alive)");
    NT_EQ(nerve_chan_repair(g_name, 0, msg, sizeof msg), NERVE_EBUSY);
    NT_RC(nerve_chan_commit(w, 16, &pi), NERVE_EPERM);
    NT_RC(nerve_chan_abort(w), NERVE_EPERM);
    NT_RC(nerve_chan_close(w), NERVE_EBUSY);
    NT_RC(nerve_chan_put(w, "z", 1, 0, NULL, 0), NERVE_EPERM);
    /* Defect 7: every passed timeout is one try, then ETIMEDOUT. */
    NT_RC(nerve_chan_put(w2, "z", 1, -1, NULL, 0), NERVE_ETIMEDOUT);
    NT_RC(nerve_chan_put(w2, "z", 1, -5000000000ll, NULL, 0), NERVE_ETIMEDOUT);
    NT_RC(nerve_chan_put(w2, "z", 1, 0, NULL, 0), NERVE_ETIMEDOUT);
    NT_RC(nerve_chan_put(w2, "z", 1, nerve_clock_now_ns() - 1, NULL,
                         NERVE_F_ABSTIME),
          NERVE_ETIMEDOUT);
    NT_RC(nerve_chan_put(w2, "z", 1, -1, NULL, NERVE_F_ABSTIME),
          NERVE_ETIMEDOUT);
    NT_RC(nerve_chan_reserve(w2, 1, -1, &p, 0), NERVE_ETIMEDOUT);
    NT_RC(nerve_chan_reserve(w2, 1, INT64_MIN + 1, &p, 0), NERVE_ETIMEDOUT);
    /* A relative timeout that does pass while the lock is held. */
    NT_RC(nerve_chan_put(w2, "z", 1, 2000000, NULL, 0), NERVE_ETIMEDOUT);
    set_phase(&a, 2);
    wait_phase(&a, 3);
    NT_EQ(pthread_join(t, NULL), 0);
    NT_EQ(a.rc, 0);
    NT_OK(nerve_chan_get(r, buf, sizeof buf, 0, 0, &gi, NERVE_GET_NEWEST));
    NT_EQ(gi.len, 16);
    NT_ASSERT(memcmp(buf, "reserved-message", 16) == 0);
    expect_check("writer lock: free");

    dead_holder(w, w2);
    read_timeouts(r);

    contention(w, w2, r, word);

    munmap(base, 4096);
    NT_OK(nerve_chan_close(w));
    NT_OK(nerve_chan_close(r));
    NT_OK(nerve_chan_close(w2));
    NT_OK(nerve_chan_unlink(g_name));
    printf("ok\n");
    return 0;
}
