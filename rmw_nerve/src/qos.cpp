// QoS compatibility: the request-offered rules of ROS 2 (those of DDS, as
// rmw_fastrtps_cpp, rmw_cyclonedds_cpp and rmw_zenoh_cpp report them), for
// rmw_qos_profile_check_compatible and for the incompatible-QoS events.
//
// A publisher offers, a subscription requests; a pair is incompatible when
//   reliability  the publisher is BEST_EFFORT, the subscription RELIABLE;
//   durability   the publisher is VOLATILE, the subscription TRANSIENT_LOCAL;
//   deadline     the subscription has one and the publisher none or longer;
//   liveliness   the publisher is AUTOMATIC, the subscription MANUAL_BY_TOPIC,
//                or the subscription has a lease and the publisher none or
//                longer.
// SYSTEM_DEFAULT means what rmw_nerve makes of it (RELIABLE, VOLATILE,
// AUTOMATIC), so it is known; BEST_AVAILABLE adapts (a publisher offers
// the most, a subscription requests the least); UNKNOWN gives a warning.
//
// DELIVERY. Unlike DDS, rmw_nerve does not cut an incompatible pair off:
// every writer of a topic writes into the one ring, and a reader cannot
// tell which writer wrote a message, so the subscription keeps receiving
// everything (a ring never blocks, so RELIABLE and BEST_EFFORT behave the
// same). The events say that the pair would not match on a DDS RMW.

#include "rmw_nerve.hpp"

#include <rmw/qos_profiles.h>

#include <cstdarg>
#include <cstdio>
#include <cstring>

