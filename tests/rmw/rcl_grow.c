/* Growth and leftovers through rcl in C: run by tests/rmw/test_rmw_grow_rcl.py
 * under nerve-ros2-exec, so that rcl runs on rmw_nerve_cpp. A C program
 * starts in milliseconds where an rclpy node takes about a second, which
 * is what lets the leftovers test make hundreds of starts.
 *
 *   rcl_grow pub KIND SUBS [TAG]  waits (60 s at most) for SUBS subscribers
 *                     of /grow, publishes KIND's growing messages (each
 *                     message's frame_id "TAG:i", or "i" without TAG), prints
 *                     {"published": [sizes]}, then waits for the end of
 *                     stdin (a late joiner reads the history meanwhile)
 *   rcl_grow sub KIND COUNT [LAST] prints "ready", takes COUNT messages
 *                     of /grow (120 s at most), or fewer up to one whose
 *                     frame_id is LAST, and prints {"got": [[tag, i, size,
 *                     content ok], ...]} in the order taken
 *   rcl_grow life     an anonymous-name node with a publisher and a
 *                     subscription of std_msgs/String on /life; publishes
 *                     one message, prints "ready", ends normally at the
 *                     end of stdin (unless killed first)
 *
 * KIND: cloud (PointCloud2 of 1 kB to 8 MB, data bytes i + 1) or path
 * (nav_msgs/Path of 0 to 10,000 poses, pose k at x = k), the messages of
 * tests/rmw/nodes.py's grow roles, so rclpy and this program read each
 * other's. QoS: reliable, transient local, depth 50 (nodes.py GROW_QOS).
 * A failing rcl call prints "rcl_grow: FAIL: ..." and exits 1. */

#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <geometry_msgs/msg/pose_stamped.h>
#include <nav_msgs/msg/path.h>
#include <std_msgs/msg/string.h>

#define RCL_PROG "rcl_grow"
#include "rcl_prog.h"

#define NMSG 6 /* at most: the Path has 6, the cloud 5 */

static const size_t CLOUD[] = {1000, 10000, 100000, 1000000, 8000000};

static int kind_count(int path)
{
    return path ? 6 : 5;
}

static const rosidl_message_type_support_t *kind_ts(int path)
{
    return path ? ROSIDL_GET_MSG_TYPE_SUPPORT(nav_msgs, msg, Path)
                : ROSIDL_GET_MSG_TYPE_SUPPORT(sensor_msgs, msg, PointCloud2);
}

static rmw_qos_profile_t grow_qos(void)
{
    rmw_qos_profile_t q = rmw_qos_profile_default;
    q.depth = 50;
    q.reliability = RMW_QOS_POLICY_RELIABILITY_RELIABLE;
    q.durability = RMW_QOS_POLICY_DURABILITY_TRANSIENT_LOCAL;
    return q;
}

/* Message i of the kind, its frame_id "tag:i"; *size its size tag. */
static void *make_msg(int path, int i, const char *tag, size_t *size)
{
    char id[64];
    if (*tag)
        snprintf(id, sizeof id, "%s:%d", tag, i);
    else
        snprintf(id, sizeof id, "%d", i);
    if (path) {
        nav_msgs__msg__Path *m = nav_msgs__msg__Path__create();
        size_t n = (size_t)i * 2000;
        if (!m ||
            !geometry_msgs__msg__PoseStamped__Sequence__init(&m->poses, n))
            return NULL;
        for (size_t k = 0; k < n; k++)
            m->poses.data[k].pose.position.x = (double)k;
        rosidl_runtime_c__String__assign(&m->header.frame_id, id);
        *size = n;
        return m;
    }
    sensor_msgs__msg__PointCloud2 *m = sensor_msgs__msg__PointCloud2__create();
    size_t n = CLOUD[i];
    if (!m || !rosidl_runtime_c__uint8__Sequence__init(&m->data, n))
        return NULL;
    memset(m->data.data, i + 1, n);
    m->height = 1;
    m->width = (uint32_t)(n / 16);
    m->point_step = 16;
    m->row_step = (uint32_t)n;
    rosidl_runtime_c__String__assign(&m->header.frame_id, id);
    *size = n;
    return m;
}

