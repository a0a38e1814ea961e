/* Listener callbacks, a deadline event's callback and wait sets shared by
 * threads, through rcl in C (what rclcpp's events executor and its
 * multi-threaded executor use): run by tests/rmw/test_rmw_listen.py under
 * nerve-ros2-exec, on a ROS domain of the test's own.
 *
 *   rcl_listen pub N    publish N std_msgs/String on /listen/t once a
 *                       subscription is there, say "published" and exit
 *                       at a line on stdin (the channel lives as long as
 *                       a process has it open)
 *   rcl_listen sub      the subscribing side, driven by lines on stdin:
 *                       "ready"; (test runs pub 5) line -> set the
 *                       callback: one call with 5; (pub 4) line -> calls
 *                       adding up to 4, from another thread; all 9 taken
 *                       (the ring keeps the publisher's depth, 10);
 *                       its deadline event's callback called; cleared:
 *                       (pub 3) line -> no call
 *   rcl_listen local    a service and a client (rcl_interfaces
 *                       GetParameters) with callbacks set before and after
 *                       requests and replies; two threads waiting on their
 *                       own wait sets over one context; one wait set used
 *                       by three threads in turn
 *
 * Prints "ok <what>" per check, "FAIL: <what>" and exits 1 at the first
 * that fails. Every wait is bounded (30 s). */

#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <rcl/error_handling.h>
#include <rcl/event.h>
#include <rcl/graph.h>
#include <rcl/rcl.h>
#include <rcl_interfaces/srv/get_parameters.h>
#include <rmw/rmw.h>
#include <std_msgs/msg/string.h>

static int checks;

#define RCL_PROG "rcl_listen"
#include "rcl_prog.h"

static const int64_t kBound = 30LL * 1000000000;

static void ok(int cond, const char *what)
{
    if (!cond) {
        printf("FAIL: %s\n", what);
        fflush(stdout);
        exit(1);
    }
    checks++;
    printf("ok %s\n", what);
    fflush(stdout);
}

/* What one callback saw: calls, their counts' sum, calls from the thread
 * that set it. */
struct seen {
    atomic_int calls, sum, on_main;
    atomic_int first; /* the first call's count */
};
static pthread_t main_thread;

static void on_event(const void *user, size_t n)
{
    struct seen *s = (struct seen *)user;
    if (atomic_fetch_add(&s->calls, 1) == 0)
        atomic_store(&s->first, (int)n);
    atomic_fetch_add(&s->sum, (int)n);
    if (pthread_equal(pthread_self(), main_thread))
        atomic_fetch_add(&s->on_main, 1);
}

