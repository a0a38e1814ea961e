// Publishers and subscriptions: one nerve channel per topic.
//
// A publisher creates its topic's channel at its first publish, sized from
// that message (the largest CDR size for a bounded type): slots = the QoS
// depth, data ring = 2 x depth x size, at least 64 KiB and at most 64 MiB
// unless one message needs more; NERVE_RMW_DATA_SIZE (a size) overrides the
// data ring. Creating the channel marks the publisher "ready" in the
// graph, which wakes the subscriptions that wait for the channel to
// appear. A subscription made before any publisher makes the channel itself
// (sub_make: the default ring), so that it holds it (LIFETIME). A channel
// that already exists (another publisher's or subscription's, `nerve
// ros2`'s, a nerve program's, an earlier run's) is used when its type and
// encoding are right, and refused with a clear error otherwise. A message
// larger than the channel holds grows it (nerve_chan_grow: a larger
// successor under the same name, with every message present), up to
// NERVE_RMW_MAX_DATA_SIZE; subscriptions, and publishers of other
// processes, follow the successor (chan_make_room, chan_has_news).
//
// A typed publish serialises straight into a reservation in the ring (one
// pass over the message, no staging buffer); a take deserialises straight
// from a zero-copy view of the ring and then validates the view, so a
// message overwritten while it was read is dropped and counted as lost.

#include "rmw_nerve.hpp"

#include <algorithm>

#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <grp.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <nerve/clock.h>
#include <nerve/size.h>
#include <rmw/event.h>
#include <rmw/qos_profiles.h>
#include <rmw/serialized_message.h>

using namespace rmw_nerve;

