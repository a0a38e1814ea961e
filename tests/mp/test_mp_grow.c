/* A channel's growth (GROWTH in src/chan_open.c): a larger successor takes
 * the name, holding every message still present with its sequence number;
 * writers and readers of the old channel, in this and other processes,
 * follow it without losing order; a grower SIGKILLed at each of its steps
 * leaves a usable channel; two growers at once serialize.
 *
 * Linked with the crash-point build of the core (nerve_crash). */
#include "nerve_test.h"

#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "crashpoint.h"

void nerve__crashpoint_arm(const char *name, long skip);

static const char *const grow_points[] = {NERVE_CRASHPOINT_GROW_NAMES};
#define NGROW (sizeof grow_points / sizeof grow_points[0])

/* A message of `len` bytes (len >= 8) whose first 8 bytes are its number. */
static void put_n(nerve_chan *w, uint64_t n, size_t len)
{
    static unsigned char buf[1 << 20];
    NT_ASSERT(len >= 8 && len <= sizeof buf);
    memset(buf, (int)(n & 0xff), len);
    memcpy(buf, &n, 8);
    struct nerve_put_info pi;
    NT_OK(nerve_chan_put(w, buf, len, NERVE_FOREVER, &pi, 0));
    NT_EQ(pi.seq, n);
}

/* The next message by NEXT, following the name when the channel was
 * superseded; returns the message's sequence number and checks its body. */
static uint64_t next_following(nerve_chan **r, uint64_t *missed,
                               int64_t timeout_ns)
{
    static unsigned char buf[1 << 20];
    for (int hops = 0; hops < 64; hops++) {
        struct nerve_get_info gi;
        int rc = nerve_chan_get(*r, buf, sizeof buf, 0, timeout_ns, &gi,
                                NERVE_GET_NEXT | NERVE_F_WAIT);
        if (rc == NERVE_ESUPERSEDED) {
            NT_OK(nerve_chan_follow(r));
            continue;
        }
        if (rc == NERVE_ETIMEDOUT)
            return 0;
        NT_OK(rc);
        uint64_t n;
        memcpy(&n, buf, 8);
        NT_EQ(n, gi.seq);
        *missed = gi.missed;
        return gi.seq;
    }
    NT_FAIL("more than 64 successors in a row");
}

static uint64_t data_size_of(const char *name)
{
    struct nerve_stats st;
    NT_OK(nerve_chan_stat_name(name, &st));
    return st.data_size;
}

/* Grow in one process: the writer that grew, a second writer handle of the
 * old channel, a reader of the old one and a reader opened afterwards. */
static void test_grow_and_follow(void)
{
    const char *name = nt_name("grow");
    struct nerve_chan_opts o = NERVE_CHAN_OPTS_INIT;
    o.slots = 8;
    o.data_size = 4096;
    o.type = "nt/msg/Test";
    o.mode = 0640;
    NT_OK(nerve_chan_create(name, &o));
    nerve_chan *w, *w2, *r;
    NT_OK(nerve_chan_open(name, NERVE_O_WRITE, &w));
    NT_OK(nerve_chan_open(name, NERVE_O_WRITE, &w2));
    NT_OK(nerve_chan_open(name, 0, &r));
    for (uint64_t n = 1; n <= 5; n++)
        put_n(w, n, 100);
    char big[6000];
    NT_RC(nerve_chan_put(w, big, sizeof big, 0, NULL, 0), NERVE_EMSGSIZE);
    NT_OK(nerve_chan_grow(&w, 65536, 16));
    NT_EQ(nerve_chan_renamed(w), 0);
    NT_EQ(nerve_chan_renamed(r), 1);
    NT_CMP(data_size_of(name), >=, 65536);
    put_n(w, 6, sizeof big);
    /* The old channel's reader: 1..5 from it, then the successor's 6. */
    uint64_t missed;
    for (uint64_t n = 1; n <= 6; n++) {
        NT_EQ(next_following(&r, &missed, 1000000000), n);
        NT_EQ(missed, 0);
    }
    /* A writer of the old channel is told, follows, and continues. */
    char small[100] = {0};
    NT_RC(nerve_chan_put(w2, small, sizeof small, 0, NULL, 0),
          NERVE_ESUPERSEDED);
    NT_OK(nerve_chan_follow(&w2));
    put_n(w2, 7, 200);
    NT_EQ(next_following(&r, &missed, 1000000000), 7);
    /* A reader opened after the growth finds the history, same numbers. */
    nerve_chan *late;
    NT_OK(nerve_chan_open(name, 0, &late));
    for (uint64_t n = 1; n <= 7; n++)
        NT_EQ(next_following(&late, &missed, 0), n);
    /* Following a channel that was not superseded changes nothing. */
    nerve_chan *same = late;
    NT_OK(nerve_chan_follow(&late));
    NT_ASSERT(late == same);
    /* Metadata and mode went along. */
    struct nerve_meta m;
    NT_OK(nerve_chan_meta(late, &m));
    NT_EQ(strcmp(m.type, "nt/msg/Test"), 0);
    char path[256];
    NT_OK(nerve_chan_path(name, 0, path, sizeof path));
    struct stat fst;
    NT_EQ(stat(path, &fst), 0);
    NT_EQ(fst.st_mode & 0777, 0640);
    /* A read-only handle cannot grow; an absurd size is refused. */
    NT_RC(nerve_chan_grow(&late, 1 << 20, 0), NERVE_EROFS);
    NT_RC(nerve_chan_grow(&w, 1ull << 62, 0), NERVE_EINVAL);
    nerve_chan_close(late);
    nerve_chan_close(r);
    nerve_chan_close(w2);
    nerve_chan_close(w);
    NT_OK(nerve_chan_unlink(name));
}

