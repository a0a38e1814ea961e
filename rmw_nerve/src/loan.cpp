// Loaned messages, for fixed-size types only.
//
// A type is loanable when its message struct holds no pointer: no string
// and no sequence, bounded or not, in it or in any nested message (fixed
// arrays are fine). Decided from the type's introspection typesupport
// (rosidl_typesupport_introspection_c or _cpp, whichever the handle's
// language has), which also gives the struct's size and its init and fini
// functions. Publishers and subscriptions of such types say
// can_loan_messages = true; for every other type the loan functions return
// RMW_RET_UNSUPPORTED and say which member prevents it.
//
// Where a loan lives: in a per-endpoint pool of kLoanSlots messages,
// allocated at the endpoint's first loan (64-byte aligned) and freed with
// the endpoint; no heap allocation after that. Not in the ring, because:
//  - a publisher's reservation holds the channel's writer lock until it is
//    committed (nerve_chan_reserve), so a loan kept while the caller fills
//    it in would stall every other writer of the topic, in every process;
//  - the CDR body starts 4 bytes after the (64-byte aligned) reservation,
//    behind the encapsulation header, so a double or int64 member of the
//    struct laid over it would be misaligned;
//  - a subscription's zero-copy view can be overwritten by the writer at
//    any time (readers write nothing and pin nothing): the message must be
//    copied out and the view validated before the caller may trust it.
// So the copies are the same as without a loan: publish = one serialisation
// pass from the loan into a ring reservation of exactly the message's CDR
// size; take = one deserialisation pass from the zero-copy view into the
// loan, then the view is validated (a message overwritten meanwhile counts
// as lost). What a loan saves is the caller's allocation of a message.
// The wire does not change: a loaned publish goes through rmw_publish, so
// the channel carries the same CDR bytes as any other publish.
//
// Rules: at most kLoanSlots loans out per endpoint (more: RMW_RET_ERROR);
// a pointer that is not an outstanding loan of that endpoint (foreign, or
// returned twice) is refused with RMW_RET_INVALID_ARGUMENT. A published
// loan goes back to the pool whether the publish succeeded or not (rcl and
// rclcpp consider it handed over either way).

#include "rmw_nerve.hpp"

#include <cstdlib>
#include <cstring>

#include <rosidl_typesupport_introspection_c/field_types.h>
#include <rosidl_typesupport_introspection_c/message_introspection.h>
#include <rosidl_typesupport_introspection_cpp/field_types.hpp>
#include <rosidl_typesupport_introspection_cpp/message_introspection.hpp>

using namespace rmw_nerve;

