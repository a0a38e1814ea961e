// Deadline and liveliness QoS events, as ROS 2 defines them, computed from
// what nerve already holds: a ring's newest commit time and the graph.
//
// DEADLINE. A publisher with a deadline D counts one offered deadline
// missed for each whole period D that passes without a publish, from its
// first publish on. A subscription with a deadline D counts one requested
// deadline missed for each whole period D that passes after the newest
// message of its channel (the ring's newest commit time, whoever wrote
// it), once a message was committed after the subscription was made. A
// topic is one DDS instance: any publisher's message meets the deadline.
//
// LIVELINESS. AUTOMATIC: a publisher is alive while its process is in the
// graph, i.e. while the process's graph thread heartbeats (graph.cpp,
// LIVENESS): a killed process leaves every view within the graph's tick
// once it is reaped, and at most the graph's lease (2 s) after its last
// heartbeat; it never loses liveliness while its process runs.
// MANUAL_BY_TOPIC with a finite lease: a publish or
// rmw_publisher_assert_liveliness asserts it; the publisher counts one
// liveliness lost for each lapse of the lease without an assertion (from
// its creation on), and its process's graph thread marks it lost in the
// graph while it lapses (Graph::check_leases), so every subscription sees
// it as not alive within the graph's tick. A subscription's liveliness
// changed reports the publishers of its topic and type in the graph:
// alive, not alive (lapsed), and the changes since its last take; one
// whose process ended counts as neither any more (alive -1).
//
// Both wake rmw_wait: a deadline or lease is a time the wait is bounded by
// (qos_event_ready's *next_ns), a liveliness change a graph change.
//
// The rmw event API at the end (rmw_*_event_init, rmw_take_event) serves
// these and the others: message lost (the subscription's keep-last count),
// incompatible QoS (qos.cpp) and incompatible type (note_other_types).

#include "rmw_nerve.hpp"

#include <rmw/event.h>
#include <rmw/events_statuses/events_statuses.h>

#include <climits>