/* A reader blocked in a wait on the old channel wakes and follows. */
static void test_waiter_wakes(void)
{
    const char *name = nt_name("wake");
    nt_create(name, 4, 4096);
    pid_t pid = fork();
    NT_ASSERT(pid >= 0);
    if (pid == 0) {
        nerve_chan *r;
        NT_OK(nerve_chan_open(name, 0, &r));
        uint64_t missed;
        /* Blocks on the old channel until the growth, then reads 1 in the
         * successor. Bounded: a lost wake would fail after 30 s. */
        uint64_t s = next_following(&r, &missed, 30000000000ll);
        nerve_chan_close(r);
        _exit(s == 1 ? 0 : 2);
    }
    usleep(200000); /* into the wait (earlier is covered as well) */
    nerve_chan *w;
    NT_OK(nerve_chan_open(name, NERVE_O_WRITE, &w));
    NT_OK(nerve_chan_grow(&w, 1 << 16, 0));
    put_n(w, 1, 8000);
    int st;
    NT_EQ(waitpid(pid, &st, 0), pid);
    NT_ASSERT(WIFEXITED(st));
    NT_EQ(WEXITSTATUS(st), 0);
    nerve_chan_close(w);
    NT_OK(nerve_chan_unlink(name));
}

/* A grower killed at each of its crash points: the channel under the name
 * works, a writer and a reader of the old channel carry on in order. */
