/* The cost of nerve_chan_stat_name(), which tools and bridges poll: wall
 * and CPU time per call on a channel of 1024 slots and a 1 MiB ring.
 *
 *     build/bench/nerve-bench-stat-name [CALLS]
 *
 * Prints one line; asserts nothing (results: bench/results/stat-name-*.md). */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include <nerve/nerve.h>

static double ns_between(const struct timespec *a, const struct timespec *b)
{
    return (double)(b->tv_sec - a->tv_sec) * 1e9 +
           (double)(b->tv_nsec - a->tv_nsec);
}

int main(int argc, char **argv)
{
    int calls = argc > 1 ? atoi(argv[1]) : 5000;
    if (calls <= 0) {
        fprintf(stderr, "usage: %s [CALLS > 0]\n", argv[0]);
        return 2;
    }
    char name[64];
    snprintf(name, sizeof name, "bench-stat-%d", (int)getpid());
    struct nerve_chan_opts o = NERVE_CHAN_OPTS_INIT;
    o.slots = 1024;
    o.data_size = 1 << 20;
    int r = nerve_chan_create(name, &o);
    if (r) {
        fprintf(stderr, "create %s: %s\n", name, nerve_strerror(r));
        return 1;
    }
    struct nerve_stats st;
    struct timespec w0, w1, c0, c1;
    clock_gettime(CLOCK_MONOTONIC, &w0);
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c0);
    for (int i = 0; i < calls && r == 0; i++)
        r = nerve_chan_stat_name(name, &st);
    clock_gettime(CLOCK_MONOTONIC, &w1);
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c1);
    int u = nerve_chan_unlink(name);
    if (u && !r)
        r = u;
    if (r) {
        fprintf(stderr, "stat or unlink %s: %s\n", name, nerve_strerror(r));
        return 1;
    }
    printf("nerve_chan_stat_name, 1024 slots, 1 MiB ring: %.1f us/call wall, "
           "%.1f us/call CPU (%d calls)\n",
           ns_between(&w0, &w1) / calls / 1e3,
           ns_between(&c0, &c1) / calls / 1e3, calls);
    return 0;
}
