/* Crash torture: writers killed with SIGKILL by the thousand, at random
 * instants and at every named crash point, readers killed while waiting,
 * and a writer stopped (SIGSTOP) while it holds the writer lock, all while
 * readers verify every message they receive.
 *
 *   torture [--kills N] [--seed S] [--writers W] [--readers R]
 *
 * A writer incarnation has its own id and numbers its messages 1, 2, ...;
 * every payload carries (id, counter) and a checksum (nt_payload_fill), so
 * a reader recognises a torn, half-written, stale or duplicated message.
 * Readers check, per message: the checksum, the length, the per-writer
 * counter strictly increasing, the sequence number strictly increasing and
 * delivered + missed consistent (info.missed == seq - previous cursor - 1).
 * Reader kinds: NEXT with an untimed wait (copy), NEWEST with a wait,
 * NEXT zero-copy views validated with nerve_chan_view_check(), and SEQ
 * reads of random sequence numbers.
 *
 * Kills: each round kills one running writer at a random instant of its
 * put loop, then starts one armed with the next crash point (in turn) and
 * a random skip count, which kills itself there. Every 40 rounds a reader
 * is killed (usually while it waits). Every 100 rounds a writer takes a
 * reservation and stops itself holding the lock: the other writers must
 * time out on the lock (NERVE_ETIMEDOUT), then the stopped writer is
 * continued or killed. Every 50 rounds the lock word of a free lock is
 * set to a thread id that does not exist (what a lock whose owner's
 * robust-list entry was lost looks like): the next writer must take it
 * over (ESRCH) and recover. Every 50 rounds a namespace episode
 * (WRITERS' NAMESPACE in src/platform/linux/mutex.c): every writer is
 * killed, a writer in a new PID namespace dies inside its takeover of the
 * channel at the next claim crash point, the lock word is made to name a
 * live thread of this namespace (the conductor: a TID that a takeover must
 * not trust), a writer in another new namespace takes the channel over
 * and puts until it is killed, and then this namespace's writers take it
 * back. Without CAP_SYS_ADMIN (no unshare) the namespaces are played by
 * writing a made-up namespace id into the header before each open, which
 * drives the same takeover code. Writers now and then try to commit, abort and
 * close their open reservation from another thread, which must be refused
 * (EPERM, EBUSY) and leave the reservation usable. At the end, once the
 * killed readers' wake leases have run out, puts must make no futex call.
 *
 * Prints the counts (kills, recoveries, messages verified, failures) and
 * fails if any message failed verification, if a crash point never fired,
 * if no lock was ever recovered, or if the channel is not consistent and
 * usable at the end. Linked with the crash-point build of the core
 * (nerve_crash). */
#include "nerve_test.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* Internal to the crash build; tests declare it themselves. */
void nerve__crashpoint_arm(const char *name, long skip);
#include "platform.h"

#include "crashpoint.h"

/* Every NERVE_CRASHPOINT of src/chan.c. */
static const char *const points[] = {NERVE_CRASHPOINT_NAMES};
#define NPOINTS (sizeof points / sizeof points[0])
/* And of a takeover from another PID namespace. */
static const char *const cpoints[] = {NERVE_CRASHPOINT_CLAIM_NAMES};
#define NCPOINTS (sizeof cpoints / sizeof cpoints[0])

#define SLOTS 16
#define DATA 16384
#define MAXW 8
#define MAXR 8
/* Lock timeout of the writers: short, so a stopped lock holder is noticed
 * quickly; a timeout is counted, never a failure. */
#define LOCK_TIMEOUT_NS 5000000

enum { RK_NEXT, RK_NEWEST, RK_VIEW, RK_SEQ, RK_KINDS };
static const char *const kind_names[] = {"next-wait", "newest-wait", "view",
                                         "seq"};

struct shared {
    atomic_int stop;
    atomic_uint next_id;
    atomic_ulong puts, recoveries, lock_timeouts, elapsed;
    atomic_ulong verified[RK_KINDS], missed, stale, overwritten;
    atomic_ulong failures;
    atomic_ulong fired[NPOINTS];
    atomic_ulong puts_of[MAXW]; /* puts of the incarnation in writer slot */
    atomic_ulong misuse_refused;
    atomic_int ns_init; /* PID 1 of a namespace episode's writer, as this
                           namespace numbers it */
};
static struct shared *sh;
static const char *chan;
static unsigned max_ids;