static void test_grower_killed(const char *point)
{
    const char *name = nt_name("kill");
    nt_create(name, 8, 4096);
    nerve_chan *w, *r;
    NT_OK(nerve_chan_open(name, NERVE_O_WRITE, &w));
    NT_OK(nerve_chan_open(name, 0, &r));
    for (uint64_t n = 1; n <= 3; n++)
        put_n(w, n, 300);
    pid_t pid = fork();
    NT_ASSERT(pid >= 0);
    if (pid == 0) {
        nerve_chan *g;
        NT_OK(nerve_chan_open(name, NERVE_O_WRITE, &g));
        nerve__crashpoint_arm(point, 0);
        int rc = nerve_chan_grow(&g, 1 << 16, 0);
        _exit(rc == 0 ? 3 : 4); /* not reached: killed at the point */
    }
    int st;
    NT_EQ(waitpid(pid, &st, 0), pid);
    NT_ASSERT(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
    /* The surviving writer continues: on the old channel (killed before
     * the rename) or, told the channel was superseded (it recovers the
     * dead grower's lock and finishes G5), on the successor. */
    for (uint64_t n = 4; n <= 6; n++) {
        char buf[300];
        memset(buf, (int)n, sizeof buf);
        memcpy(buf, &n, 8);
        int rc = nerve_chan_put(w, buf, sizeof buf, NERVE_FOREVER, NULL, 0);
        if (rc == NERVE_ESUPERSEDED) {
            NT_OK(nerve_chan_follow(&w));
            rc = nerve_chan_put(w, buf, sizeof buf, NERVE_FOREVER, NULL, 0);
        }
        NT_OK(rc);
    }
    uint64_t missed;
    for (uint64_t n = 1; n <= 6; n++) {
        NT_EQ(next_following(&r, &missed, 1000000000), n);
        NT_EQ(missed, 0);
    }
    /* The name names a working channel with every message. */
    nerve_chan *fresh;
    NT_OK(nerve_chan_open(name, 0, &fresh));
    for (uint64_t n = 1; n <= 6; n++)
        NT_EQ(next_following(&fresh, &missed, 0), n);
    char msg[256];
    NT_OK(nerve_chan_check(name, msg, sizeof msg));
    nerve_chan_close(fresh);
    nerve_chan_close(r);
    nerve_chan_close(w);
    NT_OK(nerve_chan_unlink(name));
}

/* Two processes grow and write one channel at once, each to sizes of its
 * own; a reader in a third process follows every successor and sees
 * strictly increasing sequence numbers, every one accounted for. */
static void test_two_growers(void)
{
    const char *name = nt_name("two");
    nt_create(name, 64, 4096);
    enum { ROUNDS = 40, EACH = 5 };
    nerve_chan *r;
    NT_OK(nerve_chan_open(name, 0, &r));
    pid_t kids[2];
    for (int k = 0; k < 2; k++) {
        kids[k] = fork();
        NT_ASSERT(kids[k] >= 0);
        if (kids[k] == 0) {
            nerve_chan *w;
            NT_OK(nerve_chan_open(name, NERVE_O_WRITE, &w));
            static unsigned char buf[1 << 20];
            for (int i = 0; i < ROUNDS; i++) {
                size_t len = (size_t)(1000 + (k + 1) * 997 * (i + 1));
                for (int j = 0; j < EACH; j++) {
                    int rc;
                    while ((rc = nerve_chan_put(w, buf, len, NERVE_FOREVER,
                                                NULL, 0)) != 0) {
                        if (rc == NERVE_EMSGSIZE)
                            NT_OK(nerve_chan_grow(&w, 4 * len, 0));
                        else if (rc == NERVE_ESUPERSEDED)
                            NT_OK(nerve_chan_follow(&w));
                        else
                            NT_OK(rc);
                    }
                }
            }
            nerve_chan_close(w);
            _exit(0);
        }
    }
    uint64_t last = 0, seen = 0, lost = 0;
    static unsigned char buf[1 << 20];
    for (;;) {
        struct nerve_get_info gi;
        int rc = nerve_chan_get(r, buf, sizeof buf, 0, 2000000000ll, &gi,
                                NERVE_GET_NEXT | NERVE_F_WAIT);
        if (rc == NERVE_ESUPERSEDED) {
            NT_OK(nerve_chan_follow(&r));
            continue;
        }
        if (rc == NERVE_ETIMEDOUT)
            break; /* both writers are done (bounded by the watchdog) */
        NT_OK(rc);
        NT_EQ(gi.seq, last + 1 + gi.missed);
        last = gi.seq;
        seen++;
        lost += gi.missed;
    }
    for (int k = 0; k < 2; k++) {
        int st;
        NT_EQ(waitpid(kids[k], &st, 0), kids[k]);
        NT_ASSERT(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    }
    NT_EQ(last, 2 * ROUNDS * EACH);
    NT_EQ(seen + lost, last);
    printf("two growers: %llu messages, %llu read, %llu overwritten "
           "while the reader lagged, data ring now %llu bytes\n",
           (unsigned long long)last, (unsigned long long)seen,
           (unsigned long long)lost, (unsigned long long)data_size_of(name));
    nerve_chan_close(r);
    NT_OK(nerve_chan_unlink(name));
}

int main(void)
{
    nt_watchdog(240);
    test_grow_and_follow();
    test_waiter_wakes();
    for (size_t i = 0; i < NGROW; i++)
        test_grower_killed(grow_points[i]);
    test_two_growers();
    printf("grow: every test passed (%zu crash points)\n", NGROW);
    return 0;
}
