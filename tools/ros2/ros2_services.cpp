// nerve ros2 --services: the services of rmw_nerve's nodes (parameter
// services included) offered to ROS 2 clients on DDS.
//
// WHY FAST DDS. A ROS 2 client on rmw_fastrtps_cpp (ROS 2's default) sends
// a request on "rq/<svc>Request" and takes a reply on "rr/<svc>Reply"; it
// pairs the two by RTPS sample identities carried in the DATA submessage's
// inline QoS: the request's own identity (writer GUID, sequence number) and
// its "related sample identity", whose GUID is the client's reply reader.
// The server must answer with related sample identity = (that reader GUID,
// the request's sequence number), or the client drops the reply
// (rmw_fastrtps_shared_cpp's ClientListener accepts the reader's or the
// request writer's GUID there). Cyclone DDS 0.10's API, which the rest of
// nerve-ros2-dds is written on, can neither read nor write that parameter
// (rmw_cyclonedds instead prefixes the CDR with its own request header,
// which is why the two rmw's services do not talk to each other). So this
// part is a Fast DDS (2.9, Debian's libfastrtps) participant of its own in
// the bridge process, with the request identity in SampleInfo and
// WriteParams as rmw_fastrtps uses them.
//
// WHICH SERVICES. rmw_nerve's graph of domain N (channels
// ros2-graph-dN.uUID, rmw_nerve/src/graph.cpp, FORMAT versions 2 and 3;
// GraphIn below) lists every live process's services ("E V ..." lines:
// name, type pkg/srv/Name, REP 2011 hash). A service is offered while some
// live process serves it and its name matches a --services glob; it is
// withdrawn (its DDS reader and writer deleted, so DDS clients see no
// server) when the last one says goodbye, its process no longer exists, or nothing came from it for kLease.
//
// PAIRING. A request goes into rmw_nerve's "<svc>-req" channel with the
// 32-byte header of rmw_nerve/src/service.cpp: client GID = the 16-byte
// GUID the reply must name, sequence number = the request's RTPS sequence
// number. The server's reply on "<svc>-rep" carries them back; the reply
// thread looks them up among the requests it forwarded (`pending`, at most
// kMaxPending per service, the oldest dropped and counted) and writes the
// reply with that related sample identity. Replies to rmw_nerve's own
// clients are not in `pending` and are left alone. A server killed mid-call
// leaves its requests pending; the DDS client times out (ROS 2 has no
// "server gone" reply) and sees the service withdrawn.
//
// TYPE HASH. A ROS 2 client on DDS says its request message's REP 2011
// hash in its request writer's user data ("typehash=RIHS01_<hex>;", as
// rmw_fastrtps_cpp of Jazzy does); rmw_nerve's graph carries the server's
// request hash. The bridge's request reader says that hash; a DDS client
// whose request writer says another one is reported in one line and its
// requests are refused (dropped and counted): its definition of the
// request differs from the server's. (The graph has no response hash, so
// the reply writer says none.)
//
// BOUNDS. The graph is written by any process that may write its channel,
// so what it can make the bridge hold is bounded: graph messages over
// 1 MiB are skipped (as rmw_nerve does), at most kMaxServices services are
// offered and as many refusals remembered, kMaxPending requests per
// service.
//
// Threads: main (poll: graph, offers, withdrawals), Fast DDS's (request
// listener, discovery listener) and one reply thread per service. `mu`
// guards `services` against the discovery listener; each service's `mu`
// guards its pending table and its request channel handle.

#include "ros2_services.h"

#include <fnmatch.h>
#include <signal.h>
#include <time.h>

#include <atomic>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <fastdds/dds/domain/DomainParticipant.hpp>
#include <fastdds/dds/domain/DomainParticipantFactory.hpp>
#include <fastdds/dds/domain/DomainParticipantListener.hpp>
#include <fastdds/dds/publisher/DataWriter.hpp>
#include <fastdds/dds/publisher/Publisher.hpp>
#include <fastdds/dds/subscriber/DataReader.hpp>
#include <fastdds/dds/subscriber/DataReaderListener.hpp>
#include <fastdds/dds/subscriber/SampleInfo.hpp>
#include <fastdds/dds/subscriber/Subscriber.hpp>
#include <fastdds/rtps/common/WriteParams.h>
#include <fastdds/rtps/transport/UDPv4TransportDescriptor.h>