namespace rmw_nerve {

static const char *encoding_of(const std::string &type)
{
    if (type.rfind("rmw_nerve/", 0) == 0)
        return "text";
    if (type.find("/srv/") != std::string::npos)
        return "rmw_nerve-service"; // 32-byte header, then CDR: service.cpp
    return "cdr";
}

int chan_create_for(const std::string &name, const std::string &type,
                    const std::string &schema, uint64_t slots,
                    uint64_t data_size, bool remove_unused)
{
    struct nerve_chan_opts o = NERVE_CHAN_OPTS_INIT;
    o.flags = NERVE_C_EXIST_OK | (remove_unused ? NERVE_C_REMOVE_UNUSED : 0);
    o.slots = slots;
    o.data_size = data_size;
    o.type = type.c_str();
    o.encoding = encoding_of(type);
    o.schema = schema.empty() ? nullptr : schema.c_str();
    o.schema_len = schema.size();
    return nerve_chan_create(name.c_str(), &o);
}

bool chan_has_news(nerve_chan *ch, RenameLook *look, int64_t *next_ns)
{
    // A new message after the cursor or the superseded mark, both read
    // from the mapped header by a wait of no time (no system call, unlike
    // nerve_chan_stat's fstat); the name's stat only when neither is there.
    uint64_t ready = 0;
    return nerve_chan_wait_any(&ch, 1, 0, &ready, 0) > 0 ||
           chan_renamed_unmarked(ch, look, next_ns);
}

bool chan_renamed_unmarked(nerve_chan *ch, RenameLook *look, int64_t *next_ns)
{
    // A grower killed between its rename and its mark (G4-G5 in
    // src/chan_open.c) leaves the old channel unmarked, and the next
    // writer may write to the successor only: nothing new here ever
    // again, and no wake-up either (its commits wake the successor's
    // waiters). So an idle reader asks the name (an lstat), but at most
    // once per RenameLook::kEvery, not at every look that finds nothing:
    // that was a system call a message. Where the look is not due, the
    // caller's wait ends when it is (*next_ns), so such a successor is
    // followed within kEvery of its first message, woken or not.
    int64_t now = mono_ns();
    if (now >= look->due_ns) {
        look->due_ns = now + RenameLook::kEvery;
        if (nerve_chan_renamed(ch) == 1) {
            // Due again at once: the take that follows a wait's "ready"
            // asks again before it follows.
            look->due_ns = 0;
            return true;
        }
    }
    if (next_ns && look->due_ns < *next_ns)
        *next_ns = look->due_ns;
    return false;
}

int chan_follow(nerve_chan **ch, const char *type, Retired *retired)
{
    if (nerve_chan_renamed(*ch) == 0)
        return 0; // not superseded yet (a grower died before marking it)
    nerve_chan *n = nullptr;
    std::string why;
    int r =
        chan_open_checked(nerve_chan_name(*ch), type, NERVE_O_READ, &n, &why);
    if (r) {
        fprintf(stderr, "rmw_nerve: cannot follow the grown channel '%s': %s\n",
                nerve_chan_name(*ch), why.c_str());
        return r;
    }
    // F2: a successor continues the sequence and keeps the channel's
    // created_ns, so the cursor stays; a channel made anew under the name
    // is read from its oldest message (a new handle's start).
    struct nerve_stats st, old;
    uint64_t cur = nerve_chan_cursor(*ch);
    if (nerve_chan_stat(n, &st) == 0 && nerve_chan_stat(*ch, &old) == 0 &&
        st.created_ns == old.created_ns && st.head_seq >= cur)
        nerve_chan_seek(n, cur);
    retired->v.push_back(*ch);
    *ch = n;
    return 0;
}

uint64_t chan_max_data()
{
    uint64_t e = env_size("NERVE_RMW_MAX_DATA_SIZE");
    return e ? e : (1ull << 30);
}

int chan_make_room(nerve_chan **ch, int r, uint64_t want, uint64_t slots)
{
    if (r == NERVE_ESUPERSEDED)
        return nerve_chan_follow(ch);
    if (r != NERVE_EMSGSIZE)
        return r;
    if (want > chan_max_data())
        want = chan_max_data();
    struct nerve_stats st;
    if (nerve_chan_stat(*ch, &st) != 0 || want <= st.data_size)
        return NERVE_EMSGSIZE; // no larger ring allowed
    return nerve_chan_grow(ch, want, slots);
}

// NERVE_RMW_TRUST_GROUP's entry (a name or a gid), or NULL when unset or
// no group.
static struct group *trust_group()
{
    const char *group = getenv("NERVE_RMW_TRUST_GROUP");
    if (!group || !*group)
        return nullptr;
    char *e = nullptr;
    unsigned long n = strtoul(group, &e, 10);
    return *e == '\0' ? getgrgid((gid_t)n) : getgrnam(group);
}

// Trust: readers trust a channel's writers with the file
// (docs/hostile-files.md), so a node uses a topic's, a service's or the
// graph's channel only when the file's owner is trusted: the node's own
// user and root, and the users that NERVE_RMW_TRUST_USERS lists (names or
// uids, comma-separated) or that are members of NERVE_RMW_TRUST_GROUP (a
// group name or gid; its members and the users whose primary group it is).
// The owner alone is not enough: a trusted owner's file that untrusted
// users may write (mode 0666, or group-writable for a group other than
// NERVE_RMW_TRUST_GROUP) is refused too, as such a user could write
// anything into it or truncate it under every node (SIGBUS).
// Invariant: every channel rmw_nerve opens passes here before any message
// of it is read or written (chan_open_checked is the only opener); the
// checks are on the opened descriptor (nerve_chan_stat), so a file swapped
// in after the check is not the one used.
static bool owner_trusted(uint32_t uid, std::string *why)
{
    if (uid == 0 || uid == (uint32_t)geteuid())
        return true;
    struct passwd *pw = getpwuid((uid_t)uid);
    std::string owner = std::to_string(uid);
    if (pw)
        owner += " (" + std::string(pw->pw_name) + ")";
    const char *users = getenv("NERVE_RMW_TRUST_USERS");
    std::string list = users ? users : "";
    size_t at = 0;
    while (at <= list.size() && !list.empty()) {
        size_t end = list.find(',', at);
        std::string u = list.substr(
            at, end == std::string::npos ? std::string::npos : end - at);
        if (!u.empty()) {
            char *e = nullptr;
            unsigned long n = strtoul(u.c_str(), &e, 10);
            if (*e == '\0' ? n == uid : (pw && u == pw->pw_name))
                return true;
            if (*e != '\0' && !getpwnam(u.c_str())) {
                *why = "NERVE_RMW_TRUST_USERS names no user: '" + u + "'";
                return false;
            }
        }
        if (end == std::string::npos)
            break;
        at = end + 1;
    }
    const char *group = getenv("NERVE_RMW_TRUST_GROUP");
    if (group && *group) {
        struct group *gr = trust_group();
        if (!gr) {
            *why = "NERVE_RMW_TRUST_GROUP names no group: '" +
                   std::string(group) + "'";
            return false;
        }
        if (pw && pw->pw_gid == gr->gr_gid)
            return true;
        for (char **m = gr->gr_mem; pw && m && *m; m++)
            if (strcmp(*m, pw->pw_name) == 0)
                return true;
    }
    *why = "the channel's file is owned by uid " + owner +
           ", who is not trusted (trusted: uid " + std::to_string(geteuid()) +
           ", root, NERVE_RMW_TRUST_USERS and NERVE_RMW_TRUST_GROUP)";
    return false;
}

static bool file_trusted(const struct nerve_stats &st, std::string *why)
{
    if (!owner_trusted(st.uid, why))
        return false;
    struct group *gr = (st.mode & S_IWGRP) ? trust_group() : nullptr;
    bool group_ok =
        (st.mode & S_IWGRP) == 0 || (gr && (uint32_t)gr->gr_gid == st.gid);
    if ((st.mode & S_IWOTH) == 0 && group_ok)
        return true;
    char b[200];
    snprintf(b, sizeof b,
             "the channel's file has mode %04o: users who are not trusted "
             "may write it (%s)",
             (unsigned)(st.mode & 07777),
             (st.mode & S_IWOTH) ? "writable by others"
                                 : "writable by a group that is not "
                                   "NERVE_RMW_TRUST_GROUP");
    *why = b;
    return false;
}

int chan_open_checked(const std::string &name, const char *type, uint32_t flags,
                      nerve_chan **out, std::string *why)
{
    nerve_chan *c = nullptr;
    int r = nerve_chan_open(name.c_str(), flags, &c);
    if (r) {
        *why = std::string(nerve_err_name(r)) + ": " + nerve_strerror(r);
        return r;
    }
    struct nerve_stats st;
    r = nerve_chan_stat(c, &st);
    if (r || !file_trusted(st, why)) {
        if (r)
            *why = "the channel's owner cannot be read";
        nerve_chan_close(c);
        return NERVE_EPERM;
    }
    struct nerve_meta m;
    if (nerve_chan_meta(c, &m) != 0 || !m.type || !m.encoding ||
        strcmp(m.type, type) != 0 ||
        strcmp(m.encoding, encoding_of(type)) != 0) {
        char b[400];
        snprintf(b, sizeof b,
                 "the channel carries type '%s' encoding '%s', not type '%s' "
                 "encoding '%s'",
                 m.type ? m.type : "", m.encoding ? m.encoding : "", type,
                 encoding_of(type));
        *why = b;
        nerve_chan_close(c);
        return NERVE_EMISMATCH;
    }
    *out = c;
    return 0;
}

void chan_release(nerve_chan *c, const std::string &name)
{
    nerve_chan_close(c);
    // The last user removes it (NERVE_EBUSY: others still use it;
    // NERVE_EPERM: a channel made by `nerve create`, which stays).
    (void)nerve_chan_remove_unused(name.c_str());
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

// Keep-last: never more than `depth` messages pending. Ones skipped count
// as lost, as do ones the ring overwrote before this reader came to them.
void sub_count_lost(Subscription *s)
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

bool sub_open(Subscription *s)
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

bool sub_ready(Subscription *s, int64_t *next_ns)
{
    if (!sub_open(s))
        return false;
    return chan_has_news(s->ch, &s->look, next_ns);
}

} // namespace rmw_nerve

namespace rmw_nerve {
uint64_t env_size(const char *name)
{
    const char *v = getenv(name);
    uint64_t n = 0;
    if (!v || !*v)
        return 0;
    if (int r = nerve_size_parse(v, &n)) {
        // Said once per variable: it is read again at every publish.
        static std::mutex mu;
        static std::set<std::string> said;
        std::lock_guard<std::mutex> lock(mu);
        if (said.insert(name).second)
            fprintf(stderr, "rmw_nerve: %s='%s' ignored: %s\n", name, v,
                    nerve_err_detail(r));
        return 0;
    }
    return n;
}
} // namespace rmw_nerve

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
static rmw_ret_t pub_channel(Publisher *p, size_t size)
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
static int pub_room(Publisher *p, size_t len, int after)
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

// ---- publishers -----------------------------------------------------------

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

rmw_ret_t rmw_publish(const rmw_publisher_t *pub, const void *msg,
                      rmw_publisher_allocation_t *allocation)
{
    (void)allocation;
    CHECK_HANDLE(pub, "publisher");
    if (!msg)
        return fail(RMW_RET_INVALID_ARGUMENT, "rmw_nerve: message is NULL");
    auto *p = static_cast<Publisher *>(pub->data);
    std::lock_guard<std::mutex> lk(p->mu);
    size_t len = serialized_size(p->type, msg);
    rmw_ret_t rr = pub_channel(p, len);
    if (rr != RMW_RET_OK)
        return rr;
    void *dst = nullptr;
    int r = pub_room(p, len, 0);
    for (int tries = 0;
         r == 0 &&
         (r = nerve_chan_reserve(p->ch, len, NERVE_FOREVER, &dst, 0)) != 0 &&
         tries < 8;
         tries++)
        r = pub_room(p, len, r);
    if (r)
        return put_error(p, r, len);
    long n = serialize(p->type, msg, dst, len);
    if (n < 0) {
        (void)nerve_chan_abort(p->ch);
        return fail(RMW_RET_ERROR,
                    "rmw_nerve: publish on '%s': cannot serialise the %s",
                    p->topic.c_str(), p->type.name.c_str());
    }
    r = nerve_chan_commit(p->ch, size_t(n), nullptr);
    if (r)
        return put_error(p, r, len);
    pub_asserted(p, true);
    return RMW_RET_OK;
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
    for (int tries = 0; r == 0 &&
                        (r = nerve_chan_put(p->ch, m->buffer, len,
                                            NERVE_FOREVER, nullptr, 0)) != 0 &&
                        tries < 8;
         tries++)
        r = pub_room(p, len, r);
    if (r)
        return put_error(p, r, len);
    pub_asserted(p, true);
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

// ---- serialisation --------------------------------------------------------

rmw_ret_t rmw_serialize(const void *msg,
                        const rosidl_message_type_support_t *ts,
                        rmw_serialized_message_t *out)
{
    if (!msg || !ts || !out)
        return fail(RMW_RET_INVALID_ARGUMENT, "rmw_nerve: NULL argument");
    MsgType t;
    if (!msg_type(ts, &t))
        return RMW_RET_ERROR;
    size_t len = serialized_size(t, msg);
    if (out->buffer_capacity < len &&
        rmw_serialized_message_resize(out, len) != RMW_RET_OK)
        return fail(RMW_RET_BAD_ALLOC, "rmw_nerve: out of memory");
    long n = serialize(t, msg, out->buffer, out->buffer_capacity);
    if (n < 0)
        return fail(RMW_RET_ERROR, "rmw_nerve: cannot serialise the %s",
                    t.name.c_str());
    out->buffer_length = size_t(n);
    return RMW_RET_OK;
}

rmw_ret_t rmw_deserialize(const rmw_serialized_message_t *in,
                          const rosidl_message_type_support_t *ts, void *msg)
{
    if (!in || !ts || !msg)
        return fail(RMW_RET_INVALID_ARGUMENT, "rmw_nerve: NULL argument");
    MsgType t;
    if (!msg_type(ts, &t))
        return RMW_RET_ERROR;
    if (!deserialize(t, in->buffer, in->buffer_length, msg))
        return fail(RMW_RET_ERROR, "rmw_nerve: the bytes are not a CDR %s",
                    t.name.c_str());
    return RMW_RET_OK;
}

// ---- subscriptions --------------------------------------------------------

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

static rmw_ret_t take_typed(const rmw_subscription_t *sub, void *msg,
                            bool *taken, rmw_message_info_t *mi)
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

rmw_ret_t rmw_take(const rmw_subscription_t *sub, void *msg, bool *taken,
                   rmw_subscription_allocation_t *allocation)
{
    (void)allocation;
    return take_typed(sub, msg, taken, nullptr);
}

rmw_ret_t rmw_take_with_info(const rmw_subscription_t *sub, void *msg,
                             bool *taken, rmw_message_info_t *info,
                             rmw_subscription_allocation_t *allocation)
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

// ---- events ---------------------------------------------------------------

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