/* Wait (bounded) until *v reaches at least `want`. */
static int wait_for(atomic_int *v, int want)
{
    int64_t end = now_ns() + kBound;
    while (atomic_load(v) < want && now_ns() < end) {
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
    return atomic_load(v) >= want;
}

static void next_line(void)
{
    char line[64];
    if (!fgets(line, sizeof line, stdin)) {
        printf("FAIL: stdin closed\n");
        exit(1);
    }
}

static const rosidl_message_type_support_t *str_ts(void)
{
    return ROSIDL_GET_MSG_TYPE_SUPPORT(std_msgs, msg, String);
}

static int run_pub(rcl_node_t *node, int n)
{
    rcl_publisher_t pub = rcl_get_zero_initialized_publisher();
    rcl_publisher_options_t po = rcl_publisher_get_default_options();
    CHECK(rcl_publisher_init(&pub, node, str_ts(), "/listen/t", &po));
    size_t subs = 0;
    int64_t end = now_ns() + kBound;
    while (subs == 0 && now_ns() < end) {
        CHECK(rcl_publisher_get_subscription_count(&pub, &subs));
        struct timespec ts = {0, 5000000};
        nanosleep(&ts, NULL);
    }
    ok(subs == 1, "pub: the subscription is there");
    std_msgs__msg__String m;
    std_msgs__msg__String__init(&m);
    for (int i = 0; i < n; i++) {
        char b[32];
        snprintf(b, sizeof b, "m%d", i);
        rosidl_runtime_c__String__assign(&m.data, b);
        CHECK(rcl_publish(&pub, &m, NULL));
    }
    std_msgs__msg__String__fini(&m);
    printf("published\n");
    fflush(stdout);
    next_line();
    CHECK(rcl_publisher_fini(&pub, node));
    return 0;
}

static int take_all(rcl_subscription_t *sub)
{
    int n = 0;
    std_msgs__msg__String m;
    std_msgs__msg__String__init(&m);
    for (;;) {
        rmw_message_info_t mi;
        rcl_ret_t r = rcl_take(sub, &m, &mi, NULL);
        if (r == RCL_RET_SUBSCRIPTION_TAKE_FAILED)
            break;
        CHECK(r);
        n++;
    }
    std_msgs__msg__String__fini(&m);
    return n;
}

static int run_sub(rcl_node_t *node)
{
    rcl_subscription_t sub = rcl_get_zero_initialized_subscription();
    rcl_subscription_options_t so = rcl_subscription_get_default_options();
    so.qos.depth = 50;
    so.qos.deadline.sec = 0;
    so.qos.deadline.nsec = 200000000; /* 200 ms */
    CHECK(rcl_subscription_init(&sub, node, str_ts(), "/listen/t", &so));
    rcl_event_t dl = rcl_get_zero_initialized_event();
    CHECK(rcl_subscription_event_init(
        &dl, &sub, RCL_SUBSCRIPTION_REQUESTED_DEADLINE_MISSED));
    printf("ready\n");
    fflush(stdout);
    static struct seen msgs, deadline;

    next_line(); /* 5 were published */
    CHECK(rcl_subscription_set_on_new_message_callback(&sub, on_event, &msgs));
    ok(atomic_load(&msgs.calls) == 1 && atomic_load(&msgs.first) == 5,
       "sub: set calls the callback once with the 5 that came before");
    ok(atomic_load(&msgs.on_main) == 1, "sub: (that call is from set)");
    CHECK(rcl_event_set_callback(&dl, on_event, &deadline));
    printf("set\n");
    fflush(stdout);

    next_line(); /* 4 more were published */
    ok(wait_for(&msgs.sum, 9), "sub: calls add up to the 4 new messages");
    ok(atomic_load(&msgs.on_main) == 1,
       "sub: new messages are told from a thread of the RMW");
    ok(take_all(&sub) == 9, "sub: the 9 messages are taken");
    ok(wait_for(&deadline.calls, 1),
       "sub: the deadline event's callback is called when messages stop");
    rmw_requested_deadline_missed_status_t st;
    CHECK(rcl_take_event(&dl, &st));
    ok(st.total_count >= 1 && st.total_count_change >= 1,
       "sub: the deadline event is taken with a count");
    CHECK(rcl_subscription_set_on_new_message_callback(&sub, NULL, NULL));
    CHECK(rcl_event_set_callback(&dl, NULL, NULL));
    int calls = atomic_load(&msgs.calls);
    printf("cleared\n");
    fflush(stdout);

    next_line(); /* 3 more were published */
    int64_t end = now_ns() + kBound;
    int taken = 0;
    while (taken < 3 && now_ns() < end)
        taken += take_all(&sub);
    ok(taken == 3 && atomic_load(&msgs.calls) == calls,
       "sub: no call after the callback was cleared");
    CHECK(rcl_event_fini(&dl));
    CHECK(rcl_subscription_fini(&sub, node));
    return 0;
}

/* ---- service and client ------------------------------------------------ */

static void request(rcl_client_t *cli, int64_t *seq)
{
    rcl_interfaces__srv__GetParameters_Request rq;
    rcl_interfaces__srv__GetParameters_Request__init(&rq);
    CHECK(rcl_send_request(cli, &rq, seq));
    rcl_interfaces__srv__GetParameters_Request__fini(&rq);
}

/* Take every request waiting (bounded: `want` of them) and reply. */
static int serve(rcl_service_t *srv, int want)
{
    int n = 0;
    int64_t end = now_ns() + kBound;
    rcl_interfaces__srv__GetParameters_Request rq;
    rcl_interfaces__srv__GetParameters_Response rp;
    rcl_interfaces__srv__GetParameters_Request__init(&rq);
    rcl_interfaces__srv__GetParameters_Response__init(&rp);
    while (n < want && now_ns() < end) {
        rmw_service_info_t info;
        rcl_ret_t r = rcl_take_request_with_info(srv, &info, &rq);
        if (r == RCL_RET_SERVICE_TAKE_FAILED)
            continue;
        CHECK(r);
        CHECK(rcl_send_response(srv, &info.request_id, &rp));
        n++;
    }
    rcl_interfaces__srv__GetParameters_Request__fini(&rq);
    rcl_interfaces__srv__GetParameters_Response__fini(&rp);
    return n;
}

static void services(rcl_node_t *node)
{
    const rosidl_service_type_support_t *ts =
        ROSIDL_GET_SRV_TYPE_SUPPORT(rcl_interfaces, srv, GetParameters);
    rcl_service_t srv = rcl_get_zero_initialized_service();
    rcl_service_options_t so = rcl_service_get_default_options();
    CHECK(rcl_service_init(&srv, node, ts, "/listen/srv", &so));
    rcl_client_t cli = rcl_get_zero_initialized_client();
    rcl_client_options_t co = rcl_client_get_default_options();
    CHECK(rcl_client_init(&cli, node, ts, "/listen/srv", &co));
    static struct seen reqs, reps;
    int64_t seq;
    request(&cli, &seq);
    request(&cli, &seq);
    CHECK(rcl_service_set_on_new_request_callback(&srv, on_event, &reqs));
    ok(atomic_load(&reqs.calls) == 1 && atomic_load(&reqs.first) == 2,
       "srv: set calls the callback once with the 2 requests before");
    request(&cli, &seq);
    ok(wait_for(&reqs.sum, 3), "srv: a new request is told");
    ok(serve(&srv, 3) == 3, "srv: the 3 requests are answered");
    /* The replies are in the ring before the client's callback is set. */
    CHECK(rcl_client_set_on_new_response_callback(&cli, on_event, &reps));
    ok(atomic_load(&reps.first) == 3,
       "cli: set calls the callback with the 3 replies before");
    CHECK(rcl_service_set_on_new_request_callback(&srv, NULL, NULL));
    CHECK(rcl_client_set_on_new_response_callback(&cli, NULL, NULL));
    CHECK(rcl_client_fini(&cli, node));
    CHECK(rcl_service_fini(&srv, node));
}

/* ---- wait sets shared by threads ------------------------------------------- */

struct waiter {
    rcl_context_t *ctx;
    rcl_wait_set_t
        *ws; /* shared (used in turn) or null: a wait set of its own */
    rcl_guard_condition_t *gc;
    int woke; /* its guard condition was reported ready */
};

static void *wait_thread(void *arg)
{
    struct waiter *w = (struct waiter *)arg;
    rcl_wait_set_t own = rcl_get_zero_initialized_wait_set();
    rcl_wait_set_t *ws = w->ws;
    if (!ws) {
        CHECK(rcl_wait_set_init(&own, 0, 1, 0, 0, 0, 0, w->ctx,
                                rcl_get_default_allocator()));
        ws = &own;
    }
    int64_t end = now_ns() + kBound;
    while (!w->woke && now_ns() < end) {
        CHECK(rcl_wait_set_clear(ws));
        CHECK(rcl_wait_set_add_guard_condition(ws, w->gc, NULL));
        rcl_ret_t r = rcl_wait(ws, RCL_S_TO_NS(1));
        if (r == RCL_RET_TIMEOUT)
            continue;
        CHECK(r);
        w->woke = ws->guard_conditions[0] == w->gc;
    }
    if (ws == &own)
        CHECK(rcl_wait_set_fini(&own));
    return NULL;
}

static void wait_sets(rcl_context_t *ctx)
{
    rcl_guard_condition_t gc[2];
    for (int i = 0; i < 2; i++) {
        gc[i] = rcl_get_zero_initialized_guard_condition();
        CHECK(rcl_guard_condition_init(
            &gc[i], ctx, rcl_guard_condition_get_default_options()));
    }
    /* Two threads, each on a wait set of its own, over one context. */
    struct waiter w[2] = {{ctx, NULL, &gc[0], 0}, {ctx, NULL, &gc[1], 0}};
    pthread_t t[2];
    for (int i = 0; i < 2; i++)
        pthread_create(&t[i], NULL, wait_thread, &w[i]);
    CHECK(rcl_trigger_guard_condition(&gc[1]));
    pthread_join(t[1], NULL);
    ok(w[1].woke && !w[0].woke,
       "wait sets: the second thread's wait woke for its guard, the first's "
       "did not");
    CHECK(rcl_trigger_guard_condition(&gc[0]));
    pthread_join(t[0], NULL);
    ok(w[0].woke, "wait sets: then the first thread's woke for its own");
    /* One wait set, used by three threads one after another. */
    rcl_wait_set_t shared = rcl_get_zero_initialized_wait_set();
    CHECK(rcl_wait_set_init(&shared, 0, 1, 0, 0, 0, 0, ctx,
                            rcl_get_default_allocator()));
    for (int i = 0; i < 3; i++) {
        struct waiter s = {ctx, &shared, &gc[i % 2], 0};
        pthread_t th;
        pthread_create(&th, NULL, wait_thread, &s);
        CHECK(rcl_trigger_guard_condition(&gc[i % 2]));
        pthread_join(th, NULL);
        ok(s.woke, "wait sets: one wait set, in turn in another thread");
    }
    CHECK(rcl_wait_set_fini(&shared));
    for (int i = 0; i < 2; i++)
        CHECK(rcl_guard_condition_fini(&gc[i]));
}

int main(int argc, char **argv)
{
    main_thread = pthread_self();
    if (argc < 2) {
        fprintf(stderr, "usage: rcl_listen pub N | sub | local\n");
        return 2;
    }
    rcl_context_t ctx;
    rcl_node_t node;
    rcl_prog_start(&ctx, &node, "listen");
    if (strcmp(argv[1], "pub") == 0 && argc == 3)
        run_pub(&node, atoi(argv[2]));
    else if (strcmp(argv[1], "sub") == 0)
        run_sub(&node);
    else if (strcmp(argv[1], "local") == 0) {
        services(&node);
        wait_sets(&ctx);
    } else {
        fprintf(stderr, "rcl_listen: unknown mode '%s'\n", argv[1]);
        return 2;
    }
    CHECK(rcl_node_fini(&node));
    CHECK(rcl_shutdown(&ctx));
    CHECK(rcl_context_fini(&ctx));
    printf("passed %d checks\n", checks);
    return 0;
}
