/* The wake-up protocol with the futex operations replaced by recording
 * fakes (the seam in platform.h): a put makes no futex call when no reader
 * waits, makes one when a reader waits, and a wait that the fake reports as
 * interrupted or spurious re-checks instead of returning early. */
#include "nerve_test.h"

#include <pthread.h>
#include <stdatomic.h>
#include <time.h>

#include "platform.h"

static atomic_int wakes, waits, spurious_left;

static int fake_waitv(const struct nerve__wait_word *w, unsigned n,
                      int64_t deadline_ns)
{
    atomic_fetch_add(&waits, 1);
    /* Report a few wake-ups that are not: the caller must re-check. */
    if (atomic_load(&spurious_left) > 0) {
        atomic_fetch_sub(&spurious_left, 1);
        return NERVE_EINTR;
    }
    return nerve__futex_linux.waitv(w, n, deadline_ns);
}

static int fake_wait1(const struct nerve__wait_word *w, int64_t deadline_ns)
{
    atomic_fetch_add(&waits, 1);
    return nerve__futex_linux.wait1(w, deadline_ns);
}

static void fake_wake(const uint32_t *word, int shared)
{
    atomic_fetch_add(&wakes, 1);
    nerve__futex_linux.wake_all(word, shared);
}

static atomic_int wake_max;

static int fake_wake_n(const uint32_t *word, int shared, int n)
{
    atomic_fetch_add(&wakes, 1);
    if (n > atomic_load(&wake_max))
        atomic_store(&wake_max, n);
    return nerve__futex_linux.wake(word, shared, n);
}

static const struct nerve__futex_ops fake = {fake_waitv, fake_wait1, fake_wake,
                                             fake_wake_n};

static nerve_chan *g_w;

static void *put_when_waiting(void *arg)
{
    (void)arg;
    struct nerve_stats st;
    do {
        NT_OK(nerve_chan_stat(g_w, &st));
    } while (st.waiters == 0);
    NT_OK(nerve_chan_put(g_w, "x", 1, NERVE_FOREVER, NULL, 0));
    return NULL;
}

int main(void)
{
    nt_watchdog(60);
    nerve__futex = &fake;
    const char *n = nt_name("futex");
    nt_create(n, 8, 4096);
    nerve_chan *r;
    NT_OK(nerve_chan_open(n, NERVE_O_WRITE, &g_w));
    NT_OK(nerve_chan_open(n, NERVE_O_READ, &r));

    /* No reader waits: puts make no futex call at all. */
    for (int i = 0; i < 1000; i++)
        NT_OK(nerve_chan_put(g_w, "x", 1, 0, NULL, 0));
    NT_EQ(atomic_load(&wakes), 0);

    /* A waiting reader is woken by exactly the put that follows, even when
     * its first sleeps end spuriously. */
    char b[4];
    struct nerve_get_info gi;
    NT_OK(nerve_chan_get(r, b, sizeof b, 0, 0, &gi, NERVE_GET_NEWEST));
    atomic_store(&spurious_left, 3);
    pthread_t t;
    pthread_create(&t, NULL, put_when_waiting, NULL);
    NT_OK(nerve_chan_get(r, b, sizeof b, 0, NERVE_FOREVER, &gi,
                         NERVE_GET_NEXT | NERVE_F_WAIT));
    pthread_join(t, NULL);
    NT_EQ(gi.seq, 1001);
    /* The put's wake, and possibly the woken reader passing it on
     * (SYNC(wake-pass)); each wakes a bounded batch. */
    NT_CMP(atomic_load(&wakes), >=, 1);
    NT_CMP(atomic_load(&wakes), <=, 2);
    NT_CMP(atomic_load(&wake_max), <=, 8);
    NT_CMP(atomic_load(&waits), >=, 1);

    /* The waiter left: once its lease (one 100 ms slice + grace) has
     * ended, puts are silent again. */
    struct timespec lease = {0, 150 * 1000 * 1000};
    nanosleep(&lease, NULL);
    int w0 = atomic_load(&wakes);
    for (int i = 0; i < 100; i++)
        NT_OK(nerve_chan_put(g_w, "x", 1, 0, NULL, 0));
    NT_EQ(atomic_load(&wakes), w0);
    nerve_chan_close(g_w);
    nerve_chan_close(r);
    NT_OK(nerve_chan_unlink(n));

    /* NERVE_C_WAKE_ALWAYS: every put wakes, for readers that cannot
     * announce themselves in the bell. */
    const char *n2 = nt_name("always");
    struct nerve_chan_opts o = NERVE_CHAN_OPTS_INIT;
    o.slots = 8;
    o.data_size = 4096;
    o.flags = NERVE_C_WAKE_ALWAYS;
    NT_OK(nerve_chan_create(n2, &o));
    NT_OK(nerve_chan_open(n2, NERVE_O_WRITE, &g_w));
    int before = atomic_load(&wakes);
    for (int i = 0; i < 10; i++)
        NT_OK(nerve_chan_put(g_w, "x", 1, 0, NULL, 0));
    NT_EQ(atomic_load(&wakes) - before, 10);
    nerve_chan_close(g_w);
    NT_OK(nerve_chan_unlink(n2));
    nerve__futex = &nerve__futex_linux;
    printf("ok\n");
    return 0;
}