static void free_msg(int path, void *m)
{
    if (path)
        nav_msgs__msg__Path__destroy(m);
    else
        sensor_msgs__msg__PointCloud2__destroy(m);
}

static void wait_stdin_end(void)
{
    char buf[256];
    while (fgets(buf, sizeof buf, stdin))
        ;
}

static int run_pub(int path, int subs, const char *tag)
{
    rcl_context_t ctx;
    rcl_node_t node;
    rcl_prog_start(&ctx, &node, "grow_pub_c");
    rcl_publisher_t p = rcl_get_zero_initialized_publisher();
    rcl_publisher_options_t po = rcl_publisher_get_default_options();
    po.qos = grow_qos();
    CHECK(rcl_publisher_init(&p, &node, kind_ts(path), "/grow", &po));
    int64_t end = now_ns() + 60000000000LL;
    size_t have = 0;
    while (now_ns() < end) {
        CHECK(rcl_publisher_get_subscription_count(&p, &have));
        if (have >= (size_t)subs)
            break;
        usleep(20000);
    }
    if (have < (size_t)subs) {
        printf("FAIL: %zu of %d subscribers in 60 s\n", have, subs);
        return 1;
    }
    printf("ready\n");
    fflush(stdout);
    size_t sizes[NMSG];
    for (int i = 0; i < kind_count(path); i++) {
        void *m = make_msg(path, i, tag, &sizes[i]);
        if (!m) {
            printf("FAIL: no memory for message %d\n", i);
            return 1;
        }
        CHECK(rcl_publish(&p, m, NULL));
        free_msg(path, m);
    }
    printf("{\"published\": [");
    for (int i = 0; i < kind_count(path); i++)
        printf("%s%zu", i ? ", " : "", sizes[i]);
    printf("]}\n");
    fflush(stdout);
    wait_stdin_end();
    CHECK(rcl_publisher_fini(&p, &node));
    rcl_prog_stop(&ctx, &node);
    return 0;
}

/* One taken message as [tag, i, size, ok]: its content is what make_msg()
 * wrote for i. */
static const rosidl_runtime_c__String *frame_id(int path, void *m)
{
    return path ? &((nav_msgs__msg__Path *)m)->header.frame_id
                : &((sensor_msgs__msg__PointCloud2 *)m)->header.frame_id;
}

static void print_got(int path, void *m, int first)
{
    const rosidl_runtime_c__String *id = frame_id(path, m);
    char tag[32] = "";
    int i = -1;
    const char *colon = id->data ? strrchr(id->data, ':') : NULL;
    if (colon && (size_t)(colon - id->data) < sizeof tag) {
        memcpy(tag, id->data, (size_t)(colon - id->data));
        tag[colon - id->data] = 0;
        i = atoi(colon + 1);
    } else if (id->data && *id->data) {
        i = atoi(id->data);
    }
    size_t size;
    int ok = i >= 0;
    if (path) {
        nav_msgs__msg__Path *p = m;
        size = p->poses.size;
        for (size_t k = 0; ok && k < size; k++)
            ok = p->poses.data[k].pose.position.x == (double)k;
    } else {
        sensor_msgs__msg__PointCloud2 *c = m;
        size = c->data.size;
        for (size_t k = 0; ok && k < size; k++)
            ok = c->data.data[k] == (uint8_t)(i + 1);
    }
    printf("%s[\"%s\", %d, %zu, %s]", first ? "" : ", ", tag, i, size,
           ok ? "true" : "false");
}