namespace rmw_nerve {
namespace {

// Durations: zero (RMW_DURATION_UNSPECIFIED) and infinite (also the
// BEST_AVAILABLE markers, which sit just below it) mean "none".
bool is_none(const rmw_time_t &t)
{
    return (t.sec == 0 && t.nsec == 0) ||
           (t.sec == 9223372036ULL && t.nsec >= 854775806ULL);
}

bool is_best_available(const rmw_time_t &t)
{
    return t.sec == 9223372036ULL && t.nsec == 854775806ULL;
}

bool longer(const rmw_time_t &a, const rmw_time_t &b)
{
    return a.sec > b.sec || (a.sec == b.sec && a.nsec > b.nsec);
}

const char *rel_name(rmw_qos_reliability_policy_t r)
{
    switch (r) {
    case RMW_QOS_POLICY_RELIABILITY_SYSTEM_DEFAULT: return "SYSTEM_DEFAULT";
    case RMW_QOS_POLICY_RELIABILITY_RELIABLE: return "RELIABLE";
    case RMW_QOS_POLICY_RELIABILITY_BEST_EFFORT: return "BEST_EFFORT";
    case RMW_QOS_POLICY_RELIABILITY_BEST_AVAILABLE: return "BEST_AVAILABLE";
    default: return "UNKNOWN";
    }
}

// Append to the reason (truncated to its size, always terminated).
__attribute__((format(printf, 3, 4))) void say(char *reason, size_t n,
                                               const char *fmt, ...)
{
    if (!reason || !n)
        return;
    size_t used = strnlen(reason, n);
    if (used + 1 >= n)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(reason + used, n - used, fmt, ap);
    va_end(ap);
}

} // namespace

void qos_best_available(rmw_qos_profile_t *q, bool publisher)
{
    if (q->reliability == RMW_QOS_POLICY_RELIABILITY_BEST_AVAILABLE)
        q->reliability = publisher ? RMW_QOS_POLICY_RELIABILITY_RELIABLE
                                   : RMW_QOS_POLICY_RELIABILITY_BEST_EFFORT;
    if (q->durability == RMW_QOS_POLICY_DURABILITY_BEST_AVAILABLE)
        q->durability = publisher ? RMW_QOS_POLICY_DURABILITY_TRANSIENT_LOCAL
                                  : RMW_QOS_POLICY_DURABILITY_VOLATILE;
    if (q->liveliness == RMW_QOS_POLICY_LIVELINESS_BEST_AVAILABLE)
        q->liveliness = publisher ? RMW_QOS_POLICY_LIVELINESS_MANUAL_BY_TOPIC
                                  : RMW_QOS_POLICY_LIVELINESS_AUTOMATIC;
}

namespace {

// `q` as rmw_nerve takes it: BEST_AVAILABLE adapted to its side (see
// qos_best_available), SYSTEM_DEFAULT as RELIABLE, VOLATILE, AUTOMATIC.
void qos_resolve(rmw_qos_profile_t *q, bool publisher)
{
    qos_best_available(q, publisher);
    if (q->reliability == RMW_QOS_POLICY_RELIABILITY_SYSTEM_DEFAULT)
        q->reliability = RMW_QOS_POLICY_RELIABILITY_RELIABLE;
    if (q->durability == RMW_QOS_POLICY_DURABILITY_SYSTEM_DEFAULT)
        q->durability = RMW_QOS_POLICY_DURABILITY_VOLATILE;
    if (q->liveliness == RMW_QOS_POLICY_LIVELINESS_SYSTEM_DEFAULT)
        q->liveliness = RMW_QOS_POLICY_LIVELINESS_AUTOMATIC;
}

// The request-offered rules (top of this file) over resolved profiles:
// every rule broken is said in `reason`; the first one, in this order, is
// the policy returned (RMW_QOS_POLICY_INVALID: none broken).
rmw_qos_policy_kind_t broken_rule(const rmw_qos_profile_t &pub,
                                  const rmw_qos_profile_t &sub, char *reason,
                                  size_t n)
{
    rmw_qos_policy_kind_t kind = RMW_QOS_POLICY_INVALID;
    auto broke = [&kind](rmw_qos_policy_kind_t k) {
        if (kind == RMW_QOS_POLICY_INVALID)
            kind = k;
    };
    if (pub.reliability == RMW_QOS_POLICY_RELIABILITY_BEST_EFFORT &&
        sub.reliability == RMW_QOS_POLICY_RELIABILITY_RELIABLE) {
        broke(RMW_QOS_POLICY_RELIABILITY);
        say(reason, n, "ERROR: %s publisher and %s subscription;",
            "Best effort", "reliable");
    }
    if (pub.durability == RMW_QOS_POLICY_DURABILITY_VOLATILE &&
        sub.durability == RMW_QOS_POLICY_DURABILITY_TRANSIENT_LOCAL) {
        broke(RMW_QOS_POLICY_DURABILITY);
        say(reason, n, "ERROR: %s publisher and %s subscription;", "Volatile",
            "transient local");
    }
    if (!is_none(sub.deadline) && !is_best_available(pub.deadline) &&
        (is_none(pub.deadline) || longer(pub.deadline, sub.deadline))) {
        broke(RMW_QOS_POLICY_DEADLINE);
        say(reason, n,
            "ERROR: Subscription deadline, publisher none or a longer one;");
    }
    if (pub.liveliness == RMW_QOS_POLICY_LIVELINESS_AUTOMATIC &&
        sub.liveliness == RMW_QOS_POLICY_LIVELINESS_MANUAL_BY_TOPIC) {
        broke(RMW_QOS_POLICY_LIVELINESS);
        say(reason, n, "ERROR: %s publisher and %s subscription;",
            "Automatic liveliness", "manual by topic");
    }
    if (!is_none(sub.liveliness_lease_duration) &&
        !is_best_available(pub.liveliness_lease_duration) &&
        (is_none(pub.liveliness_lease_duration) ||
         longer(pub.liveliness_lease_duration,
                sub.liveliness_lease_duration))) {
        broke(RMW_QOS_POLICY_LIVELINESS);
        say(reason, n,
            "ERROR: Subscription liveliness lease, publisher none or a "
            "longer one;");
    }
    return kind;
}

bool known_rel(rmw_qos_reliability_policy_t r)
{
    return r == RMW_QOS_POLICY_RELIABILITY_RELIABLE ||
           r == RMW_QOS_POLICY_RELIABILITY_BEST_EFFORT;
}

bool known_dur(rmw_qos_durability_policy_t d)
{
    return d == RMW_QOS_POLICY_DURABILITY_VOLATILE ||
           d == RMW_QOS_POLICY_DURABILITY_TRANSIENT_LOCAL;
}

bool known_live(rmw_qos_liveliness_policy_t l)
{
    return l == RMW_QOS_POLICY_LIVELINESS_AUTOMATIC ||
           l == RMW_QOS_POLICY_LIVELINESS_MANUAL_BY_TOPIC;
}

// Whether resolved profiles that break no rule hold a value rmw_nerve does
// not know, which makes "compatible" a guess; each such value is said in
// `reason`.
bool unknown_value(const rmw_qos_profile_t &pub, const rmw_qos_profile_t &sub,
                   char *reason, size_t n)
{
    bool rel = !known_rel(pub.reliability) || !known_rel(sub.reliability);
    bool dur = !known_dur(pub.durability) || !known_dur(sub.durability);
    bool live = !known_live(pub.liveliness) || !known_live(sub.liveliness);
    if (rel)
        say(reason, n, "WARNING: publisher reliability %s, subscription %s;",
            rel_name(pub.reliability), rel_name(sub.reliability));
    if (dur)
        say(reason, n, "WARNING: a durability is UNKNOWN;");
    if (live)
        say(reason, n, "WARNING: a liveliness is UNKNOWN;");
    return rel || dur || live;
}

} // namespace

rmw_qos_policy_kind_t qos_mismatch(const rmw_qos_profile_t &pub_in,
                                   const rmw_qos_profile_t &sub_in,
                                   bool *warning, char *reason, size_t n)
{
    rmw_qos_profile_t pub = pub_in, sub = sub_in;
    qos_resolve(&pub, true);
    qos_resolve(&sub, false);
    if (reason && n)
        reason[0] = '\0';
    if (warning)
        *warning = false;
    rmw_qos_policy_kind_t kind = broken_rule(pub, sub, reason, n);
    if (kind != RMW_QOS_POLICY_INVALID)
        return kind;
    // No rule broken: a value rmw_nerve does not know makes it a guess.
    bool guess = unknown_value(pub, sub, reason, n);
    if (warning)
        *warning = guess;
    return RMW_QOS_POLICY_INVALID;
}

bool note_bad_qos(Node *node, const std::string &topic, const std::string &type,
                  const rmw_qos_profile_t &mine, bool mine_is_pub,
                  QosEvents *ev)
{
    uint64_t v = node->ctx->graph->version();
    if (v == ev->graph)
        return ev->seen.size() > ev->reported;
    ev->graph = v;
    auto snap = node->ctx->graph->snapshot();
    Kind other = mine_is_pub ? Kind::Sub : Kind::Pub;
    for (const auto &e : snap.eps) {
        // Another type is the incompatible-type event's, not this one's.
        if (e.kind != other || e.name != topic || e.type != type)
            continue;
        rmw_qos_policy_kind_t k =
            mine_is_pub ? qos_mismatch(mine, e.qos, nullptr, nullptr, 0)
                        : qos_mismatch(e.qos, mine, nullptr, nullptr, 0);
        if (k == RMW_QOS_POLICY_INVALID)
            continue;
        if (ev->seen
                .insert(std::string(reinterpret_cast<const char *>(e.gid.data),
                                    RMW_GID_STORAGE_SIZE))
                .second)
            ev->last = k;
    }
    return ev->seen.size() > ev->reported;
}

void take_bad_qos(QosEvents *ev, rmw_qos_incompatible_event_status_t *st)
{
    st->total_count = int32_t(ev->seen.size());
    st->total_count_change = int32_t(ev->seen.size() - ev->reported);
    st->last_policy_kind = ev->last;
    ev->reported = ev->seen.size();
}

rmw_ret_t qos_resolve(const rmw_qos_profile_t *in, rmw_qos_profile_t *out,
                      const char *what, const char *name)
{
    if (!in)
        return fail(RMW_RET_INVALID_ARGUMENT, "rmw_nerve: qos is NULL");
    *out = *in;
    if (in->history == RMW_QOS_POLICY_HISTORY_KEEP_ALL)
        return fail(RMW_RET_UNSUPPORTED,
                    "rmw_nerve: %s '%s': QoS history KEEP_ALL is refused: "
                    "it needs a publisher that waits for its slowest reader, "
                    "and nerve publishers never wait (the ring keeps the "
                    "newest messages). Use KEEP_LAST with a depth.",
                    what, name);
    // Lifespan is accepted and not enforced (rcl's /rosout publisher asks
    // for 10 s): a ring drops messages by count, not age. Deadline and
    // liveliness raise their events (events.cpp).
    out->history = RMW_QOS_POLICY_HISTORY_KEEP_LAST;
    if (out->depth == 0)
        out->depth = 10;
    if (out->depth > (1u << 20))
        return fail(RMW_RET_UNSUPPORTED,
                    "rmw_nerve: %s '%s': QoS depth %zu is more than a ring's "
                    "%u slots",
                    what, name, out->depth, 1u << 20);
    if (out->reliability != RMW_QOS_POLICY_RELIABILITY_BEST_EFFORT)
        out->reliability = RMW_QOS_POLICY_RELIABILITY_RELIABLE;
    if (out->durability != RMW_QOS_POLICY_DURABILITY_TRANSIENT_LOCAL)
        out->durability = RMW_QOS_POLICY_DURABILITY_VOLATILE;
    if (out->liveliness != RMW_QOS_POLICY_LIVELINESS_MANUAL_BY_TOPIC)
        out->liveliness = RMW_QOS_POLICY_LIVELINESS_AUTOMATIC;
    return RMW_RET_OK;
}

} // namespace rmw_nerve

extern "C" {

rmw_ret_t rmw_qos_profile_check_compatible(const rmw_qos_profile_t pub,
                                           const rmw_qos_profile_t sub,
                                           rmw_qos_compatibility_type_t *c,
                                           char *reason, size_t reason_size)
{
    if (!c)
        return rmw_nerve::fail(RMW_RET_INVALID_ARGUMENT,
                               "rmw_nerve: compatibility is NULL");
    if (!reason && reason_size)
        return rmw_nerve::fail(
            RMW_RET_INVALID_ARGUMENT,
            "rmw_nerve: reason is NULL, reason_size is not 0");
    bool warning = false;
    rmw_qos_policy_kind_t k =
        rmw_nerve::qos_mismatch(pub, sub, &warning, reason, reason_size);
    *c = k != RMW_QOS_POLICY_INVALID ? RMW_QOS_COMPATIBILITY_ERROR
         : warning                   ? RMW_QOS_COMPATIBILITY_WARNING
                                     : RMW_QOS_COMPATIBILITY_OK;
    return RMW_RET_OK;
}

} // extern "C"
