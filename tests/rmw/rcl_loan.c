/* Loaned messages through rcl in C (rclpy never loans): run by
 * tests/rmw/test_rmw_loan.py under nerve-ros2-exec, so that rcl runs on
 * rmw_nerve_cpp, on a ROS domain of the test's own.
 *
 * One process, one node: publishers and subscriptions of
 * geometry_msgs/msg/Vector3 (fixed size: loanable), std_msgs/msg/String and
 * sensor_msgs/msg/Imu (a string, in Imu's header: not loanable).
 * Prints "ok <what>" per check, "FAIL: <what>" and exits 1 at the first
 * that fails. Leaves on the channels of /loan/wire (a loaned publish) and
 * /loan/plain (rcl_publish of the same values) one message each, which the
 * test compares byte for byte. Every wait is bounded (30 s). */

#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <geometry_msgs/msg/pose_with_covariance.h>
#include <geometry_msgs/msg/vector3.h>
#include <rcl/error_handling.h>
#include <rcl/rcl.h>
#include <rmw/error_handling.h>
#include <rmw/rmw.h>
#include <sensor_msgs/msg/imu.h>
#include <std_msgs/msg/string.h>

static int checks;

#define RCL_PROG "rcl_loan"
#include "rcl_prog.h"

static void ok(int cond, const char *what)
{
    if (!cond) {
        printf("FAIL: %s\n", what);
        exit(1);
    }
    checks++;
    printf("ok %s\n", what);
}

/* The rmw call `r` returned `want` and its error names `text`. */
static void rmw_err(rmw_ret_t r, rmw_ret_t want, const char *text,
                    const char *what)
{
    const char *e = rmw_get_error_string().str;
    if (r != want || !strstr(e, text)) {
        printf("FAIL: %s: returned %d (want %d), error '%s' (want '%s')\n",
               what, (int)r, (int)want, e, text);
        exit(1);
    }
    rmw_reset_error();
    checks++;
    printf("ok %s\n", what);
}

static const rosidl_message_type_support_t *vec_ts(void)
{
    return ROSIDL_GET_MSG_TYPE_SUPPORT(geometry_msgs, msg, Vector3);
}

/* Take one loaned message, waiting up to 30 s. */
static geometry_msgs__msg__Vector3 *
take_loan(rcl_subscription_t *s, rcl_context_t *ctx, rmw_message_info_t *mi)
{
    rcl_wait_set_t ws = rcl_get_zero_initialized_wait_set();
    CHECK(rcl_wait_set_init(&ws, 1, 0, 0, 0, 0, 0, ctx,
                            rcl_get_default_allocator()));
    void *m = NULL;
    int64_t end = now_ns() + 30000000000LL;
    while (now_ns() < end) {
        rcl_ret_t r = rcl_take_loaned_message(s, &m, mi, NULL);
        if (r == RCL_RET_OK)
            break;
        if (r != RCL_RET_SUBSCRIPTION_TAKE_FAILED) {
            printf("FAIL: rcl_take_loaned_message: %d: %s\n", (int)r,
                   rcl_get_error_string().str);
            exit(1);
        }
        rcl_reset_error();
        CHECK(rcl_wait_set_clear(&ws));
        CHECK(rcl_wait_set_add_subscription(&ws, s, NULL));
        r = rcl_wait(&ws, RCL_MS_TO_NS(100));
        if (r != RCL_RET_TIMEOUT)
            CHECK(r);
    }
    CHECK(rcl_wait_set_fini(&ws));
    return m;
}

static void fill(geometry_msgs__msg__Vector3 *v, double k)
{
    v->x = 1.5 * k;
    v->y = -2.25 * k;
    v->z = 1e300 / k;
}

static int same(const geometry_msgs__msg__Vector3 *v, double k)
{
    return v->x == 1.5 * k && v->y == -2.25 * k && v->z == 1e300 / k;
}

