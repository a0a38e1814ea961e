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
// nerve-ros2-dds is written on, can neither read nor write that parameter.
// So this part is a Fast DDS (2.9, Debian's libfastrtps) participant of its
// own in the bridge process, with the request identity in SampleInfo and
// WriteParams as rmw_fastrtps uses them. rmw_cyclonedds_cpp pairs its
// calls another way, which the bridge speaks too (RMW_CYCLONEDDS below).
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
// THE OTHER WAY (--services-from-ros GLOB, "FROM DDS" below): a
// service served on DDS is served on nerve to rmw_nerve clients.
//
// RMW_CYCLONEDDS. rmw_cyclonedds_cpp (Jazzy branch of ros2/rmw_cyclonedds)
// does not use the sample identity; it carries the pairing in the payload.
// The facts relied on, and where they are defined there:
//  - Payload of every request and reply: the 4-byte CDR encapsulation
//    header, then a 16-byte request header {uint64 guid; int64 seq}, then
//    the message's CDR body (src/serdata.hpp, cdds_request_header_t;
//    src/Serialization.cpp, serialize_top_level(cursor, const
//    cdds_request_wrapper_t &): put_rtps_header, then put_bytes of guid and
//    seq, then the body, alignment counted from after the encapsulation).
//    guid and seq are put as the host's bytes, and the encapsulation says
//    the host's byte order; the body stays 8-aligned after the header.
//  - A client's request says guid = its request writer's instance handle
//    and seq = a process-wide counter (src/rmw_node.cpp, rmw_send_request);
//    a server copies both into its reply (rmw_send_response, via
//    rmw_take_response_request's writer_guid), and a client takes only the
//    replies whose guid is its own (rmw_take_response's srcfilter).
//  - A client's request writer and reply reader say "clientid=<id>;" in
//    their USER_DATA, a service's request reader and reply writer
//    "serviceid=<id>;", beside "typehash=RIHS01_<hex>;" (rmw_node.cpp,
//    rmw_init_cs, create_readwrite_qos). A server sends its reply to a
//    request writer without "clientid" at once
//    (check_for_response_reader); a client with no matched "serviceid"
//    reader calls a server available once it has matched a request reader
//    and a reply writer (rmw_service_server_is_available): the bridge's
//    endpoints need no such key.
// So: a request from a writer that says "clientid=" (the discovery listener
// keeps every request writer's kind, `req_writers`) is split (the header
// kept in its pending entry, keyed by the writer's GUID and the header's
// seq) and its reply gets the header back, in the reply's byte order. A
// DDS server whose request reader says "serviceid=" is called with a
// header (guid: 8 random bytes of the bridge's own, seq: its own counter)
// and its replies are paired by that header, not the sample identity. A
// payload too short for the header, or of an encapsulation other than
// plain CDR/XCDR2 (whose byte order the header needs), is dropped with one
// line per service and counted ("malformed" in the summary).
//
// Threads: main (poll: graph, offers, withdrawals), Fast DDS's (request
// and reply listeners, discovery listener), one reply thread per service
// offered to DDS and one request thread per service served from DDS. `mu`
// guards `services` against the discovery listener; each service's `mu`
// guards its pending table and its request channel handle.

#include "ros2_services.h"

#include <fnmatch.h>
#include <signal.h>
#include <time.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cinttypes>
#include <condition_variable>
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

// One endpoint of a node, for the DDS graph (ros2_graph.c): kind 'P',
// 'S', 'V' or 'C' and its ROS name.
struct NodeEp {
    char kind;
    std::string node_id, name;
};

struct Ctx {
    long pid = 0;
    int64_t seen_ns = 0;
    std::map<std::string, SrvInfo> services;    // by ROS name
    std::map<std::string, std::string> clients; // GID hex (32) -> hash or ""
    // The nodes: id -> namespace, name.
    std::map<std::string, std::pair<std::string, std::string>> nodes;
    std::vector<NodeEp> eps;
};

std::map<std::string, Ctx> ctxs; // by context id
std::string own_ctx;             // this bridge's graph context (FROM DDS), hex

// One graph message: "nerve-rmw-graph V CTX PID live|bye" and its lines
// (versions 2 and 3; 3 adds the deadline's two fields before READY).
// The services ("E V ...") and clients matter here; the nodes ("N ...")
// and every endpoint's kind and name, for the DDS graph (ros2_graph.c).
// Anything that does not parse is ignored, as rmw_nerve does (anyone who
// may write the graph could write anything).
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
    if (ctx == own_ctx) {
        return; // this bridge's own services from DDS (FROM DDS below)
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
        if (line.compare(0, 2, "N ") == 0) {
            std::string id, ns;
            if (l >> tag >> id >> name >> ns) {
                c.nodes[id] = {ns, name};
            }
            continue;
        }
        if (!(l >> tag >> kind >> node >> gid >> name >> type) || tag != "E" ||
            kind.size() != 1) {
            continue;
        }
        c.eps.push_back({kind[0], node, name});
        if (kind != "V" && kind != "C") {
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
        if (kind == "C") {
            c.clients[gid.substr(0, 32)] = s.hash; // the header's 16 bytes
        } else {
            c.services[name] = s;
        }
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

// rmw_nerve's clients' request hashes (GID hex -> "RIHS01_<hex>" or ""),
// a copy of ctxs' made by the main thread on every graph_read for the
// request threads of FROM DDS; `cli_gen` counts the copies.
std::mutex cli_mu;
std::condition_variable cli_cv;
std::map<std::string, std::string> cli_hash;
uint64_t cli_gen = 0;

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
    std::map<std::string, std::string> all;
    for (const auto &c : ctxs) {
        all.insert(c.second.clients.begin(), c.second.clients.end());
    }
    {
        std::lock_guard<std::mutex> lk(cli_mu);
        cli_hash.swap(all);
        cli_gen++;
    }
    cli_cv.notify_all();
}

// ---- rmw_cyclonedds's request header (RMW_CYCLONEDDS above) -------------

const size_t kEncap = 4;   // the CDR encapsulation header
const size_t kCycHdr = 16; // {uint64 guid; int64 seq}, after the encapsulation

struct CycHdr {
    unsigned char guid[8] = {};
    int64_t seq = 0;
};

// Whether an endpoint's USER_DATA ("k=v;k=v;...", as rmw's
// parse_key_value reads it) has the key `key`.
template <class UserData> bool ud_has(const UserData &ud, const char *key)
{
    std::string u(ud.begin(), ud.end()), k = std::string(key) + "=";
    for (size_t a = 0; a < u.size();) {
        if (u.compare(a, k.size(), k) == 0) {
            return true;
        }
        size_t e = u.find(';', a);
        a = e == std::string::npos ? u.size() : e + 1;
    }
    return false;
}

// The byte order an encapsulation says: 1 little endian, 0 big endian
// (plain CDR 0x0000/0x0001, XCDR2 0x0006/0x0007), -1 another or none.
int encap_le(const Bytes &b)
{
    if (b.size() < kEncap || b[0] != 0) {
        return -1;
    }
    switch (b[1]) {
    case 0:
    case 6: return 0;
    case 1:
    case 7: return 1;
    default: return -1;
    }
}

int64_t seq_load(const unsigned char *p, int le)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++) {
        v |= uint64_t(p[le ? i : 7 - i]) << (8 * i);
    }
    return int64_t(v);
}

