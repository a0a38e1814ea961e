/* What one publish and one take cost when they run cold, layer by layer
 * (issue 39): the time of each call after a pause, in one process on one
 * CPU, with no other process and no system call in the measured calls.
 * C++ only to reach the type support's Fast CDR callbacks.
 *
 *   rcl_cold KIND ROUNDS PAUSE_US EVICT_KIB
 *
 * KIND: 64B (std_msgs/String of 64 characters) or Imu. Each round makes,
 * in turn, the calls below, each after a pause of PAUSE_US microseconds
 * (the idle time between two messages at the rate; 0: warm) and a walk
 * over EVICT_KIB KiB of memory, one load per 64-byte line (what the other
 * processes of a loaded host do to the caches and TLBs between two
 * messages; 0: none):
 *
 *   put     nerve_chan_put of the serialised bytes (nerve's C API)
 *   get     nerve_chan_get of them (a message waiting)
 *   ts_ser  the type support's Fast CDR serialisation into a buffer, as
 *           every RMW of these type supports (rmw_fastrtps_cpp, rmw_nerve)
 *           makes it: Cdr object, encapsulation, cdr_serialize
 *   ts_deser the same, back into a message
 *   rmw_pub rmw_publish on the rcl publisher's rmw handle
 *   rmw_wait rmw_wait on a wait set of the subscription's rmw handle, a
 *           message waiting (the RMW's part of rcl_wait)
 *   rmw_take rmw_take_with_info on the rcl subscription's rmw handle
 *   rcl_pub rcl_publish
 *   rcl_wait rcl_wait on a wait set of the subscription, a message waiting
 *   rcl_take rcl_take
 *
 * The subscription is in the same process and nothing sleeps on it, so a
 * publish makes no wake-up call: the times are user-space work only.
 * Prints one JSON line: per call, p50 and p90 in µs. Under rmw_nerve
 * (bench/results/2026-11-29-rmw-cold-path.md):
 *
 *   python -m nerve_tools.ros2.exec --lib build/rmw_nerve/librmw_nerve_cpp.so \
 *       --rcl .venv-jazzy/lib/librcl.so -- build/rmw_nerve/rcl_cold 64B 150 20000 0
 *
 * and without nerve_tools.ros2.exec under the wheels' rmw_fastrtps_cpp. */

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <fastcdr/Cdr.h>
#include <fastcdr/FastBuffer.h>
#include <nerve/nerve.h>
#include <rosidl_typesupport_fastrtps_cpp/message_type_support.h>
#include <rcl/error_handling.h>
#include <rcl/rcl.h>
#include <rmw/rmw.h>
#include <rosidl_runtime_c/string_functions.h>
#include <sensor_msgs/msg/imu.h>
#include <std_msgs/msg/string.h>

#define RCL_PROG "rcl_cold"
#include "rcl_prog.h"

enum {
    PUT,
    GET,
    TS_SER,
    TS_DESER,
    RMW_PUB,
    RMW_WAIT,
    RMW_TAKE,
    RCL_PUB,
    RCL_WAIT,
    RCL_TAKE,
    NCALLS
};
static const char *const names[NCALLS] = {
    "put",      "get",      "ts_ser",  "ts_deser", "rmw_pub",
    "rmw_wait", "rmw_take", "rcl_pub", "rcl_wait", "rcl_take"};

static unsigned char *g_evict;
static size_t g_evict_len;
static long g_pause_us;

/* The pause and the walk before each measured call. */
static void cool(void)
{
    if (g_pause_us > 0) {
        struct timespec t = {time_t(g_pause_us / 1000000),
                             (g_pause_us % 1000000) * 1000};
        nanosleep(&t, NULL);
    }
    volatile unsigned char sink = 0;
    for (size_t i = 0; i < g_evict_len; i += 64)
        sink ^= g_evict[i];
    (void)sink;
}