static uint64_t rnd(uint64_t *x)
{
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    return *x;
}

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* A short pause that is randomness, not synchronisation: it picks the
 * instant of a kill. */
static void pause_ns(uint64_t ns)
{
    struct timespec ts = {(time_t)(ns / 1000000000u), (long)(ns % 1000000000u)};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

/* ---- writers ---------------------------------------------------------- */

/* The size of the next message: mostly small, sometimes half the ring,
 * sometimes the whole ring (which invalidates every other message). */
static size_t pick_len(uint64_t *x)
{
    uint64_t r = rnd(x) % 64;
    if (r == 0)
        return DATA;
    if (r < 4)
        return DATA / 2 + rnd(x) % (DATA / 2);
    return 24 + rnd(x) % 2000;
}

/* One writer incarnation: puts checksummed messages until told to stop or
 * killed. `point` (may be NULL) is armed with `skip`; `stopper` takes one
 * reservation and stops itself holding the lock. */
/* Another thread of the writer tries to finish its reservation. */
static void *misuse(void *arg)
{
    nerve_chan *w = arg;
    if (nerve_chan_commit(w, 24, NULL) == NERVE_EPERM &&
        nerve_chan_abort(w) == NERVE_EPERM &&
        nerve_chan_close(w) == NERVE_EBUSY)
        atomic_fetch_add(&sh->misuse_refused, 1);
    else
        atomic_fetch_add(&sh->failures, 1);
    return NULL;
}

static void writer(unsigned slot, uint32_t id, uint64_t seed, const char *point,
                   long skip, int stopper)
{
    nerve_chan *w;
    /* A claim point fires inside the open. */
    if (point && strncmp(point, "claim.", 6) == 0)
        nerve__crashpoint_arm(point, skip);
    NT_OK(nerve_chan_open(chan, NERVE_O_WRITE, &w));
    static unsigned char buf[DATA];
    uint64_t x = seed | 1;
    /* The reserve path for the reserve/commit points, put for the put.*
     * ones, either otherwise. */
    int use_reserve = -1;
    if (point && strncmp(point, "claim.", 6) != 0) {
        use_reserve = strncmp(point, "put.", 4) != 0;
        nerve__crashpoint_arm(point, skip);
    }
    for (uint64_t n = 1; !atomic_load(&sh->stop); n++) {
        size_t len = pick_len(&x);
        int reserve = use_reserve >= 0 ? use_reserve : (int)(rnd(&x) % 4 == 0);
        struct nerve_put_info pi;
        int r;
        if (stopper || reserve) {
            void *p;
            r = nerve_chan_reserve(w, len, LOCK_TIMEOUT_NS, &p, 0);
            if (r == 0) {
                /* Commit fewer bytes than reserved now and then. */
                size_t clen = len;
                if (rnd(&x) % 4 == 0)
                    clen = 24 + rnd(&x) % (len - 23);
                nt_payload_fill(p, clen, id, n);
                if (rnd(&x) % 64 == 0) {
                    pthread_t t;
                    if (pthread_create(&t, NULL, misuse, w) == 0)
                        pthread_join(t, NULL);
                }
                if (stopper) {
                    stopper = 0;
                    raise(SIGSTOP); /* holding the lock */
                }
                NT_OK(nerve_chan_commit(w, clen, &pi));
            }
        } else {
            nt_payload_fill(buf, len, id, n);
            r = nerve_chan_put(w, buf, len, LOCK_TIMEOUT_NS, &pi, 0);
        }
        if (r == NERVE_ETIMEDOUT) {
            atomic_fetch_add(&sh->lock_timeouts, 1);
            n--; /* this counter was not published */
            continue;
        }
        NT_OK(r);
        if (pi.recovered)
            atomic_fetch_add(&sh->recoveries, 1);
        atomic_fetch_add(&sh->puts, 1);
        atomic_fetch_add(&sh->puts_of[slot], 1);
    }
    nerve_chan_close(w);
    exit(0);
}

/* ---- readers ---------------------------------------------------------- */

static nerve_chan *reader_chan;

static void on_usr1(int sig)
{
    (void)sig;
    if (reader_chan)
        nerve_chan_cancel(reader_chan); /* async-signal-safe */
}

#define RFAIL(...)                                                             \
    do {                                                                       \
        fprintf(stderr, "reader %s: FAIL: ", kind_names[kind]);                \
        fprintf(stderr, __VA_ARGS__);                                          \
        fprintf(stderr, "\n");                                                 \
        atomic_fetch_add(&sh->failures, 1);                                    \
    } while (0)

/* Check one delivered message; last[] holds the newest counter seen per
 * writer id. SEQ reads skip the per-writer order (they read anything). */
static void check_msg(int kind, const void *p, const struct nerve_get_info *gi,
                      uint64_t *last)
{
    uint32_t id;
    uint64_t counter;
    if (gi->len < 24 || gi->len > DATA) {
        RFAIL("seq %" PRIu64 ": length %" PRIu64, gi->seq, gi->len);
        return;
    }
    if (!nt_payload_check(p, gi->len, &id, &counter)) {
        RFAIL("seq %" PRIu64 " (%" PRIu64 " bytes): bad checksum", gi->seq,
              gi->len);
        return;
    }
    if (id == 0 || id >= max_ids) {
        RFAIL("seq %" PRIu64 ": writer id %u out of range", gi->seq, id);
        return;
    }
    if (kind != RK_SEQ) {
        if (counter <= last[id])
            RFAIL("seq %" PRIu64 ": writer %u counter %" PRIu64
                  " after %" PRIu64,
                  gi->seq, id, counter, last[id]);
        last[id] = counter;
    }
    atomic_fetch_add(&sh->verified[kind], 1);
}

/* One zero-copy read (RK_VIEW): the next message's view, its bytes
 * checked in place and then validated; a stale view is counted, never
 * checked as data. Returns nerve_chan_view's status. */
static int read_view(nerve_chan *c, unsigned char *buf, uint64_t *cursor,
                     uint64_t *last)
{
    const int kind = RK_VIEW; /* for RFAIL */
    struct nerve_view v;
    int r =
        nerve_chan_view(c, 0, NERVE_FOREVER, &v, NERVE_GET_NEXT | NERVE_F_WAIT);
    if (r == 0) {
        if (v.info.seq <= *cursor || v.info.missed != v.info.seq - *cursor - 1)
            RFAIL("view seq %" PRIu64 " missed %" PRIu64
                  " after cursor %" PRIu64,
                  v.info.seq, v.info.missed, *cursor);
        atomic_fetch_add(&sh->missed, v.info.missed);
        *cursor = v.info.seq;
        /* Use the bytes in place, then ask whether they held. */
        uint32_t id = 0;
        uint64_t counter = 0;
        int ok = v.info.len >= 24 &&
                 nt_payload_check(v.data, v.info.len, &id, &counter);
        int vr = nerve_chan_view_check(c, &v);
        if (vr == NERVE_ESTALE) {
            atomic_fetch_add(&sh->stale, 1);
        } else if (vr != 0) {
            RFAIL("view_check: %s", nerve_err_name(vr));
        } else if (!ok) {
            RFAIL("view seq %" PRIu64 ": bad checksum yet view_check 0",
                  v.info.seq);
        } else {
            /* Copy out to run the common checks. */
            memcpy(buf, v.data, v.info.len);
            if (nerve_chan_view_check(c, &v) == 0)
                check_msg(kind, buf, &v.info, last);
        }
    }
    return r;
}

static void reader(int kind, uint64_t seed)
{
    nerve_chan *c;
    NT_OK(nerve_chan_open(chan, NERVE_O_READ, &c));
    reader_chan = c;
    uint64_t *last = calloc(max_ids, sizeof *last);
    unsigned char *buf = malloc(DATA);
    NT_ASSERT(last && buf);
    uint64_t x = seed | 1;
    /* Start at the newest message, as a late-joining reader would. */
    struct nerve_stats st;
    NT_OK(nerve_chan_stat(c, &st));
    nerve_chan_seek(c, st.head_seq);
    uint64_t cursor = st.head_seq;
    while (!atomic_load(&sh->stop)) {
        struct nerve_get_info gi;
        int r;
        if (kind == RK_NEXT || kind == RK_NEWEST) {
            uint32_t mode = kind == RK_NEXT ? NERVE_GET_NEXT : NERVE_GET_NEWEST;
            r = nerve_chan_get(c, buf, DATA, 0, NERVE_FOREVER, &gi,
                               mode | NERVE_F_WAIT);
            if (r == 0) {
                if (gi.seq <= cursor || gi.missed != gi.seq - cursor - 1)
                    RFAIL("seq %" PRIu64 " missed %" PRIu64
                          " after cursor %" PRIu64,
                          gi.seq, gi.missed, cursor);
                atomic_fetch_add(&sh->missed, gi.missed);
                cursor = gi.seq;
                check_msg(kind, buf, &gi, last);
            }
        } else if (kind == RK_VIEW) {
            r = read_view(c, buf, &cursor, last);
        } else {
            NT_OK(nerve_chan_stat(c, &st));
            if (st.head_seq == 0) {
                /* Nothing yet: wait for a first message. */
                r = nerve_chan_get(c, buf, DATA, 0, NERVE_FOREVER, &gi,
                                   NERVE_GET_NEWEST | NERVE_F_WAIT |
                                       NERVE_F_REPEAT);
                continue;
            }
            uint64_t lo = st.tail_seq > 2 ? st.tail_seq - 2 : 1;
            uint64_t want = lo + rnd(&x) % (st.head_seq - lo + 3);
            r = nerve_chan_get(c, buf, DATA, (int64_t)want, 0, &gi,
                               NERVE_GET_SEQ);
            if (r == 0) {
                if (gi.seq != want)
                    RFAIL("asked seq %" PRIu64 ", got %" PRIu64, want, gi.seq);
                check_msg(kind, buf, &gi, last);
            } else if (r == NERVE_EOVERWRITTEN) {
                atomic_fetch_add(&sh->overwritten, 1);
                r = 0;
            } else if (r == NERVE_EAGAIN) {
                r = 0;
            }
        }
        if (r == NERVE_ELAPPED) {
            atomic_fetch_add(&sh->elapsed, 1);
        } else if (r == NERVE_ECANCELED) {
            break;
        } else if (r != 0) {
            RFAIL("get: %s", nerve_err_name(r));
        }
    }
    /* The conductor repeats SIGUSR1 until this process is gone: no
     * handler may touch the handle once it is closed. */
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGUSR1);
    sigprocmask(SIG_BLOCK, &set, NULL);
    reader_chan = NULL;
    nerve_chan_close(c);
    free(last);
    free(buf);
    exit(0);
}

