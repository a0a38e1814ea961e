// Wait sets: one futex wait (nerve_chan_wait_any, the kernel's multi-futex
// wait) over the channels of every subscription, service, client and event
// in the set, plus the wait set's own "wake" channel.
//
// Guard conditions live in process memory. To wake a wait, a trigger sets
// the guard's flag and then puts one byte into the wake channel of every
// wait set that is waiting at that moment (the same for a change of the
// graph). Wake channels are private: created under a unique name, opened,
// and unlinked at once, so no file is left behind, also after kill -9; a
// process keeps a pool of them for its wait sets.
//
// LOST WAKE-UP. A wait registers itself (under g_mu) and sets its wake
// cursor to the channel's newest message before it looks at any guard
// flag; a trigger sets the flag before it takes g_mu to put. So either the
// wait sees the flag, or the trigger's put comes after the registration
// and the wake channel has a message after the cursor, which makes the
// futex wait return at once. A woken wait looks once more without
// registering, and returns only what that look finds ready; finding
// nothing, it registers and looks again before it sleeps, as above.
//
// THREADS. Wait sets are per thread at a time (rcl's rule: one rmw_wait
// per wait set at once), but one may be used by several threads in turn,
// and several wait sets, in several threads, may hold the same
// subscription, service or client while other threads take from them
// (rclcpp's multi-threaded executor): every look at an entity's handles
// holds the entity's mutex, and a handle an entity followed away from
// stays open until the entity is destroyed (Retired), so a wait on it
// after the lock was let go is safe.
//
// SHUTDOWN WAKE. rmw_shutdown sets the context's shut_down flag and then
// wakes every registered wait, as a trigger does; a wait looks at the flag
// after it registered, so it either sees the flag or is woken. A wait of a
// shut-down context returns at once, with what is ready or as a timeout:
// rclpy and rclcpp check the context after every wait, and their signal
// thread may trigger the SIGINT guard (waking a wait that then finds the
// context still valid and waits again) just before it shuts the context
// down, so only this makes the first SIGINT or SIGTERM end the node.

#include "rmw_nerve.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstring>

using namespace rmw_nerve;

namespace rmw_nerve {
struct Service;
struct Client;
} // namespace rmw_nerve

namespace {

struct WaitSet {
    nerve_chan *wake = nullptr;
    std::shared_ptr<std::atomic<bool>> shut_down; // the context's
    // Storage of rmw_wait's per-call lists, kept so that a wait in a
    // steady state allocates nothing: one flag per entity (WaitCall) and
    // the channels waited on (wait_chans). Only the rmw_wait running on
    // this set uses them (THREADS: one rmw_wait per wait set at once).
    std::vector<char> ready;
    std::vector<nerve_chan *> chans;
};

// Never destroyed: the graph thread of a context the program did not shut
// down may still ring wake channels while static destructors run at exit.
std::mutex &g_mu = *new std::mutex;
std::vector<WaitSet *> &g_waiting = *new std::vector<WaitSet *>; // [g_mu]
std::vector<nerve_chan *> &g_pool =
    *new std::vector<nerve_chan *>; // [g_mu] idle
unsigned g_made = 0;                // [g_mu]

nerve_chan *wake_get()
{
    std::lock_guard<std::mutex> lk(g_mu);
    if (!g_pool.empty()) {
        nerve_chan *c = g_pool.back();
        g_pool.pop_back();
        return c;
    }
    std::string name = "rmw-nerve-wake-" + std::to_string(getpid()) + "-" +
                       std::to_string(g_made++) + "-" +
                       std::to_string(mono_ns());
    struct nerve_chan_opts o = NERVE_CHAN_OPTS_INIT;
    o.slots = 4;
    o.data_size = 4096;
    o.mode = 0600;
    o.type = "rmw_nerve/wake";
    o.encoding = "raw";
    if (nerve_chan_create(name.c_str(), &o) != 0)
        return nullptr;
    nerve_chan *c = nullptr;
    int r = nerve_chan_open(name.c_str(), NERVE_O_WRITE, &c);
    (void)nerve_chan_unlink(name.c_str());
    return r == 0 ? c : nullptr;
}

RMW_NERVE_HOT void unregister(WaitSet *ws)
{
    std::lock_guard<std::mutex> lk(g_mu);
    g_waiting.erase(std::remove(g_waiting.begin(), g_waiting.end(), ws),
                    g_waiting.end());
}

} // namespace

namespace rmw_nerve {
void wake_waiters()
{
    static const char one = 1;
    std::lock_guard<std::mutex> lk(g_mu);
    for (WaitSet *ws : g_waiting)
        (void)nerve_chan_put(ws->wake, &one, 1, NERVE_FOREVER, nullptr, 0);
}
} // namespace rmw_nerve

