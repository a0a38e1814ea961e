/* Three writer processes and four reader processes (next-unseen with wait,
 * newest with wait, by time, zero-copy view) on one channel, with random
 * message sizes that wrap both rings many times. Every payload carries its
 * writer's id, a per-writer counter and a checksum. Each reader checks:
 * every delivered message verifies; its sequence numbers strictly
 * increase; each writer's counters strictly increase; delivered + missed
 * equals the messages published in its range. */
#include "nerve_test.h"

#include <signal.h>
#include <stdatomic.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#define WRITERS 3
#define SLOTS 64
#define DATA (64 * 1024)
#define MAXMSG 20000
#define END_ID 999

static const char *chan;
static double seconds = 3.0;

struct shared {
    atomic_ulong published[WRITERS];
    atomic_ulong delivered[4], missed[4], wraps;
};
static struct shared *sh;

static uint64_t rnd(uint64_t *x)
{
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    return *x;
}

static void writer(uint32_t id)
{
    nerve_chan *w;
    NT_OK(nerve_chan_open(chan, NERVE_O_WRITE, &w));
    static unsigned char buf[MAXMSG];
    uint64_t x = 0x1234567 + id * 7919, n = 0;
    int64_t end = nerve_clock_now_ns() + (int64_t)(seconds * 1e9);
    while (nerve_clock_now_ns() < end) {
        size_t len = 24 + rnd(&x) % (rnd(&x) % 8 ? 600 : MAXMSG - 24);
        n++;
        if (rnd(&x) % 2) {
            nt_payload_fill(buf, len, id, n);
            NT_OK(nerve_chan_put(w, buf, len, NERVE_FOREVER, NULL, 0));
        } else {
            void *p;
            NT_OK(nerve_chan_reserve(w, len, NERVE_FOREVER, &p, 0));
            nt_payload_fill(p, len, id, n);
            NT_OK(nerve_chan_commit(w, len, NULL));
        }
        atomic_fetch_add(&sh->published[id], 1);
    }
    nerve_chan_close(w);
    exit(0);
}

/* Checks shared by the readers: checksum, per-writer order. Returns 1 at
 * the end marker. */
static int check_msg(const void *p, uint64_t len, uint64_t last[WRITERS + 1])
{
    uint32_t id;
    uint64_t counter;
    if (!nt_payload_check(p, len, &id, &counter))
        NT_FAIL("torn or corrupt message (len %llu)", (unsigned long long)len);
    if (id == END_ID)
        return 1;
    NT_CMP(id, <, WRITERS);
    NT_CMP(counter, >, last[id]);
    last[id] = counter;
    return 0;
}

/* One read by time: the answer is at or before the query time, and the
 * message after it, if it was already committed when the query began, is
 * after it. (One committed during the query may carry an earlier time:
 * commit times are taken just before the commit store.) Returns 1 when
 * the answer is the end message. */
static int read_by_time(nerve_chan *r, unsigned char *buf, size_t size,
                        uint64_t *x, uint64_t *delivered)
{
    struct nerve_get_info gi;
    struct nerve_stats st;
    NT_OK(nerve_chan_stat(r, &st));
    int64_t t = nerve_clock_now_ns() - (int64_t)(rnd(x) % 2000000);
    int rc = nerve_chan_get(r, buf, size, t, 0, &gi, NERVE_GET_AT);
    if (rc != 0) {
        NT_ASSERT(rc == NERVE_EAGAIN || rc == NERVE_EOVERWRITTEN ||
                  rc == NERVE_ELAPPED);
        return 0;
    }
    NT_CMP(gi.time_ns, <=, t);
    uint64_t last[WRITERS + 1] = {0};
    int end = check_msg(buf, gi.len, last);
    struct nerve_get_info gn;
    int r2 = nerve_chan_get(r, buf, size, (int64_t)gi.seq + 1, 0, &gn,
                            NERVE_GET_SEQ);
    if (r2 == 0) {
        if (gn.seq <= st.head_seq)
            NT_CMP(gn.time_ns, >, t);
    } else {
        NT_ASSERT(r2 == NERVE_EAGAIN || r2 == NERVE_EOVERWRITTEN);
    }
    (*delivered)++;
    return end;
}

