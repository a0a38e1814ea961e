/* The ring against an independent reference model: random message sizes
 * wrap both rings many times; after every put, every message the model
 * says is present reads back intact (copy, view, by sequence, by time)
 * and every other one is reported overwritten. Also reservations. */
#include <errno.h>
#include <sys/mman.h>
#include <unistd.h>

#include "nerve_test.h"

#define DS 8192u
#define NS 16u
#define ALIGN 64u
#define PUTS 20000

struct ref {
    uint64_t seq, off, len;
    int64_t time_ns;
};

static struct ref live[NS + 1];
static int nlive;
static uint64_t wpos, head;
static unsigned wraps, slot_evictions, byte_evictions;

/* The model: message s of len bytes goes at align(wpos); every message
 * whose slot it reuses or whose bytes it (or its larger reservation, rlen
 * bytes) overlaps disappears. */
static uint64_t model_put(uint64_t len, uint64_t rlen)
{
    uint64_t s = ++head;
    uint64_t p = (wpos + ALIGN - 1) / ALIGN * ALIGN;
    int drop = 0;
    while (drop < nlive) {
        const struct ref *m = &live[drop];
        if (m->seq + NS <= s) {
            slot_evictions++;
        } else if (p + rlen > DS && m->off < p + rlen - DS) {
            byte_evictions++;
        } else {
            break;
        }
        drop++;
    }
    memmove(live, live + drop, (size_t)(nlive - drop) * sizeof live[0]);
    nlive -= drop;
    live[nlive].seq = s;
    live[nlive].off = p;
    live[nlive].len = len;
    nlive++;
    if (p % DS + len > DS)
        wraps++;
    wpos = p + len;
    return s;
}

static void fill(unsigned char *b, uint64_t len, uint64_t seq)
{
    for (uint64_t i = 0; i < len; i++)
        b[i] = (unsigned char)(seq * 131 + i * 7);
}

static int matches(const unsigned char *b, uint64_t len, uint64_t seq)
{
    for (uint64_t i = 0; i < len; i++) {
        if (b[i] != (unsigned char)(seq * 131 + i * 7))
            return 0;
    }
    return 1;
}

static uint64_t rnd(void)
{
    static uint64_t x = 88172645463325252ull;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return x;
}

static void verify_all(nerve_chan *r)
{
    static unsigned char buf[DS];
    struct nerve_get_info gi;
    uint64_t oldest = nlive ? live[0].seq : head + 1;
    for (int i = 0; i < nlive; i++) {
        const struct ref *m = &live[i];
        NT_OK(nerve_chan_get(r, buf, sizeof buf, (int64_t)m->seq, 0, &gi,
                             NERVE_GET_SEQ));
        NT_EQ(gi.len, m->len);
        NT_EQ(gi.time_ns, m->time_ns);
        NT_ASSERT(matches(buf, m->len, m->seq));
        struct nerve_view v;
        NT_OK(nerve_chan_view(r, (int64_t)m->seq, 0, &v, NERVE_GET_SEQ));
        NT_ASSERT(matches(v.data, m->len, m->seq));
        NT_OK(nerve_chan_view_check(r, &v));
    }
    if (oldest > 1) {
        NT_RC(nerve_chan_get(r, buf, sizeof buf, (int64_t)oldest - 1, 0, &gi,
                             NERVE_GET_SEQ),
              NERVE_EOVERWRITTEN);
    }
    struct nerve_stats st;
    NT_OK(nerve_chan_stat(r, &st));
    NT_EQ(st.head_seq, head);
    NT_EQ(st.tail_seq, oldest);
    /* The same range from the header alone (no fstat). */
    uint64_t t = 0, h = 0;
    NT_OK(nerve_chan_seq_range(r, &t, &h));
    NT_EQ(h, head);
    NT_EQ(t, oldest);
}

/* Mostly small, sometimes large, sometimes the whole ring, and sometimes
 * empty, so both eviction reasons occur. */