int main(void)
{
    rcl_context_t ctx;
    rcl_node_t node;
    rcl_prog_start(&ctx, &node, "rcl_loan");
    ok(strcmp(rmw_get_implementation_identifier(), "rmw_nerve_cpp") == 0,
       "rcl runs on rmw_nerve_cpp");

    rcl_publisher_options_t po = rcl_publisher_get_default_options();
    rcl_subscription_options_t so = rcl_subscription_get_default_options();
    so.disable_loaned_message = false; /* rcl's default says true */
    so.qos.depth = 32;

    /* Types with a string: no loans, and a clear error. */
    rcl_publisher_t pstr = rcl_get_zero_initialized_publisher();
    CHECK(rcl_publisher_init(&pstr, &node,
                             ROSIDL_GET_MSG_TYPE_SUPPORT(std_msgs, msg, String),
                             "/loan/str", &po));
    rcl_subscription_t sstr = rcl_get_zero_initialized_subscription();
    CHECK(rcl_subscription_init(
        &sstr, &node, ROSIDL_GET_MSG_TYPE_SUPPORT(std_msgs, msg, String),
        "/loan/str", &so));
    rcl_publisher_t pimu = rcl_get_zero_initialized_publisher();
    CHECK(rcl_publisher_init(&pimu, &node,
                             ROSIDL_GET_MSG_TYPE_SUPPORT(sensor_msgs, msg, Imu),
                             "/loan/imu", &po));
    ok(!rcl_publisher_can_loan_messages(&pstr), "String publisher: no loans");
    ok(!rcl_subscription_can_loan_messages(&sstr),
       "String subscription: no loans");
    ok(!rcl_publisher_can_loan_messages(&pimu), "Imu publisher: no loans");
    void *m = NULL;
    rmw_err(rmw_borrow_loaned_message(
                rcl_publisher_get_rmw_handle(&pstr),
                ROSIDL_GET_MSG_TYPE_SUPPORT(std_msgs, msg, String), &m),
            RMW_RET_UNSUPPORTED, "member data (a string)",
            "String borrow: unsupported, says why");
    rmw_err(rmw_borrow_loaned_message(
                rcl_publisher_get_rmw_handle(&pimu),
                ROSIDL_GET_MSG_TYPE_SUPPORT(sensor_msgs, msg, Imu), &m),
            RMW_RET_UNSUPPORTED, "member header.frame_id (a string)",
            "Imu borrow: unsupported, names the nested string");
    bool taken = false;
    rmw_err(rmw_take_loaned_message(rcl_subscription_get_rmw_handle(&sstr), &m,
                                    &taken, NULL),
            RMW_RET_UNSUPPORTED, "cannot be loaned",
            "String take loaned: unsupported");
    ok(rcl_borrow_loaned_message(
           &pstr, ROSIDL_GET_MSG_TYPE_SUPPORT(std_msgs, msg, String), &m) !=
               RCL_RET_OK &&
           m == NULL,
       "rcl_borrow_loaned_message on String fails");
    rcl_reset_error();

    /* Vector3: loans on both sides; the wire is plain CDR. */
    rcl_publisher_t pw = rcl_get_zero_initialized_publisher();
    CHECK(rcl_publisher_init(&pw, &node, vec_ts(), "/loan/wire", &po));
    rcl_publisher_t pp = rcl_get_zero_initialized_publisher();
    CHECK(rcl_publisher_init(&pp, &node, vec_ts(), "/loan/plain", &po));
    rcl_subscription_t sw = rcl_get_zero_initialized_subscription();
    CHECK(rcl_subscription_init(&sw, &node, vec_ts(), "/loan/wire", &so));
    ok(rcl_publisher_can_loan_messages(&pw), "Vector3 publisher: loans");
    ok(rcl_subscription_can_loan_messages(&sw), "Vector3 subscription: loans");

    geometry_msgs__msg__Vector3 *v = NULL;
    CHECK(rcl_borrow_loaned_message(&pw, vec_ts(), (void **)&v));
    ok(v && v->x == 0 && v->y == 0 && v->z == 0,
       "a borrowed message is initialised");
    fill(v, 1);
    CHECK(rcl_publish_loaned_message(&pw, v, NULL));
    geometry_msgs__msg__Vector3 plain;
    geometry_msgs__msg__Vector3__init(&plain);
    fill(&plain, 1);
    CHECK(rcl_publish(&pp, &plain, NULL));
    rmw_err(rmw_return_loaned_message_from_publisher(
                rcl_publisher_get_rmw_handle(&pw), v),
            RMW_RET_INVALID_ARGUMENT, "already returned",
            "returning a published loan: refused");
    rmw_err(
        rmw_publish_loaned_message(rcl_publisher_get_rmw_handle(&pw), v, NULL),
        RMW_RET_INVALID_ARGUMENT, "not a loan",
        "publishing a published loan again: refused");
    rmw_err(rmw_publish_loaned_message(rcl_publisher_get_rmw_handle(&pw),
                                       &plain, NULL),
            RMW_RET_INVALID_ARGUMENT, "not a loan",
            "publishing a foreign pointer as a loan: refused");

    /* Take it loaned, then three more held at once. */
    rmw_message_info_t mi = rmw_get_zero_initialized_message_info();
    geometry_msgs__msg__Vector3 *t = take_loan(&sw, &ctx, &mi);
    ok(t && same(t, 1), "the loaned take holds the exact values");
    ok(mi.publication_sequence_number == 1, "message info: sequence 1");
    CHECK(rcl_return_loaned_message_from_subscription(&sw, t));
    rmw_err(rmw_return_loaned_message_from_subscription(
                rcl_subscription_get_rmw_handle(&sw), t),
            RMW_RET_INVALID_ARGUMENT, "already returned",
            "double return to a subscription: refused");
    rmw_err(rmw_return_loaned_message_from_subscription(
                rcl_subscription_get_rmw_handle(&sw), &plain),
            RMW_RET_INVALID_ARGUMENT, "not a loan",
            "foreign pointer returned to a subscription: refused");

    /* Nested messages and a fixed array (float64[36]) are fixed-size. */
    rcl_publisher_t pcov = rcl_get_zero_initialized_publisher();
    const rosidl_message_type_support_t *cov_ts =
        ROSIDL_GET_MSG_TYPE_SUPPORT(geometry_msgs, msg, PoseWithCovariance);
    CHECK(rcl_publisher_init(&pcov, &node, cov_ts, "/loan/cov", &po));
    ok(rcl_publisher_can_loan_messages(&pcov),
       "PoseWithCovariance publisher: loans");
    geometry_msgs__msg__PoseWithCovariance *c = NULL;
    CHECK(rcl_borrow_loaned_message(&pcov, cov_ts, (void **)&c));
    ok(c && c->pose.orientation.w == 1.0 && c->covariance[35] == 0.0,
       "a borrowed PoseWithCovariance has the type's defaults");
    CHECK(rcl_return_loaned_message_from_publisher(&pcov, c));
    CHECK(rcl_publisher_fini(&pcov, &node));

    /* A publisher lends 8 at most; loans out at fini are released. */
    geometry_msgs__msg__Vector3 *l[9] = {0};
    for (int i = 0; i < 8; i++)
        CHECK(rcl_borrow_loaned_message(&pw, vec_ts(), (void **)&l[i]));
    ok(l[0] != l[7], "eight loans out at once");
    rmw_err(rmw_borrow_loaned_message(rcl_publisher_get_rmw_handle(&pw),
                                      vec_ts(), (void **)&l[8]),
            RMW_RET_ERROR, "all 8 loans are out", "a ninth loan: refused");
    rmw_err(rmw_borrow_loaned_message(
                rcl_publisher_get_rmw_handle(&pw),
                ROSIDL_GET_MSG_TYPE_SUPPORT(std_msgs, msg, String),
                (void **)&l[8]),
            RMW_RET_INVALID_ARGUMENT, "std_msgs/msg/String",
            "a borrow of another type: refused");
    for (int i = 0; i < 8; i++) {
        fill(l[i], i + 2);
        CHECK(rcl_publish_loaned_message(&pw, l[i], NULL));
    }
    geometry_msgs__msg__Vector3 *held[9] = {0};
    for (int i = 0; i < 8; i++) {
        held[i] = take_loan(&sw, &ctx, &mi);
        if (!held[i] || !same(held[i], i + 2)) {
            printf("FAIL: loaned take %d: wrong values\n", i);
            return 1;
        }
    }
    ok(1, "eight loaned takes held at once, exact values");
    fill(&plain, 99);
    CHECK(rcl_publish(&pw, &plain, NULL));
    taken = true;
    rmw_err(rmw_take_loaned_message(rcl_subscription_get_rmw_handle(&sw),
                                    (void **)&held[8], &taken, NULL),
            RMW_RET_ERROR, "all 8 loans are out",
            "a ninth loaned take: refused");
    ok(!taken && held[8] == NULL, "... and nothing taken");
    for (int i = 0; i < 7; i++)
        CHECK(rcl_return_loaned_message_from_subscription(&sw, held[i]));
    held[8] = take_loan(&sw, &ctx, &mi);
    ok(held[8] && same(held[8], 99), "the message refused before is taken");
    /* held[7] and held[8] stay out: the subscription's fini releases them.
     * The newest on /loan/wire is a loaned publish again, and a loan stays
     * out at the publisher's fini. */
    l[0] = l[1] = NULL;
    CHECK(rcl_borrow_loaned_message(&pw, vec_ts(), (void **)&l[0]));
    fill(l[0], 1);
    CHECK(rcl_publish_loaned_message(&pw, l[0], NULL));
    CHECK(rcl_borrow_loaned_message(&pw, vec_ts(), (void **)&l[1]));

    CHECK(rcl_subscription_fini(&sw, &node));
    CHECK(rcl_publisher_fini(&pw, &node));
    CHECK(rcl_publisher_fini(&pp, &node));
    CHECK(rcl_publisher_fini(&pimu, &node));
    CHECK(rcl_subscription_fini(&sstr, &node));
    CHECK(rcl_publisher_fini(&pstr, &node));
    ok(1, "endpoints with loans out destroyed");
    rcl_prog_stop(&ctx, &node);
    printf("{\"checks\": %d}\n", checks);
    return 0;
}