/* ---- the conductor ---------------------------------------------------- */

struct proc {
    pid_t pid;
    int point; /* armed crash point, or -1 */
};
static struct proc wr[MAXW], rd[MAXR];
static int nwriters = 3, nreaders = 4;
static uint64_t seed = 1;
static unsigned long ghosts;
/* The lock word (header offset 128) through this process's own mapping. */
static uint32_t *lock_word;

/* A free lock's word set to a TID no thread has (beyond any pid_max). */
static void ghost_lock(void)
{
    /* Writers hold it most of the time: catch it free (bounded). */
    for (long i = 0; i < 1000000; i++) {
        uint32_t free_word = 0;
        if (__atomic_compare_exchange_n(lock_word, &free_word, 0x3ffffff0u, 0,
                                        __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) {
            ghosts++;
            return;
        }
    }
}

static atomic_int zwakes;
static int count_wake(const uint32_t *word, int shared, int n)
{
    atomic_fetch_add(&zwakes, 1);
    return nerve__futex_linux.wake(word, shared, n);
}
static void count_wake_all(const uint32_t *word, int shared)
{
    atomic_fetch_add(&zwakes, 1);
    nerve__futex_linux.wake_all(word, shared);
}

static unsigned long kills_random, kills_point, kills_stopped, reader_kills,
    stop_episodes;

static pid_t spawn_writer(unsigned slot, int point, long skip, int stopper)
{
    uint32_t id = atomic_fetch_add(&sh->next_id, 1);
    NT_ASSERT(id < max_ids);
    atomic_store(&sh->puts_of[slot], 0);
    uint64_t s = rnd(&seed);
    fflush(NULL);
    pid_t pid = fork();
    NT_ASSERT(pid >= 0);
    if (pid == 0) {
        /* Die with the conductor (its watchdog leaves nothing running). */
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        writer(slot, id, s, point >= 0 ? points[point] : NULL, skip, stopper);
    }
    wr[slot].pid = pid;
    wr[slot].point = point;
    return pid;
}

static pid_t spawn_reader(int i)
{
    uint64_t s = rnd(&seed);
    fflush(NULL);
    pid_t pid = fork();
    NT_ASSERT(pid >= 0);
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        reader(i % RK_KINDS, s);
    }
    rd[i].pid = pid;
    return pid;
}

