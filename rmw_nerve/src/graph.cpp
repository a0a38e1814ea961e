// The ROS graph without a daemon: per domain, one channel per user,
// "ros2-graph-d<N>.u<UID>" (OWNERS below), in which every process (every
// rmw context) publishes, as one text message, everything it has: its
// nodes and their publishers,
// subscriptions, services and clients. It publishes again on every change
// and at least every kHeartbeat, so the newest messages of the ring always
// hold the state of every live context, and a new process learns the graph
// by reading the ring from its oldest message.
//
// LIVENESS. A context that says goodbye leaves the view at once. One that
// was killed says nothing: every reader drops it when its process no longer
// exists (checked every kTick with kill(pid, 0), same PID namespace), and
// in any case when nothing came from it for kLease. So a node killed with
// kill -9 leaves every view within kTick (plus the time its parent takes to
// reap it: a zombie still exists) and at most kLease + kTick after its last
// heartbeat.
//
// OWNERS. /dev/shm is writable by every local user, so one graph channel
// per domain would belong to whoever made it first, and a stranger could
// own, feed or truncate the graph of every node. So each user has its own
// graph channel, "ros2-graph-d<N>.u<UID>", and a process writes its
// messages into its user's and reads the graph channels of every trusted
// owner (trust.cpp, "Trust": its own user, root, NERVE_RMW_TRUST_USERS
// and NERVE_RMW_TRUST_GROUP, files no stranger may write): it finds them
// by listing /dev/shm every kHeartbeat. A channel under its user's name
// that someone else made (a squatter, who may make any name) is refused
// with one line, and the process writes into "ros2-graph-d<N>.u<UID>.<ID>"
// instead, a name nobody can take in advance (ID is the context's random
// id); such a channel is removed when unused. Channels of untrusted
// owners are never read, so they cannot feed a node or crash it with
// SIGBUS by truncation; one line per name says so (the first
// kMaxRefusedSaid of them).
//
// The channels are ordinary nerve channels: readers hold no lock, a writer
// killed mid-put leaves nothing half-written, and `nerve cat
// ros2-graph-d0.u0` shows the text. A message that does not parse is ignored:
// anyone who may write the channel could write anything.
//
// FORMAT (version 3): "nerve-rmw-graph 3 CTXHEX PID live|bye", then one line
// per node, "N ID NAME NS ENCLAVE", and per endpoint "E KIND NODE GIDHEX
// NAME TYPE RELIABILITY DURABILITY HISTORY DEPTH LIVELINESS LEASE_SEC
// LEASE_NSEC DEADLINE_SEC DEADLINE_NSEC READY V:HASHHEX" (QoS as rmw's enum
// values; liveliness and its lease since version 2, for the
// incompatible-QoS events of qos.cpp; the deadline since version 3, for
// the same and events.cpp). A service's hash is its request message's
// (what a DDS client's request writer says; nerve ros2 --services checks
// it), a client's too (nerve ros2 --services-from-ros checks it against
// the DDS server's; nothing else reads a client's hash). Version 2, the
// same without the deadline, is still read (as no deadline); other
// versions are ignored.
// READY is a set of bits: 1 the publisher's channel exists, 2 its
// manual-by-topic liveliness lease ran out (LIVELINESS in events.cpp); a
// reader that knows only 0 and 1 takes any non-zero value as ready.

#include "rmw_nerve.hpp"

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <sstream>