namespace rmw_nerve {

struct LoanPool {
    std::string type_name;
    std::string why; // not loanable: why (empty: loanable)
    bool cpp = false;
    const void *members = nullptr; // introspection MessageMembers (C or C++)
    size_t size = 0;               // sizeof the message struct
    size_t stride = 0;             // size rounded up to 64
    std::mutex mu;
    unsigned char *block = nullptr; // [mu] kLoanSlots * stride, lazily
    uint32_t lent = 0;              // [mu] bit i: slot i is out
};

void LoanPoolDeleter::operator()(LoanPool *p) const
{
    if (!p)
        return;
    for (int i = 0; i < kLoanSlots; i++)
        if (p->lent & (1u << i))
            loan_fini(p, p->block + size_t(i) * p->stride);
    free(p->block);
    delete p;
}

// The first member (dotted path) that holds a pointer, or "" for none.
template <typename Members, typename Member>
static std::string pointer_member(const Members *m, const std::string &path,
                                  uint8_t string_id, uint8_t wstring_id,
                                  uint8_t message_id)
{
    for (uint32_t i = 0; i < m->member_count_; i++) {
        const Member &f = m->members_[i];
        std::string name = path + f.name_;
        if (f.is_array_ && (f.is_upper_bound_ || f.array_size_ == 0))
            return name + " (a sequence)";
        if (f.type_id_ == string_id || f.type_id_ == wstring_id)
            return name + " (a string)";
        if (f.type_id_ == message_id) {
            if (!f.members_ || !f.members_->data)
                return name + " (no introspection)";
            std::string sub = pointer_member<Members, Member>(
                static_cast<const Members *>(f.members_->data), name + ".",
                string_id, wstring_id, message_id);
            if (!sub.empty())
                return sub;
        }
    }
    return "";
}

LoanPoolPtr loan_pool(const MsgType &t)
{
    LoanPoolPtr p(new LoanPool);
    p->type_name = t.name;
    const rosidl_message_type_support_t *h = get_message_typesupport_handle(
        t.ts, "rosidl_typesupport_introspection_c");
    if (!h) {
        rcutils_reset_error();
        h = get_message_typesupport_handle(
            t.ts, "rosidl_typesupport_introspection_cpp");
        p->cpp = h != nullptr;
    }
    if (!h) {
        rcutils_reset_error();
        p->why = "its type support has no introspection (needed for the "
                 "message's size and initialisation)";
        return p;
    }
    std::string ptr;
    if (p->cpp) {
        namespace ti = rosidl_typesupport_introspection_cpp;
        const auto *m = static_cast<const ti::MessageMembers *>(h->data);
        ptr = pointer_member<ti::MessageMembers, ti::MessageMember>(
            m, "", ti::ROS_TYPE_STRING, ti::ROS_TYPE_WSTRING,
            ti::ROS_TYPE_MESSAGE);
        p->members = m;
        p->size = m->size_of_;
    } else {
        const auto *m = static_cast<
            const rosidl_typesupport_introspection_c__MessageMembers *>(
            h->data);
        ptr = pointer_member<rosidl_typesupport_introspection_c__MessageMembers,
                             rosidl_typesupport_introspection_c__MessageMember>(
            m, "", rosidl_typesupport_introspection_c__ROS_TYPE_STRING,
            rosidl_typesupport_introspection_c__ROS_TYPE_WSTRING,
            rosidl_typesupport_introspection_c__ROS_TYPE_MESSAGE);
        p->members = m;
        p->size = m->size_of_;
    }
    if (!ptr.empty()) {
        p->why = "it is not of fixed size: member " + ptr;
        p->members = nullptr;
        return p;
    }
    if (p->size == 0) {
        p->why = "its introspection gives no size";
        p->members = nullptr;
        return p;
    }
    p->stride = (p->size + 63) & ~size_t(63);
    return p;
}

bool loan_ok(const LoanPool *p)
{
    return p && p->members;
}

void loan_fini(LoanPool *p, void *msg)
{
    if (p->cpp)
        static_cast<
            const rosidl_typesupport_introspection_cpp::MessageMembers *>(
            p->members)
            ->fini_function(msg);
    else
        static_cast<const rosidl_typesupport_introspection_c__MessageMembers *>(
            p->members)
            ->fini_function(msg);
}

} // namespace rmw_nerve