/* Wait for a process that must die of SIGKILL. */
static void reap_killed(pid_t pid, const char *what)
{
    int st;
    NT_EQ(waitpid(pid, &st, 0), pid);
    if (!WIFSIGNALED(st) || WTERMSIG(st) != SIGKILL)
        NT_FAIL("%s %d: did not die of SIGKILL (status 0x%x)", what, (int)pid,
                st);
}

/* Poll (this is observation with a bound, not a sleep to synchronise) until
 * cond holds. */
#define WAIT_UNTIL(cond)                                                       \
    do {                                                                       \
        while (!(cond))                                                        \
            pause_ns(50000);                                                   \
    } while (0)

/* One writer stops itself holding the lock; the others must time out on
 * it; then continue or kill it. */
static void stop_episode(unsigned slot, int kill_it)
{
    kill(wr[slot].pid, SIGKILL);
    reap_killed(wr[slot].pid, "writer");
    kills_random++;
    pid_t pid = spawn_writer(slot, -1, 0, 1);
    int st;
    NT_EQ(waitpid(pid, &st, WUNTRACED), pid);
    if (!WIFSTOPPED(st))
        NT_FAIL("stopper %d did not stop (status 0x%x)", (int)pid, st);
    unsigned long before = atomic_load(&sh->lock_timeouts);
    WAIT_UNTIL(atomic_load(&sh->lock_timeouts) > before);
    if (kill_it) {
        kill(pid, SIGKILL);
        reap_killed(pid, "stopped writer");
        kills_stopped++;
        spawn_writer(slot, -1, 0, 0);
    } else {
        kill(pid, SIGCONT);
    }
    stop_episodes++;
}

