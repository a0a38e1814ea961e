/* Waiting: wake-up on put, timeouts (relative and absolute), cancel from
 * another thread and from a signal handler, waiting on several channels,
 * and the bell's waiter count returning to zero. No timing is asserted:
 * threads hand off through the channel itself or through futex-free
 * polling of atomic flags, and the watchdog catches hangs. */
#include "nerve_test.h"

#include <pthread.h>
#include <signal.h>
#include <unistd.h>

static nerve_chan *g_r;

static void *putter(void *arg)
{
    nerve_chan *w = arg;
    /* Wait until the reader announced itself (waiters > 0) so the wake-up
     * path with a sleeping reader is the one exercised. */
    struct nerve_stats st;
    do {
        NT_OK(nerve_chan_stat(w, &st));
    } while (st.waiters == 0);
    NT_OK(nerve_chan_put(w, "wake", 4, NERVE_FOREVER, NULL, 0));
    return NULL;
}

static void test_wake(void)
{
    const char *n = nt_name("wake");
    nt_create(n, 8, 4096);
    nerve_chan *w, *r;
    NT_OK(nerve_chan_open(n, NERVE_O_WRITE, &w));
    NT_OK(nerve_chan_open(n, NERVE_O_READ, &r));
    char buf[16];
    struct nerve_get_info gi;
    for (int i = 0; i < 50; i++) {
        pthread_t t;
        pthread_create(&t, NULL, putter, w);
        uint32_t mode = i % 2 ? NERVE_GET_NEWEST : NERVE_GET_NEXT;
        NT_OK(nerve_chan_get(r, buf, sizeof buf, 0, NERVE_FOREVER, &gi,
                             mode | NERVE_F_WAIT));
        NT_EQ(gi.seq, (uint64_t)i + 1);
        pthread_join(t, NULL);
    }
    /* A relative timeout too large for the clock means no deadline. */
    {
        pthread_t t2;
        pthread_create(&t2, NULL, putter, w);
        NT_OK(nerve_chan_get(r, buf, sizeof buf, 0, INT64_MAX, &gi,
                             NERVE_GET_NEXT | NERVE_F_WAIT));
        NT_EQ(gi.seq, 51);
        pthread_join(t2, NULL);
    }
    /* Waiting for a sequence number that is not yet published. */
    pthread_t t;
    pthread_create(&t, NULL, putter, w);
    NT_OK(nerve_chan_get(r, buf, sizeof buf, 52, NERVE_FOREVER, &gi,
                         NERVE_GET_SEQ | NERVE_F_WAIT));
    NT_EQ(gi.seq, 52);
    pthread_join(t, NULL);
    /* A zero-copy view waits the same way (SEQ left the cursor at 51). */
    nerve_chan_seek(r, 52);
    pthread_create(&t, NULL, putter, w);
    struct nerve_view v;
    NT_OK(nerve_chan_view(r, 0, NERVE_FOREVER, &v, NERVE_F_WAIT));
    NT_EQ(v.info.seq, 53);
    NT_ASSERT(memcmp(v.data, "wake", 4) == 0);
    NT_OK(nerve_chan_view_check(r, &v));
    pthread_join(t, NULL);
    struct nerve_stats st;
    NT_OK(nerve_chan_stat(r, &st));
    NT_EQ(st.waiters, 0);
    nerve_chan_close(w);
    nerve_chan_close(r);
    NT_OK(nerve_chan_unlink(n));
}

static void test_timeouts(void)
{
    const char *n = nt_name("tmo");
    nt_create(n, 8, 4096);
    nerve_chan *r;
    NT_OK(nerve_chan_open(n, NERVE_O_READ, &r));
    char buf[16];
    struct nerve_get_info gi;
    NT_RC(nerve_chan_get(r, buf, sizeof buf, 0, 0, &gi, NERVE_F_WAIT),
          NERVE_ETIMEDOUT);
    NT_RC(nerve_chan_get(r, buf, sizeof buf, 0, 2000000, &gi, NERVE_F_WAIT),
          NERVE_ETIMEDOUT);
    int64_t t0 = nerve_clock_now_ns();
    NT_RC(nerve_chan_get(r, buf, sizeof buf, 0, t0 + 2000000, &gi,
                         NERVE_F_WAIT | NERVE_F_ABSTIME),
          NERVE_ETIMEDOUT);
    /* The deadline is honoured as a lower bound (never returns early). */
    NT_CMP(nerve_clock_now_ns(), >=, t0 + 2000000);
    /* An absolute deadline in the past. */
    NT_RC(nerve_chan_get(r, buf, sizeof buf, 0, 1, &gi,
                         NERVE_F_WAIT | NERVE_F_ABSTIME),
          NERVE_ETIMEDOUT);
    nerve_chan_close(r);
    NT_OK(nerve_chan_unlink(n));
}