static uint64_t random_len(void)
{
    uint64_t k = rnd() % 100;
    if (k < 60)
        return rnd() % 200;
    if (k < 90)
        return rnd() % 3000;
    if (k < 97)
        return rnd() % DS;
    return k < 99 ? DS : 0;
}

/* By time: each present message is found by its own time, and a time
 * just before it finds its predecessor (or nothing if that is gone). */
static void verify_by_time(nerve_chan *r, unsigned char *buf)
{
    struct nerve_get_info gi;
    for (int i = 0; i < nlive; i++) {
        NT_OK(
            nerve_chan_get(r, buf, DS, live[i].time_ns, 0, &gi, NERVE_GET_AT));
        /* Equal times: the newest message with that time. */
        uint64_t want = live[i].seq;
        for (int j = i + 1; j < nlive && live[j].time_ns == live[i].time_ns;
             j++)
            want = live[j].seq;
        NT_EQ(gi.seq, want);
    }
    NT_OK(nerve_chan_get(r, buf, DS, INT64_MAX, 0, &gi, NERVE_GET_AT));
    NT_EQ(gi.seq, head);
    NT_RC(nerve_chan_get(r, buf, DS, live[0].time_ns - 1, 0, &gi, NERVE_GET_AT),
          live[0].seq > 1 ? NERVE_EOVERWRITTEN : NERVE_EAGAIN);
}

static void test_random_ring(void)
{
    const char *n = nt_name("ring");
    nt_create(n, NS, DS);
    nerve_chan *w, *r, *next;
    NT_OK(nerve_chan_open(n, NERVE_O_WRITE, &w));
    NT_OK(nerve_chan_open(n, NERVE_O_READ, &r));
    NT_OK(nerve_chan_open(n, NERVE_O_READ, &next));
    verify_all(r); /* empty: head 0, tail 1 */
    static unsigned char buf[DS];
    uint64_t delivered = 0, missed = 0;
    for (int i = 0; i < PUTS; i++) {
        uint64_t len = random_len();
        int use_reserve = rnd() % 2;
        uint64_t rlen = len;
        if (use_reserve && len + 64 <= DS)
            rlen = len + rnd() % 64;
        uint64_t s = model_put(len, rlen);
        struct nerve_put_info pi;
        if (!use_reserve) {
            fill(buf, len, s);
            NT_OK(nerve_chan_put(w, buf, len, NERVE_FOREVER, &pi, 0));
        } else {
            void *p;
            NT_OK(nerve_chan_reserve(w, rlen, NERVE_FOREVER, &p, 0));
            NT_EQ((uintptr_t)p % ALIGN, 0);
            fill(p, len, s);
            NT_OK(nerve_chan_commit(w, len, &pi));
        }
        NT_EQ(pi.seq, s);
        live[nlive - 1].time_ns = pi.time_ns;
        if (i % 7 == 0)
            verify_all(r);
        /* A NEXT reader that reads now and then: its missed count plus
         * what it delivers accounts for every message. */
        if (rnd() % 5 == 0) {
            struct nerve_get_info gi;
            int rc;
            while ((rc = nerve_chan_get(next, buf, sizeof buf, 0, 0, &gi,
                                        NERVE_GET_NEXT)) == 0) {
                NT_ASSERT(matches(buf, gi.len, gi.seq));
                delivered++;
                missed += gi.missed;
            }
            NT_RC(rc, NERVE_EAGAIN);
        }
    }
    struct nerve_get_info gi;
    while (nerve_chan_get(next, buf, sizeof buf, 0, 0, &gi, NERVE_GET_NEXT) ==
           0) {
        delivered++;
        missed += gi.missed;
    }
    NT_EQ(delivered + missed, head);
    NT_CMP(missed, >, 0);
    /* Both boundaries were driven: messages that wrap, and evictions for
     * both reasons. */
    printf("wraps %u, slot evictions %u, byte evictions %u\n", wraps,
           slot_evictions, byte_evictions);
    NT_CMP(wraps, >, 100);
    NT_CMP(slot_evictions, >, 100);
    NT_CMP(byte_evictions, >, 100);

    verify_by_time(r, buf);
    nerve_chan_close(w);
    nerve_chan_close(r);
    nerve_chan_close(next);
    NT_OK(nerve_chan_unlink(n));
}