static int run_sub(int path, int count, const char *last)
{
    rcl_context_t ctx;
    rcl_node_t node;
    rcl_prog_start(&ctx, &node, "grow_sub_c");
    rcl_subscription_t s = rcl_get_zero_initialized_subscription();
    rcl_subscription_options_t so = rcl_subscription_get_default_options();
    so.qos = grow_qos();
    CHECK(rcl_subscription_init(&s, &node, kind_ts(path), "/grow", &so));
    printf("ready\n");
    fflush(stdout);
    rcl_wait_set_t ws = rcl_get_zero_initialized_wait_set();
    CHECK(rcl_wait_set_init(&ws, 1, 0, 0, 0, 0, 0, &ctx,
                            rcl_get_default_allocator()));
    void *m = path ? (void *)nav_msgs__msg__Path__create()
                   : (void *)sensor_msgs__msg__PointCloud2__create();
    int got = 0;
    int64_t end = now_ns() + 120000000000LL;
    printf("{\"got\": [");
    /* As an executor does: take only when the wait says the subscription
     * is ready, then every message there is. */
    while (got < count && now_ns() < end) {
        CHECK(rcl_wait_set_clear(&ws));
        CHECK(rcl_wait_set_add_subscription(&ws, &s, NULL));
        rcl_ret_t r = rcl_wait(&ws, RCL_MS_TO_NS(100));
        if (r == RCL_RET_TIMEOUT || !ws.subscriptions[0])
            continue;
        CHECK(r);
        while (got < count && (r = rcl_take(&s, m, NULL, NULL)) == RCL_RET_OK) {
            print_got(path, m, got == 0);
            got++;
            const rosidl_runtime_c__String *id = frame_id(path, m);
            if (last && id->data && strcmp(id->data, last) == 0)
                count = got;
        }
        if (r != RCL_RET_OK && r != RCL_RET_SUBSCRIPTION_TAKE_FAILED)
            CHECK(r);
        rcl_reset_error();
    }
    printf("]}\n");
    free_msg(path, m);
    CHECK(rcl_wait_set_fini(&ws));
    CHECK(rcl_subscription_fini(&s, &node));
    rcl_prog_stop(&ctx, &node);
    return 0;
}

static int run_life(void)
{
    char name[64];
    snprintf(name, sizeof name, "anon_c_%d_%lld", (int)getpid(),
             (long long)(now_ns() % 1000000));
    rcl_context_t ctx;
    rcl_node_t node;
    rcl_prog_start(&ctx, &node, name);
    const rosidl_message_type_support_t *ts =
        ROSIDL_GET_MSG_TYPE_SUPPORT(std_msgs, msg, String);
    rcl_publisher_t p = rcl_get_zero_initialized_publisher();
    rcl_publisher_options_t po = rcl_publisher_get_default_options();
    CHECK(rcl_publisher_init(&p, &node, ts, "/life", &po));
    rcl_subscription_t s = rcl_get_zero_initialized_subscription();
    rcl_subscription_options_t so = rcl_subscription_get_default_options();
    CHECK(rcl_subscription_init(&s, &node, ts, "/life", &so));
    std_msgs__msg__String msg;
    std_msgs__msg__String__init(&msg);
    rosidl_runtime_c__String__assign(&msg.data, "alive");
    CHECK(rcl_publish(&p, &msg, NULL));
    std_msgs__msg__String__fini(&msg);
    printf("ready\n");
    fflush(stdout);
    wait_stdin_end();
    CHECK(rcl_subscription_fini(&s, &node));
    CHECK(rcl_publisher_fini(&p, &node));
    rcl_prog_stop(&ctx, &node);
    printf("{\"ok\": true}\n");
    return 0;
}

int main(int argc, char **argv)
{
    if (argc >= 2 && strcmp(argv[1], "life") == 0)
        return run_life();
    if (argc < 4 || (strcmp(argv[2], "cloud") && strcmp(argv[2], "path")) ||
        (strcmp(argv[1], "pub") && strcmp(argv[1], "sub"))) {
        fprintf(stderr,
                "usage: rcl_grow pub|sub cloud|path N [TAG|LAST] | life\n");
        return 2;
    }
    int path = strcmp(argv[2], "path") == 0;
    int n = atoi(argv[3]);
    if (strcmp(argv[1], "pub") == 0)
        return run_pub(path, n, argc > 4 ? argv[4] : "");
    return run_sub(path, n, argc > 4 ? argv[4] : NULL);
}