static void *canceller(void *arg)
{
    (void)arg;
    struct nerve_stats st;
    do {
        NT_OK(nerve_chan_stat(g_r, &st));
    } while (st.waiters == 0);
    nerve_chan_cancel(g_r);
    return NULL;
}

static void on_usr1(int sig)
{
    (void)sig;
    nerve_chan_cancel(g_r); /* async-signal-safe */
}

static void *signaller(void *arg)
{
    pthread_t target = *(pthread_t *)arg;
    struct nerve_stats st;
    do {
        NT_OK(nerve_chan_stat(g_r, &st));
    } while (st.waiters == 0);
    pthread_kill(target, SIGUSR1);
    return NULL;
}

static void test_cancel(void)
{
    const char *n = nt_name("cancel");
    nt_create(n, 8, 4096);
    NT_OK(nerve_chan_open(n, NERVE_O_READ, &g_r));
    char buf[16];
    struct nerve_get_info gi;
    /* From another thread. */
    pthread_t t;
    pthread_create(&t, NULL, canceller, NULL);
    NT_RC(nerve_chan_get(g_r, buf, sizeof buf, 0, NERVE_FOREVER, &gi,
                         NERVE_F_WAIT),
          NERVE_ECANCELED);
    pthread_join(t, NULL);
    /* Sticky until cleared. */
    NT_RC(nerve_chan_get(g_r, buf, sizeof buf, 0, NERVE_FOREVER, &gi,
                         NERVE_F_WAIT),
          NERVE_ECANCELED);
    nerve_chan_cancel_clear(g_r);
    NT_RC(nerve_chan_get(g_r, buf, sizeof buf, 0, 0, &gi, NERVE_F_WAIT),
          NERVE_ETIMEDOUT);
    /* From a signal handler, installed with SA_RESTART so the kernel would
     * restart an interrupted wait by itself: the cancel must still end
     * it. */
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_usr1;
    sa.sa_flags = SA_RESTART;
    sigaction(SIGUSR1, &sa, NULL);
    pthread_t self = pthread_self();
    pthread_create(&t, NULL, signaller, &self);
    NT_RC(nerve_chan_get(g_r, buf, sizeof buf, 0, NERVE_FOREVER, &gi,
                         NERVE_F_WAIT),
          NERVE_ECANCELED);
    pthread_join(t, NULL);
    nerve_chan_cancel_clear(g_r);
    struct nerve_stats st;
    NT_OK(nerve_chan_stat(g_r, &st));
    NT_EQ(st.waiters, 0);
    nerve_chan_close(g_r);
    NT_OK(nerve_chan_unlink(n));
}

struct multi {
    nerve_chan *w;
    int index;
};

static void *put_after_wait(void *arg)
{
    struct multi *m = arg;
    struct nerve_stats st;
    do {
        NT_OK(nerve_chan_stat(m->w, &st));
    } while (st.waiters == 0);
    NT_OK(nerve_chan_put(m->w, "m", 1, NERVE_FOREVER, NULL, 0));
    return NULL;
}

static void test_wait_any(void)
{
    enum { N = 5 };
    const char *names[N];
    nerve_chan *w[N], *r[N];
    for (int i = 0; i < N; i++) {
        names[i] = nt_name("any");
        nt_create(names[i], 4, 4096);
        NT_OK(nerve_chan_open(names[i], NERVE_O_WRITE, &w[i]));
        NT_OK(nerve_chan_open(names[i], NERVE_O_READ, &r[i]));
    }
    uint64_t ready = 0;
    NT_RC(nerve_chan_wait_any(r, N, 0, &ready, 0), NERVE_ETIMEDOUT);
    NT_RC(nerve_chan_wait_any(r, N, 1000000, &ready, 0), NERVE_ETIMEDOUT);
    NT_RC(nerve_chan_wait_any(r, 0, 0, &ready, 0), NERVE_EINVAL);
    NT_RC(nerve_chan_wait_any(r, NERVE_WAIT_MAX + 1, 0, &ready, 0),
          NERVE_EINVAL);
    for (int i = 0; i < N; i++) {
        struct multi m = {w[i], i};
        pthread_t t;
        pthread_create(&t, NULL, put_after_wait, &m);
        NT_EQ(nerve_chan_wait_any(r, N, NERVE_FOREVER, &ready, 0), 1);
        NT_EQ(ready, 1ull << i);
        pthread_join(t, NULL);
        char b[4];
        struct nerve_get_info gi;
        NT_OK(nerve_chan_get(r[i], b, sizeof b, 0, 0, &gi, 0));
    }
    /* Two ready at once. */
    NT_OK(nerve_chan_put(w[1], "a", 1, 0, NULL, 0));
    NT_OK(nerve_chan_put(w[3], "b", 1, 0, NULL, 0));
    NT_EQ(nerve_chan_wait_any(r, N, NERVE_FOREVER, &ready, 0), 2);
    NT_EQ(ready, (1ull << 1) | (1ull << 3));
    /* Cancelled through any handle. */
    g_r = r[2];
    char b[4];
    struct nerve_get_info gi;
    NT_OK(nerve_chan_get(r[1], b, sizeof b, 0, 0, &gi, 0));
    NT_OK(nerve_chan_get(r[3], b, sizeof b, 0, 0, &gi, 0));
    pthread_t t;
    pthread_create(&t, NULL, canceller, NULL);
    NT_RC(nerve_chan_wait_any(r, N, NERVE_FOREVER, &ready, 0), NERVE_ECANCELED);
    pthread_join(t, NULL);
    for (int i = 0; i < N; i++) {
        nerve_chan_close(w[i]);
        nerve_chan_close(r[i]);
        NT_OK(nerve_chan_unlink(names[i]));
    }
}

