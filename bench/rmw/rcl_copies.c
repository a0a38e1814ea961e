/* What one large message costs each side through rcl in C, against a copy
 * of the same size measured in the same run: one process, a publisher and
 * a subscription on one topic, whichever RMW rcl uses (rmw_fastrtps_cpp in
 * the Jazzy wheels, rmw_nerve_cpp under nerve-ros2-exec).
 *
 *   rcl_copies KIND COUNT      KIND: PointCloud2-1MiB | Image-1080p
 *
 * Per message, timed apart (CLOCK_MONOTONIC): rcl_publish; rcl_take once
 * the message is there (the wait for it is not counted); and, on the same
 * bytes, rmw_serialize into a buffer already large enough, rmw_deserialize
 * into the message, memcpy of the CDR size into a warm buffer and into
 * a ring-sized area whose next slot the cache no longer holds, and
 * free + calloc + memcpy of the data array (what the C typesupport's
 * deserialisation does to every sequence field: it finalises the old one
 * and allocates a new one of the incoming size). Prints one JSON line with
 * the p50 and p99 of each in microseconds. Run by bench/rmw/rmw_copies.py. */

#define _GNU_SOURCE
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <rcl/error_handling.h>
#include <rcl/rcl.h>
#include <rmw/rmw.h>
#include <rmw/serialized_message.h>
#include <rosidl_runtime_c/primitives_sequence_functions.h>
#include <rosidl_runtime_c/string_functions.h>
#include <sensor_msgs/msg/image.h>
#include <sensor_msgs/msg/point_cloud2.h>

#define RCL_PROG "rcl_copies"
#include "rcl_prog.h"

static volatile uint8_t sink; /* keeps the timed memcpy */