namespace rmw_nerve {

static bool too_big(size_t len); // BOUNDS, below
static void say_once(std::atomic<bool> &said, const char *what);

static const int64_t kTick = 100 * 1000000LL;      // reader wake-up
static const int64_t kSweep = 5000 * 1000000LL;    // leftovers collected
static const int64_t kHeartbeat = 500 * 1000000LL; // republish period
static const int64_t kLease = 2000 * 1000000LL;    // silence that expires

static const char kMagic[] = "nerve-rmw-graph";

Graph::Graph(size_t domain, uint64_t ctx_id) : domain_(domain), ctx_id_(ctx_id)
{
}

Graph::~Graph()
{
    stop();
}

static std::string hex(const uint8_t *p, size_t n)
{
    static const char d[] = "0123456789abcdef";
    std::string s;
    for (size_t i = 0; i < n; i++) {
        s += d[p[i] >> 4];
        s += d[p[i] & 15];
    }
    return s;
}

static bool unhex(const std::string &s, uint8_t *p, size_t n)
{
    if (s.size() != 2 * n)
        return false;
    for (size_t i = 0; i < n; i++) {
        unsigned v;
        if (sscanf(s.c_str() + 2 * i, "%2x", &v) != 1)
            return false;
        p[i] = uint8_t(v);
    }
    return true;
}

static const size_t kMaxGraphChannels = 256; // of other owners
static const size_t kMaxRefused = 4096;      // names remembered as refused
static const size_t kMaxRefusedSaid = 8;     // of them said on stderr

// OWNERS: this user's graph channel of the domain.
static std::string user_graph(size_t domain)
{
    return graph_prefix(domain) + "u" + std::to_string(geteuid());
}

rmw_ret_t Graph::open_mine()
{
    std::string name = user_graph(domain_);
    std::string why;
    for (int attempt = 0; attempt < 2; attempt++) {
        // An existing graph channel of other geometry is fine.
        (void)chan_create_for(name, "rmw_nerve/graph", "", 4096, 4u << 20,
                              attempt > 0);
        int o = chan_open_checked(name, "rmw_nerve/graph", NERVE_O_WRITE, &wr_,
                                  &why);
        if (o == 0)
            o = chan_open_checked(name, "rmw_nerve/graph", NERVE_O_READ, &rd_,
                                  &why);
        if (o == 0) {
            mine_ = name;
            return RMW_RET_OK;
        }
        if (wr_) {
            nerve_chan_close(wr_);
            wr_ = nullptr;
        }
        if (o != NERVE_EPERM || attempt > 0)
            break;
        // OWNERS: squatted; a name of this context's own instead.
        std::string alt =
            name + "." + hex(reinterpret_cast<const uint8_t *>(&ctx_id_), 8);
        fprintf(stderr,
                "rmw_nerve: graph channel '%s' refused: %s; using '%s'\n",
                name.c_str(), why.c_str(), alt.c_str());
        name = alt;
    }
    return fail(RMW_RET_ERROR, "rmw_nerve: graph channel '%s': %s",
                name.c_str(), why.c_str());
}

// Read the messages of channel c past its cursor (at most 100000); with
// `wait`, wait up to kTick for the first. Returns whether the view
// changed; *err gets the get's last status (NERVE_ECANCELED: stopping).
bool Graph::drain(nerve_chan *c, std::vector<char> &buf, bool wait, int *err)
{
    bool ch = false;
    for (int i = 0; i < 100000; i++) {
        struct nerve_get_info info;
        uint32_t f = NERVE_GET_NEXT | (wait && i == 0 ? NERVE_F_WAIT : 0);
        int g = nerve_chan_get(c, buf.data(), buf.size(), 0, kTick, &info, f);
        if (g == NERVE_EMSGSIZE) {
            if (too_big(info.len))
                nerve_chan_seek(c, nerve_chan_cursor(c) + 1);
            else
                buf.resize(info.len);
            continue;
        }
        *err = g;
        if (g != 0)
            break;
        if (mono_ns() - info.time_ns < kLease)
            ch = ingest(buf.data(), info.len, info.time_ns) || ch;
    }
    return ch;
}

// OWNERS: open the graph channels of other trusted owners that appeared.
void Graph::scan_others()
{
    struct Scan {
        std::string prefix;
        std::vector<std::string> names;
    } sc{graph_prefix(domain_), {}};
    (void)nerve_chan_list(
        [](const char *name, void *arg) {
            Scan *s = static_cast<Scan *>(arg);
            if (strncmp(name, s->prefix.c_str(), s->prefix.size()) == 0)
                s->names.push_back(name);
            return s->names.size() < kMaxRefused + kMaxGraphChannels ? 0 : 1;
        },
        &sc);
    for (const std::string &name : sc.names) {
        if (name == mine_ || others_.count(name) || refused_.count(name))
            continue;
        if (others_.size() >= kMaxGraphChannels ||
            refused_.size() >= kMaxRefused) {
            static std::atomic<bool> said{false};
            say_once(said, "more graph channels than read (256 of trusted "
                           "owners, 4096 refused)");
            break;
        }
        nerve_chan *c = nullptr;
        std::string why;
        if (chan_open_checked(name, "rmw_nerve/graph", NERVE_O_READ, &c,
                              &why) == 0) {
            others_[name] = c;
            continue;
        }
        refused_.insert(name);
        if (refused_.size() <= kMaxRefusedSaid)
            fprintf(stderr, "rmw_nerve: graph channel '%s' not read: %s%s\n",
                    name.c_str(), why.c_str(),
                    refused_.size() == kMaxRefusedSaid
                        ? " (further ones not reported)"
                        : "");
    }
}

rmw_ret_t Graph::start()
{
    rmw_ret_t r = open_mine();
    if (r != RMW_RET_OK)
        return r;
    // Read what the rings hold now, so that the first query after init
    // already sees the others.
    std::vector<char> buf(64 * 1024);
    int err = 0;
    scan_others();
    (void)drain(rd_, buf, false, &err);
    for (auto &kv : others_)
        (void)drain(kv.second, buf, false, &err);
    expire(mono_ns());
    {
        std::lock_guard<std::mutex> lk(mu_);
        publish_locked();
    }
    sweep();
    thread_ = std::thread([this] { run(); });
    return RMW_RET_OK;
}

void Graph::stop()
{
    if (stop_.exchange(true))
        return;
    if (thread_.joinable()) {
        nerve_chan_cancel(rd_);
        thread_.join();
    }
    // Under mu_: a node's entity may be destroyed by another thread while
    // the context shuts down (rclpy's signal thread shuts it down as its
    // main thread unwinds), and publish_locked() uses wr_ under mu_.
    std::lock_guard<std::mutex> lk(mu_);
    if (wr_) {
        std::string bye = std::string(kMagic) + " 3 " +
                          hex(reinterpret_cast<const uint8_t *>(&ctx_id_), 8) +
                          " " + std::to_string(getpid()) + " bye\n";
        (void)nerve_chan_put(wr_, bye.data(), bye.size(), 100000000LL, nullptr,
                             0);
        nerve_chan_close(wr_);
        wr_ = nullptr;
    }
    if (rd_) {
        nerve_chan_close(rd_);
        rd_ = nullptr;
    }
    for (auto &kv : others_)
        nerve_chan_close(kv.second);
    others_.clear();
    // A channel of this context's own name (OWNERS) goes with the last
    // process that uses it.
    if (!mine_.empty() && mine_ != user_graph(domain_))
        (void)nerve_chan_remove_unused(mine_.c_str());
}

void Graph::publish_locked()
{
    if (!wr_)
        return;
    std::ostringstream o;
    o << kMagic << " 3 " << hex(reinterpret_cast<const uint8_t *>(&ctx_id_), 8)
      << " " << getpid() << " live\n";
    for (const auto &n : my_nodes_)
        o << "N " << n.id << " " << n.name << " " << n.ns << " " << n.enclave
          << "\n";
    for (const auto &e : my_eps_)
        o << "E " << char(e.kind) << " " << e.node_id << " "
          << hex(e.gid.data, RMW_GID_STORAGE_SIZE) << " " << e.name << " "
          << e.type << " " << int(e.qos.reliability) << " "
          << int(e.qos.durability) << " " << int(e.qos.history) << " "
          << e.qos.depth << " " << int(e.qos.liveliness) << " "
          << e.qos.liveliness_lease_duration.sec << " "
          << e.qos.liveliness_lease_duration.nsec << " " << e.qos.deadline.sec
          << " " << e.qos.deadline.nsec << " "
          << ((e.ready ? 1 : 0) | (e.lost ? 2 : 0)) << " "
          << int(e.hash.version) << ":"
          << hex(e.hash.value, ROSIDL_TYPE_HASH_SIZE) << "\n";
    std::string s = o.str();
    int r = nerve_chan_put(wr_, s.data(), s.size(), 100000000LL, nullptr, 0);
    if (r)
        fprintf(stderr, "rmw_nerve: graph: cannot publish (%s)\n",
                nerve_strerror(r));
    last_pub_ns_ = mono_ns();
}

// BOUNDS. Anyone who may write the graph channel could write anything, so
// what one message may cost every process of the domain is bounded: a
// message over kMaxGraphMsg is skipped unread, one of more than
// kMaxGraphNodes nodes or kMaxGraphEndpoints endpoints is ignored, and a
// name, namespace, enclave or type that is not valid UTF-8 (rclpy decodes
// them and would raise) is skipped with its node or endpoint. Each kind of
// skip says one line on stderr, once per process.
static const size_t kMaxGraphMsg = 1u << 20;
static const size_t kMaxGraphNodes = 1024;
static const size_t kMaxGraphEndpoints = 16384;

static void say_once(std::atomic<bool> &said, const char *what)
{
    if (!said.exchange(true))
        fprintf(stderr, "rmw_nerve: graph: %s (further ones not reported)\n",
                what);
}

static bool too_big(size_t len)
{
    static std::atomic<bool> said{false};
    if (len <= kMaxGraphMsg)
        return false;
    say_once(said, "a message over 1 MiB skipped");
    return true;
}

// RFC 3629, the rules of the library's decoder (src/utf8.h, which is C
// that a C++ compiler refuses: void * converted implicitly).
static bool utf8_valid(const std::string &s)
{
    size_t i = 0, n = s.size();
    while (i < n) {
        unsigned char c = (unsigned char)s[i];
        size_t k;
        uint32_t cp;
        if (c < 0x80) {
            i++;
            continue;
        } else if ((c & 0xe0) == 0xc0) {
            k = 1, cp = c & 0x1f;
        } else if ((c & 0xf0) == 0xe0) {
            k = 2, cp = c & 0x0f;
        } else if ((c & 0xf8) == 0xf0) {
            k = 3, cp = c & 0x07;
        } else {
            return false;
        }
        if (i + k >= n)
            return false;
        for (size_t j = 1; j <= k; j++) {
            unsigned char d = (unsigned char)s[i + j];
            if ((d & 0xc0) != 0x80)
                return false;
            cp = (cp << 6) | (d & 0x3f);
        }
        // Overlong forms, surrogates and code points past U+10FFFF.
        if ((k == 1 && cp < 0x80) || (k == 2 && cp < 0x800) ||
            (k == 3 && cp < 0x10000) || (cp >= 0xd800 && cp <= 0xdfff) ||
            cp > 0x10ffff)
            return false;
        i += k + 1;
    }
    return true;
}

static bool utf8_or_skip(std::initializer_list<const std::string *> names)
{
    static std::atomic<bool> said{false};
    for (const std::string *s : names)
        if (!utf8_valid(*s)) {
            say_once(said, "a name that is not valid UTF-8 skipped");
            return false;
        }
    return true;
}

// Parse one context's message. Returns whether the view changed.
bool Graph::ingest(const char *buf, size_t len, int64_t time_ns)
{
    if (too_big(len))
        return false;
    std::istringstream in(std::string(buf, len));
    std::string magic, ver, idhex, state;
    int pid = 0;
    if (!(in >> magic >> ver >> idhex >> pid >> state) || magic != kMagic ||
        (ver != "2" && ver != "3"))
        return false;
    uint64_t id;
    if (!unhex(idhex, reinterpret_cast<uint8_t *>(&id), 8) || id == ctx_id_)
        return false;
    std::lock_guard<std::mutex> lk(mu_);
    if (state == "bye")
        return remote_.erase(id) > 0;
    if (state != "live")
        return false;
    Remote r;
    r.pid = pid;
    r.seen_ns = time_ns;
    std::string tag;
    while (in >> tag) {
        if (tag == "N") {
            NodeRec n;
            if (!(in >> n.id >> n.name >> n.ns >> n.enclave))
                return false;
            if (utf8_or_skip({&n.name, &n.ns, &n.enclave}))
                r.nodes.push_back(n);
        } else if (tag == "E") {
            Endpoint e;
            char k;
            std::string gid;
            int rel, dur, hist, live, ready;
            size_t depth;
            uint64_t lease_sec, lease_nsec, dl_sec = 0, dl_nsec = 0;
            std::string hash;
            if (!(in >> k >> e.node_id >> gid >> e.name >> e.type >> rel >>
                  dur >> hist >> depth >> live >> lease_sec >> lease_nsec) ||
                (ver == "3" && !(in >> dl_sec >> dl_nsec)) ||
                !(in >> ready >> hash))
                return false;
            // "V:HEX": REP 2011 hash version and value (0: none).
            if (hash.size() < 2 || hash[1] != ':' || hash[0] < '0' ||
                hash[0] > '9' ||
                !unhex(hash.substr(2), e.hash.value, ROSIDL_TYPE_HASH_SIZE))
                return false;
            e.hash.version = uint8_t(hash[0] - '0');
            if (k != 'P' && k != 'S' && k != 'V' && k != 'C')
                return false;
            e.kind = Kind(k);
            e.gid.implementation_identifier = kIdentifier;
            if (!unhex(gid, e.gid.data, RMW_GID_STORAGE_SIZE))
                return false;
            e.qos = rmw_qos_profile_default;
            e.qos.reliability = rmw_qos_reliability_policy_t(rel);
            e.qos.durability = rmw_qos_durability_policy_t(dur);
            e.qos.history = rmw_qos_history_policy_t(hist);
            e.qos.depth = depth;
            e.qos.liveliness = rmw_qos_liveliness_policy_t(live);
            e.qos.liveliness_lease_duration.sec = lease_sec;
            e.qos.liveliness_lease_duration.nsec = lease_nsec;
            e.qos.deadline.sec = dl_sec;
            e.qos.deadline.nsec = dl_nsec;
            e.ready = (ready & 1) != 0;
            e.lost = (ready & 2) != 0;
            if (utf8_or_skip({&e.name, &e.type}))
                r.eps.push_back(e);
        } else {
            return false;
        }
        if (r.nodes.size() > kMaxGraphNodes ||
            r.eps.size() > kMaxGraphEndpoints) {
            static std::atomic<bool> said{false};
            say_once(said, "a process of more than 1024 nodes or 16384 "
                           "endpoints ignored");
            return false;
        }
    }
    auto it = remote_.find(id);
    bool same = false;
    if (it != remote_.end() && it->second.nodes.size() == r.nodes.size() &&
        it->second.eps.size() == r.eps.size()) {
        same = true;
        for (size_t i = 0; same && i < r.eps.size(); i++)
            same = memcmp(it->second.eps[i].gid.data, r.eps[i].gid.data,
                          RMW_GID_STORAGE_SIZE) == 0 &&
                   it->second.eps[i].ready == r.eps[i].ready &&
                   it->second.eps[i].lost == r.eps[i].lost;
        for (size_t i = 0; same && i < r.nodes.size(); i++)
            same = it->second.nodes[i].id == r.nodes[i].id;
    }
    remote_[id] = std::move(r);
    return !same;
}

bool Graph::expire(int64_t now)
{
    std::lock_guard<std::mutex> lk(mu_);
    bool changed = false;
    for (auto it = remote_.begin(); it != remote_.end();) {
        bool dead = now - it->second.seen_ns > kLease;
        if (!dead && it->second.pid > 0 && kill(it->second.pid, 0) != 0 &&
            errno == ESRCH)
            dead = true;
        if (dead) {
            it = remote_.erase(it);
            changed = true;
        } else {
            ++it;
        }
    }
    return changed;
}

// LIVELINESS (events.cpp): every kTick, a local manual-by-topic publisher
// whose newest assertion is older than its lease is marked lost, and one
// asserted again is marked alive; a change is published at once, so every
// process's view follows within kTick plus the lease.
bool Graph::check_leases(int64_t now)
{
    bool changed = false;
    for (auto &e : my_eps_) {
        if (!e.asserted)
            continue;
        bool lost = now - e.asserted->load() > e.lease_ns;
        if (lost != e.lost) {
            e.lost = lost;
            dirty_ = true;
            changed = true;
        }
    }
    return changed;
}

void Graph::watch_lease(const rmw_gid_t &gid,
                        std::shared_ptr<std::atomic<int64_t>> asserted,
                        int64_t lease_ns)
{
    std::lock_guard<std::mutex> lk(mu_);
    for (auto &e : my_eps_)
        if (memcmp(e.gid.data, gid.data, RMW_GID_STORAGE_SIZE) == 0) {
            e.asserted = asserted;
            e.lease_ns = lease_ns;
        }
}

void Graph::changed()
{
    version_.fetch_add(1);
    {
        std::lock_guard<std::mutex> lk(mu_);
        for (GuardCondition *g : watchers_)
            g->triggered.store(true);
    }
    wake_waiters();
}

// Collect the channels of this domain that processes killed with kill -9
// left (rmw_nerve makes them NERVE_C_REMOVE_UNUSED; those in use, and
// those made otherwise, stay).
void Graph::sweep()
{
    (void)nerve_chan_sweep_unused(domain_prefix(domain_).c_str(), nullptr);
}

void Graph::run()
{
    std::vector<char> buf(64 * 1024);
    int64_t last_tick = mono_ns();
    int64_t last_sweep = last_tick;
    int64_t last_scan = last_tick;
    while (!stop_.load()) {
        // Waits on this user's channel; those of other owners are polled
        // after it, so their news comes within kTick.
        int err = 0;
        bool ch = drain(rd_, buf, true, &err);
        if (err == NERVE_ECANCELED)
            break;
        for (auto &kv : others_)
            ch = drain(kv.second, buf, false, &err) || ch;
        int64_t now = mono_ns();
        if (now - last_scan >= kHeartbeat) {
            last_scan = now;
            scan_others();
        }
        if (now - last_tick >= kTick) {
            last_tick = now;
            ch = expire(now) || ch;
            std::lock_guard<std::mutex> lk(mu_);
            ch = check_leases(now) || ch;
        }
        if (now - last_sweep >= kSweep) {
            last_sweep = now;
            sweep();
        }
        {
            std::lock_guard<std::mutex> lk(mu_);
            if (dirty_ || now - last_pub_ns_ >= kHeartbeat) {
                dirty_ = false;
                publish_locked();
            }
        }
        if (ch)
            changed();
    }
}

void Graph::add_node(const NodeRec &n)
{
    {
        std::lock_guard<std::mutex> lk(mu_);
        my_nodes_.push_back(n);
        publish_locked();
    }
    changed();
}

void Graph::remove_node(uint64_t id)
{
    {
        std::lock_guard<std::mutex> lk(mu_);
        for (auto it = my_nodes_.begin(); it != my_nodes_.end(); ++it)
            if (it->id == id) {
                my_nodes_.erase(it);
                break;
            }
        publish_locked();
    }
    changed();
}

void announce(Node *n, Kind kind, const rmw_gid_t &gid, const std::string &name,
              const std::string &type, const rmw_qos_profile_t &qos, bool ready,
              const rosidl_type_hash_t *hash)
{
    Endpoint e;
    e.kind = kind;
    e.node_id = n->id;
    e.gid = gid;
    e.name = name;
    e.type = type;
    e.qos = qos;
    if (hash)
        e.hash = *hash;
    e.ready = ready;
    n->ctx->graph->add_endpoint(e);
}

void Graph::add_endpoint(const Endpoint &e)
{
    {
        std::lock_guard<std::mutex> lk(mu_);
        my_eps_.push_back(e);
        publish_locked();
    }
    changed();
}

void Graph::update_endpoint(const rmw_gid_t &gid, bool ready)
{
    {
        std::lock_guard<std::mutex> lk(mu_);
        for (auto &e : my_eps_)
            if (memcmp(e.gid.data, gid.data, RMW_GID_STORAGE_SIZE) == 0)
                e.ready = ready;
        publish_locked();
    }
    changed();
}

void Graph::remove_endpoint(const rmw_gid_t &gid)
{
    {
        std::lock_guard<std::mutex> lk(mu_);
        for (auto it = my_eps_.begin(); it != my_eps_.end(); ++it)
            if (memcmp(it->gid.data, gid.data, RMW_GID_STORAGE_SIZE) == 0) {
                my_eps_.erase(it);
                break;
            }
        publish_locked();
    }
    changed();
}

void Graph::watch(GuardCondition *g)
{
    std::lock_guard<std::mutex> lk(mu_);
    watchers_.push_back(g);
}

void Graph::unwatch(GuardCondition *g)
{
    std::lock_guard<std::mutex> lk(mu_);
    for (auto it = watchers_.begin(); it != watchers_.end(); ++it)
        if (*it == g) {
            watchers_.erase(it);
            break;
        }
}

size_t Graph::Snapshot::count(Kind kind, const std::string &name) const
{
    size_t c = 0;
    for (const auto &e : eps)
        c += e.kind == kind && e.name == name;
    return c;
}

Graph::Snapshot Graph::snapshot()
{
    std::lock_guard<std::mutex> lk(mu_);
    Snapshot s;
    auto add = [&s](const std::vector<NodeRec> &nodes,
                    const std::vector<Endpoint> &eps) {
        for (const auto &n : nodes)
            s.nodes.push_back(n);
        for (const auto &e : eps) {
            s.eps.push_back(e);
            for (const auto &n : nodes)
                if (n.id == e.node_id) {
                    s.eps.back().node_name = n.name;
                    s.eps.back().node_ns = n.ns;
                }
        }
    };
    add(my_nodes_, my_eps_);
    for (const auto &kv : remote_)
        add(kv.second.nodes, kv.second.eps);
    return s;
}

} // namespace rmw_nerve