namespace rmw_nerve {

// A QoS duration in ns; 0 for none (zero or infinite).
static int64_t period_ns(rmw_time_t t)
{
    if ((t.sec == 0 && t.nsec == 0) || t.sec >= 9223372036ULL)
        return 0;
    return int64_t(t.sec) * 1000000000LL + int64_t(t.nsec);
}

void qos_timers_init(QosTimers *t, const rmw_qos_profile_t &q)
{
    t->deadline_ns = period_ns(q.deadline);
    t->lease_ns = period_ns(q.liveliness_lease_duration);
    t->manual = q.liveliness == RMW_QOS_POLICY_LIVELINESS_MANUAL_BY_TOPIC;
    t->created_ns = mono_ns();
    t->asserted->store(t->created_ns);
}

// Count the periods passed since the newest reference `newest` (a newer
// one starts counting again); `once`: at most one per reference.
static void lapse_update(Lapses *l, int64_t newest, int64_t period, int64_t now,
                         bool once)
{
    if (newest > l->ref) {
        l->ref = newest;
        l->counted = 0;
    }
    if (!l->ref || !period || now <= l->ref)
        return;
    uint64_t k = uint64_t((now - l->ref) / period);
    if (once && k > 1)
        k = 1;
    if (k > l->counted) {
        l->total += k - l->counted;
        l->counted = k;
    }
}

// The mono time at which *l counts its next period, or INT64_MAX.
static int64_t lapse_next(const Lapses &l, int64_t period, bool once)
{
    if (!l.ref || !period || (once && l.counted))
        return INT64_MAX;
    return l.ref + int64_t(l.counted + 1) * period + 1;
}

RMW_NERVE_HOT void pub_asserted(Publisher *p, bool published, int64_t now)
{
    QosTimers &t = p->timers;
    lapse_update(&t.lease, t.asserted->load(), t.lease_ns, now, true);
    t.asserted->store(now);
    if (published) {
        lapse_update(&t.deadline, 0, t.deadline_ns, now, false); // so far
        t.deadline.ref = now;
        t.deadline.counted = 0;
    }
}

bool qos_event_type(rmw_event_type_t t, bool pub)
{
    if (pub)
        return t == RMW_EVENT_OFFERED_DEADLINE_MISSED ||
               t == RMW_EVENT_LIVELINESS_LOST;
    return t == RMW_EVENT_REQUESTED_DEADLINE_MISSED ||
           t == RMW_EVENT_LIVELINESS_CHANGED;
}

// The subscription's deadline state brought up to now [s->mu].
static void sub_deadline(Subscription *s, int64_t now)
{
    QosTimers &t = s->timers;
    int64_t newest = 0;
    struct nerve_stats st;
    if (t.deadline_ns && sub_open(s) && nerve_chan_stat(s->ch, &st) == 0 &&
        st.newest_time_ns >= t.created_ns)
        newest = st.newest_time_ns;
    lapse_update(&t.deadline, newest, t.deadline_ns, now, false);
}

// The publishers of the subscription's topic and type in the graph, alive
// or not; whether that differs from what was last reported [s->mu].
static bool sub_liveliness(Subscription *s)
{
    QosTimers &t = s->timers;
    Graph &g = *s->node->ctx->graph;
    uint64_t v = g.version();
    if (v != t.live_graph) {
        t.live_graph = v;
        t.live_seen.clear();
        for (const auto &e : g.snapshot().eps)
            if (e.kind == Kind::Pub && e.name == s->topic &&
                e.type == s->type.name)
                t.live_seen[std::string(
                    reinterpret_cast<const char *>(e.gid.data),
                    RMW_GID_STORAGE_SIZE)] = !e.lost;
    }
    return t.live_seen != t.live_reported;
}

bool qos_event_ready(const rmw_event_t *ev, int64_t *next_ns)
{
    int64_t now = mono_ns();
    int64_t next = INT64_MAX;
    bool ready = false;
    if (qos_event_type(ev->event_type, true)) {
        auto *p = static_cast<Publisher *>(ev->data);
        std::lock_guard<std::mutex> lk(p->mu);
        QosTimers &t = p->timers;
        if (ev->event_type == RMW_EVENT_OFFERED_DEADLINE_MISSED) {
            lapse_update(&t.deadline, 0, t.deadline_ns, now, false);
            ready = t.deadline.total > t.deadline.reported;
            next = lapse_next(t.deadline, t.deadline_ns, false);
        } else if (t.manual) {
            lapse_update(&t.lease, t.asserted->load(), t.lease_ns, now, true);
            ready = t.lease.total > t.lease.reported;
            next = lapse_next(t.lease, t.lease_ns, true);
        }
    } else {
        auto *s = static_cast<Subscription *>(ev->data);
        std::lock_guard<std::mutex> lk(s->mu);
        QosTimers &t = s->timers;
        if (ev->event_type == RMW_EVENT_REQUESTED_DEADLINE_MISSED) {
            sub_deadline(s, now);
            ready = t.deadline.total > t.deadline.reported;
            next = lapse_next(t.deadline, t.deadline_ns, false);
        } else {
            ready = sub_liveliness(s);
        }
    }
    if (next < *next_ns)
        *next_ns = next;
    return ready;
}

static int32_t clamp32(int64_t v)
{
    return v > INT32_MAX ? INT32_MAX : v < INT32_MIN ? INT32_MIN : int32_t(v);
}

// Fill a deadline-missed or liveliness-lost status (the same two fields)
// and mark everything reported.
template <class Status> static void take_lapses(Lapses *l, Status *st)
{
    st->total_count = clamp32(int64_t(l->total));
    st->total_count_change = clamp32(int64_t(l->total - l->reported));
    l->reported = l->total;
}

void qos_event_take(const rmw_event_t *ev, void *info)
{
    int64_t now = mono_ns();
    if (qos_event_type(ev->event_type, true)) {
        auto *p = static_cast<Publisher *>(ev->data);
        std::lock_guard<std::mutex> lk(p->mu);
        QosTimers &t = p->timers;
        if (ev->event_type == RMW_EVENT_OFFERED_DEADLINE_MISSED) {
            lapse_update(&t.deadline, 0, t.deadline_ns, now, false);
            take_lapses(
                &t.deadline,
                static_cast<rmw_offered_deadline_missed_status_t *>(info));
        } else {
            if (t.manual)
                lapse_update(&t.lease, t.asserted->load(), t.lease_ns, now,
                             true);
            take_lapses(&t.lease,
                        static_cast<rmw_liveliness_lost_status_t *>(info));
        }
        return;
    }
    auto *s = static_cast<Subscription *>(ev->data);
    std::lock_guard<std::mutex> lk(s->mu);
    QosTimers &t = s->timers;
    if (ev->event_type == RMW_EVENT_REQUESTED_DEADLINE_MISSED) {
        sub_deadline(s, now);
        take_lapses(
            &t.deadline,
            static_cast<rmw_requested_deadline_missed_status_t *>(info));
        return;
    }
    (void)sub_liveliness(s);
    auto count = [](const std::map<std::string, bool> &m, bool alive) {
        int64_t n = 0;
        for (const auto &kv : m)
            n += kv.second == alive;
        return n;
    };
    auto *st = static_cast<rmw_liveliness_changed_status_t *>(info);
    int64_t alive = count(t.live_seen, true);
    int64_t dead = count(t.live_seen, false);
    st->alive_count = clamp32(alive);
    st->not_alive_count = clamp32(dead);
    st->alive_count_change = clamp32(alive - count(t.live_reported, true));
    st->not_alive_count_change = clamp32(dead - count(t.live_reported, false));
    t.live_reported = t.live_seen;
}

bool note_other_types(Node *node, const std::string &topic,
                      const std::string &type, Kind other,
                      std::set<std::string> *seen, size_t reported,
                      uint64_t *version)
{
    uint64_t v = node->ctx->graph->version();
    if (v == *version)
        return seen->size() > reported;
    *version = v;
    auto snap = node->ctx->graph->snapshot();
    for (const auto &e : snap.eps)
        if (e.kind == other && e.name == topic && e.type != type)
            seen->insert(std::string(reinterpret_cast<const char *>(e.gid.data),
                                     RMW_GID_STORAGE_SIZE));
    return seen->size() > reported;
}

} // namespace rmw_nerve