namespace {

// One rmw_wait call: the entities it was given and, after poll_ready,
// which of them are ready (one flag each, in the callers' order, held in
// the wait set's `ready`).
struct WaitCall {
    rmw_subscriptions_t *subs;
    rmw_guard_conditions_t *gcs;
    rmw_services_t *srvs;
    rmw_clients_t *clis;
    rmw_events_t *evs;
    size_t ns, ng, nv, nc, ne;
    char *rs, *rg, *rv, *rc, *re;
    // After poll_ready: the earliest mono time at which a deadline or
    // lease of an event may make it ready, or a channel's name is to be
    // asked again (chan_renamed_unmarked; INT64_MAX: none).
    int64_t next_ns = INT64_MAX;

    WaitCall(rmw_subscriptions_t *s, rmw_guard_conditions_t *g,
             rmw_services_t *v, rmw_clients_t *c, rmw_events_t *e,
             std::vector<char> *ready)
        : subs(s), gcs(g), srvs(v), clis(c), evs(e),
          ns(s ? s->subscriber_count : 0), ng(g ? g->guard_condition_count : 0),
          nv(v ? v->service_count : 0), nc(c ? c->client_count : 0),
          ne(e ? e->event_count : 0)
    {
        // Grows only when a call has more entities than any before it;
        // poll_ready writes every flag before it is read.
        ready->resize(ns + ng + nv + nc + ne);
        rs = ready->data();
        rg = rs + ns;
        rv = rg + ng;
        rc = rv + nv;
        re = rc + nc;
    }
    Subscription *sub(size_t i) const
    {
        return static_cast<Subscription *>(subs->subscribers[i]);
    }
    Service *srv(size_t i) const
    {
        return static_cast<Service *>(srvs->services[i]);
    }
    Client *cli(size_t i) const
    {
        return static_cast<Client *>(clis->clients[i]);
    }
    rmw_event_t *event(size_t i) const
    {
        return static_cast<rmw_event_t *>(evs->events[i]);
    }
};

// The deadline (mono_ns) of `timeout`; none (`*forever`) for a null
// timeout or one too long to add to the clock without overflow.
RMW_NERVE_HOT int64_t wait_deadline(const rmw_time_t *timeout, bool *forever)
{
    *forever = timeout == nullptr;
    if (*forever)
        return 0;
    int64_t t = int64_t(timeout->sec) * 1000000000LL + int64_t(timeout->nsec);
    if (timeout->sec >= 9223372036ULL) {
        *forever = true;
        return 0;
    }
    return mono_ns() + t;
}

// Registers `ws` as waiting and moves its wake cursor to the newest
// message, before any flag is looked at (the LOST WAKE-UP argument at the
// top of this file).
RMW_NERVE_HOT void arm(WaitSet *ws)
{
    std::lock_guard<std::mutex> lk(g_mu);
    g_waiting.push_back(ws);
    // To the newest message without a system call (nerve_chan_stat would
    // fstat): a view of NEWEST moves the cursor there, or says EAGAIN when
    // it is there already. Puts to the wake channel hold g_mu, so none
    // overwrites the view meanwhile.
    struct nerve_view v;
    (void)nerve_chan_view(ws->wake, 0, 0, &v, NERVE_GET_NEWEST);
}

// Whether event `ev` has something to report. Message-lost events are
// woken by their subscription's channel; the incompatible-type,
// incompatible-QoS and liveliness-changed ones by graph changes
// (wake_waiters), like guards; deadline and liveliness-lost ones by the
// time they may happen, which lowers *next_ns (events.cpp).
} // namespace

