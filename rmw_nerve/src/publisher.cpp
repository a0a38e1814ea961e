// Publishers: one nerve channel per topic.
//
// A publisher creates its topic's channel at its first publish, sized from
// that message (the largest CDR size for a bounded type): slots = the QoS
// depth, data ring = 2 x depth x size, at least 64 KiB and at most 64 MiB
// unless one message needs more; NERVE_RMW_DATA_SIZE (a size) overrides the
// data ring. Creating the channel marks the publisher "ready" in the
// graph, which wakes the subscriptions that wait for the channel to
// appear. A subscription made before any publisher makes the channel
// itself (sub_make in subscription.cpp: the default ring), so that it
// holds it (LIFETIME); a publish grows it when it holds less than half
// the size above (pub_room). A channel that exists already is used as
// channel.cpp says.
//
// A typed publish serialises straight into a reservation in the ring (one
// pass over the message, no staging buffer; SIZE GUESS in rmw_publish).

#include "rmw_nerve.hpp"

#include <cinttypes>
#include <cstdio>
#include <cstring>

using namespace rmw_nerve;

// The data ring for messages of `msg` bytes: 2 x depth x msg, at least
// 64 KiB and at most 64 MiB unless one message needs more;
// NERVE_RMW_DATA_SIZE sets the first channel's.
static uint64_t ring_for(const Publisher *p, uint64_t msg)
{
    uint64_t data = 2 * uint64_t(p->qos.depth) * msg;
    if (data < (64u << 10))
        data = 64u << 10;
    if (data > (64u << 20))
        data = 64u << 20;
    if (data < 2 * msg)
        data = 2 * msg;
    return data;
}

// Create (or find) the publisher's channel for a first message of `size`.
RMW_NERVE_HOT static rmw_ret_t pub_channel(Publisher *p, size_t size)
{
    if (p->ch)
        return RMW_RET_OK;
    uint64_t data = ring_for(p, p->type.bounded ? p->type.max_size + 4 : size);
    if (uint64_t e = env_size("NERVE_RMW_DATA_SIZE"))
        data = e;
    std::string why;
    int o = NERVE_ENOENT;
    // A channel left unused between create and open is removed by any
    // process's sweep (docs/ros2.md): make it again.
    for (int i = 0; i < 16 && o == NERVE_ENOENT; i++) {
        int r = chan_create_for(p->chan_name, p->type.name, p->type.schema,
                                p->qos.depth, data);
        if (r && r != NERVE_EMISMATCH)
            return fail(RMW_RET_ERROR,
                        "rmw_nerve: publisher on '%s': cannot create channel "
                        "'%s': %s",
                        p->topic.c_str(), p->chan_name.c_str(),
                        nerve_strerror(r));
        o = chan_open_checked(p->chan_name, p->type.name.c_str(), NERVE_O_WRITE,
                              &p->ch, &why);
    }
    if (o != 0)
        return fail(RMW_RET_ERROR,
                    "rmw_nerve: publisher on '%s': channel '%s': %s",
                    p->topic.c_str(), p->chan_name.c_str(), why.c_str());
    p->node->ctx->graph->update_endpoint(p->gid, true);
    return RMW_RET_OK;
}

// Room in p's channel for a message of `len` bytes: grown ahead when the
// ring holds less than half of what ring_for() gives for this size, so
// that the QoS depth's worth of history survives a growing message (a ring
// that only fits it would overwrite the older ones), unless the user fixed
// the ring (NERVE_RMW_DATA_SIZE); grown or followed when a put says so
// (after = the put's error). 0, or the error.
RMW_NERVE_HOT static int pub_room(Publisher *p, size_t len, int after)
{
    struct nerve_stats st;
    if (!p->ring && nerve_chan_stat(p->ch, &st) == 0)
        p->ring = st.data_size;
    uint64_t want = ring_for(p, len);
    int r = 0;
    if (after)
        r = chan_make_room(&p->ch, after, want, p->qos.depth);
    else if (p->ring < want / 2 && !env_size("NERVE_RMW_DATA_SIZE") &&
             want <= chan_max_data())
        (void)chan_make_room(&p->ch, NERVE_EMSGSIZE, want, p->qos.depth);
    else
        return 0; // the hot path: no call at all
    if (nerve_chan_stat(p->ch, &st) == 0)
        p->ring = st.data_size;
    return r;
}