/* ---- namespace episodes ------------------------------------------------ */

static int ns_real;          /* unshare(CLONE_NEWPID) works here */
static uint64_t *pidns_word; /* lock.pidns in the header */
static unsigned long ns_episodes, cfired[NCPOINTS];

static int can_unshare(void)
{
    fflush(NULL);
    pid_t pid = fork();
    NT_ASSERT(pid >= 0);
    if (pid == 0)
        _exit(unshare(CLONE_NEWPID) == 0 ? 0 : 77);
    int st;
    NT_EQ(waitpid(pid, &st, 0), pid);
    return WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

/* Without unshare: make the next writer open see another namespace's
 * channel (no writer is open when this is called). */
static void fake_foreign(void)
{
    __atomic_store_n(pidns_word, 0x7fff0000ull + ns_episodes, __ATOMIC_SEQ_CST);
}

/* A writer in a new PID namespace, or one that plays it. Returns the
 * process to reap: this process's child M, which makes the namespace and
 * whose PID 1 (sh->ns_init) forks the writer -- a namespace's PID 1
 * ignores the SIGKILL it sends itself, as a crash point does. M ends as
 * the writer did: exit status 128 + signal when it was killed. */
static pid_t spawn_ns_writer(unsigned slot, const char *point)
{
    uint32_t id = atomic_fetch_add(&sh->next_id, 1);
    NT_ASSERT(id < max_ids);
    atomic_store(&sh->puts_of[slot], 0);
    atomic_store(&sh->ns_init, 0);
    uint64_t s = rnd(&seed);
    if (!ns_real)
        fake_foreign();
    fflush(NULL);
    pid_t m = fork();
    NT_ASSERT(m >= 0);
    if (m != 0)
        return m;
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (!ns_real)
        writer(slot, id, s, point, 0, 0);
    if (unshare(CLONE_NEWPID) != 0)
        _exit(1);
    pid_t init = fork();
    if (init < 0)
        _exit(1);
    if (init == 0) {
        pid_t w = fork();
        if (w < 0)
            _exit(1);
        if (w == 0) {
            prctl(PR_SET_PDEATHSIG, SIGKILL);
            writer(slot, id, s, point, 0, 0);
        }
        int st;
        if (waitpid(w, &st, 0) != w)
            _exit(1);
        _exit(WIFSIGNALED(st) ? 128 + WTERMSIG(st) : WEXITSTATUS(st));
    }
    atomic_store(&sh->ns_init, init);
    int st;
    if (waitpid(init, &st, 0) != init)
        _exit(1);
    _exit(WIFSIGNALED(st) ? 128 + WTERMSIG(st) : WEXITSTATUS(st));
}

/* Reap a namespace writer that must have been killed. */
static void reap_ns_killed(pid_t pid, const char *what)
{
    int st;
    NT_EQ(waitpid(pid, &st, 0), pid);
    if (!(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL) &&
        !(WIFEXITED(st) && WEXITSTATUS(st) == 128 + SIGKILL))
        NT_FAIL("%s %d: was not killed (status 0x%x)", what, (int)pid, st);
}

/* Another namespace takes the channel over, twice (one dying inside the
 * takeover), then this one takes it back. */
static void ns_episode(void)
{
    unsigned k = (unsigned)(ns_episodes % NCPOINTS);
    for (int i = 0; i < nwriters; i++) {
        kill(wr[i].pid, SIGKILL);
        reap_killed(wr[i].pid, "writer");
        kills_random++;
    }
    /* No writer is left: the next open takes over, and dies there. */
    pid_t m = spawn_ns_writer(0, cpoints[k]);
    reap_ns_killed(m, "writer armed in its takeover");
    cfired[k]++;
    kills_point++;
    /* The word names a live thread (this one), as a lost robust entry of
     * another namespace's writer may: the takeover must not trust it. */
    __atomic_store_n(lock_word, (uint32_t)getpid(), __ATOMIC_SEQ_CST);
    m = spawn_ns_writer(0, NULL);
    WAIT_UNTIL(atomic_load(&sh->puts_of[0]) > 0);
    if (ns_real) {
        WAIT_UNTIL(atomic_load(&sh->ns_init) != 0);
        kill(atomic_load(&sh->ns_init), SIGKILL); /* the whole namespace */
    } else {
        kill(m, SIGKILL);
    }
    reap_ns_killed(m, "namespace writer");
    kills_random++;
    /* Back to this namespace's writers. */
    if (!ns_real)
        fake_foreign();
    for (int i = 0; i < nwriters; i++)
        spawn_writer((unsigned)i, -1, 0, 0);
    ns_episodes++;
}

/* The options; returns --kills. */
static long parse_args(int argc, char **argv)
{
    long kills = 2000;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--kills") && i + 1 < argc)
            kills = atol(argv[++i]);
        else if (!strcmp(argv[i], "--seed") && i + 1 < argc)
            seed = strtoull(argv[++i], NULL, 0);
        else if (!strcmp(argv[i], "--writers") && i + 1 < argc)
            nwriters = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--readers") && i + 1 < argc)
            nreaders = atoi(argv[++i]);
        else
            NT_FAIL("usage: %s [--kills N] [--seed S] [--writers W] "
                    "[--readers R]",
                    argv[0]);
    }
    if (nwriters < 2 || nwriters > MAXW || nreaders < 1 || nreaders > MAXR ||
        kills < 300)
        /* 300: enough rounds for a namespace episode at each claim point. */
        NT_FAIL("need 2..%d writers, 1..%d readers, >= 300 kills", MAXW, MAXR);
    return kills;
}

