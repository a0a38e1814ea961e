/* What a read-only user can do to a writer by parking threads in
 * FUTEX_WAIT on a channel's head word (issue 11, defect 5).
 *
 * Any process that may read a channel can map it read-only and park as
 * many threads as it likes on the futex word that readers wait on. This
 * program does exactly that (raw futex calls, no nerve reader code), with
 * 0, 1000 and 4000 parked threads by default, on a channel created with
 * NERVE_C_WAKE_ALWAYS so that every put wakes (the worst case: on a
 * channel without it a put wakes only while a real reader's wake lease
 * runs), and times each put of a small message from a writer in the same
 * process. It prints put latency percentiles side by side.
 *
 *   nerve_bench_parked [--threads 0,1000,4000] [--puts N] [--size BYTES]
 *
 * Uses only the public C API (plus the documented header offset of the
 * head word, docs/design/0001-shm-layout.md), so it builds against older
 * nerve versions too, for comparison. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <linux/futex.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "nerve/nerve.h"

#define HEAD_OFF 320

static const uint32_t *g_head;
static atomic_int g_stop, g_parked;
static atomic_ulong g_woken;

static void *parker(void *arg)
{
    (void)arg;
    atomic_fetch_add(&g_parked, 1);
    while (!atomic_load_explicit(&g_stop, memory_order_relaxed)) {
        uint32_t v = __atomic_load_n(g_head, __ATOMIC_ACQUIRE);
        struct timespec to = {1, 0};
        if (syscall(SYS_futex, g_head, FUTEX_WAIT, v, &to, NULL, 0) == 0)
            atomic_fetch_add_explicit(&g_woken, 1, memory_order_relaxed);
    }
    return NULL;
}

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int cmp64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

struct result {
    int threads;
    long n;
    int64_t p50, p99, p999, max;
    unsigned long woken;
};

static int64_t pct(const int64_t *s, long n, double p)
{
    long i = (long)(p * (double)(n - 1) + 0.5);
    return s[i];
}

/* Creates channel `name` (NERVE_C_WAKE_ALWAYS) and maps its first page
 * read-only, as any reader may: the mapping, or NULL with the error said
 * (and the channel removed if it was made). */
static void *create_mapped(const char *name)
{
    struct nerve_chan_opts o = NERVE_CHAN_OPTS_INIT;
    o.slots = 256;
    o.data_size = 1 << 20;
    o.flags = NERVE_C_WAKE_ALWAYS;
    int rc = nerve_chan_create(name, &o);
    if (rc) {
        fprintf(stderr, "create: %s\n", nerve_strerror(rc));
        return NULL;
    }
    char path[NERVE_PATH_MAX];
    int fd = nerve_chan_path(name, 0, path, sizeof path) == 0
                 ? open(path, O_RDONLY)
                 : -1;
    void *m =
        fd >= 0 ? mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, 0) : MAP_FAILED;
    if (fd >= 0)
        close(fd);
    if (m == MAP_FAILED) {
        perror("map");
        if (nerve_chan_unlink(name) != 0)
            fprintf(stderr, "could not remove %s\n", name);
        return NULL;
    }
    return m;
}

/* Starts up to `threads` parkers on g_head (64 KiB stacks; as many as the
 * system allows, counted in `*started`) and returns once all of them are
 * in FUTEX_WAIT, give or take 200 ms. The threads, to join after g_stop. */
static pthread_t *park_threads(int threads, int *started)
{
    atomic_store(&g_stop, 0);
    atomic_store(&g_parked, 0);
    atomic_store(&g_woken, 0);
    pthread_t *t = calloc((size_t)threads + 1, sizeof *t);
    pthread_attr_t at;
    pthread_attr_init(&at);
    pthread_attr_setstacksize(&at, 64 * 1024);
    *started = 0;
    for (int i = 0; i < threads; i++) {
        if (pthread_create(&t[i], &at, parker, NULL) != 0)
            break;
        (*started)++;
    }
    while (atomic_load(&g_parked) < *started)
        usleep(1000);
    usleep(200000); /* let them reach FUTEX_WAIT */
    return t;
}

/* Untimed puts before the timed ones: enough to fault in the ring's pages
 * and warm the caches, so the first timed puts are not outliers. */
