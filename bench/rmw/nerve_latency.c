/* The baseline of bench/rmw/rmw_latency.py: one-way latency through
 * nerve's C API doing what rcl forces on a ROS 2 node, without rcl or an
 * RMW. The publisher copies each message into the ring (nerve_chan_put:
 * one copy in), the subscriber blocks in nerve_chan_get (NEXT, with
 * NERVE_F_WAIT: woken by the futex per message) and copies it out (one
 * copy out), as rcl_take does into a C message that holds sequences. The
 * same command line and JSON lines as rcl_latency.c, so the script runs
 * both alike:
 *
 *   nerve_latency sub KIND COUNT 1 [raw]  prints "ready", then one JSON
 *                                         line ("raw": every sample too)
 *   nerve_latency pub KIND COUNT RATE_HZ
 *
 * KIND: 64B (76 bytes), Imu (316 bytes), PointCloud2-1MiB (1 048 660
 * bytes) or Image-1080p (6 220 848 bytes): about the CDR sizes of
 * rcl_latency's messages (a 64-character std_msgs/String; a
 * sensor_msgs/Imu; 1 MiB of points with a PointCloud2's header; a 1920 x
 * 1080 rgb8 Image; the 64B and PointCloud2 sizes are those of the first
 * results, kept so that the runs compare). The channel is $NERVE_LAT_CHAN
 * (made by whichever side comes first, 16 slots, a data ring of 16
 * messages within 64 KiB and 64 MiB, as rmw_nerve sizes its rings); each
 * message starts with its send time (CLOCK_MONOTONIC ns). */

#define _GNU_SOURCE
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <nerve/nerve.h>

static int64_t clock_of(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int cmp(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

static void check(int r, const char *what)
{
    if (r) {
        fprintf(stderr, "nerve_latency: %s: %s\n", what, nerve_strerror(r));
        exit(1);
    }
}

/* The publisher: count + 20 puts of len bytes from buf, stamped, at rate
 * Hz; prints the put's time and CPU time (p50, p99) as JSON. */
static void run_pub(nerve_chan *c, unsigned char *buf, size_t len, long count,
                    double rate)
{
    struct timespec settle = {0, 200000000};
    nanosleep(&settle, NULL);
    int64_t period = (int64_t)(1e9 / rate);
    int64_t next = clock_of(CLOCK_MONOTONIC);
    long n = count + 20;
    int64_t *cost = calloc((size_t)n, sizeof *cost);
    int64_t *cpu = calloc((size_t)n, sizeof *cpu);
    for (long i = 0; i < n; i++) {
        int64_t c0 = clock_of(CLOCK_THREAD_CPUTIME_ID);
        int64_t t0 = clock_of(CLOCK_MONOTONIC);
        memcpy(buf, &t0, sizeof t0);
        check(nerve_chan_put(c, buf, len, NERVE_FOREVER, NULL, 0), "put");
        cost[i] = clock_of(CLOCK_MONOTONIC) - t0;
        cpu[i] = clock_of(CLOCK_THREAD_CPUTIME_ID) - c0;
        next += period;
        struct timespec t = {next / 1000000000, next % 1000000000};
        clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &t, NULL);
    }
    qsort(cost, (size_t)n, sizeof *cost, cmp);
    qsort(cpu, (size_t)n, sizeof *cpu, cmp);
    printf("{\"publish_p50_us\": %.1f, \"publish_p99_us\": %.1f, "
           "\"publish_cpu_p50_us\": %.1f, \"publish_cpu_p99_us\": %.1f}\n",
           cost[(n - 1) / 2] / 1000.0, cost[(long)(0.99 * (n - 1))] / 1000.0,
           cpu[(n - 1) / 2] / 1000.0, cpu[(long)(0.99 * (n - 1))] / 1000.0);
}

/* The subscriber: reads until count samples came (or 5 s without one
 * after the first), prints the latency quantiles as JSON, with every
 * sample when raw. */
static void run_sub(nerve_chan *c, unsigned char *buf, size_t len, long count,
                    int raw)
{
    int64_t *lat = calloc((size_t)count, sizeof *lat);
    long nlat = 0;
    printf("ready\n");
    fflush(stdout);
    /* Until every sample came, or 5 s passed without one after the
     * first, as rcl_latency. */
    int64_t end = clock_of(CLOCK_MONOTONIC) + (90 + count / 10) * 1000000000LL;
    int64_t last = 0;
    while (nlat < count && clock_of(CLOCK_MONOTONIC) < end &&
           (last == 0 || clock_of(CLOCK_MONOTONIC) - last < 5000000000LL)) {
        struct nerve_get_info gi;
        int r = nerve_chan_get(c, buf, len, 0, 100000000, &gi,
                               NERVE_GET_NEXT | NERVE_F_WAIT);
        if (r == NERVE_ETIMEDOUT)
            continue;
        check(r, "get");
        last = clock_of(CLOCK_MONOTONIC);
        int64_t sent;
        memcpy(&sent, buf, sizeof sent);
        lat[nlat++] = last - sent;
    }
    qsort(lat, (size_t)nlat, sizeof *lat, cmp);
#define Q(p) (nlat ? lat[(long)((p) * (nlat - 1))] / 1000.0 : -1.0)
    printf("{\"n\": %ld, \"p50_us\": %.1f, \"p99_us\": %.1f, \"max_us\": "
           "%.1f",
           nlat, Q(0.5), Q(0.99), nlat ? lat[nlat - 1] / 1000.0 : -1.0);
    if (raw) {
        printf(", \"lat_us\": [");
        for (long i = 0; i < nlat; i++)
            printf("%s%.1f", i ? ", " : "", lat[i] / 1000.0);
        printf("]");
    }
    printf("}\n");
}

int main(int argc, char **argv)
{
    const char *name = getenv("NERVE_LAT_CHAN");
    if (argc < 5 || !name) {
        fprintf(stderr, "usage: NERVE_LAT_CHAN=NAME nerve_latency sub KIND "
                        "COUNT 1 [raw] | pub KIND COUNT RATE_HZ\n");
        return 2;
    }
    int pub = strcmp(argv[1], "pub") == 0;
    size_t len = strcmp(argv[2], "PointCloud2-1MiB") == 0 ? 1048660
                 : strcmp(argv[2], "Image-1080p") == 0    ? 6220848
                 : strcmp(argv[2], "Imu") == 0            ? 316
                                                          : 76;
    long count = atol(argv[3]);
    double rate = pub ? atof(argv[4]) : 0;
    if (count < 1 || (pub && rate <= 0)) {
        fprintf(stderr, "nerve_latency: bad arguments\n");
        return 2;
    }
    struct nerve_chan_opts o = NERVE_CHAN_OPTS_INIT;
    o.flags = NERVE_C_EXIST_OK;
    o.slots = 16;
    uint64_t ring = 16 * (uint64_t)len;
    ring = ring < (64u << 10)   ? (64u << 10)
           : ring > (64u << 20) ? (64u << 20)
                                : ring;
    o.data_size = ring;
    check(nerve_chan_create(name, &o), "create");
    nerve_chan *c = NULL;
    check(nerve_chan_open(name, pub ? NERVE_O_WRITE : NERVE_O_READ, &c),
          "open");
    unsigned char *buf = calloc(1, len);
    if (pub)
        run_pub(c, buf, len, count, rate);
    else
        run_sub(c, buf, len, count, argc > 5 && strcmp(argv[5], "raw") == 0);
    (void)nerve_chan_close(c);
    return 0;
}