/* Map the channel's header to watch and forge its lock words. */
static void map_lock_words(void)
{
    void *m = nt_map_header(chan);
    lock_word = (uint32_t *)((char *)m + 128);
    pidns_word = (uint64_t *)((char *)m + 128 + 64);
}

/* Kill writers (and now and then a reader) until `kills` writers died:
 * at random instants, at crash points, stopped holding the lock, with
 * ghost lock words and PID namespace episodes in between. */
static void run_rounds(long kills)
{
    long round = 0;
    unsigned long done = 0;
    while ((long)done < kills) {
        unsigned slot = (unsigned)(rnd(&seed) % (unsigned)nwriters);
        if (round % 100 == 99) {
            stop_episode(slot, (round / 100) % 2);
            done = kills_random + kills_point + kills_stopped;
            round++;
            continue;
        }
        /* A random instant of a writer that is inside its put loop. */
        WAIT_UNTIL(atomic_load(&sh->puts_of[slot]) > 0);
        pause_ns(rnd(&seed) % 300000);
        kill(wr[slot].pid, SIGKILL);
        reap_killed(wr[slot].pid, "writer");
        kills_random++;
        /* Its successor dies at the next crash point after a few passes. */
        int point = (int)(round % (long)NPOINTS);
        pid_t pid = spawn_writer(slot, point, (long)(rnd(&seed) % 8), 0);
        reap_killed(pid, "armed writer");
        atomic_fetch_add(&sh->fired[point], 1);
        kills_point++;
        spawn_writer(slot, -1, 0, 0);
        if (round % 50 == 24)
            ghost_lock();
        if (round % 50 == 37)
            ns_episode();
        if (round % 40 == 39) {
            int i = (int)(rnd(&seed) % (unsigned)nreaders);
            pause_ns(rnd(&seed) % 200000);
            kill(rd[i].pid, SIGKILL);
            reap_killed(rd[i].pid, "reader");
            reader_kills++;
            spawn_reader(i);
        }
        round++;
        done = kills_random + kills_point + kills_stopped;
    }
}