extern "C" rmw_ret_t rmw_publisher_assert_liveliness(const rmw_publisher_t *pub)
{
    CHECK_HANDLE(pub, "publisher");
    auto *p = static_cast<rmw_nerve::Publisher *>(pub->data);
    std::lock_guard<std::mutex> lk(p->mu);
    rmw_nerve::pub_asserted(p, false, rmw_nerve::mono_ns());
    return RMW_RET_OK;
}

using namespace rmw_nerve;

extern "C" {

bool rmw_event_type_is_supported(rmw_event_type_t t)
{
    return t == RMW_EVENT_MESSAGE_LOST ||
           t == RMW_EVENT_REQUESTED_QOS_INCOMPATIBLE ||
           t == RMW_EVENT_OFFERED_QOS_INCOMPATIBLE ||
           t == RMW_EVENT_SUBSCRIPTION_INCOMPATIBLE_TYPE ||
           t == RMW_EVENT_PUBLISHER_INCOMPATIBLE_TYPE ||
           qos_event_type(t, true) || qos_event_type(t, false);
}

rmw_ret_t rmw_subscription_event_init(rmw_event_t *ev,
                                      const rmw_subscription_t *sub,
                                      rmw_event_type_t t)
{
    CHECK_HANDLE(sub, "subscription");
    if (!ev)
        return fail(RMW_RET_INVALID_ARGUMENT, "rmw_nerve: event is NULL");
    if (t != RMW_EVENT_MESSAGE_LOST &&
        t != RMW_EVENT_REQUESTED_QOS_INCOMPATIBLE &&
        t != RMW_EVENT_SUBSCRIPTION_INCOMPATIBLE_TYPE &&
        !qos_event_type(t, false))
        return fail(RMW_RET_UNSUPPORTED,
                    "rmw_nerve: subscription event type %d is not supported "
                    "(message lost, incompatible QoS, incompatible type, "
                    "requested deadline missed and liveliness changed are)",
                    int(t));
    // No allocation: rmw_event_fini() (librmw) frees nothing.
    auto *s = static_cast<Subscription *>(sub->data);
    s->has_lost_event = true;
    ev->implementation_identifier = kIdentifier;
    ev->data = s;
    ev->event_type = t;
    return RMW_RET_OK;
}

rmw_ret_t rmw_publisher_event_init(rmw_event_t *ev, const rmw_publisher_t *pub,
                                   rmw_event_type_t t)
{
    CHECK_HANDLE(pub, "publisher");
    if (!ev)
        return fail(RMW_RET_INVALID_ARGUMENT, "rmw_nerve: event is NULL");
    if (t != RMW_EVENT_PUBLISHER_INCOMPATIBLE_TYPE &&
        t != RMW_EVENT_OFFERED_QOS_INCOMPATIBLE && !qos_event_type(t, true))
        return fail(RMW_RET_UNSUPPORTED,
                    "rmw_nerve: publisher event type %d is not supported "
                    "(incompatible QoS, incompatible type, offered deadline "
                    "missed and liveliness lost are)",
                    int(t));
    ev->implementation_identifier = kIdentifier;
    ev->data = pub->data; // a Publisher; nothing allocated
    ev->event_type = t;
    return RMW_RET_OK;
}

rmw_ret_t rmw_take_event(const rmw_event_t *ev, void *info, bool *taken)
{
    CHECK_HANDLE(ev, "event");
    if (!info || !taken)
        return fail(RMW_RET_INVALID_ARGUMENT, "rmw_nerve: NULL argument");
    if (qos_event_type(ev->event_type, true) ||
        qos_event_type(ev->event_type, false)) {
        qos_event_take(ev, info);
        *taken = true;
        return RMW_RET_OK;
    }
    if (ev->event_type == RMW_EVENT_OFFERED_QOS_INCOMPATIBLE) {
        auto *p = static_cast<Publisher *>(ev->data);
        std::lock_guard<std::mutex> lk(p->mu);
        (void)note_bad_qos(p->node, p->topic, p->type.name, p->qos, true,
                           &p->bad_qos);
        take_bad_qos(&p->bad_qos,
                     static_cast<rmw_qos_incompatible_event_status_t *>(info));
        *taken = true;
        return RMW_RET_OK;
    }
    if (ev->event_type == RMW_EVENT_REQUESTED_QOS_INCOMPATIBLE) {
        auto *s = static_cast<Subscription *>(ev->data);
        std::lock_guard<std::mutex> lk(s->mu);
        (void)note_bad_qos(s->node, s->topic, s->type.name, s->qos, false,
                           &s->bad_qos);
        take_bad_qos(&s->bad_qos,
                     static_cast<rmw_qos_incompatible_event_status_t *>(info));
        *taken = true;
        return RMW_RET_OK;
    }
    if (ev->event_type == RMW_EVENT_PUBLISHER_INCOMPATIBLE_TYPE ||
        ev->event_type == RMW_EVENT_SUBSCRIPTION_INCOMPATIBLE_TYPE) {
        bool is_pub = ev->event_type == RMW_EVENT_PUBLISHER_INCOMPATIBLE_TYPE;
        auto *p = is_pub ? static_cast<Publisher *>(ev->data) : nullptr;
        auto *s = is_pub ? nullptr : static_cast<Subscription *>(ev->data);
        std::lock_guard<std::mutex> lk(is_pub ? p->mu : s->mu);
        auto &seen = is_pub ? p->other_types : s->other_types;
        size_t &reported =
            is_pub ? p->other_types_reported : s->other_types_reported;
        (void)note_other_types(
            is_pub ? p->node : s->node, is_pub ? p->topic : s->topic,
            is_pub ? p->type.name : s->type.name,
            is_pub ? Kind::Sub : Kind::Pub, &seen, reported,
            is_pub ? &p->other_types_graph : &s->other_types_graph);
        auto *st = static_cast<rmw_incompatible_type_status_t *>(info);
        st->total_count = int32_t(seen.size());
        st->total_count_change = int32_t(seen.size() - reported);
        reported = seen.size();
        *taken = true;
        return RMW_RET_OK;
    }
    auto *s = static_cast<Subscription *>(ev->data);
    std::lock_guard<std::mutex> lk(s->mu);
    sub_count_lost(s);
    auto *st = static_cast<rmw_message_lost_status_t *>(info);
    st->total_count = s->lost_total;
    st->total_count_change = s->lost_total - s->lost_reported;
    s->lost_reported = s->lost_total;
    *taken = true;
    return RMW_RET_OK;
}

} // extern "C"