// A free slot, initialised (the type's default values), marked lent; or an
// error. `what`/`name` say whose loan it is in the messages.
static rmw_ret_t loan_get(LoanPool *p, const char *what, const char *name,
                          void **out)
{
    if (!loan_ok(p))
        return fail(RMW_RET_UNSUPPORTED,
                    "rmw_nerve: %s '%s': messages of %s cannot be loaned: %s "
                    "(only types without strings and sequences can)",
                    what, name, p ? p->type_name.c_str() : "?",
                    p ? p->why.c_str() : "no pool");
    std::lock_guard<std::mutex> lk(p->mu);
    if (!p->block) {
        p->block = static_cast<unsigned char *>(
            aligned_alloc(64, p->stride * kLoanSlots));
        if (!p->block)
            return fail(RMW_RET_BAD_ALLOC, "rmw_nerve: %s '%s': out of memory",
                        what, name);
    }
    for (int i = 0; i < kLoanSlots; i++) {
        if (p->lent & (1u << i))
            continue;
        void *m = p->block + size_t(i) * p->stride;
        memset(m, 0, p->size);
        if (p->cpp)
            static_cast<
                const rosidl_typesupport_introspection_cpp::MessageMembers *>(
                p->members)
                ->init_function(m,
                                rosidl_runtime_cpp::MessageInitialization::ALL);
        else
            static_cast<
                const rosidl_typesupport_introspection_c__MessageMembers *>(
                p->members)
                ->init_function(m, ROSIDL_RUNTIME_C_MSG_INIT_ALL);
        p->lent |= 1u << i;
        *out = m;
        return RMW_RET_OK;
    }
    return fail(RMW_RET_ERROR,
                "rmw_nerve: %s '%s': all %d loans are out; return one first",
                what, name, kLoanSlots);
}

// Give slot `msg` back (fini, free). Refuses a pointer that is not a loan
// of this pool that is out now.
static rmw_ret_t loan_put(LoanPool *p, const char *what, const char *name,
                          void *msg)
{
    if (!loan_ok(p))
        return fail(RMW_RET_UNSUPPORTED,
                    "rmw_nerve: %s '%s': messages of %s cannot be loaned: %s",
                    what, name, p ? p->type_name.c_str() : "?",
                    p ? p->why.c_str() : "no pool");
    std::lock_guard<std::mutex> lk(p->mu);
    auto *m = static_cast<unsigned char *>(msg);
    if (p->block && m >= p->block && m < p->block + p->stride * kLoanSlots &&
        size_t(m - p->block) % p->stride == 0) {
        int i = int(size_t(m - p->block) / p->stride);
        if (p->lent & (1u << i)) {
            loan_fini(p, m);
            p->lent &= ~(1u << i);
            return RMW_RET_OK;
        }
        return fail(RMW_RET_INVALID_ARGUMENT,
                    "rmw_nerve: %s '%s': message %p was already returned", what,
                    name, msg);
    }
    return fail(RMW_RET_INVALID_ARGUMENT,
                "rmw_nerve: %s '%s': message %p is not a loan of this %s", what,
                name, msg, what);
}