#define WARMUP_PUTS 1000

/* WARMUP_PUTS untimed puts of `size` bytes through `w`, then `puts` timed
 * ones; the latencies of those that succeeded go to `lat`. Their count. */
static long timed_puts(nerve_chan *w, long puts, size_t size, int64_t *lat)
{
    char *msg = calloc(1, size ? size : 1);
    for (long i = 0; i < WARMUP_PUTS; i++) {
        if (nerve_chan_put(w, msg, size, NERVE_FOREVER, NULL, 0) != 0)
            break;
    }
    long n = 0;
    for (long i = 0; i < puts; i++) {
        int64_t a = now_ns();
        int rc = nerve_chan_put(w, msg, size, NERVE_FOREVER, NULL, 0);
        int64_t b = now_ns();
        if (rc == 0)
            lat[n++] = b - a;
    }
    free(msg);
    return n;
}

/* One row: `puts` puts timed with `threads` parked on the head word. 0, or
 * 1 with the error said. */
static int run(int threads, long puts, size_t size, struct result *res)
{
    char name[64];
    snprintf(name, sizeof name, "bench-parked-%d", (int)getpid());
    void *m = create_mapped(name);
    if (m == NULL)
        return 1;
    g_head = (const uint32_t *)((const char *)m + HEAD_OFF);
    int started;
    pthread_t *t = park_threads(threads, &started);
    nerve_chan *w;
    int rc = nerve_chan_open(name, NERVE_O_WRITE, &w);
    if (rc) {
        fprintf(stderr, "open: %s\n", nerve_strerror(rc));
        return 1;
    }
    int64_t *lat = calloc((size_t)puts, sizeof *lat);
    long n = timed_puts(w, puts, size, lat);
    atomic_store(&g_stop, 1);
    for (int i = 0; i < started; i++)
        pthread_join(t[i], NULL);
    nerve_chan_close(w);
    if (nerve_chan_unlink(name) != 0)
        fprintf(stderr, "could not remove %s\n", name);
    munmap(m, 4096);
    qsort(lat, (size_t)n, sizeof *lat, cmp64);
    res->threads = started;
    res->n = n;
    res->p50 = pct(lat, n, 0.50);
    res->p99 = pct(lat, n, 0.99);
    res->p999 = pct(lat, n, 0.999);
    res->max = lat[n - 1];
    res->woken = atomic_load(&g_woken);
    free(lat);
    free(t);
    return 0;
}

int main(int argc, char **argv)
{
    const char *list = "0,1000,4000";
    long puts = 20000;
    size_t size = 64;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--threads") && i + 1 < argc)
            list = argv[++i];
        else if (!strcmp(argv[i], "--puts") && i + 1 < argc)
            puts = atol(argv[++i]);
        else if (!strcmp(argv[i], "--size") && i + 1 < argc)
            size = (size_t)atol(argv[++i]);
        else {
            fprintf(stderr,
                    "usage: %s [--threads 0,1000,4000] [--puts N] "
                    "[--size BYTES]\n",
                    argv[0]);
            return 2;
        }
    }
    if (puts < 1) {
        fprintf(stderr, "--puts must be >= 1\n");
        return 2;
    }
    struct result res[16];
    int nr = 0;
    char *copy = strdup(list);
    for (char *tok = strtok(copy, ","); tok && nr < 16;
         tok = strtok(NULL, ",")) {
        if (run(atoi(tok), puts, size, &res[nr]) != 0)
            return 1;
        nr++;
    }
    free(copy);
    printf("put of %zu B on a NERVE_C_WAKE_ALWAYS channel, %ld puts per "
           "row, parked FUTEX_WAIT threads of a read-only mapping\n",
           size, puts);
    printf("%8s %8s %10s %10s %10s %10s %12s\n", "parked", "samples", "p50_ns",
           "p99_ns", "p99.9_ns", "max_ns", "wakeups");
    for (int i = 0; i < nr; i++)
        printf("%8d %8ld %10lld %10lld %10lld %10lld %12lu\n", res[i].threads,
               res[i].n, (long long)res[i].p50, (long long)res[i].p99,
               (long long)res[i].p999, (long long)res[i].max, res[i].woken);
    return 0;
}