static int cmp(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* p50 and p99 of v[0..n) in microseconds, as JSON members. */
static void put(const char *name, int64_t *v, long n, int last)
{
    qsort(v, (size_t)n, sizeof *v, cmp);
    printf("\"%s_p50_us\": %.1f, \"%s_p99_us\": %.1f%s", name,
           v[n / 2] / 1000.0, name, v[(long)(0.99 * (n - 1))] / 1000.0,
           last ? "" : ", ");
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: rcl_copies PointCloud2-1MiB|Image-1080p "
                        "COUNT\n");
        return 2;
    }
    int image = strcmp(argv[1], "Image-1080p") == 0;
    if (!image && strcmp(argv[1], "PointCloud2-1MiB") != 0) {
        fprintf(stderr, "rcl_copies: unknown kind '%s'\n", argv[1]);
        return 2;
    }
    long count = atol(argv[2]);
    if (count < 1 || count > 100000) {
        fprintf(stderr, "rcl_copies: bad count\n");
        return 2;
    }
    const rosidl_message_type_support_t *ts =
        image ? ROSIDL_GET_MSG_TYPE_SUPPORT(sensor_msgs, msg, Image)
              : ROSIDL_GET_MSG_TYPE_SUPPORT(sensor_msgs, msg, PointCloud2);
    void *out, *in;
    rosidl_runtime_c__uint8__Sequence *data, *in_data;
    if (image) {
        sensor_msgs__msg__Image *m = rcl_prog_image_1080p();
        sensor_msgs__msg__Image *r = sensor_msgs__msg__Image__create();
        out = m;
        data = &m->data;
        in = r;
        in_data = &r->data;
    } else {
        sensor_msgs__msg__PointCloud2 *m = rcl_prog_cloud_1mib();
        sensor_msgs__msg__PointCloud2 *r =
            sensor_msgs__msg__PointCloud2__create();
        out = m;
        data = &m->data;
        in = r;
        in_data = &r->data;
    }
    for (size_t i = 0; i < data->size; i++)
        data->data[i] = (uint8_t)(i * 7);

    rcl_allocator_t a = rcl_get_default_allocator();
    rcl_context_t ctx;
    rcl_node_t node;
    rcl_prog_start(&ctx, &node, "rcl_copies");
    rcl_publisher_t p = rcl_get_zero_initialized_publisher();
    rcl_publisher_options_t po = rcl_publisher_get_default_options();
    CHECK(rcl_publisher_init(&p, &node, ts, "/copies", &po));
    rcl_subscription_t s = rcl_get_zero_initialized_subscription();
    rcl_subscription_options_t so = rcl_subscription_get_default_options();
    CHECK(rcl_subscription_init(&s, &node, ts, "/copies", &so));
    rcl_wait_set_t ws = rcl_get_zero_initialized_wait_set();
    CHECK(rcl_wait_set_init(&ws, 1, 0, 0, 0, 0, 0, &ctx, a));
    /* Let a DDS endpoint match its reader (rmw_nerve needs no wait). */
    size_t matched = 0;
    for (int64_t end = now_ns() + 10000000000LL;
         matched < 1 && now_ns() < end;) {
        CHECK(rcl_publisher_get_subscription_count(&p, &matched));
        struct timespec d = {0, 20000000};
        nanosleep(&d, NULL);
    }
    struct timespec settle = {0, 500000000};
    nanosleep(&settle, NULL);

    rmw_serialized_message_t ser =
        rmw_get_zero_initialized_serialized_message();
    if (rmw_serialized_message_init(&ser, data->size + 4096, &a) !=
        RMW_RET_OK) {
        fprintf(stderr, "rcl_copies: out of memory\n");
        return 1;
    }
    uint8_t *warm = malloc(data->size + 4096);
    /* A copy into memory laid out as rmw_nerve's ring for this message
     * (data ring 2 x depth 10 x size, at most 64 MiB): each message lands
     * past the previous one, in lines the cache no longer holds. Touched
     * once first, so no page fault is timed. */
    size_t stride = (data->size + 4096 + 63) & ~(size_t)63;
    size_t nring = (64u << 20) / stride;
    if (nring > 20)
        nring = 20;
    if (nring < 2)
        nring = 2;
    uint8_t *ring = malloc(stride * nring);
    memset(ring, 1, stride * nring);
    long w = 5; /* warm-up rounds, not counted */
    int64_t *pub = calloc((size_t)count, sizeof(int64_t));
    int64_t *take = calloc((size_t)count, sizeof(int64_t));
    int64_t *sz = calloc((size_t)count, sizeof(int64_t));
    int64_t *dsz = calloc((size_t)count, sizeof(int64_t));
    int64_t *cpy = calloc((size_t)count, sizeof(int64_t));
    int64_t *acpy = calloc((size_t)count, sizeof(int64_t));
    int64_t *rcpy = calloc((size_t)count, sizeof(int64_t));
    long n = 0, lost = 0;
    for (long i = 0; i < count + w; i++) {
        data->data[0] = (uint8_t)i;
        int64_t t0 = now_ns();
        CHECK(rcl_publish(&p, out, NULL));
        int64_t t1 = now_ns();
        /* Wait (bounded) until the subscription has it; not timed. */
        int64_t tt = 0, t3 = 0, end = now_ns() + 5000000000LL;
        rcl_ret_t r = RCL_RET_SUBSCRIPTION_TAKE_FAILED;
        while (now_ns() < end) {
            int64_t t2 = now_ns();
            r = rcl_take(&s, in, NULL, NULL);
            t3 = now_ns();
            tt = t3 - t2;
            if (r != RCL_RET_SUBSCRIPTION_TAKE_FAILED)
                break;
            CHECK(rcl_wait_set_clear(&ws));
            CHECK(rcl_wait_set_add_subscription(&ws, &s, NULL));
            rcl_ret_t wr = rcl_wait(&ws, RCL_MS_TO_NS(100));
            if (wr != RCL_RET_TIMEOUT)
                CHECK(wr);
        }
        if (r == RCL_RET_SUBSCRIPTION_TAKE_FAILED) {
            lost++;
            continue;
        }
        CHECK(r);
        if (in_data->size != data->size || in_data->data[0] != (uint8_t)i ||
            in_data->data[data->size - 1] != data->data[data->size - 1]) {
            fprintf(stderr, "rcl_copies: message %ld arrived wrong\n", i);
            return 1;
        }
        int64_t a0 = now_ns();
        if (rmw_serialize(out, ts, &ser) != RMW_RET_OK) {
            fprintf(stderr, "rcl_copies: rmw_serialize failed\n");
            return 1;
        }
        int64_t a1 = now_ns();
        if (rmw_deserialize(&ser, ts, in) != RMW_RET_OK) {
            fprintf(stderr, "rcl_copies: rmw_deserialize failed\n");
            return 1;
        }
        int64_t a2 = now_ns();
        memcpy(warm, ser.buffer, ser.buffer_length);
        int64_t a3 = now_ns();
        sink = warm[(size_t)i % ser.buffer_length];
        int64_t b0 = now_ns();
        memcpy(ring + stride * ((size_t)i % nring), ser.buffer,
               ser.buffer_length);
        int64_t b1 = now_ns();
        sink = ring[stride * ((size_t)i % nring) + (size_t)i % 4096];
        int64_t a3b = now_ns();
        free(in_data->data);
        in_data->data = calloc(data->size, 1);
        memcpy(in_data->data, data->data, data->size);
        int64_t a4 = now_ns();
        if (i < w)
            continue;
        pub[n] = t1 - t0;
        take[n] = tt;
        sz[n] = a1 - a0;
        dsz[n] = a2 - a1;
        cpy[n] = a3 - a2;
        acpy[n] = a4 - a3b;
        rcpy[n] = b1 - b0;
        n++;
    }
    if (n == 0) {
        fprintf(stderr, "rcl_copies: nothing arrived\n");
        return 1;
    }
    printf("{\"rmw\": \"%s\", \"msg\": \"%s\", \"cdr_bytes\": %zu, \"n\": %ld, "
           "\"not_arrived\": %ld, ",
           rmw_get_implementation_identifier(), argv[1], ser.buffer_length, n,
           lost);
    put("rcl_publish", pub, n, 0);
    put("rcl_take", take, n, 0);
    put("rmw_serialize", sz, n, 0);
    put("rmw_deserialize", dsz, n, 0);
    put("memcpy", cpy, n, 0);
    put("memcpy_ring", rcpy, n, 0);
    put("free_calloc_memcpy", acpy, n, 1);
    printf("}\n");
    free(warm);
    free(ring);
    CHECK(rcl_wait_set_fini(&ws));
    CHECK(rcl_subscription_fini(&s, &node));
    CHECK(rcl_publisher_fini(&p, &node));
    rcl_prog_stop(&ctx, &node);
    return 0;
}