// The reservation for the next message after one of n bytes: a bounded
// type's largest size; else n rounded up to the ring's 64-byte alignment
// plus one line, so that a message a little larger than the last still
// fits. A reservation larger than the message costs the ring nothing: the
// commit keeps n bytes and the next message starts after them.
static size_t size_guess(const MsgType &t, size_t n)
{
    if (t.bounded)
        return t.max_size + 4;
    return ((n + 63) & ~size_t(63)) + 64;
}

static rmw_ret_t put_error(Publisher *p, int r, size_t len)
{
    if (r == NERVE_EMSGSIZE) {
        struct nerve_stats st {};
        (void)nerve_chan_stat(p->ch, &st);
        return fail(
            RMW_RET_ERROR,
            "rmw_nerve: publish on '%s': a message of %zu bytes does "
            "not fit channel '%s' (data ring %" PRIu64
            " bytes), and growing it past NERVE_RMW_MAX_DATA_SIZE (%" PRIu64
            " bytes) is refused",
            p->topic.c_str(), len, p->chan_name.c_str(), st.data_size,
            chan_max_data());
    }
    return fail(RMW_RET_ERROR, "rmw_nerve: publish on '%s': %s",
                p->topic.c_str(), nerve_strerror(r));
}

extern "C" {

rmw_publisher_t *rmw_create_publisher(const rmw_node_t *node,
                                      const rosidl_message_type_support_t *ts,
                                      const char *topic_name,
                                      const rmw_qos_profile_t *qos,
                                      const rmw_publisher_options_t *options)
{
    if (!node || !node->data || !ts || !topic_name || !options) {
        fail(RMW_RET_INVALID_ARGUMENT, "rmw_nerve: NULL argument");
        return nullptr;
    }
    Node *n = static_cast<Node *>(node->data);
    auto *p = new Publisher;
    p->node = n;
    p->topic = topic_name;
    // BEST_AVAILABLE as a DDS publisher resolves it (qos.cpp).
    rmw_qos_profile_t asked = qos ? *qos : rmw_qos_profile_t{};
    qos_best_available(&asked, true);
    if (qos_resolve(qos ? &asked : nullptr, &p->qos, "publisher", topic_name) !=
            RMW_RET_OK ||
        !msg_type(ts, &p->type) ||
        !topic_channel(n->ctx->domain, topic_name, "", &p->chan_name)) {
        delete p;
        return nullptr;
    }
    // An existing channel of another type is refused now, not at publish.
    {
        nerve_chan *c = nullptr;
        std::string why;
        int r = chan_open_checked(p->chan_name, p->type.name.c_str(),
                                  NERVE_O_WRITE, &c, &why);
        if (r == 0) {
            p->ch = c;
        } else if (r != NERVE_ENOENT) {
            fail(RMW_RET_ERROR,
                 "rmw_nerve: publisher on '%s': channel '%s': %s", topic_name,
                 p->chan_name.c_str(), why.c_str());
            delete p;
            return nullptr;
        }
    }
    p->gid = n->ctx->new_gid();
    auto *pub = new rmw_publisher_t;
    pub->implementation_identifier = kIdentifier;
    pub->data = p;
    pub->topic_name = strdup(topic_name);
    pub->options = *options;
    p->loans = loan_pool(p->type);
    pub->can_loan_messages = loan_ok(p->loans.get());
    qos_timers_init(&p->timers, p->qos);
    announce(n, Kind::Pub, p->gid, topic_name, p->type.name, p->qos,
             p->ch != nullptr, &p->type.hash);
    if (p->timers.manual && p->timers.lease_ns)
        n->ctx->graph->watch_lease(p->gid, p->timers.asserted,
                                   p->timers.lease_ns);
    return pub;
}

rmw_ret_t rmw_destroy_publisher(rmw_node_t *node, rmw_publisher_t *pub)
{
    CHECK_HANDLE(node, "node");
    CHECK_HANDLE(pub, "publisher");
    auto *p = static_cast<Publisher *>(pub->data);
    listener_forget(p);
    p->node->ctx->graph->remove_endpoint(p->gid);
    if (p->ch)
        chan_release(p->ch, p->chan_name);
    free(const_cast<char *>(pub->topic_name));
    delete p;
    delete pub;
    return RMW_RET_OK;
}

RMW_NERVE_HOT rmw_ret_t rmw_publish(const rmw_publisher_t *pub, const void *msg,
                                    rmw_publisher_allocation_t *allocation)
{
    (void)allocation;
    CHECK_HANDLE(pub, "publisher");
    if (!msg)
        return fail(RMW_RET_INVALID_ARGUMENT, "rmw_nerve: message is NULL");
    auto *p = static_cast<Publisher *>(pub->data);
    std::lock_guard<std::mutex> lk(p->mu);
    // SIZE GUESS: the reservation is the guess when there is one, and the
    // serialisation into it tells whether the message fitted; only one
    // that did not is measured (a second pass over it) and serialised
    // again. Saves the type support's size pass, which runs cold at a
    // low rate (bench/rmw/rcl_cold.cpp).
    for (size_t guess = p->size_guess;; guess = 0) {
        size_t len = guess ? guess : serialized_size(p->type, msg);
        rmw_ret_t rr = pub_channel(p, len);
        if (rr != RMW_RET_OK)
            return rr;
        void *dst = nullptr;
        int r = pub_room(p, len, 0);
        for (int tries = 0; r == 0 &&
                            (r = nerve_chan_reserve(p->ch, len, NERVE_FOREVER,
                                                    &dst, 0)) != 0 &&
                            tries < 8;
             tries++)
            r = pub_room(p, len, r);
        if (r)
            return put_error(p, r, len);
        long n = serialize(p->type, msg, dst, len);
        if (n < 0) {
            (void)nerve_chan_abort(p->ch);
            if (guess)
                continue; // larger than the guess: measure it
            return fail(RMW_RET_ERROR,
                        "rmw_nerve: publish on '%s': cannot serialise the %s",
                        p->topic.c_str(), p->type.name.c_str());
        }
        struct nerve_put_info pi;
        r = nerve_chan_commit(p->ch, size_t(n), &pi);
        if (r)
            return put_error(p, r, len);
        p->size_guess = size_guess(p->type, size_t(n));
        pub_asserted(p, true, pi.time_ns);
        return RMW_RET_OK;
    }
}

rmw_ret_t rmw_publish_serialized_message(const rmw_publisher_t *pub,
                                         const rmw_serialized_message_t *m,
                                         rmw_publisher_allocation_t *allocation)
{
    (void)allocation;
    CHECK_HANDLE(pub, "publisher");
    if (!m || (!m->buffer && m->buffer_length))
        return fail(RMW_RET_INVALID_ARGUMENT, "rmw_nerve: message is NULL");
    auto *p = static_cast<Publisher *>(pub->data);
    std::lock_guard<std::mutex> lk(p->mu);
    rmw_ret_t rr = pub_channel(p, m->buffer_length);
    if (rr != RMW_RET_OK)
        return rr;
    size_t len = m->buffer_length;
    int r = pub_room(p, len, 0);
    struct nerve_put_info pi;
    for (int tries = 0; r == 0 &&
                        (r = nerve_chan_put(p->ch, m->buffer, len,
                                            NERVE_FOREVER, &pi, 0)) != 0 &&
                        tries < 8;
         tries++)
        r = pub_room(p, len, r);
    if (r)
        return put_error(p, r, len);
    pub_asserted(p, true, pi.time_ns);
    return RMW_RET_OK;
}

rmw_ret_t rmw_publisher_count_matched_subscriptions(const rmw_publisher_t *pub,
                                                    size_t *count)
{
    CHECK_HANDLE(pub, "publisher");
    if (!count)
        return fail(RMW_RET_INVALID_ARGUMENT, "rmw_nerve: count is NULL");
    auto *p = static_cast<Publisher *>(pub->data);
    *count = p->node->ctx->graph->snapshot().count(Kind::Sub, p->topic);
    return RMW_RET_OK;
}

rmw_ret_t rmw_publisher_get_actual_qos(const rmw_publisher_t *pub,
                                       rmw_qos_profile_t *qos)
{
    CHECK_HANDLE(pub, "publisher");
    if (!qos)
        return fail(RMW_RET_INVALID_ARGUMENT, "rmw_nerve: qos is NULL");
    *qos = static_cast<Publisher *>(pub->data)->qos;
    return RMW_RET_OK;
}

rmw_ret_t rmw_get_gid_for_publisher(const rmw_publisher_t *pub, rmw_gid_t *gid)
{
    CHECK_HANDLE(pub, "publisher");
    if (!gid)
        return fail(RMW_RET_INVALID_ARGUMENT, "rmw_nerve: gid is NULL");
    *gid = static_cast<Publisher *>(pub->data)->gid;
    return RMW_RET_OK;
}

rmw_ret_t rmw_publisher_wait_for_all_acked(const rmw_publisher_t *pub,
                                           rmw_time_t wait_timeout)
{
    (void)wait_timeout;
    CHECK_HANDLE(pub, "publisher");
    // A put is complete when it returns: the message is in the ring, where
    // every reader finds it; nothing is acknowledged later.
    return RMW_RET_OK;
}

} // extern "C"
