// rmw_nerve_cpp: ROS 2's middleware interface (rmw, Jazzy) on nerve channels.
//
// Map of the library (one job per file):
//   rmw_nerve.hpp      the objects behind every rmw handle, shared helpers
//   common.cpp         the identifier, the rmw error string, clocks, sizes
//   names.cpp          domain + ROS name -> channel name
//   types.cpp          typesupport -> type name, schema, Fast CDR callbacks
//   cdr.cpp            serialisation: message <-> CDR bytes (Fast CDR),
//                      rmw_serialize and rmw_deserialize
//   init.cpp           init options, contexts, nodes, guard conditions
//   graph.cpp          the ROS graph in one shared-memory channel per domain
//   channel.cpp        topic channels: create, follow, grow, release
//   trust.cpp          which channel files a node opens (owner, mode)
//   publisher.cpp      publishers: channel sizing, publish
//   subscription.cpp   subscriptions: take, keep-last losses
//   loan.cpp           loaned messages (fixed-size types)
//   service.cpp        services and clients
//   wait.cpp           wait sets: one futex wait over every channel involved
//   qos.cpp            QoS: profile resolution, compatibility check and
//                      incompatible-QoS events
//   events.cpp         rmw events: deadline and liveliness, the event API
//   listener.cpp       listener callbacks (rclcpp's events executor)
//   unsupported.cpp    what rmw_nerve does not offer: RMW_RET_UNSUPPORTED
//
// rmw_nerve uses only nerve's public C API and the headers and libraries
// of a ROS 2 installation (rmw, rcutils, rosidl, Fast CDR).

#ifndef RMW_NERVE_HPP
#define RMW_NERVE_HPP

#include <atomic>
#include <cstdint>
#include <cstring>
#include <map>
#include <set>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <nerve/chan.h>
#include <nerve/errors.h>
#include <rmw/error_handling.h>
#include <rmw/events_statuses/incompatible_qos.h>
#include <rmw/rmw.h>
#include <rmw/types.h>
#include <rosidl_runtime_c/type_hash.h>
#include <rosidl_typesupport_fastrtps_cpp/message_type_support.h>

// HOT PATH. The functions one publish, one wait and one take run are
// marked hot: GCC places them in .text.hot, which the linker keeps
// together, so that a message at a low rate, whose path runs cold (an
// idle vCPU comes back with cold caches and TLB, and the cost follows the
// pages touched), touches two pages of rmw_nerve's code instead of one per
// source file (bench/rmw/rcl_cold.cpp).
#define RMW_NERVE_HOT __attribute__((hot))