#include <nerve/nerve.h>

#include "fastdds_raw.hpp"

using namespace eprosima::fastdds::dds;
using eprosima::fastrtps::rtps::GUID_t;
using eprosima::fastrtps::rtps::SampleIdentity;
using eprosima::fastrtps::rtps::SequenceNumber_t;
using eprosima::fastrtps::rtps::WriteParams;
using nerve_fastdds::Bytes;
using nerve_fastdds::RawCdr;

namespace {

const size_t kHdr = 32;                  // rmw_nerve's service message header
const size_t kMaxPending = 1024;         // forwarded requests remembered
const int64_t kLease = 3000000000LL;     // rmw_nerve's 2 s lease + margin
const int64_t kWaitNs = 250000000LL;     // reply thread's longest wait
const int64_t kPendingNs = 600000000000; // a request unanswered 10 min: gone
const size_t kMaxServices = 1024;        // offered at once (graph: untrusted)

ros2_srv_say_fn say;
uint32_t domain;
std::vector<std::string> globs;

int64_t mono_ns()
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return int64_t(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

int64_t real_ns()
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return int64_t(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

// ---- rmw_nerve's graph ---------------------------------------------------

struct SrvInfo {
    std::string type; // pkg/srv/Name
    std::string hash; // the request's "RIHS01_<hex>", or ""
};

struct Ctx {
    long pid = 0;
    int64_t seen_ns = 0;
    std::map<std::string, SrvInfo> services; // by ROS name
};

std::map<std::string, Ctx> ctxs; // by context id

// One graph message: "nerve-rmw-graph V CTX PID live|bye" and its lines
// (versions 2 and 3; 3 adds the deadline's two fields before READY).
// Only the services ("E V ...") matter here; anything that does not parse
// is ignored, as rmw_nerve does (anyone who may write the graph could
// write anything).
void graph_take(const std::string &text)
{
    std::istringstream in(text);
    std::string magic, ctx, state;
    int version = 0;
    long pid = 0;
    if (!(in >> magic >> version >> ctx >> pid >> state) ||
        magic != "nerve-rmw-graph" || (version != 2 && version != 3) ||
        pid <= 0) {
        return;
    }
    if (state == "bye") {
        ctxs.erase(ctx);
        return;
    }
    Ctx c;
    c.pid = pid;
    c.seen_ns = mono_ns();
    std::string line;
    std::getline(in, line);
    while (std::getline(in, line)) {
        std::istringstream l(line);
        std::string tag, kind, node, gid, name, type, hash, x;
        if (!(l >> tag >> kind >> node >> gid >> name >> type) || tag != "E" ||
            kind != "V") {
            continue;
        }
        // The QoS fields and READY: 8 in version 2, 10 in version 3.
        for (int i = 0; i < (version == 3 ? 10 : 8) && (l >> x); i++) {
        }
        if (!(l >> hash)) {
            continue;
        }
        SrvInfo s{type, ""};
        if (hash.size() == 2 + 64 && hash.compare(0, 2, "1:") == 0) {
            s.hash = "RIHS01_" + hash.substr(2);
        }
        c.services[name] = s;
    }
    ctxs[ctx] = c;
}

// One user's graph channel, "ros2-graph-dN.u<UID>" (rmw_nerve writes its
// user's; see "Trusted owners" in docs/ros2.md). The bridge reads its own
// user's and root's, rmw_nerve's default trust, and only while the file is
// owned by that user.
struct GraphIn {
    uint32_t uid;
    nerve_chan *ch = nullptr;
};
std::vector<GraphIn> graphs;

void graph_drain(GraphIn &g)
{
    if (g.ch == nullptr) {
        std::string n = "ros2-graph-d" + std::to_string(domain) + ".u" +
                        std::to_string(g.uid);
        struct nerve_stats st;
        if (nerve_chan_open(n.c_str(), NERVE_O_READ, &g.ch) != 0) {
            g.ch = nullptr;
            return;
        }
        if (nerve_chan_stat(g.ch, &st) != 0 || st.uid != g.uid) {
            nerve_chan_close(g.ch);
            g.ch = nullptr;
            return;
        }
    }
    for (int i = 0; i < 4096; i++) {
        struct nerve_view v;
        int r = nerve_chan_view(g.ch, 0, 0, &v, NERVE_GET_NEXT);
        if (r == NERVE_ESUPERSEDED && nerve_chan_follow(&g.ch) == 0) {
            continue;
        }
        if (r != 0) {
            break;
        }
        if (v.info.len > (1u << 20)) {
            continue; // rmw_nerve's own bound (kMaxGraphMsg)
        }
        std::string text(static_cast<const char *>(v.data), v.info.len);
        if (nerve_chan_view_check(g.ch, &v) == 0) {
            graph_take(text);
        }
    }
}

void graph_read()
{
    if (graphs.empty()) {
        graphs.push_back({uint32_t(geteuid())});
        if (geteuid() != 0) {
            graphs.push_back({0});
        }
    }
    for (GraphIn &g : graphs) {
        graph_drain(g);
    }
    int64_t now = mono_ns();
    for (auto it = ctxs.begin(); it != ctxs.end();) {
        bool dead = kill(pid_t(it->second.pid), 0) != 0 && errno == ESRCH;
        if (dead || now - it->second.seen_ns > kLease) {
            it = ctxs.erase(it);
        } else {
            ++it;
        }
    }
}

// ---- one bridged service ---------------------------------------------------

struct Pending {
    SampleIdentity reply_id;
    int64_t at_ns = 0;
};

struct Service;
struct RequestListener : DataReaderListener {
    Service *s;
    explicit RequestListener(Service *sv) : s(sv)
    {
    }
    void on_data_available(DataReader *rd) override;
};

struct Service {
    std::string name, type, hash, req_chan, rep_chan;
    nerve_chan *req = nullptr, *rep = nullptr;
    TypeSupport req_ts, rep_ts;
    Topic *rq = nullptr, *rr = nullptr;
    DataReader *rd = nullptr;
    DataWriter *wr = nullptr;
    std::unique_ptr<RequestListener> listener;
    std::thread th;
    std::atomic<bool> quit{false};
    std::mutex mu;
    std::map<std::pair<std::string, int64_t>, Pending> pending;
    std::set<std::string> refused; // request writers of another type hash
    std::atomic<uint64_t> requests{0}, replies{0}, dropped{0}, refused_n{0},
        errors{0};
    int said_error = 0;
};

DomainParticipant *pp;
Publisher *pub;
Subscriber *sub;
std::mutex mu; // guards `services` against the discovery listener
std::map<std::string, std::unique_ptr<Service>> services;

std::string guid_key(const GUID_t &g)
{
    return std::string(reinterpret_cast<const char *>(g.guidPrefix.value), 12) +
           std::string(reinterpret_cast<const char *>(g.entityId.value), 4);
}

std::string guid_text(const GUID_t &g)
{
    std::ostringstream o;
    o << g;
    return o.str();
}

// Forgets (and counts) the oldest pending requests: up to `n` of those
// forwarded before `before_ns`. Called with s->mu held; O(pending), which
// kMaxPending bounds.
void pending_drop(Service *s, int64_t before_ns, size_t n)
{
    while (n-- > 0) {
        auto oldest = s->pending.end();
        for (auto it = s->pending.begin(); it != s->pending.end(); ++it) {
            if (oldest == s->pending.end() ||
                it->second.at_ns < oldest->second.at_ns) {
                oldest = it;
            }
        }
        if (oldest == s->pending.end() || oldest->second.at_ns >= before_ns) {
            return;
        }
        s->pending.erase(oldest);
        s->dropped++;
    }
}

void RequestListener::on_data_available(DataReader *rd)
{
    Bytes b;
    SampleInfo info;
    while (rd->take_next_sample(&b, &info) == ReturnCode_t::RETCODE_OK) {
        if (!info.valid_data) {
            continue;
        }
        s->requests++;
        GUID_t writer = info.sample_identity.writer_guid();
        {
            std::lock_guard<std::mutex> lk(s->mu);
            if (s->refused.count(guid_key(writer))) {
                if (s->refused_n++ == 0) {
                    say("service %s: a request of a client with another type "
                        "hash refused (all such are counted)",
                        s->name.c_str());
                }
                continue;
            }
        }
        // Replies name the client's reply reader when the request says it
        // (rmw_fastrtps does), else the request's writer.
        GUID_t to = info.related_sample_identity.writer_guid();
        if (to == GUID_t::unknown()) {
            to = writer;
        }
        int64_t seq = info.sample_identity.sequence_number().to64long();
        std::string msg(kHdr + b.size(), '\0');
        std::string key = guid_key(to);
        int64_t now = real_ns();
        memcpy(&msg[0], key.data(), 16);
        memcpy(&msg[16], &seq, 8);
        memcpy(&msg[24], &now, 8);
        memcpy(&msg[kHdr], b.data(), b.size());
        std::lock_guard<std::mutex> lk(s->mu);
        auto k = std::make_pair(key, seq);
        if (s->pending.size() >= kMaxPending) {
            pending_drop(s, INT64_MAX, 1);
        }
        Pending &p = s->pending[k];
        p.at_ns = mono_ns();
        p.reply_id.writer_guid(to);
        p.reply_id.sequence_number(
            SequenceNumber_t(int32_t(seq >> 32), uint32_t(seq)));
        int r = nerve_chan_put(s->req, msg.data(), msg.size(), 100000000LL,
                               nullptr, 0);
        if (r == NERVE_ESUPERSEDED && nerve_chan_follow(&s->req) == 0) {
            // An rmw_nerve client grew the channel: put into its successor.
            r = nerve_chan_put(s->req, msg.data(), msg.size(), 100000000LL,
                               nullptr, 0);
        }
        if (r != 0) {
            s->pending.erase(k);
            s->errors++;
            if (!s->said_error++) {
                say("error: service %s: request of %zu bytes not passed to "
                    "%s: %s",
                    s->name.c_str(), msg.size(), s->req_chan.c_str(),
                    nerve_strerror(r));
            }
        }
    }
}

// The reply thread: every reply on "<svc>-rep" that answers a forwarded
// request goes to DDS with the request's identity.
void reply_run(Service *s)
{
    while (!s->quit.load()) {
        struct nerve_view v;
        int r = nerve_chan_view(s->rep, 0, kWaitNs, &v,
                                NERVE_GET_NEXT | NERVE_F_WAIT);
        if (r == NERVE_ETIMEDOUT || r == NERVE_EAGAIN) {
            continue;
        }
        if (r == NERVE_ECANCELED) {
            break;
        }
        if (r == NERVE_ESUPERSEDED) {
            std::lock_guard<std::mutex> lk(s->mu); // against ros2_srv_stop
            if (!s->quit.load() && nerve_chan_follow(&s->rep) == 0) {
                continue;
            }
        }
        if (r != 0) {
            say("service %s: reply channel %s: %s", s->name.c_str(),
                s->rep_chan.c_str(), nerve_strerror(r));
            struct timespec ts = {0, kWaitNs};
            nanosleep(&ts, nullptr);
            continue;
        }
        if (v.info.len < kHdr + 4) {
            continue;
        }
        const auto *d = static_cast<const unsigned char *>(v.data);
        std::string key(reinterpret_cast<const char *>(d), 16);
        int64_t seq;
        memcpy(&seq, d + 16, 8);
        Bytes b(d + kHdr, d + v.info.len);
        if (nerve_chan_view_check(s->rep, &v) != 0) {
            continue; // overwritten while copied
        }
        Pending p;
        {
            std::lock_guard<std::mutex> lk(s->mu);
            auto it = s->pending.find(std::make_pair(key, seq));
            if (it == s->pending.end()) {
                continue; // a reply to a client on nerve
            }
            p = it->second;
            s->pending.erase(it);
        }
        WriteParams wp;
        wp.related_sample_identity(p.reply_id);
        if (s->wr->write(&b, wp)) {
            s->replies++;
        } else {
            s->errors++;
        }
    }
}

template <class Q> void service_qos(Q &q, const std::string &hash)
{
    // ROS 2's services profile: reliable, volatile, keep last 10.
    q.reliability().kind = RELIABLE_RELIABILITY_QOS;
    q.durability().kind = VOLATILE_DURABILITY_QOS;
    q.history().kind = KEEP_LAST_HISTORY_QOS;
    q.history().depth = 10;
    q.endpoint().history_memory_policy =
        eprosima::fastrtps::rtps::DYNAMIC_REUSABLE_MEMORY_MODE;
    if (!hash.empty()) {
        std::string ud = "typehash=" + hash + ";";
        q.user_data().data_vec(
            std::vector<eprosima::fastrtps::rtps::octet>(ud.begin(), ud.end()));
    }
}

// "/a/b" in domain N -> "ros2-dN.a.b<suffix>" (rmw_nerve/src/names.cpp).
std::string channel_of(const std::string &name, const char *suffix)
{
    std::string s = domain ? "ros2-d" + std::to_string(domain) + "." : "";
    size_t i = 0;
    while (i < name.size() && name[i] == '/') {
        i++;
    }
    for (; i < name.size(); i++) {
        s += name[i] == '/' ? '.' : name[i];
    }
    return s + suffix;
}

// "pkg/srv/Name" -> "pkg::srv::dds_::Name<part>_" (and an action's
// services, "pkg/action/Name_SendGoal"), or "" if not a service type.
std::string dds_type(const std::string &type, const char *part)
{
    size_t a = type.find('/');
    size_t b = a == std::string::npos ? a : type.find('/', a + 1);
    if (a == 0 || b == std::string::npos || b + 1 == type.size() ||
        type.find('/', b + 1) != std::string::npos) {
        return "";
    }
    std::string kind = type.substr(a + 1, b - a - 1);
    if (kind != "srv" && kind != "action") {
        return "";
    }
    return type.substr(0, a) + "::" + kind + "::dds_::" + type.substr(b + 1) +
           part + "_";
}

void service_free(Service *s)
{
    if (s->th.joinable()) {
        {
            std::lock_guard<std::mutex> lk(s->mu);
            s->quit = true;
            nerve_chan_cancel(s->rep);
        }
        s->th.join();
    }
    if (s->rd) {
        sub->delete_datareader(s->rd); // waits for a running listener
    }
    if (s->wr) {
        pub->delete_datawriter(s->wr);
    }
    if (s->rq) {
        pp->delete_topic(s->rq);
    }
    if (s->rr) {
        pp->delete_topic(s->rr);
    }
    (void)nerve_chan_close(s->req);
    (void)nerve_chan_close(s->rep);
}

// Offers service `name`: its channels, DDS endpoints and reply thread.
// Nullptr with the reason said (once: the caller remembers the refusal).
std::unique_ptr<Service> service_open(const std::string &name,
                                      const SrvInfo &si)
{
    auto s = std::make_unique<Service>();
    s->name = name;
    s->type = si.type;
    s->hash = si.hash;
    s->req_chan = channel_of(name, "-req");
    s->rep_chan = channel_of(name, "-rep");
    std::string tq = dds_type(si.type, "_Request"),
                tr = dds_type(si.type, "_Response");
    if (tq.empty()) {
        say("error: service %s: type '%s' is not a ROS 2 service type; not "
            "offered",
            name.c_str(), si.type.c_str());
        return nullptr;
    }
    int r = nerve_chan_open(s->req_chan.c_str(), NERVE_O_WRITE, &s->req);
    if (r == 0) {
        r = nerve_chan_open(s->rep_chan.c_str(), NERVE_O_READ, &s->rep);
    }
    if (r != 0) {
        say("error: service %s: channels %s / %s: %s; not offered",
            name.c_str(), s->req_chan.c_str(), s->rep_chan.c_str(),
            nerve_strerror(r));
        (void)nerve_chan_close(s->req);
        return nullptr;
    }
    struct nerve_stats st;
    if (nerve_chan_stat(s->rep, &st) == 0) {
        nerve_chan_seek(s->rep, st.head_seq); // replies from now on
    }
    s->req_ts = TypeSupport(new RawCdr(tq));
    s->rep_ts = TypeSupport(new RawCdr(tr));
    s->req_ts.register_type(pp);
    s->rep_ts.register_type(pp);
    s->rq = pp->create_topic("rq" + name + "Request", tq, TOPIC_QOS_DEFAULT);
    s->rr = pp->create_topic("rr" + name + "Reply", tr, TOPIC_QOS_DEFAULT);
    DataReaderQos rq = DATAREADER_QOS_DEFAULT;
    DataWriterQos wq = DATAWRITER_QOS_DEFAULT;
    service_qos(rq, si.hash);
    service_qos(wq, "");
    s->listener = std::make_unique<RequestListener>(s.get());
    if (s->rq && s->rr) {
        s->wr = pub->create_datawriter(s->rr, wq);
        s->rd = sub->create_datareader(s->rq, rq, s->listener.get());
    }
    if (!s->wr || !s->rd) {
        say("error: service %s: no DDS endpoints (topic rq%sRequest of type "
            "%s); not offered",
            name.c_str(), name.c_str(), tq.c_str());
        service_free(s.get());
        return nullptr;
    }
    s->th = std::thread(reply_run, s.get());
    say("service %s [%s] offered to DDS%s", name.c_str(), si.type.c_str(),
        si.hash.empty() ? " (no type hash known)" : "");
    return s;
}

void service_summary(const Service *s)
{
    say("service %s: %" PRIu64 " requests, %" PRIu64 " replies, %" PRIu64
        " unanswered dropped, %" PRIu64 " refused (type hash), %" PRIu64
        " errors",
        s->name.c_str(), s->requests.load(), s->replies.load(),
        s->dropped.load(), s->refused_n.load(), s->errors.load());
}

bool wanted(const std::string &name)
{
    for (const auto &g : globs) {
        if (fnmatch(g.c_str(), name.c_str(), 0) == 0) {
            return true;
        }
    }
    return false;
}

// A DDS request writer discovered: one of another type hash is refused.
struct Discovery : DomainParticipantListener {
    void on_publisher_discovery(
        DomainParticipant *,
        eprosima::fastrtps::rtps::WriterDiscoveryInfo &&info) override
    {
        if (info.status !=
            eprosima::fastrtps::rtps::WriterDiscoveryInfo::DISCOVERED_WRITER) {
            return;
        }
        std::string topic = info.info.topicName().to_string();
        const auto &ud = info.info.m_qos.m_userData;
        std::string u(ud.begin(), ud.end());
        size_t a = u.find("typehash=");
        if (a == std::string::npos) {
            return;
        }
        size_t e = u.find(';', a);
        std::string h = u.substr(a + 9, e == std::string::npos ? e : e - a - 9);
        std::lock_guard<std::mutex> lk(mu);
        for (auto &kv : services) {
            Service *s = kv.second.get();
            if (topic != "rq" + s->name + "Request" || s->hash.empty() ||
                h == s->hash) {
                continue;
            }
            std::lock_guard<std::mutex> sl(s->mu);
            // Bounded: past kMaxPending such clients, later ones are not
            // refused (only told of).
            if (s->refused.size() >= kMaxPending ||
                s->refused.insert(guid_key(info.info.guid())).second) {
                say("error: type hash mismatch on service %s [%s]: client %s "
                    "has %s, the server %s; its requests are refused",
                    s->name.c_str(), s->type.c_str(),
                    guid_text(info.info.guid()).c_str(), h.c_str(),
                    s->hash.c_str());
            }
        }
    }
};
Discovery discovery;
std::set<std::string> refused_names; // not offered: said once

} // namespace

extern "C" int ros2_srv_start(uint32_t dom, const char *const *g, size_t n,
                              ros2_srv_say_fn sayf)
{
    say = sayf;
    domain = dom;
    for (size_t i = 0; i < n; i++) {
        globs.emplace_back(g[i]);
    }
    // The default participant QoS of the Fast DDS XML profiles
    // (FASTRTPS_DEFAULT_PROFILES_FILE), as every Fast DDS node takes it.
    auto *factory = DomainParticipantFactory::get_instance();
    DomainParticipantQos q;
    (void)factory->load_profiles();
    (void)factory->get_default_participant_qos(q);
    if (!getenv("FASTRTPS_DEFAULT_PROFILES_FILE") &&
        !getenv("FASTDDS_DEFAULT_PROFILES_FILE")) {
        // UDP only: Fast DDS's shared-memory transport is not compatible
        // across its versions (this is 2.9, ROS 2's nodes have their own),
        // and a locator offered but unusable delays matching.
        q.transport().use_builtin_transports = false;
        q.transport().user_transports.push_back(
            std::make_shared<
                eprosima::fastdds::rtps::UDPv4TransportDescriptor>());
    }
    q.name("nerve_ros2_services");
    std::string enclave = "enclave=/;";
    q.user_data().data_vec(std::vector<eprosima::fastrtps::rtps::octet>(
        enclave.begin(), enclave.end()));
    StatusMask mask = StatusMask::none();
    pp = factory->create_participant(DomainId_t(dom), q, &discovery, mask);
    if (pp) {
        pub = pp->create_publisher(PUBLISHER_QOS_DEFAULT);
        sub = pp->create_subscriber(SUBSCRIBER_QOS_DEFAULT);
    }
    if (!pp || !pub || !sub) {
        say("error: --services: no Fast DDS participant on domain %u (check "
            "FASTRTPS_DEFAULT_PROFILES_FILE)",
            dom);
        return -1;
    }
    say("services matching %zu glob(s) of rmw_nerve's domain %u offered "
        "through Fast DDS",
        n, dom);
    return 0;
}

extern "C" void ros2_srv_poll(void)
{
    if (!pp) {
        return;
    }
    graph_read();
    std::map<std::string, SrvInfo> want;
    for (const auto &c : ctxs) {
        for (const auto &kv : c.second.services) {
            if (wanted(kv.first)) {
                want.emplace(kv.first, kv.second);
            }
        }
    }
    std::vector<std::unique_ptr<Service>> gone;
    {
        std::lock_guard<std::mutex> lk(mu);
        for (auto it = services.begin(); it != services.end();) {
            if (!want.count(it->first)) {
                gone.push_back(std::move(it->second));
                it = services.erase(it);
            } else {
                ++it;
            }
        }
    }
    for (auto &s : gone) {
        service_free(s.get());
        say("service %s: no server left on nerve; withdrawn from DDS",
            s->name.c_str());
        service_summary(s.get());
    }
    for (const auto &kv : want) {
        if (services.count(kv.first)) {
            continue;
        }
        if (services.size() >= kMaxServices) {
            static bool said;
            if (!said) {
                said = true;
                say("error: --services: more than %zu services match; the "
                    "others are not offered",
                    kMaxServices);
            }
            break;
        }
        std::string tag = kv.first + " " + kv.second.type;
        if (refused_names.count(tag) || refused_names.size() >= kMaxServices) {
            continue; // said once; or too many refused to remember more
        }
        auto s = service_open(kv.first, kv.second);
        if (!s) {
            refused_names.insert(tag);
            continue;
        }
        std::lock_guard<std::mutex> lk(mu);
        services[kv.first] = std::move(s);
    }
    // Requests unanswered for kPendingNs are forgotten (their client gave
    // up long ago).
    int64_t now = mono_ns();
    for (auto &kv : services) {
        Service *s = kv.second.get();
        std::lock_guard<std::mutex> lk(s->mu);
        pending_drop(s, now - kPendingNs, kMaxPending);
    }
}

extern "C" void ros2_srv_stop(void)
{
    if (!pp) {
        return;
    }
    std::map<std::string, std::unique_ptr<Service>> all;
    {
        std::lock_guard<std::mutex> lk(mu);
        all.swap(services);
    }
    for (auto &kv : all) {
        service_free(kv.second.get());
        service_summary(kv.second.get());
    }
    all.clear();
    pp->delete_contained_entities();
    DomainParticipantFactory::get_instance()->delete_participant(pp);
    pp = nullptr;
    for (GraphIn &g : graphs) {
        (void)nerve_chan_close(g.ch);
    }
    graphs.clear();
}
