// Subscriptions: a reader of the topic's channel.
//
// A take deserialises straight from a zero-copy view of the ring and then
// validates the view, so a message overwritten while it was read is
// dropped and counted as lost.

#include "rmw_nerve.hpp"

#include <algorithm>

#include <cinttypes>
#include <cstdio>
#include <cstring>

#include <nerve/clock.h>
#include <rmw/serialized_message.h>

using namespace rmw_nerve;

namespace rmw_nerve {

// Keep-last: never more than `depth` messages pending. Ones skipped count
// as lost, as do ones the ring overwrote before this reader came to them.
RMW_NERVE_HOT void sub_count_lost(Subscription *s)
{
    if (!s->ch)
        return;
    // Both sequence numbers from the mapped header (no system call: this
    // runs at every take).
    uint64_t tail = 0, head = 0;
    if (nerve_chan_seq_range(s->ch, &tail, &head) != 0)
        return;
    uint64_t cur = nerve_chan_cursor(s->ch);
    uint64_t keep_from = tail; // oldest still readable
    if (head >= s->qos.depth && head - s->qos.depth + 1 > keep_from)
        keep_from = head - s->qos.depth + 1;
    if (cur + 1 < keep_from) {
        s->lost_total += keep_from - cur - 1;
        nerve_chan_seek(s->ch, keep_from - 1);
    }
}

RMW_NERVE_HOT bool sub_open(Subscription *s)
{
    if (s->ch)
        return true;
    if (s->refused)
        return false;
    std::string why;
    int r = chan_open_checked(s->chan_name, s->type.name.c_str(), NERVE_O_READ,
                              &s->ch, &why);
    if (r == 0) {
        // The channel did not exist when the subscription was made: every
        // message in it came later, so all are this subscription's, and
        // those already overwritten count as lost (a new handle's cursor
        // would treat them as history).
        nerve_chan_seek(s->ch, 0);
        return true;
    }
    if (r != NERVE_ENOENT) {
        s->refused = true;
        fprintf(stderr,
                "rmw_nerve: subscription to '%s': channel '%s' refused: %s\n",
                s->topic.c_str(), s->chan_name.c_str(), why.c_str());
    }
    return false;
}

RMW_NERVE_HOT bool sub_ready(Subscription *s, int64_t *next_ns)
{
    if (!sub_open(s))
        return false;
    return chan_has_news(s->ch, &s->look, next_ns);
}

} // namespace rmw_nerve

static void fill_info(rmw_message_info_t *mi, const struct nerve_get_info &in)
{
    if (!mi)
        return;
    *mi = rmw_get_zero_initialized_message_info();
    mi->source_timestamp = nerve_clock_to_realtime_ns(in.time_ns);
    mi->received_timestamp = real_ns();
    mi->publication_sequence_number = in.seq;
    mi->reception_sequence_number = in.seq;
    mi->publisher_gid.implementation_identifier = kIdentifier;
    mi->from_intra_process = false;
}

