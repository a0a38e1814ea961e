/* What the C programs on rcl share: bench/rmw/rcl_latency.c,
 * bench/rmw/rcl_copies.c and tests/rmw/rcl_loan.c, all built by
 * rmw_nerve_rcl_program() in rmw_nerve/CMakeLists.txt. Header-only. Each
 * program defines RCL_PROG, the name its failure lines start with, before
 * it includes this file. */
#ifndef NERVE_RCL_PROG_H
#define NERVE_RCL_PROG_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <rcl/error_handling.h>
#include <rcl/rcl.h>
#include <rosidl_runtime_c/primitives_sequence_functions.h>
#include <rosidl_runtime_c/string_functions.h>
#include <sensor_msgs/msg/image.h>
#include <sensor_msgs/msg/point_cloud2.h>

#ifndef RCL_PROG
#error "define RCL_PROG (the name of the program) before rcl_prog.h"
#endif

/* An rcl call that must succeed; else a line on stderr naming the call and
 * rcl's error, and exit status 1. */
#define CHECK(x)                                                               \
    do {                                                                       \
        if ((x) != RCL_RET_OK) {                                               \
            fprintf(stderr, "%s: FAIL: %s: %s\n", RCL_PROG, #x,                \
                    rcl_get_error_string().str);                               \
            exit(1);                                                           \
        }                                                                      \
    } while (0)

/* CLOCK_MONOTONIC in ns: every time a program measures or bounds. */
static inline int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* rcl initialised into *ctx and one node `name` in it, without /rosout
 * (the programs measure or check one topic of their own). */
static inline void rcl_prog_start(rcl_context_t *ctx, rcl_node_t *node,
                                  const char *name)
{
    rcl_init_options_t io = rcl_get_zero_initialized_init_options();
    CHECK(rcl_init_options_init(&io, rcl_get_default_allocator()));
    *ctx = rcl_get_zero_initialized_context();
    CHECK(rcl_init(0, NULL, &io, ctx));
    CHECK(rcl_init_options_fini(&io));
    *node = rcl_get_zero_initialized_node();
    rcl_node_options_t no = rcl_node_get_default_options();
    no.enable_rosout = false;
    CHECK(rcl_node_init(node, name, "", ctx, &no));
}

/* The two large messages the benchmarks measure, zero-filled: a 1 MiB
 * PointCloud2 (65536 points of 16 bytes) and a 1080p rgb8 Image. */
static inline sensor_msgs__msg__PointCloud2 *rcl_prog_cloud_1mib(void)
{
    sensor_msgs__msg__PointCloud2 *m = sensor_msgs__msg__PointCloud2__create();
    m->height = 1;
    m->width = 65536;
    m->point_step = 16;
    m->row_step = 16 * 65536;
    rosidl_runtime_c__uint8__Sequence__init(&m->data, 1u << 20);
    return m;
}

static inline sensor_msgs__msg__Image *rcl_prog_image_1080p(void)
{
    sensor_msgs__msg__Image *m = sensor_msgs__msg__Image__create();
    m->height = 1080;
    m->width = 1920;
    m->step = 5760;
    rosidl_runtime_c__String__assign(&m->encoding, "rgb8");
    rosidl_runtime_c__uint8__Sequence__init(&m->data, 1920 * 1080 * 3);
    return m;
}

/* The node, then rcl, finished. */
static inline void rcl_prog_stop(rcl_context_t *ctx, rcl_node_t *node)
{
    CHECK(rcl_node_fini(node));
    CHECK(rcl_shutdown(ctx));
    CHECK(rcl_context_fini(ctx));
}

#endif
