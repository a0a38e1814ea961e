/* Loaned messages of C++ types through rcl, as rclcpp loans them
 * (rclcpp::LoanedMessage: rcl_borrow_loaned_message with the type's
 * rosidl_typesupport_cpp handle, which rmw_nerve resolves to
 * rosidl_typesupport_introspection_cpp for the size and the constructor):
 * run by tests/rmw/test_rmw_loan_cpp.py under nerve-ros2-exec.
 *
 * geometry_msgs::msg::Vector3 (fixed size: loanable) published from a loan
 * and taken into a loan and into a plain message; std_msgs::msg::String
 * (a string: not loanable) refused. Prints "ok <what>" per check, "FAIL:
 * <what>" and exits 1 at the first that fails. Every wait is bounded. */

#include <cstdio>
#include <cstdlib>
#include <new>

#include <geometry_msgs/msg/vector3.hpp>
#include <rcl/error_handling.h>
#include <rcl/rcl.h>
#include <rmw/rmw.h>
#include <rosidl_typesupport_cpp/message_type_support.hpp>
#include <std_msgs/msg/string.hpp>

#define RCL_PROG "rcl_loan_cpp"
#include "rcl_prog.h"

using geometry_msgs::msg::Vector3;

static int checks;

static void ok(bool cond, const char *what)
{
    if (!cond) {
        printf("FAIL: %s\n", what);
        exit(1);
    }
    checks++;
    printf("ok %s\n", what);
}

/* Take one message, into a loan (`loaned`) or into *plain, waiting up to
 * 30 s; the loan, or plain. */
static Vector3 *take(rcl_subscription_t *s, rcl_context_t *ctx, bool loaned,
                     Vector3 *plain)
{
    rcl_wait_set_t ws = rcl_get_zero_initialized_wait_set();
    CHECK(rcl_wait_set_init(&ws, 1, 0, 0, 0, 0, 0, ctx,
                            rcl_get_default_allocator()));
    void *m = nullptr;
    int64_t end = now_ns() + 30000000000LL;
    while (now_ns() < end) {
        rcl_ret_t r = loaned ? rcl_take_loaned_message(s, &m, nullptr, nullptr)
                             : rcl_take(s, plain, nullptr, nullptr);
        if (r == RCL_RET_OK) {
            if (!loaned)
                m = plain;
            break;
        }
        if (r != RCL_RET_SUBSCRIPTION_TAKE_FAILED) {
            printf("FAIL: take: %d: %s\n", (int)r, rcl_get_error_string().str);
            exit(1);
        }
        rcl_reset_error();
        CHECK(rcl_wait_set_clear(&ws));
        CHECK(rcl_wait_set_add_subscription(&ws, s, nullptr));
        r = rcl_wait(&ws, RCL_MS_TO_NS(100));
        if (r != RCL_RET_TIMEOUT)
            CHECK(r);
    }
    CHECK(rcl_wait_set_fini(&ws));
    return static_cast<Vector3 *>(m);
}

int main()
{
    rcl_context_t ctx;
    rcl_node_t node;
    rcl_prog_start(&ctx, &node, "loan_cpp");
    const rosidl_message_type_support_t *ts =
        rosidl_typesupport_cpp::get_message_type_support_handle<Vector3>();
    rcl_publisher_t pub = rcl_get_zero_initialized_publisher();
    rcl_publisher_options_t po = rcl_publisher_get_default_options();
    CHECK(rcl_publisher_init(&pub, &node, ts, "/loan/cpp", &po));
    rcl_subscription_t sub = rcl_get_zero_initialized_subscription();
    rcl_subscription_options_t so = rcl_subscription_get_default_options();
    so.disable_loaned_message = false; /* rcl's default says true */
    CHECK(rcl_subscription_init(&sub, &node, ts, "/loan/cpp", &so));
    ok(rcl_publisher_can_loan_messages(&pub) &&
           rcl_subscription_can_loan_messages(&sub),
       "a C++ Vector3 publisher and subscription can loan");

    void *loan = nullptr;
    CHECK(rcl_borrow_loaned_message(&pub, ts, &loan));
    auto *v = static_cast<Vector3 *>(loan);
    ok(v->x == 0.0 && v->y == 0.0 && v->z == 0.0,
       "a borrowed C++ message is constructed");
    v->x = 1.5;
    v->y = -2.25;
    v->z = 4.0;
    CHECK(rcl_publish_loaned_message(&pub, loan, nullptr));
    Vector3 *got = take(&sub, &ctx, true, nullptr);
    ok(got && got->x == 1.5 && got->y == -2.25 && got->z == 4.0,
       "a loaned publish is taken into a loan with its values");
    CHECK(rcl_return_loaned_message_from_subscription(&sub, got));

    Vector3 out;
    out.x = 7.0;
    CHECK(rcl_publish(&pub, &out, nullptr));
    Vector3 plain;
    got = take(&sub, &ctx, false, &plain);
    ok(got && plain.x == 7.0, "a plain C++ publish is taken as it was sent");

    /* Eight loans out at once, and the ninth refused. */
    void *many[9] = {};
    for (int i = 0; i < 8; i++)
        CHECK(rcl_borrow_loaned_message(&pub, ts, &many[i]));
    ok(rcl_borrow_loaned_message(&pub, ts, &many[8]) != RCL_RET_OK,
       "a ninth loan out at once is refused");
    rcl_reset_error();
    for (int i = 0; i < 8; i++)
        CHECK(rcl_return_loaned_message_from_publisher(&pub, many[i]));

    const rosidl_message_type_support_t *sts =
        rosidl_typesupport_cpp::get_message_type_support_handle<
            std_msgs::msg::String>();
    rcl_publisher_t spub = rcl_get_zero_initialized_publisher();
    CHECK(rcl_publisher_init(&spub, &node, sts, "/loan/cpp_string", &po));
    void *sl = nullptr;
    ok(!rcl_publisher_can_loan_messages(&spub) &&
           rcl_borrow_loaned_message(&spub, sts, &sl) != RCL_RET_OK,
       "a C++ String (a string member) is not loaned");
    rcl_reset_error();

    CHECK(rcl_publisher_fini(&spub, &node));
    CHECK(rcl_subscription_fini(&sub, &node));
    CHECK(rcl_publisher_fini(&pub, &node));
    CHECK(rcl_node_fini(&node));
    CHECK(rcl_shutdown(&ctx));
    CHECK(rcl_context_fini(&ctx));
    printf("passed %d checks\n", checks);
    return 0;
}