// Splits rmw_cyclonedds's payload into its header and the plain CDR
// (encapsulation and body) rmw_nerve carries; nullptr, or what is wrong.
const char *cyc_split(const Bytes &b, CycHdr *h, Bytes *plain)
{
    int le = encap_le(b);
    if (b.size() < kEncap + kCycHdr) {
        return "shorter than rmw_cyclonedds's request header";
    }
    if (le < 0) {
        return "an encapsulation of unknown byte order";
    }
    memcpy(h->guid, b.data() + kEncap, 8);
    h->seq = seq_load(b.data() + kEncap + 8, le);
    plain->assign(b.begin(), b.begin() + kEncap);
    plain->insert(plain->end(), b.begin() + kEncap + kCycHdr, b.end());
    return nullptr;
}

// The other way: plain CDR with header `h` put in, in its byte order.
const char *cyc_join(const Bytes &plain, const CycHdr &h, Bytes *out)
{
    int le = encap_le(plain);
    if (le < 0) {
        return "an encapsulation of unknown byte order";
    }
    out->assign(plain.begin(), plain.begin() + kEncap);
    out->insert(out->end(), h.guid, h.guid + 8);
    for (int i = 0; i < 8; i++) {
        out->push_back(
            (unsigned char)(uint64_t(h.seq) >> (8 * (le ? i : 7 - i))));
    }
    out->insert(out->end(), plain.begin() + kEncap, plain.end());
    return nullptr;
}

// ---- one bridged service ---------------------------------------------------

struct Pending {
    SampleIdentity reply_id;
    int64_t at_ns = 0;
    bool cyc = false; // an rmw_cyclonedds client's: its header is `hdr`
    CycHdr hdr;
};

struct Service;
struct RequestListener : DataReaderListener {
    Service *s;
    explicit RequestListener(Service *sv) : s(sv)
    {
    }
    void on_data_available(DataReader *rd) override;
};

// What a bridged service holds in either direction: its names and type,
// its two nerve channels, its DDS topics and endpoints, the thread that
// reads one of the channels. Service (DDS clients, nerve server) and
// RevService (nerve clients, DDS server) add their own; ends_free() ends
// both.
struct ServiceEnds {
    std::string name, type, hash, req_chan, rep_chan;
    nerve_chan *req = nullptr, *rep = nullptr;
    TypeSupport req_ts, rep_ts;
    Topic *rq = nullptr, *rr = nullptr;
    DataReader *rd = nullptr;
    DataWriter *wr = nullptr;
    std::thread th;
    std::atomic<bool> quit{false};
    std::mutex mu;
};

struct Service : ServiceEnds {
    std::unique_ptr<RequestListener> listener;
    std::map<std::pair<std::string, int64_t>, Pending> pending;
    std::set<std::string> refused; // request writers of another type hash
    std::atomic<uint64_t> requests{0}, replies{0}, dropped{0}, refused_n{0},
        errors{0}, malformed{0};
    int said_error = 0;
};

DomainParticipant *pp;
Publisher *pub;
Subscriber *sub;
std::mutex mu; // guards `services` against the discovery listener
std::map<std::string, std::unique_ptr<Service>> services;
// Every remote request writer ("rq...Request") discovered, by GUID key:
// true when it says "clientid=" (rmw_cyclonedds's); under `mu`, at most
// kMaxWriters (past that, later writers are taken as rmw_fastrtps's).
const size_t kMaxWriters = 4096;
std::map<std::string, bool> req_writers;
std::condition_variable req_writers_cv;

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

// Whether request writer `key` is rmw_cyclonedds's. Its first sample may
// come before the discovery listener told of it: up to 200 ms for that.
bool writer_is_cyc(const std::string &key)
{
    std::unique_lock<std::mutex> lk(mu);
    auto it = req_writers.find(key);
    if (it == req_writers.end() && req_writers.size() < kMaxWriters) {
        req_writers_cv.wait_for(lk, std::chrono::milliseconds(200), [&] {
            return (it = req_writers.find(key)) != req_writers.end();
        });
    }
    return it != req_writers.end() && it->second;
}