static void test_reserve(void)
{
    const char *n = nt_name("res");
    nt_create(n, 4, 4096);
    nerve_chan *w, *r;
    NT_OK(nerve_chan_open(n, NERVE_O_WRITE, &w));
    NT_OK(nerve_chan_open(n, NERVE_O_READ, &r));
    void *p;
    struct nerve_put_info pi;
    char buf[4096];
    struct nerve_get_info gi;
    NT_RC(nerve_chan_commit(w, 0, &pi), NERVE_EINVAL);
    NT_RC(nerve_chan_abort(w), NERVE_EINVAL);
    NT_RC(nerve_chan_reserve(w, 5000, 0, &p, 0), NERVE_EMSGSIZE);
    NT_RC(nerve_chan_reserve(w, 10, 0, NULL, 0), NERVE_EINVAL);
    NT_OK(nerve_chan_reserve(w, 100, 0, &p, 0));
    /* While reserved: no second reservation or put on this handle, and
     * other writers time out on the lock. */
    NT_RC(nerve_chan_reserve(w, 10, 0, &p, 0), NERVE_EBUSY);
    NT_RC(nerve_chan_put(w, "x", 1, 0, NULL, 0), NERVE_EBUSY);
    nerve_chan *w2;
    void *p2;
    NT_OK(nerve_chan_open(n, NERVE_O_WRITE, &w2));
    /* The lock is held by this thread: a put on another handle would wait
     * for itself forever; it is refused, whatever the timeout. */
    NT_RC(nerve_chan_put(w2, "x", 1, 0, NULL, 0), NERVE_EDEADLK);
    NT_RC(nerve_chan_put(w2, "x", 1, NERVE_FOREVER, NULL, 0), NERVE_EDEADLK);
    NT_RC(nerve_chan_reserve(w2, 1, 1000000, &p2, 0), NERVE_EDEADLK);
    memcpy(p, "abc", 3);
    NT_RC(nerve_chan_commit(w, 101, &pi), NERVE_EINVAL); /* still open */
    NT_OK(nerve_chan_commit(w, 3, &pi));
    NT_EQ(pi.seq, 1);
    NT_OK(nerve_chan_get(r, buf, sizeof buf, 0, 0, &gi, 0));
    NT_EQ(gi.len, 3);
    NT_ASSERT(memcmp(buf, "abc", 3) == 0);
    /* An aborted reservation publishes nothing. */
    NT_OK(nerve_chan_reserve(w, 10, 0, &p, 0));
    memcpy(p, "zzz", 3);
    NT_OK(nerve_chan_abort(w));
    NT_RC(nerve_chan_get(r, buf, sizeof buf, 0, 0, &gi, 0), NERVE_EAGAIN);
    NT_OK(nerve_chan_put(w2, "after", 5, 0, &pi, 0));
    NT_EQ(pi.seq, 2);
    /* A handle closed with an open reservation publishes nothing and
     * releases the lock. */
    NT_OK(nerve_chan_reserve(w2, 10, 0, &p, 0));
    nerve_chan_close(w2);
    NT_OK(nerve_chan_put(w, "last", 4, 0, &pi, 0));
    NT_EQ(pi.seq, 3);
    /* Every reservation lies inside the ring mapping that DMA engines
     * register once. */
    void *rb;
    uint64_t rl;
    NT_OK(nerve_chan_ring(w, &rb, &rl));
    NT_EQ(rl, 2 * 4096);
    NT_OK(nerve_chan_reserve(w, 100, 0, &p, 0));
    NT_ASSERT((char *)p >= (char *)rb && (char *)p + 100 <= (char *)rb + rl);
    NT_OK(nerve_chan_abort(w));
    NT_RC(nerve_chan_ring(w, NULL, &rl), NERVE_EINVAL);
    /* A view across the wrap is contiguous. */
    char big[3000];
    memset(big, 'q', sizeof big);
    NT_OK(nerve_chan_put(w, big, sizeof big, 0, &pi, 0));
    NT_OK(nerve_chan_put(w, big, sizeof big, 0, &pi, 0)); /* wraps */
    struct nerve_view v;
    NT_OK(nerve_chan_view(r, 0, 0, &v, NERVE_GET_NEWEST));
    NT_EQ(v.info.len, sizeof big);
    NT_ASSERT(memcmp(v.data, big, sizeof big) == 0);
    NT_OK(nerve_chan_view_check(r, &v));
    /* Overwriting the viewed message makes the view stale. */
    NT_OK(nerve_chan_put(w, big, sizeof big, 0, &pi, 0));
    NT_RC(nerve_chan_view_check(r, &v), NERVE_ESTALE);
    struct nerve_view bad = {0};
    NT_RC(nerve_chan_view_check(r, &bad), NERVE_EINVAL);
    NT_RC(nerve_chan_view(r, 0, 0, NULL, 0), NERVE_EINVAL);
    nerve_chan_close(w);
    nerve_chan_close(r);
    NT_OK(nerve_chan_unlink(n));
}