/* Stop: writers see the flag, readers are cancelled by SIGUSR1. */
static void stop_all(void)
{
    atomic_store(&sh->stop, 1);
    for (int i = 0; i < nwriters; i++) {
        int st;
        NT_EQ(waitpid(wr[i].pid, &st, 0), wr[i].pid);
        if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
            NT_FAIL("writer %d ended with status 0x%x", (int)wr[i].pid, st);
    }
    for (int i = 0; i < nreaders; i++) {
        /* Repeat: a reader that had not installed its handler yet when a
         * signal came ignored it. */
        int st;
        pid_t got;
        do {
            kill(rd[i].pid, SIGUSR1);
            got = waitpid(rd[i].pid, &st, WNOHANG);
            if (got == 0)
                pause_ns(1000000);
        } while (got == 0);
        NT_EQ(got, rd[i].pid);
        if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
            NT_FAIL("reader %d ended with status 0x%x", (int)rd[i].pid, st);
    }
}

/* After everything the channel is consistent (nerve_chan_check's status,
 * its message in msg) and accepts a put, and killed waiting readers cost
 * a put no futex call. Removes the channel. */
static int check_after(char *msg, size_t size)
{
    int cr = nerve_chan_check(chan, msg, size);
    nerve_chan *w;
    NT_OK(nerve_chan_open(chan, NERVE_O_WRITE, &w));
    unsigned char last[100];
    nt_payload_fill(last, sizeof last, 0, 1);
    struct nerve_put_info pi;
    NT_OK(nerve_chan_put(w, last, sizeof last, NERVE_FOREVER, &pi, 0));
    unsigned char back[100];
    struct nerve_get_info gi;
    NT_OK(nerve_chan_get(w, back, sizeof back, 0, 0, &gi, NERVE_GET_NEWEST));
    NT_EQ(gi.seq, pi.seq);
    NT_ASSERT(memcmp(back, last, sizeof last) == 0);
    /* Killed waiting readers cost nothing once their leases ran out: the
     * put path makes no futex call. (Bounded by the watchdog.) */
    struct nerve_stats st;
    do {
        pause_ns(5000000);
        NT_OK(nerve_chan_stat(w, &st));
    } while (st.waiters != 0);
    static const struct nerve__futex_ops counting = {NULL, NULL, count_wake_all,
                                                     count_wake};
    nerve__futex = &counting;
    for (int i = 0; i < 100; i++)
        NT_OK(nerve_chan_put(w, last, sizeof last, 0, &pi, 0));
    nerve__futex = &nerve__futex_linux;
    NT_EQ(atomic_load(&zwakes), 0);
    nerve_chan_close(w);
    NT_OK(nerve_chan_unlink(chan));
    return cr;
}