RMW_NERVE_HOT bool rmw_nerve::event_ready(rmw_event_t *ev, int64_t *next_ns)
{
    if (!ev)
        return false;
    if (qos_event_type(ev->event_type, true) ||
        qos_event_type(ev->event_type, false))
        return qos_event_ready(ev, next_ns);
    switch (ev->event_type) {
    case RMW_EVENT_MESSAGE_LOST: {
        auto *s = static_cast<Subscription *>(ev->data);
        std::lock_guard<std::mutex> lk(s->mu);
        sub_count_lost(s);
        return s->lost_total > s->lost_reported;
    }
    case RMW_EVENT_SUBSCRIPTION_INCOMPATIBLE_TYPE: {
        auto *s = static_cast<Subscription *>(ev->data);
        std::lock_guard<std::mutex> lk(s->mu);
        return note_other_types(s->node, s->topic, s->type.name, Kind::Pub,
                                &s->other_types, s->other_types_reported,
                                &s->other_types_graph);
    }
    case RMW_EVENT_REQUESTED_QOS_INCOMPATIBLE: {
        auto *s = static_cast<Subscription *>(ev->data);
        std::lock_guard<std::mutex> lk(s->mu);
        return note_bad_qos(s->node, s->topic, s->type.name, s->qos, false,
                            &s->bad_qos);
    }
    case RMW_EVENT_OFFERED_QOS_INCOMPATIBLE: {
        auto *p = static_cast<Publisher *>(ev->data);
        std::lock_guard<std::mutex> lk(p->mu);
        return note_bad_qos(p->node, p->topic, p->type.name, p->qos, true,
                            &p->bad_qos);
    }
    case RMW_EVENT_PUBLISHER_INCOMPATIBLE_TYPE: {
        auto *p = static_cast<Publisher *>(ev->data);
        std::lock_guard<std::mutex> lk(p->mu);
        return note_other_types(p->node, p->topic, p->type.name, Kind::Sub,
                                &p->other_types, p->other_types_reported,
                                &p->other_types_graph);
    }
    default: return false;
    }
}

namespace {

// Looks at every entity of `w` once, recording which are ready; whether
// any is.
RMW_NERVE_HOT bool poll_ready(WaitCall &w)
{
    bool any = false;
    w.next_ns = INT64_MAX;
    for (size_t i = 0; i < w.ns; i++) {
        auto *s = w.sub(i);
        w.rs[i] = 0;
        if (s) {
            std::lock_guard<std::mutex> lk(s->mu);
            w.rs[i] = sub_ready(s, &w.next_ns);
        }
        any |= w.rs[i];
    }
    for (size_t i = 0; i < w.ng; i++)
        any |= w.rg[i] =
            w.gcs->guard_conditions[i] &&
            static_cast<GuardCondition *>(w.gcs->guard_conditions[i])
                ->triggered.load();
    for (size_t i = 0; i < w.nv; i++)
        any |= w.rv[i] = w.srvs->services[i] && srv_ready(w.srv(i), &w.next_ns);
    for (size_t i = 0; i < w.nc; i++)
        any |= w.rc[i] = w.clis->clients[i] && cli_ready(w.cli(i), &w.next_ns);
    for (size_t i = 0; i < w.ne; i++)
        any |= w.re[i] = event_ready(w.event(i), &w.next_ns);
    return any;
}

// The rmw_wait result in the callers' arrays: what is not ready becomes
// null; a ready guard condition is reset.
RMW_NERVE_HOT void report_ready(WaitCall &w)
{
    for (size_t i = 0; i < w.ns; i++)
        if (!w.rs[i])
            w.subs->subscribers[i] = nullptr;
    for (size_t i = 0; i < w.ng; i++) {
        if (!w.rg[i])
            w.gcs->guard_conditions[i] = nullptr;
        else
            static_cast<GuardCondition *>(w.gcs->guard_conditions[i])
                ->triggered.store(false);
    }
    for (size_t i = 0; i < w.nv; i++)
        if (!w.rv[i])
            w.srvs->services[i] = nullptr;
    for (size_t i = 0; i < w.nc; i++)
        if (!w.rc[i])
            w.clis->clients[i] = nullptr;
    for (size_t i = 0; i < w.ne; i++)
        if (!w.re[i])
            w.evs->events[i] = nullptr;
}

// Every channel the wait of `w` on `ws` involves, each once, at most
// NERVE_WAIT_MAX, into ws->chans; `*overflow` says some were left out
// (they are then looked at again every millisecond). `*unopened`: whether
// a subscription or client of `w` waits for a channel that does not exist
// yet. One an rmw_nerve publisher or server makes is announced by the
// graph; one made by anything else (`nerve ros2 --from-ros`, a nerve
// program) must be looked for again every 100 ms.
RMW_NERVE_HOT void wait_chans(const WaitCall &w, WaitSet *ws, bool *overflow,
                              bool *unopened)
{
    std::vector<nerve_chan *> &chans = ws->chans;
    chans.clear(); // keeps its storage
    *overflow = false;
    *unopened = false;
    auto add = [&chans, overflow](nerve_chan *c) {
        if (!c || std::find(chans.begin(), chans.end(), c) != chans.end())
            return;
        if (chans.size() < NERVE_WAIT_MAX)
            chans.push_back(c);
        else
            *overflow = true;
    };
    add(ws->wake);
    for (size_t i = 0; i < w.ns; i++) {
        auto *s = w.sub(i);
        std::lock_guard<std::mutex> lk(s->mu);
        add(s->ch);
        *unopened |= s->ch == nullptr && !s->refused;
    }
    for (size_t i = 0; i < w.nv; i++)
        add(srv_chan(w.srv(i)));
    for (size_t i = 0; i < w.nc; i++) {
        nerve_chan *c = cli_chan(w.cli(i));
        add(c);
        *unopened |= c == nullptr;
    }
    for (size_t i = 0; i < w.ne; i++) {
        auto *ev = w.event(i);
        if (ev && ev->event_type == RMW_EVENT_MESSAGE_LOST) {
            auto *s = static_cast<Subscription *>(ev->data);
            std::lock_guard<std::mutex> lk(s->mu);
            add(s->ch);
        }
    }
}

} // namespace

