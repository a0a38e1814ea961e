/* One-way latency through rcl in C (no Python): a publisher process and a
 * subscriber process with `subs` subscriptions on one topic, each message
 * stamped with CLOCK_MONOTONIC at publish, the difference taken right after
 * rcl_take. Whichever RMW rcl uses: rmw_fastrtps_cpp by default in the
 * Jazzy wheels, rmw_nerve_cpp under nerve-ros2-exec.
 *
 *   rcl_latency sub KIND COUNT SUBS [raw]  prints "ready", then one JSON
 *                                          line ("raw": every sample too)
 *   rcl_latency pub KIND COUNT RATE_HZ SUBS
 *
 * SUBS: subscriptions in this process (sub), or subscriptions, in any
 * process, the publisher waits for before it starts (pub).
 *
 * KIND: 64B (std_msgs/String), Imu, PointCloud2-1MiB, Image-1080p.
 * Run by bench/rmw/rmw_latency.py --layer rcl. */

#define _GNU_SOURCE
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <rcl/error_handling.h>
#include <rcl/rcl.h>
#include <rosidl_runtime_c/primitives_sequence_functions.h>
#include <rosidl_runtime_c/string_functions.h>
#include <sensor_msgs/msg/image.h>
#include <sensor_msgs/msg/imu.h>
#include <sensor_msgs/msg/point_cloud2.h>
#include <std_msgs/msg/string.h>

#define RCL_PROG "rcl_latency"
#include "rcl_prog.h"

/* CPU time of this thread: a publish's own work, without the time it
 * spent descheduled (readers it woke may run first on a small host). */
static int64_t cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

enum kind { K64, KIMU, KCLOUD, KIMAGE };

static const rosidl_message_type_support_t *ts_of(enum kind k)
{
    switch (k) {
    case K64: return ROSIDL_GET_MSG_TYPE_SUPPORT(std_msgs, msg, String);
    case KIMU: return ROSIDL_GET_MSG_TYPE_SUPPORT(sensor_msgs, msg, Imu);
    case KCLOUD:
        return ROSIDL_GET_MSG_TYPE_SUPPORT(sensor_msgs, msg, PointCloud2);
    default: return ROSIDL_GET_MSG_TYPE_SUPPORT(sensor_msgs, msg, Image);
    }
}

static void *make(enum kind k)
{
    switch (k) {
    case K64: {
        std_msgs__msg__String *m = std_msgs__msg__String__create();
        char s[65];
        memset(s, 'x', 64);
        s[64] = 0;
        rosidl_runtime_c__String__assign(&m->data, s);
        return m;
    }
    case KIMU: return sensor_msgs__msg__Imu__create();
    case KCLOUD: return rcl_prog_cloud_1mib();
    default: return rcl_prog_image_1080p();
    }
}

static builtin_interfaces__msg__Time *stamp_of(enum kind k, void *m)
{
    switch (k) {
    case KIMU: return &((sensor_msgs__msg__Imu *)m)->header.stamp;
    case KCLOUD: return &((sensor_msgs__msg__PointCloud2 *)m)->header.stamp;
    case KIMAGE: return &((sensor_msgs__msg__Image *)m)->header.stamp;
    default: return NULL;
    }
}

static void stamp(enum kind k, void *m, int64_t t)
{
    builtin_interfaces__msg__Time *st = stamp_of(k, m);
    if (st) {
        st->sec = (int32_t)(t / 1000000000);
        st->nanosec = (uint32_t)(t % 1000000000);
    } else {
        char buf[21];
        snprintf(buf, sizeof buf, "%020" PRId64, t);
        memcpy(((std_msgs__msg__String *)m)->data.data, buf, 20);
    }
}

static int64_t sent(enum kind k, void *m)
{
    builtin_interfaces__msg__Time *st = stamp_of(k, m);
    if (st)
        return (int64_t)st->sec * 1000000000 + st->nanosec;
    char buf[21];
    memcpy(buf, ((std_msgs__msg__String *)m)->data.data, 20);
    buf[20] = 0;
    return strtoll(buf, NULL, 10);
}

