/* The wake-up cost a put pays (issue 11, defects 5 and 6), counted through
 * the futex seam of platform.h rather than timed:
 *   - readers killed (SIGKILL) while waiting leave their registration
 *     behind; once their wake lease has run out, puts make no futex call
 *     at all again;
 *   - threads parked in FUTEX_WAIT on the head word by a process that only
 *     maps the channel read-only (as any reader may) cost each put one
 *     wake call of at most NERVE__WAKE_BATCH (8) sleepers, however many
 *     are parked, and that call is made after the writer lock is released.
 */
#include "nerve_test.h"

#include <fcntl.h>
#include <linux/futex.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "platform.h"

#define HEAD_OFF 320 /* struct nerve__shm_hdr.head */

static atomic_int wakes, wake_max, wake_locked;
static const char *g_name;

static void fake_wake_all(const uint32_t *word, int shared)
{
    atomic_fetch_add(&wakes, 1);
    nerve__futex_linux.wake_all(word, shared);
}

static int fake_wake(const uint32_t *word, int shared, int n)
{
    atomic_fetch_add(&wakes, 1);
    if (n > atomic_load(&wake_max))
        atomic_store(&wake_max, n);
    /* The writer lock must already be free when a put wakes. */
    char msg[512];
    if (nerve_chan_check(g_name, msg, sizeof msg) != 0 ||
        !strstr(msg, "writer lock: free"))
        atomic_fetch_add(&wake_locked, 1);
    return nerve__futex_linux.wake(word, shared, n);
}

static const struct nerve__futex_ops counting = {NULL, NULL, fake_wake_all,
                                                 fake_wake};

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000};
    nanosleep(&ts, NULL);
}

/* ---- parked threads of a read-only process ---------------------------- */

static const uint32_t *g_head;
static atomic_int stop, parked;

static void *parker(void *arg)
{
    (void)arg;
    atomic_fetch_add(&parked, 1);
    while (!atomic_load(&stop)) {
        uint32_t v = __atomic_load_n(g_head, __ATOMIC_ACQUIRE);
        struct timespec to = {0, 20 * 1000000};
        syscall(SYS_futex, g_head, FUTEX_WAIT, v, &to, NULL, 0);
    }
    return NULL;
}

static void parked_threads(void)
{
    g_name = nt_name("parked");
    struct nerve_chan_opts o = NERVE_CHAN_OPTS_INIT;
    o.slots = 8;
    o.data_size = 4096;
    o.flags = NERVE_C_WAKE_ALWAYS; /* every put wakes: the worst case */
    NT_OK(nerve_chan_create(g_name, &o));
    char path[512];
    snprintf(path, sizeof path, "/dev/shm/nerve.%s", g_name);
    int fd = open(path, O_RDONLY);
    NT_CMP(fd, >=, 0);
    void *m = mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, 0);
    NT_ASSERT(m != MAP_FAILED);
    close(fd);
    g_head = (const uint32_t *)((const char *)m + HEAD_OFF);
    enum { NT = 200 };
    pthread_t t[NT];
    pthread_attr_t at;
    pthread_attr_init(&at);
    pthread_attr_setstacksize(&at, 64 * 1024);
    for (int i = 0; i < NT; i++)
        NT_EQ(pthread_create(&t[i], &at, parker, NULL), 0);
    while (atomic_load(&parked) < NT)
        sleep_ms(1);
    sleep_ms(20); /* let them reach FUTEX_WAIT (not asserted on) */
    nerve_chan *w;
    NT_OK(nerve_chan_open(g_name, NERVE_O_WRITE, &w));
    nerve__futex = &counting;
    atomic_store(&wakes, 0);
    atomic_store(&wake_max, 0);
    enum { PUTS = 200 };
    for (int i = 0; i < PUTS; i++)
        NT_OK(nerve_chan_put(w, "p", 1, NERVE_FOREVER, NULL, 0));
    nerve__futex = &nerve__futex_linux;
    /* One bounded wake per put, never under the lock. */
    NT_EQ(atomic_load(&wakes), PUTS);
    NT_CMP(atomic_load(&wake_max), <=, 8);
    NT_CMP(atomic_load(&wake_max), >=, 1);
    NT_EQ(atomic_load(&wake_locked), 0);
    atomic_store(&stop, 1);
    for (int i = 0; i < NT; i++)
        NT_EQ(pthread_join(t[i], NULL), 0);
    munmap(m, 4096);
    NT_OK(nerve_chan_close(w));
    NT_OK(nerve_chan_unlink(g_name));
}

/* ---- killed waiters --------------------------------------------------- */

static void killed_waiters(void)
{
    g_name = nt_name("killed");
    nt_create(g_name, 8, 4096);
    nerve_chan *w, *r;
    NT_OK(nerve_chan_open(g_name, NERVE_O_WRITE, &w));
    NT_OK(nerve_chan_open(g_name, NERVE_O_READ, &r));
    enum { N = 24 };
    pid_t pid[N];
    for (int i = 0; i < N; i++) {
        pid[i] = fork();
        NT_CMP(pid[i], >=, 0);
        if (pid[i] == 0) {
            nerve_chan *c;
            char b[8];
            struct nerve_get_info gi;
            if (nerve_chan_open(g_name, NERVE_O_READ, &c) != 0)
                _exit(1);
            int rc = nerve_chan_get(c, b, sizeof b, 0, NERVE_FOREVER, &gi,
                                    NERVE_GET_NEXT | NERVE_F_WAIT);
            _exit(rc == 0 ? 2 : 3); /* never: the parent does not put */
        }
    }
    /* All registered as waiting. */
    struct nerve_stats st;
    do {
        sleep_ms(1);
        NT_OK(nerve_chan_stat(r, &st));
    } while (st.waiters < N);
    for (int i = 0; i < N; i++)
        kill(pid[i], SIGKILL);
    for (int i = 0; i < N; i++) {
        int s;
        NT_EQ(waitpid(pid[i], &s, 0), pid[i]);
        NT_ASSERT(WIFSIGNALED(s) && WTERMSIG(s) == SIGKILL);
    }
    /* Their registration outlives them only until its lease ends (one
     * 100 ms wait slice plus grace); then it reads as nobody waiting. */
    do {
        sleep_ms(5);
        NT_OK(nerve_chan_stat(r, &st));
    } while (st.waiters != 0);
    nerve__futex = &counting;
    atomic_store(&wakes, 0);
    for (int i = 0; i < 1000; i++)
        NT_OK(nerve_chan_put(w, "k", 1, 0, NULL, 0));
    nerve__futex = &nerve__futex_linux;
    NT_EQ(atomic_load(&wakes), 0);
    NT_OK(nerve_chan_close(w));
    NT_OK(nerve_chan_close(r));
    NT_OK(nerve_chan_unlink(g_name));
}

int main(void)
{
    nt_watchdog(60);
    killed_waiters();
    parked_threads();
    printf("ok\n");
    return 0;
}