// A malformed rmw_cyclonedds payload: said once per service, all counted.
void say_malformed(std::atomic<uint64_t> &n, const std::string &svc,
                   const char *what, size_t len, const char *why)
{
    if (n++ == 0) {
        say("error: service %s: %s of %zu bytes is %s; dropped (all such "
            "are counted)",
            svc.c_str(), what, len, why);
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
        // (rmw_fastrtps does), else the request's writer; an
        // rmw_cyclonedds request is keyed by its writer and header's seq.
        GUID_t to = info.related_sample_identity.writer_guid();
        if (to == GUID_t::unknown()) {
            to = writer;
        }
        int64_t seq = info.sample_identity.sequence_number().to64long();
        Pending p;
        if (writer_is_cyc(guid_key(writer))) {
            Bytes plain;
            const char *why = cyc_split(b, &p.hdr, &plain);
            if (why) {
                say_malformed(s->malformed, s->name,
                              "an rmw_cyclonedds request", b.size(), why);
                continue;
            }
            p.cyc = true;
            to = writer;
            seq = p.hdr.seq;
            b.swap(plain);
        }
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
        p.at_ns = mono_ns();
        p.reply_id.writer_guid(to);
        p.reply_id.sequence_number(
            SequenceNumber_t(int32_t(seq >> 32), uint32_t(seq)));
        s->pending[k] = p;
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
        bool ok;
        if (p.cyc) { // the header back, no sample identity
            Bytes out;
            const char *why = cyc_join(b, p.hdr, &out);
            if (why) {
                say_malformed(s->malformed, s->name, "a reply from nerve",
                              b.size(), why);
                continue;
            }
            ok = s->wr->write(&out);
        } else {
            WriteParams wp;
            wp.related_sample_identity(p.reply_id);
            ok = s->wr->write(&b, wp);
        }
        if (ok) {
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

// Stops a service's thread (cancelling its wait on `waited`, the channel
// it reads), then deletes its DDS entities and closes its channels.
void ends_free(ServiceEnds *s, nerve_chan *waited)
{
    if (s->th.joinable()) {
        {
            std::lock_guard<std::mutex> lk(s->mu);
            s->quit = true;
            nerve_chan_cancel(waited);
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

void service_free(Service *s)
{
    ends_free(s, s->rep);
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
        " errors, %" PRIu64 " malformed",
        s->name.c_str(), s->requests.load(), s->replies.load(),
        s->dropped.load(), s->refused_n.load(), s->errors.load(),
        s->malformed.load());
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

// ---- FROM DDS: services served on DDS, served on nerve ---------------------
//
// DISCOVERY. A ROS 2 server on DDS has a request reader on
// "rq<svc>Request" and a reply writer on "rr<svc>Reply", of types
// "pkg::srv::dds_::Name_Request_" / "_Response_" (an action's services:
// "pkg::action::dds_::Name_SendGoal_Request_" ...); rmw_fastrtps says the
// request's REP 2011 hash in the reader's user data ("typehash=..."). The
// discovery listener keeps, per service name matching a
// --services-from-ros glob, the remote readers and writers seen (this
// participant's own are not remote); a service is served on nerve while
// it has at least one of each, and its endpoints have matched them.
//
// ON NERVE the bridge is an rmw_nerve server: it makes "<svc>-req" and
// "<svc>-rep" as rmw_nerve_cpp does (service.cpp: type
// "pkg/srv/Name_Request" ..., encoding "rmw_nerve-service" for a /srv/
// type, "cdr" otherwise, 64 slots of 256 KiB), and it announces the
// service in rmw_nerve's graph ("ros2-graph-dN.u<UID>", its user's) as a
// context of its own: a node "nerve_ros2_services" and one "E V" line per
// service with the request's hash, published on every change and every
// poll (500 ms, within rmw_nerve's 2 s lease), "bye" at the end. The
// forward direction ignores this context, and a service that an rmw_nerve
// process serves itself is not served again from DDS.
//
// PAIRING. A request on "<svc>-req" (header: client GID, client sequence
// number) is written to DDS with related sample identity = the bridge's
// reply reader (as rmw_fastrtps's clients do); the write gives it its RTPS
// sequence number, under which `back` remembers the nerve client's GID and
// sequence number (at most kMaxPending, the oldest dropped and counted).
// A DDS reply whose related sample identity names the bridge's reader or
// writer and a remembered sequence number goes to "<svc>-rep" with that
// header; the rmw_nerve client takes what its GID names. Replies to other
// DDS clients are on the same topic and are left alone.
//
// SERVER GONE. When the DDS server's endpoints go (its participant left
// or its lease ran out), the service is withdrawn from the graph: an
// rmw_nerve client sees no server (rmw_service_server_is_available false,
// rmw_send_request refused) and its call in flight gets no reply; the
// bridge says how many were unanswered.
//
// ACTIONS are three services (<action>/_action/send_goal, cancel_goal,
// get_result) and two topics; rclpy's wait_for_server() also wants
// publishers of <action>/_action/feedback and /status. The bridge's own
// --from-ros imports of them into rmw_nerve's channels (`imports`) are
// named as such publishers in its graph message while the action's
// send_goal is served.

struct RevBack {
    unsigned char gid[16];
    int64_t seq = 0;
    int64_t at_ns = 0;
};

struct RevRemote {
    std::string type, hash;        // pkg/srv/Name; "RIHS01_<hex>" or ""
    std::set<std::string> readers; // rq...Request readers (GUID keys)
    std::set<std::string> writers; // rr...Reply writers
    bool cyc = false; // a reader said "serviceid=": rmw_cyclonedds's header
};

struct RevService;
struct ReplyListener : DataReaderListener {
    RevService *s;
    explicit ReplyListener(RevService *sv) : s(sv)
    {
    }
    void on_data_available(DataReader *rd) override;
};

struct RevService : ServiceEnds { // mu guards back and rep
    GUID_t wr_guid, rd_guid;
    std::unique_ptr<ReplyListener> listener;
    bool served = false; // announced in the graph
    unsigned char gid[16];
    bool cyc = false; // requests carry rmw_cyclonedds's header: guid `cguid`
    unsigned char cguid[8];
    int64_t cseq = 0; // the header's last seq; under mu
    std::map<int64_t, RevBack> back;
    std::atomic<uint64_t> requests{0}, replies{0}, dropped{0}, errors{0};
    std::atomic<uint64_t> refused{0}, malformed{0};
    int said_error = 0;
    // Request thread only: clients refused (said once), clients not in
    // the graph (waited for once); each at most kMaxPending.
    std::set<std::string> refused_gids, unknown_gids;
};

std::vector<std::string> from_globs;
std::set<std::string> imports; // --from-ros topics, into rmw_nerve's channels
std::map<std::string, RevRemote> remotes;                // by name; under `mu`
std::map<std::string, std::unique_ptr<RevService>> revs; // main thread only
std::set<std::string> rev_refused; // "name type": said once
nerve_chan *graph_out = nullptr;
bool graph_out_said = false;

bool wanted_from(const std::string &name)
{
    for (const auto &g : from_globs) {
        if (fnmatch(g.c_str(), name.c_str(), 0) == 0) {
            return true;
        }
    }
    return false;
}

std::string hex_of(const unsigned char *p, size_t n)
{
    static const char d[] = "0123456789abcdef";
    std::string s;
    for (size_t i = 0; i < n; i++) {
        s += d[p[i] >> 4];
        s += d[p[i] & 15];
    }
    return s;
}

// "typehash=RIHS01_<hex>;" of an endpoint's user data, or "".
template <class UserData> std::string user_hash(const UserData &ud)
{
    std::string u(ud.begin(), ud.end());
    size_t a = u.find("typehash=");
    if (a == std::string::npos) {
        return "";
    }
    size_t e = u.find(';', a);
    return u.substr(a + 9, e == std::string::npos ? e : e - a - 9);
}

// "pkg::srv::dds_::Name_Request_" -> "pkg/srv/Name" (`part` "_Request_"),
// "" when it is not that.
std::string ros_srv_type(const std::string &dds, const char *part)
{
    size_t a = dds.find("::");
    size_t b = a == std::string::npos ? a : dds.find("::dds_::", a + 2);
    size_t pl = strlen(part);
    const size_t m = 8; // "::dds_::"
    if (a == 0 || b == std::string::npos || dds.size() < b + m + pl + 1 ||
        dds.compare(dds.size() - pl, pl, part) != 0) {
        return "";
    }
    std::string kind = dds.substr(a + 2, b - a - 2);
    std::string name = dds.substr(b + m, dds.size() - pl - b - m);
    if ((kind != "srv" && kind != "action") ||
        name.find(':') != std::string::npos ||
        dds.substr(0, a).find(':') != std::string::npos) {
        return "";
    }
    return dds.substr(0, a) + "/" + kind + "/" + name;
}

// A remote request reader ("rq...Request") or reply writer
// ("rr...Reply") of a wanted service came or went. Called by Fast DDS's
// discovery thread.
void remote_endpoint(DomainParticipant *p, bool reader, bool gone,
                     const GUID_t &guid, const std::string &topic,
                     const std::string &type, const std::string &hash, bool cyc)
{
    if (from_globs.empty() || guid.guidPrefix == p->guid().guidPrefix) {
        return;
    }
    const char *pre = reader ? "rq" : "rr";
    const char *suf = reader ? "Request" : "Reply";
    size_t sl = strlen(suf);
    if (topic.size() < 3 + sl || topic.compare(0, 2, pre) != 0 ||
        topic[2] != '/' || topic.compare(topic.size() - sl, sl, suf) != 0) {
        return;
    }
    std::string name = topic.substr(2, topic.size() - 2 - sl);
    std::lock_guard<std::mutex> lk(mu);
    auto it = remotes.find(name);
    if (gone) {
        if (it != remotes.end()) {
            (reader ? it->second.readers : it->second.writers)
                .erase(guid_key(guid));
        }
        return;
    }
    if (!wanted_from(name)) {
        return;
    }
    std::string t = ros_srv_type(type, reader ? "_Request_" : "_Response_");
    if (t.empty()) {
        return;
    }
    if (it == remotes.end()) {
        if (remotes.size() >= kMaxServices) {
            return; // bounded: a flood of fake servers holds no more
        }
        it = remotes.emplace(name, RevRemote{t, "", {}, {}}).first;
    }
    RevRemote &r = it->second;
    if (r.type != t) {
        return; // another type under the name: the first one seen stays
    }
    auto &set = reader ? r.readers : r.writers;
    if (set.size() < kMaxPending) {
        set.insert(guid_key(guid));
    }
    if (reader && !hash.empty()) {
        r.hash = hash;
    }
    r.cyc = r.cyc || (reader && cyc);
}

// A participant gone: its endpoints go with it (Fast DDS may say only this).
void remote_participant_gone(const eprosima::fastrtps::rtps::GuidPrefix_t &g)
{
    std::string pre(reinterpret_cast<const char *>(g.value), 12);
    std::lock_guard<std::mutex> lk(mu);
    for (auto it = req_writers.begin(); it != req_writers.end();) {
        it = it->first.compare(0, 12, pre) == 0 ? req_writers.erase(it) : ++it;
    }
    for (auto &kv : remotes) {
        for (auto *set : {&kv.second.readers, &kv.second.writers}) {
            for (auto it = set->begin(); it != set->end();) {
                it = it->compare(0, 12, pre) == 0 ? set->erase(it) : ++it;
            }
        }
    }
}

// rmw_nerve's encoding for a service channel of type `t` (channel.cpp's
// encoding_of): its clients open the channels only with it.
const char *service_encoding(const std::string &t)
{
    return t.find("/srv/") != std::string::npos ? "rmw_nerve-service" : "cdr";
}

// Makes (if missing) and opens one of the service's channels as rmw_nerve
// does; 0, or the error with *why.
int rev_chan(const std::string &name, const std::string &type, uint32_t flags,
             nerve_chan **out, std::string *why)
{
    struct nerve_chan_opts o = NERVE_CHAN_OPTS_INIT;
    o.flags = NERVE_C_EXIST_OK | NERVE_C_REMOVE_UNUSED;
    o.slots = 64;
    o.data_size = 256u << 10;
    o.type = type.c_str();
    o.encoding = service_encoding(type);
    (void)nerve_chan_create(name.c_str(), &o);
    int r = nerve_chan_open(name.c_str(), flags, out);
    if (r != 0) {
        *why = nerve_strerror(r);
        return r;
    }
    struct nerve_meta m;
    if (nerve_chan_meta(*out, &m) != 0 || !m.type || !m.encoding ||
        type != m.type || strcmp(m.encoding, o.encoding) != 0) {
        *why = "it carries type '" + std::string(m.type ? m.type : "") +
               "', not '" + type + "'";
        nerve_chan_close(*out);
        *out = nullptr;
        return NERVE_EMISMATCH;
    }
    return 0;
}

// TYPE HASH FROM DDS: an rmw_nerve client says its request's hash in
// the graph ("E C" line) as a server does; one whose hash differs from
// the DDS server's (its request reader's "typehash=") is said once and
// its requests refused (dropped and counted; it gets no reply, as a DDS
// client of another hash in the forward direction). A client announces
// itself before its first request, but the bridge reads the graph every
// poll: a request of a client not seen yet waits for up to two more reads
// (once per client). One not in the graph then, or one with no hash (an
// older rmw_nerve), is served unchecked.
bool rev_hash_ok(RevService *s, const unsigned char *gid)
{
    if (s->hash.empty()) {
        return true;
    }
    std::string g = hex_of(gid, 16), h;
    {
        std::unique_lock<std::mutex> lk(cli_mu);
        auto it = cli_hash.find(g);
        if (it == cli_hash.end() && !s->unknown_gids.count(g)) {
            uint64_t until = cli_gen + 2;
            int64_t end = mono_ns() + kLease;
            while (it == cli_hash.end() && cli_gen < until && mono_ns() < end &&
                   !s->quit.load()) {
                cli_cv.wait_for(lk, std::chrono::milliseconds(100));
                it = cli_hash.find(g);
            }
            if (it == cli_hash.end()) {
                if (s->unknown_gids.size() >= kMaxPending) {
                    s->unknown_gids.clear();
                }
                s->unknown_gids.insert(g);
            }
        }
        if (it == cli_hash.end() || it->second.empty() ||
            it->second == s->hash) {
            return true;
        }
        h = it->second;
    }
    s->refused++;
    if (!s->refused_gids.count(g) && s->refused_gids.size() < kMaxPending) {
        s->refused_gids.insert(g);
        say("error: type hash mismatch on service %s [%s] (from DDS): "
            "rmw_nerve client %s has %s, the DDS server %s; its requests are "
            "refused",
            s->name.c_str(), s->type.c_str(), g.c_str(), h.c_str(),
            s->hash.c_str());
    }
    return false;
}

// The request thread: every request on "<svc>-req" goes to DDS, its
// nerve client remembered under the RTPS sequence number the write gave.
void request_run(RevService *s)
{
    while (!s->quit.load()) {
        struct nerve_view v;
        int r = nerve_chan_view(s->req, 0, kWaitNs, &v,
                                NERVE_GET_NEXT | NERVE_F_WAIT);
        if (r == NERVE_ETIMEDOUT || r == NERVE_EAGAIN) {
            continue;
        }
        if (r == NERVE_ECANCELED) {
            break;
        }
        if (r == NERVE_ESUPERSEDED) {
            std::lock_guard<std::mutex> lk(s->mu); // against rev_free
            if (!s->quit.load() && nerve_chan_follow(&s->req) == 0) {
                continue; // a client grew the channel: read on there
            }
        }
        if (r != 0) {
            say("service %s (from DDS): request channel %s: %s",
                s->name.c_str(), s->req_chan.c_str(), nerve_strerror(r));
            struct timespec ts = {0, kWaitNs};
            nanosleep(&ts, nullptr);
            continue;
        }
        if (v.info.len < kHdr + 4) {
            continue;
        }
        const auto *d = static_cast<const unsigned char *>(v.data);
        RevBack bk;
        memcpy(bk.gid, d, 16);
        memcpy(&bk.seq, d + 16, 8);
        Bytes b(d + kHdr, d + v.info.len);
        if (nerve_chan_view_check(s->req, &v) != 0) {
            continue; // overwritten while copied
        }
        s->requests++;
        if (!rev_hash_ok(s, bk.gid)) {
            continue;
        }
        std::lock_guard<std::mutex> lk(s->mu); // the reply may come at once
        WriteParams wp;
        wp.related_sample_identity().writer_guid(s->rd_guid);
        CycHdr h;
        if (s->cyc) {
            memcpy(h.guid, s->cguid, 8);
            h.seq = ++s->cseq;
            Bytes out;
            const char *why = cyc_join(b, h, &out);
            if (why) {
                say_malformed(s->malformed, s->name, "a request from nerve",
                              b.size(), why);
                continue;
            }
            b.swap(out);
        }
        if (!s->wr->write(&b, wp)) {
            s->errors++;
            if (!s->said_error++) {
                say("error: service %s (from DDS): a request of %zu bytes "
                    "not written to DDS",
                    s->name.c_str(), b.size());
            }
            continue;
        }
        if (s->back.size() >= kMaxPending) {
            s->back.erase(s->back.begin()); // the oldest: counted
            s->dropped++;
        }
        bk.at_ns = mono_ns();
        s->back[s->cyc ? h.seq
                       : wp.sample_identity().sequence_number().to64long()] =
            bk;
    }
}

void ReplyListener::on_data_available(DataReader *rd)
{
    Bytes b;
    SampleInfo info;
    while (rd->take_next_sample(&b, &info) == ReturnCode_t::RETCODE_OK) {
        const GUID_t &to = info.related_sample_identity.writer_guid();
        int64_t seq = info.related_sample_identity.sequence_number().to64long();
        if (!info.valid_data) {
            continue;
        }
        if (s->cyc) { // paired by the header rmw_cyclonedds's server echoes
            CycHdr h;
            Bytes plain;
            const char *why = cyc_split(b, &h, &plain);
            if (why) {
                say_malformed(s->malformed, s->name + " (from DDS)",
                              "an rmw_cyclonedds reply", b.size(), why);
                continue;
            }
            if (memcmp(h.guid, s->cguid, 8) != 0) {
                continue; // another DDS client's reply
            }
            seq = h.seq;
            b.swap(plain);
        } else if (to != s->rd_guid && to != s->wr_guid) {
            continue; // another DDS client's reply
        }
        std::lock_guard<std::mutex> lk(s->mu);
        auto it = s->back.find(seq);
        if (it == s->back.end()) {
            continue; // forgotten (dropped), or answered already
        }
        RevBack bk = it->second;
        s->back.erase(it);
        std::string msg(kHdr + b.size(), '\0');
        int64_t now = real_ns();
        memcpy(&msg[0], bk.gid, 16);
        memcpy(&msg[16], &bk.seq, 8);
        memcpy(&msg[24], &now, 8);
        memcpy(&msg[kHdr], b.data(), b.size());
        int r = nerve_chan_put(s->rep, msg.data(), msg.size(), 100000000LL,
                               nullptr, 0);
        if (r == NERVE_ESUPERSEDED && nerve_chan_follow(&s->rep) == 0) {
            r = nerve_chan_put(s->rep, msg.data(), msg.size(), 100000000LL,
                               nullptr, 0);
        }
        if (r == 0) {
            s->replies++;
        } else {
            s->errors++;
            if (!s->said_error++) {
                say("error: service %s (from DDS): reply of %zu bytes not "
                    "passed to %s: %s",
                    s->name.c_str(), msg.size(), s->rep_chan.c_str(),
                    nerve_strerror(r));
            }
        }
    }
}

void rev_free(RevService *s)
{
    ends_free(s, s->req);
    // Removed unless an rmw_nerve client still has them open.
    (void)nerve_chan_remove_unused(s->req_chan.c_str());
    (void)nerve_chan_remove_unused(s->rep_chan.c_str());
}

template <class T> void register_raw(TypeSupport &ts, const std::string &name)
{
    TypeSupport have = pp->find_type(name);
    if (have.empty()) {
        ts = TypeSupport(new T(name));
        ts.register_type(pp);
    } else {
        ts = have;
    }
}

// Serves on nerve the DDS service `name`: its channels, DDS endpoints and
// request thread. Nullptr with the reason said (once).
std::unique_ptr<RevService> rev_open(const std::string &name,
                                     const RevRemote &rm)
{
    auto s = std::make_unique<RevService>();
    s->name = name;
    s->type = rm.type;
    s->hash = rm.hash;
    s->req_chan = channel_of(name, "-req");
    s->rep_chan = channel_of(name, "-rep");
    std::string why;
    int r = nerve_chan_name_check(s->req_chan.c_str());
    if (r != 0) {
        why = nerve_strerror(r);
    } else if ((r = rev_chan(s->req_chan, rm.type + "_Request", NERVE_O_READ,
                             &s->req, &why)) == 0) {
        r = rev_chan(s->rep_chan, rm.type + "_Response", NERVE_O_WRITE, &s->rep,
                     &why);
    }
    if (r != 0) {
        say("error: service %s [%s] of DDS: channel %s / %s: %s; not served "
            "on nerve",
            name.c_str(), rm.type.c_str(), s->req_chan.c_str(),
            s->rep_chan.c_str(), why.c_str());
        if (s->req) {
            (void)nerve_chan_close(s->req);
            (void)nerve_chan_remove_unused(s->req_chan.c_str());
        }
        return nullptr;
    }
    struct nerve_stats st;
    if (nerve_chan_stat(s->req, &st) == 0) {
        nerve_chan_seek(s->req, st.head_seq); // requests from now on
    }
    std::string tq = dds_type(rm.type, "_Request"),
                tr = dds_type(rm.type, "_Response");
    register_raw<RawCdr>(s->req_ts, tq);
    register_raw<RawCdr>(s->rep_ts, tr);
    s->rq = pp->create_topic("rq" + name + "Request", tq, TOPIC_QOS_DEFAULT);
    s->rr = pp->create_topic("rr" + name + "Reply", tr, TOPIC_QOS_DEFAULT);
    DataReaderQos rq = DATAREADER_QOS_DEFAULT;
    DataWriterQos wq = DATAWRITER_QOS_DEFAULT;
    service_qos(wq, rm.hash);
    service_qos(rq, "");
    s->listener = std::make_unique<ReplyListener>(s.get());
    if (s->rq && s->rr) {
        s->wr = pub->create_datawriter(s->rq, wq);
        s->rd = sub->create_datareader(s->rr, rq, s->listener.get(),
                                       StatusMask::data_available());
    }
    if (!s->wr || !s->rd) {
        say("error: service %s [%s] of DDS: no DDS endpoints; not served on "
            "nerve",
            name.c_str(), rm.type.c_str());
        rev_free(s.get());
        return nullptr;
    }
    s->wr_guid = s->wr->guid();
    s->rd_guid = s->rd->guid();
    uint64_t g[2] = {uint64_t(real_ns()), uint64_t(random())};
    memcpy(s->gid, g, 16);
    s->cyc = rm.cyc;
    uint64_t cg = (uint64_t(random()) << 33) ^ (uint64_t(random()) << 2) ^
                  uint64_t(real_ns());
    memcpy(s->cguid, &cg, 8);
    s->th = std::thread(request_run, s.get());
    return s;
}

void rev_summary(const RevService *s)
{
    say("service %s (from DDS): %" PRIu64 " requests, %" PRIu64
        " replies, %" PRIu64 " unanswered, %" PRIu64 " errors, %" PRIu64
        " refused (type hash), %" PRIu64 " malformed",
        s->name.c_str(), s->requests.load(), s->replies.load(),
        s->dropped.load() + s->back.size(), s->errors.load(), s->refused.load(),
        s->malformed.load());
}

// This bridge's message in rmw_nerve's graph (graph.cpp's FORMAT 3).
void graph_publish(bool bye)
{
    if (!graph_out) {
        return;
    }
    std::ostringstream o;
    o << "nerve-rmw-graph 3 " << own_ctx << " " << getpid()
      << (bye ? " bye\n" : " live\n");
    if (!bye) {
        o << "N 1 nerve_ros2_services / /\n";
        for (const auto &kv : revs) {
            const RevService *s = kv.second.get();
            if (!s->served) {
                continue;
            }
            // QoS: ROS 2's services profile (reliable 1, volatile 2, keep
            // last 1, depth 10), liveliness and deadline unset, ready 1.
            std::string h = s->hash.size() == 7 + 64
                                ? "1:" + s->hash.substr(7)
                                : "0:" + std::string(64, '0');
            o << "E V 1 " << hex_of(s->gid, 16) << " " << s->name << " "
              << s->type << " 1 2 1 10 0 0 0 0 0 1 " << h << "\n";
            // An action's client waits for publishers of its feedback and
            // status (transient local, keep last 1): the bridge's imports
            // of them, named with its send_goal service.
            std::string a = s->name, sg = "/_action/send_goal";
            size_t t = s->type.rfind("_SendGoal");
            if (a.size() <= sg.size() ||
                a.compare(a.size() - sg.size(), sg.size(), sg) != 0 ||
                t == std::string::npos || t + 9 != s->type.size()) {
                continue;
            }
            a.resize(a.size() - sg.size());
            std::string fb = a + "/_action/feedback",
                        st = a + "/_action/status";
            unsigned char pg[16];
            memcpy(pg, s->gid, 16);
            if (imports.count(fb)) {
                pg[15] ^= 1;
                o << "E P 1 " << hex_of(pg, 16) << " " << fb << " "
                  << s->type.substr(0, t) << "_FeedbackMessage"
                  << " 1 2 1 10 0 0 0 0 0 1 0:" << std::string(64, '0') << "\n";
            }
            if (imports.count(st)) {
                pg[15] ^= 2;
                o << "E P 1 " << hex_of(pg, 16) << " " << st
                  << " action_msgs/msg/GoalStatusArray 1 1 1 1 0 0 0 0 0 1 0:"
                  << std::string(64, '0') << "\n";
            }
        }
    }
    std::string t = o.str();
    int r =
        nerve_chan_put(graph_out, t.data(), t.size(), 100000000LL, nullptr, 0);
    if (r == NERVE_ESUPERSEDED && nerve_chan_follow(&graph_out) == 0) {
        r = nerve_chan_put(graph_out, t.data(), t.size(), 100000000LL, nullptr,
                           0);
    }
    if (r != 0 && !graph_out_said) {
        graph_out_said = true;
        say("error: --services-from-ros: rmw_nerve's graph: %s",
            nerve_strerror(r));
    }
}

// Opens this user's graph channel of the domain to write (made as
// rmw_nerve makes it); -1 with the reason said.
int graph_out_open()
{
    std::string n = "ros2-graph-d" + std::to_string(domain) + ".u" +
                    std::to_string(geteuid());
    struct nerve_chan_opts o = NERVE_CHAN_OPTS_INIT;
    o.flags = NERVE_C_EXIST_OK;
    o.slots = 4096;
    o.data_size = 4u << 20;
    o.type = "rmw_nerve/graph";
    o.encoding = "text";
    (void)nerve_chan_create(n.c_str(), &o);
    struct nerve_stats st;
    int r = nerve_chan_open(n.c_str(), NERVE_O_WRITE, &graph_out);
    if (r == 0 &&
        (nerve_chan_stat(graph_out, &st) != 0 || st.uid != geteuid())) {
        r = NERVE_EPERM; // another user's: rmw_nerve would not read it as ours
    }
    if (r != 0) {
        (void)nerve_chan_close(graph_out);
        graph_out = nullptr;
        say("error: --services-from-ros: rmw_nerve's graph channel %s: %s",
            n.c_str(), nerve_strerror(r));
        return -1;
    }
    uint64_t id =
        uint64_t(real_ns()) ^ (uint64_t(getpid()) << 40) ^ uint64_t(random());
    own_ctx = hex_of(reinterpret_cast<const unsigned char *>(&id), 8);
    return 0;
}

// The DDS services with both a request reader and a reply writer, less
// those an rmw_nerve process serves itself (not again from DDS); forgets
// the remotes with neither endpoint left (their room for another).
std::map<std::string, RevRemote> rev_wanted()
{
    std::map<std::string, RevRemote> want;
    {
        std::lock_guard<std::mutex> lk(mu);
        for (auto it = remotes.begin(); it != remotes.end();) {
            const RevRemote &r = it->second;
            if (r.readers.empty() && r.writers.empty()) {
                it = remotes.erase(it);
                continue;
            }
            if (!r.readers.empty() && !r.writers.empty()) {
                want.emplace(it->first, r);
            }
            ++it;
        }
    }
    for (const auto &c : ctxs) {
        for (const auto &kv : c.second.services) {
            want.erase(kv.first);
        }
    }
    return want;
}

// Withdraws the services no longer wanted (or of another type now), then
// opens those newly wanted, within kMaxServices.
void rev_reconcile(const std::map<std::string, RevRemote> &want)
{
    for (auto it = revs.begin(); it != revs.end();) {
        auto w = want.find(it->first);
        if (w != want.end() && w->second.type == it->second->type &&
            w->second.cyc == it->second->cyc) {
            ++it;
            continue;
        }
        RevService *s = it->second.get();
        s->served = false;
        graph_publish(false); // withdrawn before its channels go
        rev_free(s);
        say("service %s (from DDS): its DDS server is gone; withdrawn from "
            "nerve, %zu call(s) in flight unanswered",
            s->name.c_str(), s->back.size());
        rev_summary(s);
        it = revs.erase(it);
    }
    for (const auto &kv : want) {
        if (revs.count(kv.first) || revs.size() >= kMaxServices) {
            continue;
        }
        std::string tag = kv.first + " " + kv.second.type;
        if (rev_refused.count(tag) || rev_refused.size() >= kMaxServices) {
            continue;
        }
        auto s = rev_open(kv.first, kv.second);
        if (!s) {
            rev_refused.insert(tag);
            continue;
        }
        revs[kv.first] = std::move(s);
    }
}

// Poll's part for --services-from-ros: serves what DDS serves, withdraws
// what it no longer does.
void rev_poll()
{
    rev_reconcile(rev_wanted());
    // Announced once both endpoints matched the server's (a request
    // written before is lost: the writer is volatile).
    for (auto &kv : revs) {
        RevService *s = kv.second.get();
        PublicationMatchedStatus pm;
        SubscriptionMatchedStatus sm;
        if (!s->served &&
            s->wr->get_publication_matched_status(pm) ==
                ReturnCode_t::RETCODE_OK &&
            s->rd->get_subscription_matched_status(sm) ==
                ReturnCode_t::RETCODE_OK &&
            pm.current_count > 0 && sm.current_count > 0) {
            s->served = true;
            say("service %s [%s] of DDS served on nerve%s%s", s->name.c_str(),
                s->type.c_str(), s->hash.empty() ? " (no type hash known)" : "",
                s->cyc ? " (rmw_cyclonedds's request header)" : "");
        }
    }
    graph_publish(false); // every poll: the heartbeat
    int64_t now = mono_ns();
    for (auto &kv : revs) {
        RevService *s = kv.second.get();
        std::lock_guard<std::mutex> lk(s->mu);
        for (auto it = s->back.begin(); it != s->back.end();) {
            if (now - it->second.at_ns > kPendingNs) {
                it = s->back.erase(it);
                s->dropped++;
            } else {
                ++it;
            }
        }
    }
}

void rev_stop()
{
    for (auto &kv : revs) {
        kv.second->served = false;
    }
    graph_publish(true);
    for (auto &kv : revs) {
        rev_free(kv.second.get());
        rev_summary(kv.second.get());
    }
    revs.clear();
    (void)nerve_chan_close(graph_out);
    graph_out = nullptr;
}

// A remote request writer came or went: its kind kept (req_writers).
void req_writer_seen(
    eprosima::fastrtps::rtps::WriterDiscoveryInfo::DISCOVERY_STATUS st,
    const GUID_t &guid, const std::string &topic, bool cyc)
{
    using WDI = eprosima::fastrtps::rtps::WriterDiscoveryInfo;
    const std::string suf = "Request";
    if (topic.compare(0, 3, "rq/") != 0 || topic.size() < 3 + suf.size() ||
        topic.compare(topic.size() - suf.size(), suf.size(), suf) != 0 ||
        guid.guidPrefix == pp->guid().guidPrefix) {
        return;
    }
    std::lock_guard<std::mutex> lk(mu);
    if (st == WDI::REMOVED_WRITER) {
        req_writers.erase(guid_key(guid));
    } else if (req_writers.size() < kMaxWriters ||
               req_writers.count(guid_key(guid))) {
        req_writers[guid_key(guid)] = cyc;
    }
    req_writers_cv.notify_all();
}

// A DDS request writer discovered: one of another type hash is refused.
// A DDS reply writer or request reader: a server, for FROM DDS.
struct Discovery : DomainParticipantListener {
    void on_participant_discovery(
        DomainParticipant *,
        eprosima::fastrtps::rtps::ParticipantDiscoveryInfo &&info) override
    {
        using PDI = eprosima::fastrtps::rtps::ParticipantDiscoveryInfo;
        if (info.status == PDI::REMOVED_PARTICIPANT ||
            info.status == PDI::DROPPED_PARTICIPANT) {
            remote_participant_gone(info.info.m_guid.guidPrefix);
        }
    }
    void on_subscriber_discovery(
        DomainParticipant *p,
        eprosima::fastrtps::rtps::ReaderDiscoveryInfo &&info) override
    {
        using RDI = eprosima::fastrtps::rtps::ReaderDiscoveryInfo;
        if (info.status == RDI::CHANGED_QOS_READER) {
            return;
        }
        remote_endpoint(p, true, info.status == RDI::REMOVED_READER,
                        info.info.guid(), info.info.topicName().to_string(),
                        info.info.typeName().to_string(),
                        user_hash(info.info.m_qos.m_userData),
                        ud_has(info.info.m_qos.m_userData, "serviceid"));
    }
    void on_publisher_discovery(
        DomainParticipant *p,
        eprosima::fastrtps::rtps::WriterDiscoveryInfo &&info) override
    {
        using WDI = eprosima::fastrtps::rtps::WriterDiscoveryInfo;
        std::string topic = info.info.topicName().to_string();
        std::string h = user_hash(info.info.m_qos.m_userData);
        if (info.status != WDI::CHANGED_QOS_WRITER) {
            remote_endpoint(p, false, info.status == WDI::REMOVED_WRITER,
                            info.info.guid(), topic,
                            info.info.typeName().to_string(), h, false);
        }
        req_writer_seen(info.status, info.info.guid(), topic,
                        ud_has(info.info.m_qos.m_userData, "clientid"));
        if (info.status != WDI::DISCOVERED_WRITER || h.empty()) {
            return;
        }
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

extern "C" void ros2_rmw_graph_walk(uint32_t dom, ros2_node_fn fn, void *arg)
{
    domain = dom;
    graph_read();
    for (const auto &c : ctxs) {
        for (const NodeEp &e : c.second.eps) {
            auto n = c.second.nodes.find(e.node_id);
            if (n == c.second.nodes.end()) {
                continue;
            }
            std::string chan = channel_of(e.name, "");
            fn(n->second.first.c_str(), n->second.second.c_str(), e.kind,
               e.name.c_str(), chan.c_str(), arg);
        }
    }
}

extern "C" void ros2_srv_endpoints(ros2_srv_ep_fn fn, void *arg)
{
    auto gid = [](const GUID_t &g, unsigned char out[16]) {
        memcpy(out, g.guidPrefix.value, 12);
        memcpy(out + 12, g.entityId.value, 4);
    };
    unsigned char r[16], w[16];
    std::lock_guard<std::mutex> lk(mu);
    for (const auto &kv : services) {
        if (kv.second->rd && kv.second->wr) {
            gid(kv.second->rd->guid(), r);
            gid(kv.second->wr->guid(), w);
            fn('V', kv.first.c_str(), r, w, arg);
        }
    }
    for (const auto &kv : revs) {
        if (kv.second->rd && kv.second->wr) {
            gid(kv.second->rd->guid(), r);
            gid(kv.second->wr->guid(), w);
            fn('C', kv.first.c_str(), r, w, arg);
        }
    }
}

extern "C" int ros2_srv_start(uint32_t dom, const char *const *g, size_t n,
                              const char *const *from, size_t nfrom,
                              const char *const *imp, size_t nimp,
                              ros2_srv_say_fn sayf)
{
    say = sayf;
    domain = dom;
    for (size_t i = 0; i < nimp; i++) {
        if (channel_of(imp[2 * i], "") == imp[2 * i + 1]) {
            imports.insert(imp[2 * i]);
        }
    }
    for (size_t i = 0; i < n; i++) {
        globs.emplace_back(g[i]);
    }
    for (size_t i = 0; i < nfrom; i++) {
        from_globs.emplace_back(from[i]);
    }
    if (nfrom > 0 && graph_out_open() != 0) {
        return -1;
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
    if (n > 0) {
        say("services matching %zu glob(s) of rmw_nerve's domain %u offered "
            "through Fast DDS",
            n, dom);
    }
    if (nfrom > 0) {
        say("services of DDS matching %zu glob(s) served to rmw_nerve's "
            "domain %u through Fast DDS",
            nfrom, dom);
    }
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
    if (!from_globs.empty()) {
        rev_poll();
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
    rev_stop();
    pp->delete_contained_entities();
    DomainParticipantFactory::get_instance()->delete_participant(pp);
    pp = nullptr;
    for (GraphIn &g : graphs) {
        (void)nerve_chan_close(g.ch);
    }
    graphs.clear();
}