/* A caller-supplied commit time (nerve_chan_put_at, nerve_chan_commit_at)
 * is kept when it lies between the previous message's time and now, and
 * clamped into that range otherwise, so times in the ring stay ordered. */
static void test_put_at(void)
{
    const char *n = nt_name("at");
    nt_create(n, 4, 4096);
    nerve_chan *w, *r;
    NT_OK(nerve_chan_open(n, NERVE_O_WRITE, &w));
    NT_OK(nerve_chan_open(n, NERVE_O_READ, &r));
    struct nerve_put_info pi;
    struct nerve_get_info gi;
    char buf[64];
    int64_t now = nerve_clock_now_ns();
    NT_OK(nerve_chan_put_at(w, "a", 1, now - 5000000, 0, &pi, 0));
    NT_EQ(pi.seq, 1);
    NT_EQ(pi.time_ns, now - 5000000); /* kept */
    NT_OK(nerve_chan_put_at(w, "b", 1, now - 9000000, 0, &pi, 0));
    NT_EQ(pi.time_ns, now - 5000000); /* before the previous: clamped */
    int64_t future = nerve_clock_now_ns() + 3600000000000ll;
    NT_OK(nerve_chan_put_at(w, "c", 1, future, 0, &pi, 0));
    NT_ASSERT(pi.time_ns < future &&
              pi.time_ns <= nerve_clock_now_ns()); /* now */
    int64_t t3 = pi.time_ns;
    void *p;
    NT_OK(nerve_chan_reserve(w, 8, 0, &p, 0));
    memcpy(p, "d", 1);
    NT_OK(nerve_chan_commit_at(w, 1, t3 - 1, &pi));
    NT_EQ(pi.seq, 4);
    NT_EQ(pi.time_ns, t3);
    NT_RC(nerve_chan_commit_at(w, 1, t3, &pi), NERVE_EINVAL); /* none open */
    NT_RC(nerve_chan_put_at(r, "x", 1, t3, 0, &pi, 0), NERVE_EROFS);
    /* Readers see the recorded times, and GET_AT finds by them. */
    NT_OK(nerve_chan_get(r, buf, sizeof buf, 0, 0, &gi, 0));
    NT_EQ(gi.time_ns, now - 5000000);
    NT_OK(nerve_chan_get(r, buf, sizeof buf, now - 5000000, 0, &gi,
                         NERVE_GET_AT));
    NT_EQ(gi.seq, 2);
    char msg[256];
    NT_OK(nerve_chan_check(n, msg, sizeof msg));
    /* A negative time counts as 0 when nothing readable precedes it. */
    nerve_chan_close(w);
    nerve_chan_close(r);
    NT_OK(nerve_chan_unlink(n));
    nt_create(n, 4, 4096);
    NT_OK(nerve_chan_open(n, NERVE_O_WRITE, &w));
    NT_OK(nerve_chan_put_at(w, "e", 1, -7, 0, &pi, 0));
    NT_EQ(pi.time_ns, 0);
    nerve_chan_close(w);
    NT_OK(nerve_chan_unlink(n));
}