static void reader(int kind)
{
    nerve_chan *r;
    NT_OK(nerve_chan_open(chan, NERVE_O_READ, &r));
    static unsigned char buf[MAXMSG];
    uint64_t last[WRITERS + 1] = {0}, prev_seq = 0, delivered = 0, missed = 0;
    uint64_t first_seq = 0, x = 99 + (uint64_t)kind;
    struct nerve_get_info gi;
    for (;;) {
        if (kind == 0 || kind == 1) {
            uint32_t mode = kind == 0 ? NERVE_GET_NEXT : NERVE_GET_NEWEST;
            NT_OK(nerve_chan_get(r, buf, sizeof buf, 0, NERVE_FOREVER, &gi,
                                 mode | NERVE_F_WAIT));
            if (!first_seq)
                first_seq = gi.seq - gi.missed;
            NT_CMP(gi.seq, >, prev_seq);
            prev_seq = gi.seq;
            delivered++;
            missed += gi.missed;
            if (check_msg(buf, gi.len, last))
                break;
        } else if (kind == 2) {
            if (read_by_time(r, buf, sizeof buf, &x, &delivered))
                break;
        } else {
            /* Zero-copy view of the next message; checksum in place, then
             * validate. A stale view is dropped (and counted missed by the
             * next read), never checked as data. */
            struct nerve_view v;
            NT_OK(nerve_chan_view(r, 0, NERVE_FOREVER, &v, NERVE_F_WAIT));
            if (!first_seq)
                first_seq = v.info.seq - v.info.missed;
            NT_CMP(v.info.seq, >, prev_seq);
            prev_seq = v.info.seq;
            uint32_t id;
            uint64_t counter;
            int ok = nt_payload_check(v.data, v.info.len, &id, &counter);
            if (nerve_chan_view_check(r, &v) != 0) {
                missed += v.info.missed + 1;
                continue;
            }
            if (!ok)
                NT_FAIL("view validated but payload is torn");
            delivered++;
            missed += v.info.missed;
            if (id == END_ID)
                break;
            NT_CMP(counter, >, last[id]);
            last[id] = counter;
        }
    }
    if (kind != 2)
        NT_EQ(delivered + missed, prev_seq - first_seq + 1);
    sh->delivered[kind] = delivered;
    sh->missed[kind] = missed;
    nerve_chan_close(r);
    exit(0);
}

int main(int argc, char **argv)
{
    if (argc > 1)
        seconds = atof(argv[1]);
    nt_watchdog((unsigned)(seconds * 10 + 60));
    sh = mmap(NULL, sizeof *sh, PROT_READ | PROT_WRITE,
              MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    chan = nt_name("mprw");
    nt_create(chan, SLOTS, DATA);
    pid_t pids[WRITERS + 4];
    for (int k = 0; k < 4; k++) {
        if ((pids[WRITERS + k] = fork()) == 0)
            reader(k);
    }
    for (uint32_t i = 0; i < WRITERS; i++) {
        if ((pids[i] = fork()) == 0)
            writer(i);
    }
    int fail = 0, status;
    for (int i = 0; i < WRITERS; i++) {
        waitpid(pids[i], &status, 0);
        fail |= !WIFEXITED(status) || WEXITSTATUS(status) != 0;
    }
    /* The end marker, newest of all, so every reader reaches it. */
    nerve_chan *w;
    NT_OK(nerve_chan_open(chan, NERVE_O_WRITE, &w));
    unsigned char end[64];
    nt_payload_fill(end, sizeof end, END_ID, 1);
    struct nerve_put_info pi;
    NT_OK(nerve_chan_put(w, end, sizeof end, NERVE_FOREVER, &pi, 0));
    for (int k = 0; k < 4; k++) {
        waitpid(pids[WRITERS + k], &status, 0);
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
            fprintf(stderr, "reader %d failed (status %d)\n", k, status);
            fail = 1;
        }
    }
    uint64_t published = 0;
    for (int i = 0; i < WRITERS; i++)
        published += sh->published[i];
    NT_EQ(pi.seq, published + 1);
    const char *kinds[] = {"next", "newest", "by-time", "view"};
    for (int k = 0; k < 4; k++)
        printf("%-8s delivered %lu missed %lu\n", kinds[k], sh->delivered[k],
               sh->missed[k]);
    printf("published %llu messages\n", (unsigned long long)published);
    char msg[256];
    NT_OK(nerve_chan_check(chan, msg, sizeof msg));
    nerve_chan_close(w);
    NT_OK(nerve_chan_unlink(chan));
    NT_EQ(fail, 0);
    NT_CMP(sh->delivered[0], >, 0);
    NT_CMP(sh->delivered[3], >, 0);
    return 0;
}