extern "C" {

rmw_wait_set_t *rmw_create_wait_set(rmw_context_t *context,
                                    size_t max_conditions)
{
    (void)max_conditions;
    if (!context || !context->impl) {
        fail(RMW_RET_INVALID_ARGUMENT, "rmw_nerve: context not init");
        return nullptr;
    }
    auto *ws = new WaitSet;
    ws->shut_down = context->impl->ctx.shut_down;
    ws->wake = wake_get();
    if (!ws->wake) {
        delete ws;
        fail(RMW_RET_ERROR,
             "rmw_nerve: cannot create a wait set's wake channel in "
             "/dev/shm");
        return nullptr;
    }
    auto *w = new rmw_wait_set_t;
    w->implementation_identifier = kIdentifier;
    w->guard_conditions = nullptr;
    w->data = ws;
    return w;
}

rmw_ret_t rmw_destroy_wait_set(rmw_wait_set_t *w)
{
    if (!w || !w->data)
        return fail(RMW_RET_INVALID_ARGUMENT, "rmw_nerve: wait set is NULL");
    auto *ws = static_cast<WaitSet *>(w->data);
    unregister(ws);
    {
        std::lock_guard<std::mutex> lk(g_mu);
        g_pool.push_back(ws->wake);
    }
    delete ws;
    delete w;
    return RMW_RET_OK;
}

RMW_NERVE_HOT rmw_ret_t rmw_wait(rmw_subscriptions_t *subs,
                                 rmw_guard_conditions_t *gcs,
                                 rmw_services_t *srvs, rmw_clients_t *clis,
                                 rmw_events_t *evs, rmw_wait_set_t *w,
                                 const rmw_time_t *timeout)
{
    if (!w || !w->data)
        return fail(RMW_RET_INVALID_ARGUMENT, "rmw_nerve: wait set is NULL");
    auto *ws = static_cast<WaitSet *>(w->data);
    bool forever;
    int64_t deadline = wait_deadline(timeout, &forever);
    WaitCall call(subs, gcs, srvs, clis, evs, &ws->ready);
    bool woken = false;
    for (;;) {
        // Woken: look first, unregistered. What woke the wait is usually
        // ready, and then it returns without arming and unregistering
        // again (a mutex and a view of the wake channel less a message).
        // Nothing ready: arm and look again before sleeping, as on entry
        // (LOST WAKE-UP concerns only a look that may end in a sleep).
        if (woken && poll_ready(call)) {
            report_ready(call);
            return RMW_RET_OK;
        }
        arm(ws);
        bool any = poll_ready(call);
        int64_t now = mono_ns();
        bool expired = (!forever && now >= deadline) || ws->shut_down->load();
        if (any || expired) {
            unregister(ws);
            report_ready(call);
            return any ? RMW_RET_OK : RMW_RET_TIMEOUT;
        }
        // Wait on every channel involved, bounded where some cannot be.
        bool overflow, unopened;
        wait_chans(call, ws, &overflow, &unopened);
        int64_t wait_ns = forever ? NERVE_FOREVER : deadline - now;
        if (overflow && (forever || wait_ns > 1000000))
            wait_ns = 1000000;
        if (unopened && (forever || wait_ns > 100000000))
            wait_ns = 100000000;
        if (call.next_ns != INT64_MAX &&
            (forever || wait_ns > call.next_ns - now))
            wait_ns = std::max<int64_t>(call.next_ns - now, 0);
        uint64_t ready[1] = {0};
        int r = nerve_chan_wait_any(ws->chans.data(), ws->chans.size(), wait_ns,
                                    ready, 0);
        unregister(ws);
        woken = true;
        if (r < 0 && r != NERVE_ETIMEDOUT)
            return fail(RMW_RET_ERROR, "rmw_nerve: wait: %s",
                        nerve_strerror(r));
    }
}

} // extern "C"