/* nerve_chan_view_write(): a view's bytes copied into a file by the kernel,
 * across the wrap, from a handle opened NERVE_O_LAZY; a view overwritten
 * before the check is stale; a view of another handle is refused. */
static void test_view_write(void)
{
    const char *n = nt_name("vw");
    nt_create(n, 4, 4096);
    nerve_chan *w, *r, *other;
    NT_OK(nerve_chan_open(n, NERVE_O_WRITE, &w));
    NT_OK(nerve_chan_open(n, NERVE_O_READ | NERVE_O_LAZY, &r));
    NT_OK(nerve_chan_open(n, NERVE_O_READ, &other));
    NT_RC(nerve_chan_open(n, 0x8u, &other), NERVE_EINVAL);
    char big[3000], back[3000];
    struct nerve_put_info pi;
    memset(big, 'a', sizeof big);
    NT_OK(nerve_chan_put(w, big, sizeof big, 0, &pi, 0));
    for (size_t i = 0; i < sizeof big; i++)
        big[i] = (char)('A' + i % 26);
    NT_OK(nerve_chan_put(w, big, sizeof big, 0, &pi, 0)); /* wraps */
    struct nerve_view v;
    NT_OK(nerve_chan_view(r, 0, 0, &v, NERVE_GET_NEWEST));
    int fd = memfd_create("nerve-view-write", MFD_CLOEXEC);
    NT_ASSERT(fd >= 0);
    NT_OK(nerve_chan_view_write(r, &v, fd));
    NT_EQ(lseek(fd, 0, SEEK_CUR), (off_t)sizeof big);
    NT_EQ(pread(fd, back, sizeof back, 0), (ssize_t)sizeof back);
    NT_ASSERT(memcmp(back, big, sizeof big) == 0);
    /* Overwritten between the view and the write: stale. */
    NT_OK(nerve_chan_put(w, big, sizeof big, 0, &pi, 0));
    NT_RC(nerve_chan_view_write(r, &v, fd), NERVE_ESTALE);
    /* Not this handle's view; no view; no handle. */
    NT_OK(nerve_chan_view(other, 0, 0, &v, NERVE_GET_NEWEST));
    NT_RC(nerve_chan_view_write(r, &v, fd), NERVE_EINVAL);
    NT_OK(nerve_chan_view_write(other, &v, fd));
    struct nerve_view bad = {0};
    NT_RC(nerve_chan_view_write(r, &bad, fd), NERVE_EINVAL);
    NT_RC(nerve_chan_view_write(NULL, &v, fd), NERVE_EBADF);
    /* A write error comes back as -errno. */
    NT_OK(nerve_chan_view(r, 0, 0, &v, NERVE_GET_NEWEST));
    NT_RC(nerve_chan_view_write(r, &v, -1), -EBADF);
    close(fd);
    nerve_chan_close(w);
    nerve_chan_close(r);
    nerve_chan_close(other);
    NT_OK(nerve_chan_unlink(n));
}

int main(void)
{
    nt_watchdog(120);
    test_view_write();
    test_reserve();
    test_put_at();
    test_random_ring();
    printf("ok\n");
    return 0;
}