namespace rmw_nerve {

extern const char *const kIdentifier; // "rmw_nerve_cpp"

// Set the rmw error string (formatted) and return `ret`.
rmw_ret_t fail(rmw_ret_t ret, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

// In an rmw_* entry point: return RMW_RET_INVALID_ARGUMENT when handle `h`
// (a publisher, subscription, service or client; `what` names it) is NULL or
// empty, RMW_RET_INCORRECT_RMW_IMPLEMENTATION when another RMW made it.
#define CHECK_HANDLE(h, what)                                                  \
    do {                                                                       \
        if (!(h) || !(h)->data)                                                \
            return rmw_nerve::fail(RMW_RET_INVALID_ARGUMENT,                   \
                                   "rmw_nerve: %s is NULL", what);             \
        if (strcmp((h)->implementation_identifier ?: "",                       \
                   rmw_nerve::kIdentifier) != 0)                               \
            return rmw_nerve::fail(RMW_RET_INCORRECT_RMW_IMPLEMENTATION,       \
                                   "rmw_nerve: %s belongs to %s", what,        \
                                   (h)->implementation_identifier);            \
    } while (0)

// Drop a status that cannot be acted on (cleanup paths).
inline void ignore(rmw_ret_t)
{
}
inline void ignore_nerve(int)
{
}

// Bytes from an environment variable in nerve's size grammar
// (nerve_size_parse: "64K", "8MiB", ...); 0 when unset or malformed (said
// on stderr once per variable).
uint64_t env_size(const char *name);

int64_t mono_ns();
int64_t real_ns();

// ---- names (names.cpp), types (types.cpp), CDR (cdr.cpp) ------------------

// Channel of ROS topic `topic` (a full name, "/a/b") in `domain`: "a.b" in
// domain 0 (what `nerve ros2` uses), "ros2-d<N>.a.b" in domain N > 0.
// A '-' never occurs in a ROS name, so no topic of one domain can map to a
// channel of another or to a service or graph channel. Returns false (and
// sets the rmw error) when the name does not fit a channel name.
bool topic_channel(size_t domain, const char *topic, const char *suffix,
                   std::string *out);
// The graph channels of a domain: "ros2-graph-d<N>." + "u<uid>", one per
// owner (graph.cpp, OWNERS).
std::string graph_prefix(size_t domain);
// The prefix of every topic and service channel of a domain ("" for 0).
std::string domain_prefix(size_t domain);

struct MsgType {
    const message_type_support_callbacks_t *cb = nullptr;
    const rosidl_message_type_support_t *ts = nullptr; // the caller's handle
    std::string name;                                  // pkg/msg/Name
    std::string schema; // ros2msg text (may be empty)
    bool bounded = false;
    size_t max_size = 0;       // bounded types: the largest CDR body
    rosidl_type_hash_t hash{}; // REP 2011 type hash (version 0: unknown)
};

// Resolve the Fast CDR callbacks (C or C++ typesupport) of `ts`.
bool msg_type(const rosidl_message_type_support_t *ts, MsgType *out);

// CDR with encapsulation into buf[0..cap) -> bytes written, or -1.
long serialize(const MsgType &t, const void *msg, void *buf, size_t cap);
size_t serialized_size(const MsgType &t, const void *msg); // incl. 4 bytes
bool deserialize(const MsgType &t, const void *buf, size_t len, void *msg);

// ---- QoS compatibility (qos.cpp) ------------------------------------------

// BEST_AVAILABLE resolved for one side: a publisher offers the most
// (RELIABLE, TRANSIENT_LOCAL, MANUAL_BY_TOPIC), a subscription requests the
// least (BEST_EFFORT, VOLATILE, AUTOMATIC).
void qos_best_available(rmw_qos_profile_t *q, bool publisher);

// The first policy by which `pub` and `sub` would not match under ROS 2's
// request-offered rules, or RMW_QOS_POLICY_INVALID when they match;
// *warning (may be null): they match unless an UNKNOWN value says
// otherwise. `reason` (may be null) gets the rules broken.
rmw_qos_policy_kind_t qos_mismatch(const rmw_qos_profile_t &pub,
                                   const rmw_qos_profile_t &sub, bool *warning,
                                   char *reason, size_t n);

struct Node;

// Incompatible-QoS event state of one publisher or subscription.
struct QosEvents {
    std::set<std::string> seen; // GIDs of incompatible endpoints met
    size_t reported = 0;
    uint64_t graph = ~0ull; // graph version looked at
    rmw_qos_policy_kind_t last = RMW_QOS_POLICY_INVALID;
};

// Record the endpoints of the other side on `topic`, of the same type,
// whose QoS does not match `mine`. Returns whether some are not reported
// yet. Caller holds the entity's mutex.
bool note_bad_qos(Node *node, const std::string &topic, const std::string &type,
                  const rmw_qos_profile_t &mine, bool mine_is_pub,
                  QosEvents *ev);
// Fill an incompatible-QoS status and mark everything reported.
void take_bad_qos(QosEvents *ev, rmw_qos_incompatible_event_status_t *st);

// ---- wake-ups (wait.cpp) --------------------------------------------------

// Wake every rmw_wait that is waiting now (guard trigger, graph change).
void wake_waiters();
// Whether event `ev` has something to report; *next_ns lowered to the mono
// time at which a deadline or lease may make it ready.
bool event_ready(rmw_event_t *ev, int64_t *next_ns);

// ---- listener callbacks (listener.cpp) --------------------------------------

// Stop the callbacks of a subscription, service or client (and of its
// events) that is being destroyed.
void listener_forget(const void *key);
// What the reader `ch` (may be null: nothing) has not taken yet; *base:
// the newest sequence number, from which a listener counts new ones (0
// without a channel: all of its messages will be new).
uint64_t chan_unread(nerve_chan *ch, uint64_t *base);

struct GuardCondition {
    std::atomic<bool> triggered{false};
};

// ---- graph (graph.cpp) ----------------------------------------------------

enum class Kind : char { Pub = 'P', Sub = 'S', Srv = 'V', Cli = 'C' };

struct Endpoint {
    Kind kind;
    uint64_t node_id = 0;
    rmw_gid_t gid{};
    std::string name; // ROS name (topic or service)
    std::string type; // pkg/msg/Name or pkg/srv/Name
    rmw_qos_profile_t qos{};
    rosidl_type_hash_t hash{}; // topics: the type's hash; services: the
                               // request's (version 0: none)
    bool ready = false;        // publishers: the channel exists
    // Publishers: a manual-by-topic lease ran out without an assertion
    // (LIVELINESS in events.cpp); local ones: the time of the newest
    // assertion and the lease (Graph::watch_lease).
    bool lost = false;
    std::shared_ptr<std::atomic<int64_t>> asserted;
    int64_t lease_ns = 0;
    std::string node_name, node_ns; // filled by Graph::snapshot()
};

struct NodeRec {
    uint64_t id = 0;
    std::string name, ns, enclave;
};

struct Context;

// One process-wide view per domain of every context's nodes and endpoints.
class Graph {
public:
    Graph(size_t domain, uint64_t ctx_id);
    ~Graph();
    rmw_ret_t start(); // open the channel, read what it holds, start thread
    void stop();       // say goodbye and join the thread

    void add_node(const NodeRec &n);
    void remove_node(uint64_t id);
    void add_endpoint(const Endpoint &e);
    void update_endpoint(const rmw_gid_t &gid, bool ready);
    void remove_endpoint(const rmw_gid_t &gid);
    // A local manual-by-topic publisher `gid` with a finite lease: the
    // graph thread marks it lost while *asserted is older than `lease_ns`.
    void watch_lease(const rmw_gid_t &gid,
                     std::shared_ptr<std::atomic<int64_t>> asserted,
                     int64_t lease_ns);

    // Guard conditions to trigger on every change of the view.
    void watch(GuardCondition *g);
    void unwatch(GuardCondition *g);

    // A snapshot of the whole view: nodes and endpoints of all live contexts.
    struct Snapshot {
        std::vector<NodeRec> nodes;
        std::vector<Endpoint> eps;
        // How many endpoints of `kind` are on topic or service `name`.
        size_t count(Kind kind, const std::string &name) const;
    };
    Snapshot snapshot();
    uint64_t version() const
    {
        return version_.load();
    }

private:
    void publish_locked();
    void run();
    void sweep();
    bool ingest(const char *buf, size_t len, int64_t time_ns);
    rmw_ret_t open_mine();
    bool drain(nerve_chan *c, std::vector<char> &buf, bool wait, int *err);
    void scan_others();
    bool expire(int64_t now);
    bool check_leases(int64_t now); // [mu_]
    void changed();

    size_t domain_;
    uint64_t ctx_id_;
    nerve_chan *wr_ = nullptr; // [mu_] once started; null after stop()
    nerve_chan *rd_ = nullptr; // the graph thread's; closed after it ended
    std::string mine_;         // [const] once started: wr_'s and rd_'s name
    // The graph thread's: the trusted graph channels of other owners
    // (name -> read handle), and the names refused (said once each).
    std::map<std::string, nerve_chan *> others_;
    std::set<std::string> refused_;
    std::mutex mu_;
    std::vector<NodeRec> my_nodes_;
    std::vector<Endpoint> my_eps_;
    struct Remote {
        int pid = 0;
        int64_t seen_ns = 0;
        std::vector<NodeRec> nodes;
        std::vector<Endpoint> eps;
    };
    std::map<uint64_t, Remote> remote_;
    std::vector<GuardCondition *> watchers_;
    std::atomic<uint64_t> version_{0};
    std::atomic<bool> stop_{false};
    std::thread thread_;
    bool dirty_ = false;
    int64_t last_pub_ns_ = 0;
};

struct Context {
    uint64_t id = 0;
    size_t domain = 0;
    std::atomic<uint64_t> next_entity{1};
    std::unique_ptr<Graph> graph;
    // Set once by rmw_shutdown, before it wakes every wait (SHUTDOWN WAKE
    // in wait.cpp); read by waits of any thread. Shared with the context's
    // wait sets, which may outlive it.
    std::shared_ptr<std::atomic<bool>> shut_down =
        std::make_shared<std::atomic<bool>>(false);
    rmw_gid_t new_gid(); // ctx id + counter
};

} // namespace rmw_nerve

// rmw's opaque context implementation: the context.
struct rmw_context_impl_s {
    rmw_nerve::Context ctx;
};

namespace rmw_nerve {

struct Node {
    Context *ctx = nullptr;
    uint64_t id = 0;
    rmw_guard_condition_t *graph_guard = nullptr;
};

// Add an endpoint of node `n` to the graph (graph.cpp): a publisher,
// subscription, service or client `gid` on topic or service `name`;
// `hash` is the type's hash (topics), null for none.
void announce(Node *n, Kind kind, const rmw_gid_t &gid, const std::string &name,
              const std::string &type, const rmw_qos_profile_t &qos, bool ready,
              const rosidl_type_hash_t *hash = nullptr);

// ---- loans (loan.cpp) -----------------------------------------------------

// Loans out at once per publisher or subscription, at most.
constexpr int kLoanSlots = 8;
struct LoanPool;
struct LoanPoolDeleter {
    void operator()(LoanPool *p) const; // fini's the loans still out
};
using LoanPoolPtr = std::unique_ptr<LoanPool, LoanPoolDeleter>;
// The loan pool of an endpoint of type `t`; never null, loan_ok() false
// (and the reason kept for the loan functions' errors) for a type that
// cannot be loaned. Allocates its messages at the first loan only.
LoanPoolPtr loan_pool(const MsgType &t);
bool loan_ok(const LoanPool *p);
void loan_fini(LoanPool *p, void *msg);

// ---- deadline and liveliness events (events.cpp) ---------------------------

// Periods counted since a reference time: a deadline missed once per whole
// period without a message, a lease lost once per lapse.
struct Lapses {
    int64_t ref = 0;      // mono ns of the newest message / assertion; 0: none
    uint64_t counted = 0; // periods counted since ref
    uint64_t total = 0, reported = 0;
};

// Publisher's and subscription's deadline and liveliness state [their mu].
struct QosTimers {
    int64_t deadline_ns = 0; // 0: no deadline
    int64_t lease_ns = 0;    // 0: infinite
    bool manual = false;     // MANUAL_BY_TOPIC
    int64_t created_ns = 0;
    Lapses deadline, lease;
    // Publishers: the newest assertion (publish or assert_liveliness),
    // read by the graph thread.
    std::shared_ptr<std::atomic<int64_t>> asserted =
        std::make_shared<std::atomic<int64_t>>(0);
    // Subscriptions: liveliness as last reported (GID -> alive).
    std::map<std::string, bool> live_seen, live_reported;
    uint64_t live_graph = ~0ull;
};

struct Publisher;
struct Subscription;
void qos_timers_init(QosTimers *t, const rmw_qos_profile_t &q);
// An assertion of `p`'s liveliness at `now` (mono ns), by a publish when
// `published` (whose commit time is `now`: no clock read of its own on the
// publish path) [p->mu].
void pub_asserted(Publisher *p, bool published, int64_t now);
// Event types of events.cpp, for a publisher (`pub`) or a subscription.
bool qos_event_type(rmw_event_type_t t, bool pub);
// Whether `ev` (one of those types) has something to report; *next_ns:
// lowered to the mono time at which it may have, when that is a time.
bool qos_event_ready(const rmw_event_t *ev, int64_t *next_ns);
void qos_event_take(const rmw_event_t *ev, void *info);

// ---- publishers and subscriptions (publisher.cpp, subscription.cpp) -------

struct Publisher {
    Node *node = nullptr;
    MsgType type;
    std::string topic, chan_name;
    rmw_qos_profile_t qos{};
    rmw_gid_t gid{};
    // [mu] incompatible-QoS events (qos.cpp)
    QosEvents bad_qos;
    std::mutex mu; // one put at a time per handle
    nerve_chan *ch = nullptr;
    uint64_t ring = 0;     // [mu] ch's data ring bytes
    size_t size_guess = 0; // [mu] the next reservation (rmw_publish), 0: none
    std::set<std::string> other_types;  // [mu] endpoints seen with another type
    size_t other_types_reported = 0;    // [mu]
    uint64_t other_types_graph = ~0ull; // [mu] graph version looked at
    LoanPoolPtr loans;                  // loan.cpp
    QosTimers timers;                   // [mu] events.cpp
};

// The handles a reader left for a successor (chan_follow): another thread's
// rmw_wait may still sleep on one, so they are closed only with their
// entity. Each growth at least doubles the ring, so they map at most as
// much again as the newest channel.
struct Retired {
    std::vector<nerve_chan *> v;
    Retired() = default;
    Retired(const Retired &) = delete;
    Retired &operator=(const Retired &) = delete;
    ~Retired()
    {
        for (nerve_chan *c : v)
            nerve_chan_close(c);
    }
};

// When a reader of a channel may next ask the channel's name whether a
// grower renamed a successor over it without marking it
// (chan_renamed_unmarked) [the reader's mu].
struct RenameLook {
    // At most one lstat a second per channel: a successor whose grower
    // died between the rename and the mark is followed within a second;
    // an idle wait ends once a second to look.
    static constexpr int64_t kEvery = 1000000000;
    int64_t due_ns = 0; // mono ns; 0: at the next look
};

struct Subscription {
    Node *node = nullptr;
    MsgType type;
    std::string topic, chan_name;
    rmw_qos_profile_t qos{};
    rmw_gid_t gid{};
    // Taken by take, take_event and rmw_wait's readiness checks: rclpy's
    // multi-threaded executor takes in worker threads while another waits.
    std::mutex mu;
    nerve_chan *ch = nullptr;
    Retired retired;      // [mu] channels ch followed away from
    RenameLook look;      // [mu] ch's name asked (chan_renamed_unmarked)
    bool refused = false; // the channel under the name is not this topic's
    uint64_t lost_total = 0, lost_reported = 0;
    uint64_t corrupt = 0;
    QosEvents bad_qos; // [mu] incompatible-QoS events (qos.cpp)
    bool has_lost_event = false;
    std::set<std::string> other_types;  // [mu] endpoints seen with another type
    size_t other_types_reported = 0;    // [mu]
    uint64_t other_types_graph = ~0ull; // [mu] graph version looked at
    LoanPoolPtr loans;                  // loan.cpp
    QosTimers timers;                   // [mu] events.cpp
};

// Incompatible-type events (events.cpp): record the endpoints of the other
// side on `topic` whose type is not `type` into *seen (by GID). Returns
// whether there are some not yet reported. Caller holds the entity's
// mutex. Looks at the graph only when it changed since *version.
bool note_other_types(Node *node, const std::string &topic,
                      const std::string &type, Kind other,
                      std::set<std::string> *seen, size_t reported,
                      uint64_t *version);

// Open the subscription's channel if it exists now (false while it does
// not). A channel of another type or encoding is refused once, loudly.
bool sub_open(Subscription *s);
// Messages waiting after the cursor (after keep-last trimming); *next_ns
// as chan_has_news.
bool sub_ready(Subscription *s, int64_t *next_ns);
// Messages the ring overwrote before this reader took them, counted now.
void sub_count_lost(Subscription *s);

// Check and resolve a QoS profile (qos.cpp). Returns RMW_RET_OK or sets the
// error.
rmw_ret_t qos_resolve(const rmw_qos_profile_t *in, rmw_qos_profile_t *out,
                      const char *what, const char *name);

// Channel helpers shared by topics and services (channel.cpp; the opener
// in trust.cpp).
// The encoding of a channel of `type`: "cdr", "text" (rmw_nerve/*) or
// "rmw_nerve-service" (service.cpp's header, then CDR).
const char *encoding_of(const std::string &type);
// 0, or a nerve error (NERVE_ENOENT: no channel yet), or NERVE_EMISMATCH
// (the channel's type or encoding is not this one's); *why says which.
int chan_open_checked(const std::string &name, const char *type, uint32_t flags,
                      nerve_chan **out, std::string *why);
// Made "remove when unused" (NERVE_C_REMOVE_UNUSED) unless told not to:
// the last process to close it, or a sweep, removes it.
int chan_create_for(const std::string &name, const std::string &type,
                    const std::string &schema, uint64_t slots,
                    uint64_t data_size, bool remove_unused = true);
// Close c, a handle on channel `name`, and remove the channel if nobody
// else has it open and rmw_nerve made it.
void chan_release(nerve_chan *c, const std::string &name);
// F2 for a reader of `type` whose *ch said NERVE_ESUPERSEDED: open the
// name again (the type checked as at first), keep the cursor, retire the
// old handle. 0, or the error (*ch unchanged).
int chan_follow(nerve_chan **ch, const char *type, Retired *retired);
// GROWTH (src/chan_open.c, nerve_chan_grow): whether *ch has something for
// its reader, a new message or a successor to follow; when not, *next_ns
// (if given) is lowered to the mono time of the next look at the name.
bool chan_has_news(nerve_chan *ch, RenameLook *look, int64_t *next_ns);
// True when *ch's name names another file although *ch is not marked
// superseded: its grower died between the rename and the mark. Asks the
// name only when `look` is due (false otherwise); *next_ns as above.
bool chan_renamed_unmarked(nerve_chan *ch, RenameLook *look,
                           int64_t *next_ns = nullptr);
// After a put or reserve on *ch failed with `r`: follow the successor
// another writer made (NERVE_ESUPERSEDED), or grow *ch to a data ring of
// `want` bytes and at least `slots` slots (NERVE_EMSGSIZE), refusing more
// than NERVE_RMW_MAX_DATA_SIZE (default 1 GiB). 0: put again; else the
// error (*ch is then unchanged and usable).
int chan_make_room(nerve_chan **ch, int r, uint64_t want, uint64_t slots);
// The most a channel of rmw_nerve may grow to (NERVE_RMW_MAX_DATA_SIZE).
uint64_t chan_max_data();

// ---- services (service.cpp) ------------------------------------------------

struct Service;
struct Client;
// Whether a request (reply) is there; *next_ns as chan_has_news.
bool srv_ready(Service *s, int64_t *next_ns);
bool cli_ready(Client *c, int64_t *next_ns);
nerve_chan *srv_chan(Service *s);
nerve_chan *cli_chan(Client *c);
// For a listener: the channel that brings `s` requests (`c` replies), its
// type, the sequence number to count new ones from, and how many arrived
// and were not taken.
uint64_t srv_listen(Service *s, std::string *name, std::string *type,
                    uint64_t *base);
uint64_t cli_listen(Client *c, std::string *name, std::string *type,
                    uint64_t *base);

} // namespace rmw_nerve

#endif