static int cmp(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    if (argc < 5) {
        fprintf(stderr, "usage: rcl_latency sub KIND COUNT SUBS | pub KIND "
                        "COUNT RATE_HZ SUBS\n");
        return 2;
    }
    int pub = strcmp(argv[1], "pub") == 0;
    enum kind k = strcmp(argv[2], "Imu") == 0                ? KIMU
                  : strcmp(argv[2], "PointCloud2-1MiB") == 0 ? KCLOUD
                  : strcmp(argv[2], "Image-1080p") == 0      ? KIMAGE
                                                             : K64;
    long count = atol(argv[3]);
    int nsubs = atoi(pub ? (argc > 5 ? argv[5] : "1") : argv[4]);
    double rate = pub ? atof(argv[4]) : 0;
    if (count < 1 || nsubs < 1 || nsubs > 64 || (pub && rate <= 0)) {
        fprintf(stderr, "rcl_latency: bad arguments\n");
        return 2;
    }
    rcl_allocator_t a = rcl_get_default_allocator();
    rcl_context_t ctx;
    rcl_node_t node;
    rcl_prog_start(&ctx, &node, pub ? "rcl_lat_pub" : "rcl_lat_sub");
    const rosidl_message_type_support_t *ts = ts_of(k);
    if (pub) {
        rcl_publisher_t p = rcl_get_zero_initialized_publisher();
        rcl_publisher_options_t po = rcl_publisher_get_default_options();
        CHECK(rcl_publisher_init(&p, &node, ts, "/lat", &po));
        size_t n = 0;
        int64_t end = now_ns() + 30 * 1000000000LL;
        while (n < (size_t)nsubs && now_ns() < end) {
            CHECK(rcl_publisher_get_subscription_count(&p, &n));
            struct timespec d = {0, 20000000};
            nanosleep(&d, NULL);
        }
        struct timespec settle = {1, 0}; /* let DDS finish matching */
        nanosleep(&settle, NULL);
        void *m = make(k);
        int64_t period = (int64_t)(1e9 / rate);
        int64_t next = now_ns();
        int64_t *cost = calloc((size_t)count + 20, sizeof *cost);
        int64_t *cpu = calloc((size_t)count + 20, sizeof *cpu);
        for (long i = 0; i < count + 20; i++) {
            int64_t c0 = cpu_ns();
            int64_t t0 = now_ns();
            stamp(k, m, t0);
            CHECK(rcl_publish(&p, m, NULL));
            cost[i] = now_ns() - t0;
            cpu[i] = cpu_ns() - c0;
            next += period;
            struct timespec t = {next / 1000000000, next % 1000000000};
            clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &t, NULL);
        }
        /* The publisher's own cost: rcl_publish, serialisation included,
         * as wall time and as this thread's CPU time. */
        qsort(cost, (size_t)count + 20, sizeof *cost, cmp);
        qsort(cpu, (size_t)count + 20, sizeof *cpu, cmp);
        printf("{\"publish_p50_us\": %.1f, \"publish_p99_us\": %.1f, "
               "\"publish_cpu_p50_us\": %.1f, \"publish_cpu_p99_us\": %.1f}\n",
               cost[(count + 19) / 2] / 1000.0,
               cost[(long)(0.99 * (count + 19))] / 1000.0,
               cpu[(count + 19) / 2] / 1000.0,
               cpu[(long)(0.99 * (count + 19))] / 1000.0);
        CHECK(rcl_publisher_fini(&p, &node));
    } else {
        rcl_subscription_t *s = calloc((size_t)nsubs, sizeof *s);
        void **msg = calloc((size_t)nsubs, sizeof *msg);
        long *got = calloc((size_t)nsubs, sizeof *got);
        int64_t *lat = calloc((size_t)(count * nsubs), sizeof *lat);
        long nlat = 0;
        for (int i = 0; i < nsubs; i++) {
            s[i] = rcl_get_zero_initialized_subscription();
            rcl_subscription_options_t so =
                rcl_subscription_get_default_options();
            CHECK(rcl_subscription_init(&s[i], &node, ts, "/lat", &so));
            msg[i] = make(k);
        }
        rcl_wait_set_t ws = rcl_get_zero_initialized_wait_set();
        CHECK(rcl_wait_set_init(&ws, (size_t)nsubs, 0, 0, 0, 0, 0, &ctx, a));
        printf("ready\n");
        fflush(stdout);
        /* Until every sample came, or 5 s passed without one after the
         * first (the publisher is done: a reader lapped by the ring or by
         * keep-last lost some, and the count says how many). */
        int64_t end = now_ns() + (int64_t)(90 + count / 10) * 1000000000LL;
        int64_t last = 0;
        while (nlat < count * nsubs && now_ns() < end &&
               (last == 0 || now_ns() - last < 5000000000LL)) {
            CHECK(rcl_wait_set_clear(&ws));
            for (int i = 0; i < nsubs; i++)
                CHECK(rcl_wait_set_add_subscription(&ws, &s[i], NULL));
            rcl_ret_t r = rcl_wait(&ws, RCL_MS_TO_NS(100));
            if (r == RCL_RET_TIMEOUT)
                continue;
            CHECK(r);
            for (int i = 0; i < nsubs; i++) {
                if (!ws.subscriptions[i])
                    continue;
                for (;;) {
                    r = rcl_take(&s[i], msg[i], NULL, NULL);
                    if (r == RCL_RET_SUBSCRIPTION_TAKE_FAILED)
                        break;
                    CHECK(r);
                    last = now_ns();
                    int64_t d = last - sent(k, msg[i]);
                    if (got[i]++ < count)
                        lat[nlat++] = d;
                }
            }
        }
        qsort(lat, (size_t)nlat, sizeof *lat, cmp);
#define Q(p) (nlat ? lat[(long)((p) * (nlat - 1))] / 1000.0 : -1.0)
        printf("{\"n\": %ld, \"p50_us\": %.1f, \"p99_us\": %.1f, \"max_us\": "
               "%.1f",
               nlat, Q(0.5), Q(0.99), nlat ? lat[nlat - 1] / 1000.0 : -1.0);
        if (argc > 5 && strcmp(argv[5], "raw") == 0) {
            printf(", \"lat_us\": [");
            for (long i = 0; i < nlat; i++)
                printf("%s%.1f", i ? ", " : "", lat[i] / 1000.0);
            printf("]");
        }
        printf("}\n");
        CHECK(rcl_wait_set_fini(&ws));
        for (int i = 0; i < nsubs; i++)
            CHECK(rcl_subscription_fini(&s[i], &node));
    }
    rcl_prog_stop(&ctx, &node);
    return 0;
}
