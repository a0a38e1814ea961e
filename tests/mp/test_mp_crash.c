/* Writers killed with SIGKILL at every named crash point and at random
 * instants, while another writer keeps writing and a reader verifies every
 * message; readers killed while waiting. After each kill the channel must
 * accept puts (recovering the lock), no reader may ever see a torn or
 * half-written message, and nothing may hang.
 *
 * Linked with the crash-point build of the core (nerve_crash). */
#include "nerve_test.h"

#include <signal.h>
#include <stdatomic.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "crashpoint.h" /* the list of points; arm() is internal */

void nerve__crashpoint_arm(const char *name, long skip);

static const char *const points[] = {NERVE_CRASHPOINT_NAMES};
/* Killed at these, the writer no longer held the lock (it wakes after
 * unlocking): the next put has nothing to recover. */
static int after_unlock(const char *p)
{
    return strcmp(p, "put.after-unlock") == 0 ||
           strcmp(p, "put.after-wake") == 0;
}
#define NPOINTS (sizeof points / sizeof points[0])

#define MAXMSG 3000
static const char *chan;

struct shared {
    atomic_int stop;
    atomic_ulong verified, recoveries, bystander_puts;
};
static struct shared *sh;

static uint64_t rnd(uint64_t *x)
{
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    return *x;
}

/* Writes checksummed messages until killed (or `limit` messages). */
static void victim(uint32_t id, uint64_t seed, long limit)
{
    nerve_chan *w;
    NT_OK(nerve_chan_open(chan, NERVE_O_WRITE, &w));
    static unsigned char buf[MAXMSG];
    uint64_t x = seed | 1;
    for (long n = 1; limit < 0 || n <= limit; n++) {
        size_t len = 24 + rnd(&x) % (MAXMSG - 24);
        struct nerve_put_info pi;
        if (rnd(&x) % 2) {
            nt_payload_fill(buf, len, id, (uint64_t)n);
            NT_OK(nerve_chan_put(w, buf, len, NERVE_FOREVER, &pi, 0));
        } else {
            void *p;
            NT_OK(nerve_chan_reserve(w, len, NERVE_FOREVER, &p, 0));
            nt_payload_fill(p, len, id, (uint64_t)n);
            NT_OK(nerve_chan_commit(w, len, &pi));
        }
        if (pi.recovered)
            atomic_fetch_add(&sh->recoveries, 1);
    }
    _exit(0);
}

/* A writer that is never killed, so writes interleave with the deaths. */
static void bystander(void)
{
    nerve_chan *w;
    NT_OK(nerve_chan_open(chan, NERVE_O_WRITE, &w));
    unsigned char buf[100];
    uint64_t n = 0;
    while (!atomic_load(&sh->stop)) {
        nt_payload_fill(buf, sizeof buf, 1000, ++n);
        struct nerve_put_info pi;
        NT_OK(nerve_chan_put(w, buf, sizeof buf, NERVE_FOREVER, &pi, 0));
        if (pi.recovered)
            atomic_fetch_add(&sh->recoveries, 1);
        atomic_fetch_add(&sh->bystander_puts, 1);
        if (n % 16 == 0)
            usleep(100); /* leave the lock to the victims now and then */
    }
    nerve_chan_close(w);
    _exit(0);
}

/* Verifies every message it gets, until told to stop. */
static void verifier(void)
{
    nerve_chan *r;
    NT_OK(nerve_chan_open(chan, NERVE_O_READ, &r));
    static unsigned char buf[MAXMSG];
    uint64_t prev = 0;
    while (!atomic_load(&sh->stop)) {
        struct nerve_get_info gi;
        int rc =
            nerve_chan_get(r, buf, sizeof buf, 0, 50000000, &gi, NERVE_F_WAIT);
        if (rc == NERVE_ETIMEDOUT)
            continue;
        NT_OK(rc);
        NT_CMP(gi.seq, >, prev);
        prev = gi.seq;
        if (!nt_payload_check(buf, gi.len, NULL, NULL))
            NT_FAIL("reader saw a torn message: seq %llu len %llu",
                    (unsigned long long)gi.seq, (unsigned long long)gi.len);
        atomic_fetch_add(&sh->verified, 1);
    }
    nerve_chan_close(r);
    _exit(0);
}

static void expect_killed(pid_t pid)
{
    int status;
    NT_EQ(waitpid(pid, &status, 0), pid);
    if (!(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL))
        NT_FAIL("victim was not killed (status %d)", status);
}