/* Print what happened; returns the messages the readers verified. */
static unsigned long report(double secs)
{
    unsigned long verified = 0;
    for (int k = 0; k < RK_KINDS; k++)
        verified += atomic_load(&sh->verified[k]);
    printf("torture: %.1f s, seed %" PRIu64 ", %d writers, %d readers\n", secs,
           seed, nwriters, nreaders);
    printf("kills: %lu writers (%lu at random instants, %lu at crash points, "
           "%lu stopped holding the lock), %lu readers\n",
           kills_random + kills_point + kills_stopped, kills_random,
           kills_point, kills_stopped, reader_kills);
    printf("crash points:");
    for (size_t i = 0; i < NPOINTS; i++)
        printf(" %s=%lu", points[i], atomic_load(&sh->fired[i]));
    printf("\n");
    printf("namespace episodes (%s): %lu; claim crash points:",
           ns_real ? "unshare --pid" : "played: no unshare permission",
           ns_episodes);
    for (size_t i = 0; i < NCPOINTS; i++)
        printf(" %s=%lu", cpoints[i], cfired[i]);
    printf("\n");
    printf("stop episodes: %lu, lock timeouts: %lu, ghost lock words: %lu, "
           "cross-thread misuse refused: %lu\n",
           stop_episodes, atomic_load(&sh->lock_timeouts), ghosts,
           atomic_load(&sh->misuse_refused));
    printf("puts: %lu, recoveries: %lu\n", atomic_load(&sh->puts),
           atomic_load(&sh->recoveries));
    printf("messages verified: %lu (next-wait %lu, newest-wait %lu, view %lu, "
           "seq %lu), missed %lu, stale views %lu, seq overwritten %lu, "
           "elapsed %lu\n",
           verified, atomic_load(&sh->verified[RK_NEXT]),
           atomic_load(&sh->verified[RK_NEWEST]),
           atomic_load(&sh->verified[RK_VIEW]),
           atomic_load(&sh->verified[RK_SEQ]), atomic_load(&sh->missed),
           atomic_load(&sh->stale), atomic_load(&sh->overwritten),
           atomic_load(&sh->elapsed));
    printf("failures: %lu\n", atomic_load(&sh->failures));
    return verified;
}

int main(int argc, char **argv)
{
    long kills = parse_args(argc, argv);
    seed = seed * 0x9e3779b97f4a7c15ull | 1;
    /* Generous: the round rate is about a thousand per second. */
    nt_watchdog((unsigned)(120 + kills / 20));
    max_ids = (unsigned)(2 * kills + 64);

    sh = mmap(NULL, sizeof *sh, PROT_READ | PROT_WRITE,
              MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    NT_ASSERT(sh != MAP_FAILED);
    memset(sh, 0, sizeof *sh);
    atomic_store(&sh->next_id, 1);
    chan = nt_name("torture");
    nt_create(chan, SLOTS, DATA);
    map_lock_words();
    ns_real = can_unshare();

    /* Inherited by the readers, so that SIGUSR1 never kills one that has
     * not opened the channel yet. */
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_usr1;
    sigaction(SIGUSR1, &sa, NULL);

    uint64_t t0 = now_ns();
    for (int i = 0; i < nreaders; i++)
        spawn_reader(i);
    for (int i = 0; i < nwriters; i++)
        spawn_writer((unsigned)i, -1, 0, 0);

    run_rounds(kills);

    stop_all();
    double secs = (double)(now_ns() - t0) / 1e9;

    char msg[256];
    int cr = check_after(msg, sizeof msg);

    unsigned long verified = report(secs);

    NT_EQ(atomic_load(&sh->failures), 0);
    if (cr != 0)
        NT_FAIL("nerve_chan_check after the torture: %s: %s",
                nerve_err_name(cr), msg);
    for (size_t i = 0; i < NPOINTS; i++) {
        if (atomic_load(&sh->fired[i]) == 0)
            NT_FAIL("crash point %s never fired", points[i]);
    }
    for (size_t i = 0; i < NCPOINTS; i++) {
        if (cfired[i] == 0)
            NT_FAIL("claim crash point %s never fired", cpoints[i]);
    }
    NT_CMP(atomic_load(&sh->recoveries), >, 0);
    NT_CMP(ghosts, >, 0);
    NT_CMP(atomic_load(&sh->misuse_refused), >, 0);
    NT_CMP(verified, >, 0);
    NT_CMP(atomic_load(&sh->verified[RK_NEXT]), >, 0);
    return 0;
}