static int cmp(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

#define TIMED(slot, call)                                                      \
    do {                                                                       \
        cool();                                                                \
        int64_t t0_ = now_ns();                                                \
        call;                                                                  \
        g->t[slot][r] = now_ns() - t0_;                                        \
    } while (0)

#define RMW_OK(x)                                                              \
    do {                                                                       \
        if ((x) != RMW_RET_OK) {                                               \
            fprintf(stderr, "%s: FAIL: %s\n", RCL_PROG, #x);                   \
            exit(1);                                                           \
        }                                                                      \
    } while (0)

/* The type support's callbacks (C messages: rosidl_typesupport_fastrtps_c),
 * as rmw_nerve's cdr.cpp and rmw_fastrtps_cpp call them. */
static const message_type_support_callbacks_t *
callbacks(const rosidl_message_type_support_t *ts)
{
    const rosidl_message_type_support_t *h =
        get_message_typesupport_handle(ts, "rosidl_typesupport_fastrtps_c");
    if (!h) {
        fprintf(stderr, "rcl_cold: FAIL: no Fast CDR type support\n");
        exit(1);
    }
    return static_cast<const message_type_support_callbacks_t *>(h->data);
}

static size_t ts_serialize(const message_type_support_callbacks_t *cb,
                           const void *msg, char *buf, size_t cap)
{
    eprosima::fastcdr::FastBuffer fb(buf, cap);
    eprosima::fastcdr::Cdr cdr(fb, eprosima::fastcdr::Cdr::DEFAULT_ENDIAN,
                               eprosima::fastcdr::CdrVersion::XCDRv1);
    cdr.serialize_encapsulation();
    if (!cb->cdr_serialize(msg, cdr)) {
        fprintf(stderr, "rcl_cold: FAIL: cdr_serialize\n");
        exit(1);
    }
    return cdr.get_serialized_data_length();
}

static void ts_deserialize(const message_type_support_callbacks_t *cb,
                           char *buf, size_t len, void *msg)
{
    eprosima::fastcdr::FastBuffer fb(buf, len);
    eprosima::fastcdr::Cdr cdr(fb, eprosima::fastcdr::Cdr::DEFAULT_ENDIAN,
                               eprosima::fastcdr::CdrVersion::XCDRv1);
    cdr.read_encapsulation();
    if (!cb->cdr_deserialize(cdr, msg)) {
        fprintf(stderr, "rcl_cold: FAIL: cdr_deserialize\n");
        exit(1);
    }
}

static void nerve_ok(int rc, const char *what)
{
    if (rc) {
        fprintf(stderr, "%s: FAIL: %s: %s\n", RCL_PROG, what,
                nerve_strerror(rc));
        exit(1);
    }
}

/* Everything a round uses: the messages, rcl's publisher, subscription
 * and wait set on one topic, and a plain nerve channel. */
struct Rig {
    const rosidl_message_type_support_t *ts;
    const message_type_support_callbacks_t *cb;
    void *msg, *out;
    rcl_context_t ctx;
    rcl_node_t node;
    rcl_publisher_t p;
    rcl_subscription_t s;
    rcl_wait_set_t ws;
    rmw_wait_set_t *rws;
    void *rsub[1];
    char chan[64];
    nerve_chan *w, *rd;
    char ser[4096];
    size_t ser_len;
    unsigned char buf[4096];
    int64_t *t[NCALLS];
};

static void rig_messages(Rig *g, int imu)
{
    g->ts = imu ? ROSIDL_GET_MSG_TYPE_SUPPORT(sensor_msgs, msg, Imu)
                : ROSIDL_GET_MSG_TYPE_SUPPORT(std_msgs, msg, String);
    if (imu) {
        g->msg = sensor_msgs__msg__Imu__create();
        g->out = sensor_msgs__msg__Imu__create();
    } else {
        std_msgs__msg__String *str = std_msgs__msg__String__create();
        char text[65];
        memset(text, 'x', 64);
        text[64] = 0;
        rosidl_runtime_c__String__assign(&str->data, text);
        g->msg = str;
        g->out = std_msgs__msg__String__create();
    }
    g->cb = callbacks(g->ts);
    g->ser_len = ts_serialize(g->cb, g->msg, g->ser, sizeof g->ser);
}

static void rig_start(Rig *g, long rounds)
{
    rcl_prog_start(&g->ctx, &g->node, "rcl_cold");
    char topic[64];
    snprintf(topic, sizeof topic, "/cold_%d", (int)getpid());
    g->p = rcl_get_zero_initialized_publisher();
    rcl_publisher_options_t po = rcl_publisher_get_default_options();
    CHECK(rcl_publisher_init(&g->p, &g->node, g->ts, topic, &po));
    g->s = rcl_get_zero_initialized_subscription();
    rcl_subscription_options_t so = rcl_subscription_get_default_options();
    CHECK(rcl_subscription_init(&g->s, &g->node, g->ts, topic, &so));
    g->ws = rcl_get_zero_initialized_wait_set();
    CHECK(rcl_wait_set_init(&g->ws, 1, 0, 0, 0, 0, 0, &g->ctx,
                            rcl_get_default_allocator()));
    g->rws = rmw_create_wait_set(rcl_context_get_rmw_context(&g->ctx), 1);
    if (!g->rws) {
        fprintf(stderr, "rcl_cold: FAIL: rmw_create_wait_set\n");
        exit(1);
    }
    snprintf(g->chan, sizeof g->chan, "rcl-cold-%d", (int)getpid());
    struct nerve_chan_opts o = NERVE_CHAN_OPTS_INIT;
    o.slots = 64;
    o.data_size = 64 * 1024;
    nerve_ok(nerve_chan_create(g->chan, &o), "nerve_chan_create");
    nerve_ok(nerve_chan_open(g->chan, NERVE_O_WRITE, &g->w), "nerve_chan_open");
    nerve_ok(nerve_chan_open(g->chan, NERVE_O_READ, &g->rd), "nerve_chan_open");
    for (int i = 0; i < NCALLS; i++)
        g->t[i] =
            static_cast<int64_t *>(calloc(size_t(rounds), sizeof(int64_t)));
}

/* One round: each call once, after its pause, its time into t[call][r]. */
static void rig_round(Rig *g, long r)
{
    rmw_publisher_t *rp = rcl_publisher_get_rmw_handle(&g->p);
    rmw_subscription_t *rs = rcl_subscription_get_rmw_handle(&g->s);
    TIMED(PUT, nerve_ok(nerve_chan_put(g->w, g->ser, g->ser_len, 0, NULL, 0),
                        "nerve_chan_put"));
    TIMED(GET, nerve_ok(nerve_chan_get(g->rd, g->buf, sizeof g->buf, 0, 0, NULL,
                                       NERVE_GET_NEXT),
                        "nerve_chan_get"));
    TIMED(TS_SER,
          g->ser_len = ts_serialize(g->cb, g->msg, g->ser, sizeof g->ser));
    TIMED(TS_DESER, ts_deserialize(g->cb, g->ser, g->ser_len, g->out));
    bool taken = false;
    rmw_message_info_t mi = rmw_get_zero_initialized_message_info();
    TIMED(RMW_PUB, RMW_OK(rmw_publish(rp, g->msg, NULL)));
    g->rsub[0] = rs->data;
    rmw_subscriptions_t subs = {1, g->rsub};
    rmw_time_t limit = {0, 100000000};
    TIMED(RMW_WAIT,
          RMW_OK(rmw_wait(&subs, NULL, NULL, NULL, NULL, g->rws, &limit)));
    if (!g->rsub[0]) {
        fprintf(stderr, "rcl_cold: FAIL: rmw_wait did not find the message\n");
        exit(1);
    }
    TIMED(RMW_TAKE, RMW_OK(rmw_take_with_info(rs, g->out, &taken, &mi, NULL)));
    if (!taken) {
        fprintf(stderr, "rcl_cold: FAIL: rmw_take found nothing\n");
        exit(1);
    }
    TIMED(RCL_PUB, CHECK(rcl_publish(&g->p, g->msg, NULL)));
    CHECK(rcl_wait_set_clear(&g->ws));
    CHECK(rcl_wait_set_add_subscription(&g->ws, &g->s, NULL));
    TIMED(RCL_WAIT, CHECK(rcl_wait(&g->ws, RCL_MS_TO_NS(100))));
    TIMED(RCL_TAKE, CHECK(rcl_take(&g->s, g->out, NULL, NULL)));
}

static void rig_stop(Rig *g)
{
    nerve_chan_close(g->w);
    nerve_chan_close(g->rd);
    if (nerve_chan_unlink(g->chan) != 0)
        fprintf(stderr, "rcl_cold: could not remove %s\n", g->chan);
    RMW_OK(rmw_destroy_wait_set(g->rws));
    CHECK(rcl_wait_set_fini(&g->ws));
    CHECK(rcl_subscription_fini(&g->s, &g->node));
    CHECK(rcl_publisher_fini(&g->p, &g->node));
    rcl_prog_stop(&g->ctx, &g->node);
}

int main(int argc, char **argv)
{
    if (argc != 5) {
        fprintf(stderr, "usage: rcl_cold 64B|Imu ROUNDS PAUSE_US EVICT_KIB\n");
        return 2;
    }
    int imu = strcmp(argv[1], "Imu") == 0;
    if (!imu && strcmp(argv[1], "64B") != 0) {
        fprintf(stderr, "rcl_cold: unknown kind '%s' (64B or Imu)\n", argv[1]);
        return 2;
    }
    long rounds = atol(argv[2]);
    g_pause_us = atol(argv[3]);
    g_evict_len = (size_t)atol(argv[4]) * 1024;
    if (rounds < 1 || g_pause_us < 0) {
        fprintf(stderr, "rcl_cold: ROUNDS >= 1, PAUSE_US >= 0\n");
        return 2;
    }
    if (g_evict_len) {
        g_evict = static_cast<unsigned char *>(malloc(g_evict_len));
        if (!g_evict)
            return 1;
        memset(g_evict, 1, g_evict_len);
    }
    static Rig g;
    rig_messages(&g, imu);
    rig_start(&g, rounds);
    /* Three rounds of warm-up first (written over by round 0), so that no
     * first-call binding or allocation is measured. */
    for (long i = -3; i < rounds; i++)
        rig_round(&g, i < 0 ? 0 : i);
    printf("{\"kind\": \"%s\", \"rounds\": %ld, \"pause_us\": %ld, "
           "\"evict_kib\": %zu, \"bytes\": %zu",
           argv[1], rounds, g_pause_us, g_evict_len / 1024, g.ser_len);
    for (int i = 0; i < NCALLS; i++) {
        qsort(g.t[i], (size_t)rounds, sizeof(int64_t), cmp);
        printf(", \"%s\": [%.2f, %.2f]", names[i], g.t[i][rounds / 2] / 1000.0,
               g.t[i][(long)(0.9 * (rounds - 1))] / 1000.0);
    }
    printf("}\n");
    rig_stop(&g);
    return 0;
}