extern "C" {

rmw_ret_t rmw_borrow_loaned_message(const rmw_publisher_t *pub,
                                    const rosidl_message_type_support_t *ts,
                                    void **msg)
{
    CHECK_HANDLE(pub, "publisher");
    if (!ts || !msg)
        return fail(RMW_RET_INVALID_ARGUMENT, "rmw_nerve: NULL argument");
    if (*msg)
        return fail(RMW_RET_INVALID_ARGUMENT,
                    "rmw_nerve: borrow: *ros_message must be NULL");
    auto *p = static_cast<Publisher *>(pub->data);
    if (ts != p->type.ts) {
        MsgType t;
        if (!msg_type(ts, &t))
            return RMW_RET_ERROR;
        if (t.name != p->type.name)
            return fail(RMW_RET_INVALID_ARGUMENT,
                        "rmw_nerve: borrow on '%s': type %s, but the "
                        "publisher's is %s",
                        p->topic.c_str(), t.name.c_str(), p->type.name.c_str());
    }
    return loan_get(p->loans.get(), "publisher", p->topic.c_str(), msg);
}

rmw_ret_t rmw_publish_loaned_message(const rmw_publisher_t *pub, void *msg,
                                     rmw_publisher_allocation_t *allocation)
{
    CHECK_HANDLE(pub, "publisher");
    if (!msg)
        return fail(RMW_RET_INVALID_ARGUMENT, "rmw_nerve: message is NULL");
    auto *p = static_cast<Publisher *>(pub->data);
    LoanPool *lp = p->loans.get();
    if (!loan_ok(lp))
        return loan_put(lp, "publisher", p->topic.c_str(), msg);
    {
        // Check that it is a loan that is out, without giving it back yet.
        std::lock_guard<std::mutex> lk(lp->mu);
        auto *m = static_cast<unsigned char *>(msg);
        bool in = lp->block && m >= lp->block &&
                  m < lp->block + lp->stride * kLoanSlots &&
                  size_t(m - lp->block) % lp->stride == 0 &&
                  (lp->lent & (1u << (size_t(m - lp->block) / lp->stride)));
        if (!in)
            return fail(RMW_RET_INVALID_ARGUMENT,
                        "rmw_nerve: publisher '%s': message %p is not a loan "
                        "of this publisher that is out (foreign, or already "
                        "published or returned)",
                        p->topic.c_str(), msg);
    }
    rmw_ret_t r = rmw_publish(pub, msg, allocation);
    if (r != RMW_RET_OK) {
        // Keep the publish error; the loan goes back all the same.
        rmw_error_string_t e = rmw_get_error_string();
        rmw_reset_error();
        ignore(loan_put(lp, "publisher", p->topic.c_str(), msg));
        rmw_reset_error();
        return fail(r, "%s", e.str);
    }
    return loan_put(lp, "publisher", p->topic.c_str(), msg);
}

rmw_ret_t rmw_return_loaned_message_from_publisher(const rmw_publisher_t *pub,
                                                   void *msg)
{
    CHECK_HANDLE(pub, "publisher");
    if (!msg)
        return fail(RMW_RET_INVALID_ARGUMENT, "rmw_nerve: message is NULL");
    auto *p = static_cast<Publisher *>(pub->data);
    return loan_put(p->loans.get(), "publisher", p->topic.c_str(), msg);
}

rmw_ret_t
rmw_take_loaned_message_with_info(const rmw_subscription_t *sub, void **msg,
                                  bool *taken, rmw_message_info_t *info,
                                  rmw_subscription_allocation_t *allocation)
{
    CHECK_HANDLE(sub, "subscription");
    if (!msg || !taken)
        return fail(RMW_RET_INVALID_ARGUMENT, "rmw_nerve: NULL argument");
    if (*msg)
        return fail(RMW_RET_INVALID_ARGUMENT,
                    "rmw_nerve: take loaned: *loaned_message must be NULL");
    *taken = false;
    auto *s = static_cast<Subscription *>(sub->data);
    LoanPool *lp = s->loans.get();
    void *m = nullptr;
    rmw_ret_t r = loan_get(lp, "subscription", s->topic.c_str(), &m);
    if (r != RMW_RET_OK)
        return r;
    r = info ? rmw_take_with_info(sub, m, taken, info, allocation)
             : rmw_take(sub, m, taken, allocation);
    if (r != RMW_RET_OK || !*taken) {
        rmw_error_string_t e = rmw_get_error_string();
        ignore(loan_put(lp, "subscription", s->topic.c_str(), m));
        if (r != RMW_RET_OK) {
            rmw_reset_error();
            return fail(r, "%s", e.str);
        }
        *taken = false;
        return RMW_RET_OK;
    }
    *msg = m;
    return RMW_RET_OK;
}

rmw_ret_t rmw_take_loaned_message(const rmw_subscription_t *sub, void **msg,
                                  bool *taken,
                                  rmw_subscription_allocation_t *allocation)
{
    return rmw_take_loaned_message_with_info(sub, msg, taken, nullptr,
                                             allocation);
}

rmw_ret_t
rmw_return_loaned_message_from_subscription(const rmw_subscription_t *sub,
                                            void *msg)
{
    CHECK_HANDLE(sub, "subscription");
    if (!msg)
        return fail(RMW_RET_INVALID_ARGUMENT, "rmw_nerve: message is NULL");
    auto *s = static_cast<Subscription *>(sub->data);
    return loan_put(s->loans.get(), "subscription", s->topic.c_str(), msg);
}

} // extern "C"