static void *put_one(void *arg)
{
    NT_OK(nerve_chan_put(arg, "x", 1, NERVE_FOREVER, NULL, 0));
    return NULL;
}

/* Readers without a bell (removed, or not writable) still get every
 * message: they poll in short slices. */
static void test_no_bell(void)
{
    const char *n = nt_name("nobell");
    nt_create(n, 8, 4096);
    char path[256];
    snprintf(path, sizeof path, "/dev/shm/nerve-bell.%s", n);
    NT_EQ(unlink(path), 0);
    nerve_chan *w, *r;
    NT_OK(nerve_chan_open(n, NERVE_O_WRITE, &w));
    NT_OK(nerve_chan_open(n, NERVE_O_READ, &r));
    for (int i = 0; i < 5; i++) {
        /* The put may come before or during the wait; both must deliver. */
        pthread_t t;
        pthread_create(&t, NULL, put_one, w);
        char b[4];
        struct nerve_get_info gi;
        NT_OK(nerve_chan_get(r, b, sizeof b, 0, NERVE_FOREVER, &gi,
                             NERVE_F_WAIT));
        NT_EQ(gi.seq, (uint64_t)i + 1);
        pthread_join(t, NULL);
    }
    NT_RC(nerve_chan_get(r, NULL, 0, 0, 3000000, NULL, NERVE_F_WAIT),
          NERVE_ETIMEDOUT);
    nerve_chan_close(w);
    nerve_chan_close(r);
    NT_OK(nerve_chan_unlink(n));
}

struct lock_ctx {
    const char *name;
    int rc_rel, rc_abs, rc_after;
};

static void *second_writer(void *arg)
{
    struct lock_ctx *l = arg;
    nerve_chan *w2;
    NT_OK(nerve_chan_open(l->name, NERVE_O_WRITE, &w2));
    l->rc_rel = nerve_chan_put(w2, "b", 1, 2000000, NULL, 0);
    l->rc_abs = nerve_chan_put(w2, "b", 1, nerve_clock_now_ns() + 2000000, NULL,
                               NERVE_F_ABSTIME);
    nerve_chan_close(w2);
    return NULL;
}

/* A writer holding the lock (here: an open reservation) makes others wait
 * only as long as they ask: relative and absolute lock timeouts. */
static void test_lock_timeout(void)
{
    const char *n = nt_name("lock");
    nt_create(n, 8, 4096);
    nerve_chan *w;
    NT_OK(nerve_chan_open(n, NERVE_O_WRITE, &w));
    void *p;
    NT_OK(nerve_chan_reserve(w, 8, NERVE_FOREVER, &p, 0));
    struct lock_ctx l = {n, 1, 1, 1};
    pthread_t t;
    pthread_create(&t, NULL, second_writer, &l);
    pthread_join(t, NULL);
    NT_RC(l.rc_rel, NERVE_ETIMEDOUT);
    NT_RC(l.rc_abs, NERVE_ETIMEDOUT);
    NT_OK(nerve_chan_commit(w, 8, NULL));
    nerve_chan *w2;
    NT_OK(nerve_chan_open(n, NERVE_O_WRITE, &w2));
    NT_OK(nerve_chan_put(w2, "c", 1, 2000000, NULL, 0));
    nerve_chan_close(w2);
    nerve_chan_close(w);
    NT_OK(nerve_chan_unlink(n));
}

int main(void)
{
    nt_watchdog(60);
    test_lock_timeout();
    test_wake();
    test_timeouts();
    test_cancel();
    test_wait_any();
    test_no_bell();
    printf("ok\n");
    return 0;
}