extern "C" {

// A subscription makes its topic's channel when none exists yet, so that it
// holds it (LIFETIME, src/chan_life.c) before any publisher puts there: a
// publisher that published and ended before this process next waited
// would otherwise leave the channel with no user, and it would be removed
// with the messages this subscription was matched for. The ring is the
// default one; a publisher grows it for its messages and depth.
static int sub_make(Subscription *s, std::string *why)
{
    uint64_t data = env_size("NERVE_RMW_DATA_SIZE");
    int o = NERVE_ENOENT;
    for (int i = 0; i < 16 && o == NERVE_ENOENT; i++) {
        int r = chan_create_for(s->chan_name, s->type.name, s->type.schema,
                                std::max<uint64_t>(s->qos.depth, 16),
                                data ? data : 64u << 10);
        if (r && r != NERVE_EMISMATCH)
            return r;
        o = chan_open_checked(s->chan_name, s->type.name.c_str(), NERVE_O_READ,
                              &s->ch, why);
    }
    return o;
}

rmw_subscription_t *
rmw_create_subscription(const rmw_node_t *node,
                        const rosidl_message_type_support_t *ts,
                        const char *topic_name, const rmw_qos_profile_t *qos,
                        const rmw_subscription_options_t *options)
{
    if (!node || !node->data || !ts || !topic_name || !options) {
        fail(RMW_RET_INVALID_ARGUMENT, "rmw_nerve: NULL argument");
        return nullptr;
    }
    Node *n = static_cast<Node *>(node->data);
    auto *s = new Subscription;
    s->node = n;
    s->topic = topic_name;
    // BEST_AVAILABLE as a DDS subscription resolves it (qos.cpp).
    rmw_qos_profile_t asked = qos ? *qos : rmw_qos_profile_t{};
    qos_best_available(&asked, false);
    if (qos_resolve(qos ? &asked : nullptr, &s->qos, "subscription",
                    topic_name) != RMW_RET_OK ||
        !msg_type(ts, &s->type) ||
        !topic_channel(n->ctx->domain, topic_name, "", &s->chan_name)) {
        delete s;
        return nullptr;
    }
    std::string why;
    int r = chan_open_checked(s->chan_name, s->type.name.c_str(), NERVE_O_READ,
                              &s->ch, &why);
    if (r == NERVE_ENOENT && sub_make(s, &why) == 0)
        r = 0; // made by this subscription: empty, read from its start
    if (r == 0) {
        // Volatile: only what is published from now on. Transient local:
        // also the newest `depth` messages the ring still holds.
        struct nerve_stats st;
        if (nerve_chan_stat(s->ch, &st) == 0) {
            uint64_t from = st.head_seq;
            if (s->qos.durability ==
                RMW_QOS_POLICY_DURABILITY_TRANSIENT_LOCAL) {
                from =
                    st.head_seq > s->qos.depth ? st.head_seq - s->qos.depth : 0;
                if (st.tail_seq > 0 && from < st.tail_seq - 1)
                    from = st.tail_seq - 1;
            }
            nerve_chan_seek(s->ch, from);
        }
    } else if (r != NERVE_ENOENT) {
        fail(RMW_RET_ERROR, "rmw_nerve: subscription to '%s': channel '%s': %s",
             topic_name, s->chan_name.c_str(), why.c_str());
        delete s;
        return nullptr;
    }
    s->gid = n->ctx->new_gid();
    auto *sub = new rmw_subscription_t;
    sub->implementation_identifier = kIdentifier;
    sub->data = s;
    sub->topic_name = strdup(topic_name);
    sub->options = *options;
    s->loans = loan_pool(s->type);
    sub->can_loan_messages = loan_ok(s->loans.get());
    sub->is_cft_enabled = false;
    qos_timers_init(&s->timers, s->qos);
    announce(n, Kind::Sub, s->gid, topic_name, s->type.name, s->qos, false,
             &s->type.hash);
    return sub;
}

rmw_ret_t rmw_destroy_subscription(rmw_node_t *node, rmw_subscription_t *sub)
{
    CHECK_HANDLE(node, "node");
    CHECK_HANDLE(sub, "subscription");
    auto *s = static_cast<Subscription *>(sub->data);
    listener_forget(s);
    s->node->ctx->graph->remove_endpoint(s->gid);
    if (s->ch)
        chan_release(s->ch, s->chan_name);
    free(const_cast<char *>(sub->topic_name));
    delete s;
    delete sub;
    return RMW_RET_OK;
}

RMW_NERVE_HOT static rmw_ret_t take_typed(const rmw_subscription_t *sub,
                                          void *msg, bool *taken,
                                          rmw_message_info_t *mi)
{
    CHECK_HANDLE(sub, "subscription");
    if (!msg || !taken)
        return fail(RMW_RET_INVALID_ARGUMENT, "rmw_nerve: NULL argument");
    auto *s = static_cast<Subscription *>(sub->data);
    std::lock_guard<std::mutex> lk(s->mu);
    *taken = false;
    if (!sub_open(s))
        return RMW_RET_OK;
    sub_count_lost(s);
    for (int attempt = 0; attempt < 64; attempt++) {
        struct nerve_view v;
        int r = nerve_chan_view(s->ch, 0, 0, &v, NERVE_GET_NEXT);
        if (r == NERVE_EAGAIN && !chan_renamed_unmarked(s->ch, &s->look))
            return RMW_RET_OK;
        if ((r == NERVE_ESUPERSEDED || r == NERVE_EAGAIN) &&
            chan_follow(&s->ch, s->type.name.c_str(), &s->retired) == 0)
            continue; // the publisher grew the channel: read on there
        if (r == NERVE_EAGAIN)
            return RMW_RET_OK; // the successor could not be followed (said)
        if (r)
            return fail(RMW_RET_ERROR, "rmw_nerve: take on '%s': %s",
                        s->topic.c_str(), nerve_strerror(r));
        s->lost_total += v.info.missed;
        bool ok = deserialize(s->type, v.data, v.info.len, msg);
        if (nerve_chan_view_check(s->ch, &v) != 0) {
            s->lost_total++; // overwritten while it was read
            continue;
        }
        if (!ok) {
            if (s->corrupt++ == 0)
                fprintf(stderr,
                        "rmw_nerve: subscription to '%s': message %" PRIu64
                        " of channel '%s' is not a CDR %s; skipped (and so "
                        "will be any other such message)\n",
                        s->topic.c_str(), v.info.seq, s->chan_name.c_str(),
                        s->type.name.c_str());
            continue;
        }
        fill_info(mi, v.info);
        *taken = true;
        return RMW_RET_OK;
    }
    return RMW_RET_OK;
}

RMW_NERVE_HOT rmw_ret_t rmw_take(const rmw_subscription_t *sub, void *msg,
                                 bool *taken,
                                 rmw_subscription_allocation_t *allocation)
{
    (void)allocation;
    return take_typed(sub, msg, taken, nullptr);
}

RMW_NERVE_HOT rmw_ret_t rmw_take_with_info(
    const rmw_subscription_t *sub, void *msg, bool *taken,
    rmw_message_info_t *info, rmw_subscription_allocation_t *allocation)
{
    (void)allocation;
    if (!info)
        return fail(RMW_RET_INVALID_ARGUMENT, "rmw_nerve: info is NULL");
    return take_typed(sub, msg, taken, info);
}

rmw_ret_t rmw_take_sequence(const rmw_subscription_t *sub, size_t count,
                            rmw_message_sequence_t *msgs,
                            rmw_message_info_sequence_t *infos, size_t *taken,
                            rmw_subscription_allocation_t *allocation)
{
    (void)allocation;
    if (!msgs || !infos || !taken)
        return fail(RMW_RET_INVALID_ARGUMENT, "rmw_nerve: NULL argument");
    if (count == 0 || count > msgs->capacity || count > infos->capacity)
        return fail(RMW_RET_INVALID_ARGUMENT, "rmw_nerve: bad count");
    *taken = 0;
    for (size_t i = 0; i < count; i++) {
        bool t = false;
        rmw_ret_t r = take_typed(sub, msgs->data[i], &t, &infos->data[i]);
        if (r != RMW_RET_OK)
            return r;
        if (!t)
            break;
        (*taken)++;
    }
    msgs->size = *taken;
    infos->size = *taken;
    return RMW_RET_OK;
}

static rmw_ret_t take_serialized(const rmw_subscription_t *sub,
                                 rmw_serialized_message_t *m, bool *taken,
                                 rmw_message_info_t *mi)
{
    CHECK_HANDLE(sub, "subscription");
    if (!m || !taken)
        return fail(RMW_RET_INVALID_ARGUMENT, "rmw_nerve: NULL argument");
    auto *s = static_cast<Subscription *>(sub->data);
    std::lock_guard<std::mutex> lk(s->mu);
    *taken = false;
    if (!sub_open(s))
        return RMW_RET_OK;
    sub_count_lost(s);
    for (int attempt = 0; attempt < 64; attempt++) {
        struct nerve_get_info info;
        int r = nerve_chan_get(s->ch, m->buffer, m->buffer_capacity, 0, 0,
                               &info, NERVE_GET_NEXT);
        if (r == NERVE_EMSGSIZE) {
            if (rmw_serialized_message_resize(m, info.len) != RMW_RET_OK)
                return fail(RMW_RET_BAD_ALLOC, "rmw_nerve: out of memory");
            continue;
        }
        if (r == NERVE_EAGAIN && !chan_renamed_unmarked(s->ch, &s->look))
            return RMW_RET_OK;
        if ((r == NERVE_ESUPERSEDED || r == NERVE_EAGAIN) &&
            chan_follow(&s->ch, s->type.name.c_str(), &s->retired) == 0)
            continue; // the publisher grew the channel: read on there
        if (r == NERVE_EAGAIN)
            return RMW_RET_OK; // the successor could not be followed (said)
        if (r)
            return fail(RMW_RET_ERROR, "rmw_nerve: take on '%s': %s",
                        s->topic.c_str(), nerve_strerror(r));
        s->lost_total += info.missed;
        m->buffer_length = info.len;
        fill_info(mi, info);
        *taken = true;
        return RMW_RET_OK;
    }
    return RMW_RET_OK;
}

rmw_ret_t rmw_take_serialized_message(const rmw_subscription_t *sub,
                                      rmw_serialized_message_t *m, bool *taken,
                                      rmw_subscription_allocation_t *allocation)
{
    (void)allocation;
    return take_serialized(sub, m, taken, nullptr);
}

rmw_ret_t rmw_take_serialized_message_with_info(
    const rmw_subscription_t *sub, rmw_serialized_message_t *m, bool *taken,
    rmw_message_info_t *info, rmw_subscription_allocation_t *allocation)
{
    (void)allocation;
    if (!info)
        return fail(RMW_RET_INVALID_ARGUMENT, "rmw_nerve: info is NULL");
    return take_serialized(sub, m, taken, info);
}

rmw_ret_t
rmw_subscription_count_matched_publishers(const rmw_subscription_t *sub,
                                          size_t *count)
{
    CHECK_HANDLE(sub, "subscription");
    if (!count)
        return fail(RMW_RET_INVALID_ARGUMENT, "rmw_nerve: count is NULL");
    auto *s = static_cast<Subscription *>(sub->data);
    *count = s->node->ctx->graph->snapshot().count(Kind::Pub, s->topic);
    return RMW_RET_OK;
}

rmw_ret_t rmw_subscription_get_actual_qos(const rmw_subscription_t *sub,
                                          rmw_qos_profile_t *qos)
{
    CHECK_HANDLE(sub, "subscription");
    if (!qos)
        return fail(RMW_RET_INVALID_ARGUMENT, "rmw_nerve: qos is NULL");
    *qos = static_cast<Subscription *>(sub->data)->qos;
    return RMW_RET_OK;
}

} // extern "C"