/* After a death: a put goes through and every readable message verifies. */
static void check_usable(nerve_chan *w, nerve_chan *r, uint32_t *recovered)
{
    unsigned char buf[MAXMSG];
    struct nerve_put_info pi;
    nt_payload_fill(buf, 64, 2000, 1);
    /* Bounded: a dead owner must never make the lock unobtainable. The
     * bound is generous: the live bystander may hold the lock and be
     * descheduled for seconds on a loaded host. */
    NT_OK(nerve_chan_put(w, buf, 64, 60000000000ll, &pi, 0));
    *recovered = pi.recovered;
    struct nerve_stats st;
    NT_OK(nerve_chan_stat(r, &st));
    for (uint64_t s = st.tail_seq; s <= st.head_seq; s++) {
        struct nerve_get_info gi;
        int rc = nerve_chan_get(r, buf, sizeof buf, (int64_t)s, 0, &gi,
                                NERVE_GET_SEQ);
        if (rc == NERVE_EOVERWRITTEN)
            continue; /* the bystander overtook us */
        NT_OK(rc);
        NT_ASSERT(nt_payload_check(buf, gi.len, NULL, NULL));
    }
}

/* Phase 1: every crash point, several times each, with no other writer,
 * so the next put must be the one that recovers. Returns the kills. */
static unsigned crash_points(nerve_chan *w, nerve_chan *r, uint64_t seed)
{
    unsigned point_kills = 0;
    for (unsigned i = 0; i < NPOINTS; i++) {
        for (int k = 0; k < 8; k++) {
            pid_t pid = fork();
            if (pid == 0) {
                nerve__crashpoint_arm(points[i], k);
                victim(1, seed + i * 100 + (uint64_t)k, -1);
            }
            expect_killed(pid);
            point_kills++;
            uint32_t rec;
            check_usable(w, r, &rec);
            NT_EQ(rec, after_unlock(points[i]) ? 0u : 1u);
            char msg[256];
            NT_OK(nerve_chan_check(chan, msg, sizeof msg));
        }
    }
    return point_kills;
}

/* Phase 3: readers killed while waiting leave the channel working. */
static void killed_waiting_readers(nerve_chan *w, nerve_chan *r)
{
    for (int k = 0; k < 20; k++) {
        pid_t pid = fork();
        if (pid == 0) {
            nerve_chan *rr;
            NT_OK(nerve_chan_open(chan, NERVE_O_READ, &rr));
            nerve_chan_seek(rr, UINT64_MAX - 1);
            int rc = nerve_chan_get(rr, NULL, 0, 0, NERVE_FOREVER, NULL,
                                    NERVE_F_WAIT);
            _exit(rc == 0 ? 1 : 2); /* never reached: killed first */
        }
        kill(pid, SIGKILL);
        expect_killed(pid);
        uint32_t rec;
        check_usable(w, r, &rec);
    }
}

int main(int argc, char **argv)
{
    long kills = argc > 1 ? atol(argv[1]) : 2000;
    nt_watchdog(600);
    sh = mmap(NULL, sizeof *sh, PROT_READ | PROT_WRITE,
              MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    chan = nt_name("crash");
    nt_create(chan, 32, 16384);
    nerve_chan *w, *r;
    NT_OK(nerve_chan_open(chan, NERVE_O_WRITE, &w));
    NT_OK(nerve_chan_open(chan, NERVE_O_READ, &r));
    uint64_t seed = (uint64_t)time(NULL);
    printf("seed %llu\n", (unsigned long long)seed);

    unsigned point_kills = crash_points(w, r, seed);

    /* Phase 2: random instants, with a bystander writer and a verifying
     * reader running throughout. */
    pid_t by = fork();
    if (by == 0)
        bystander();
    pid_t ver = fork();
    if (ver == 0)
        verifier();
    uint64_t x = seed;
    for (long k = 0; k < kills; k++) {
        pid_t pid = fork();
        if (pid == 0)
            victim(3, seed + 7 * (uint64_t)k, -1);
        /* The kill lands anywhere: before the first put, inside the lock,
         * between puts. (A random delay, not synchronisation.) */
        usleep((useconds_t)(rnd(&x) % 400));
        kill(pid, SIGKILL);
        expect_killed(pid);
        uint32_t rec;
        check_usable(w, r, &rec);
        if (rec)
            atomic_fetch_add(&sh->recoveries, 1);
    }

    killed_waiting_readers(w, r);

    atomic_store(&sh->stop, 1);
    int status;
    waitpid(by, &status, 0);
    NT_ASSERT(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    waitpid(ver, &status, 0);
    NT_ASSERT(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    char msg[256];
    NT_OK(nerve_chan_check(chan, msg, sizeof msg));
    printf("kills: %u at crash points, %ld at random; recoveries %lu; "
           "messages verified by the reader %lu; bystander puts %lu; "
           "failures 0\n",
           point_kills, kills, sh->recoveries, sh->verified,
           sh->bystander_puts);
    NT_CMP(sh->verified, >, 0);
    NT_CMP(sh->recoveries, >, 0);
    nerve_chan_close(w);
    nerve_chan_close(r);
    NT_OK(nerve_chan_unlink(chan));
    return 0;
}
