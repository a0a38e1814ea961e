// Services and clients: two channels per service, "<svc>-req" (every
// client writes, the server reads) and "<svc>-rep" (the server writes,
// every client reads and keeps what is addressed to it), named as topics
// are ('-' never occurs in a ROS name, so no topic can collide with them).
// Each message is a 32-byte header then the CDR bytes (encoding
// "rmw_nerve-service"):
//
//   0   16  client GID (the request's writer)
//   16   8  sequence number the client gave the request (int64, host order)
//   24   8  source time, CLOCK_REALTIME ns (int64, host order)
//   32   .  CDR, with its encapsulation header
//
// Sequence numbers count from 1 per client. A client sends only while the
// graph shows a server for its service; otherwise rmw_send_request fails
// with an error, so a client whose server is gone is told so instead of
// waiting for a reply that cannot come. Requests are lost only if the
// server falls a whole ring (max(depth, 64) slots) behind.

#include "rmw_nerve.hpp"

#include <cinttypes>
#include <cstdio>
#include <cstring>

#include <rosidl_runtime_c/service_type_support_struct.h>
#include <rosidl_typesupport_fastrtps_cpp/service_type_support.h>

using namespace rmw_nerve;

namespace rmw_nerve {

static const size_t kHdr = 32;

struct SrvTypes {
    MsgType req, rep;
    std::string name; // pkg/srv/Name
};

static bool srv_types(const rosidl_service_type_support_t *ts, SrvTypes *out)
{
    const rosidl_service_type_support_t *h =
        get_service_typesupport_handle(ts, "rosidl_typesupport_fastrtps_c");
    if (!h) {
        rcutils_reset_error();
        h = get_service_typesupport_handle(ts,
                                           "rosidl_typesupport_fastrtps_cpp");
    }
    if (!h) {
        rcutils_reset_error();
        fail(RMW_RET_UNSUPPORTED,
             "rmw_nerve: service type support '%s' has no Fast CDR callbacks",
             ts->typesupport_identifier);
        return false;
    }
    auto *cb = static_cast<const service_type_support_callbacks_t *>(h->data);
    if (!msg_type(cb->request_members_, &out->req) ||
        !msg_type(cb->response_members_, &out->rep))
        return false;
    std::string ns = cb->service_namespace_;
    for (size_t i; (i = ns.find("::")) != std::string::npos;)
        ns.replace(i, 2, "/");
    out->name = ns + "/" + cb->service_name_;
    return true;
}

struct Service {
    Node *node = nullptr;
    SrvTypes t;
    std::string name, req_name, rep_name;
    rmw_qos_profile_t qos{};
    rmw_gid_t gid{};
    nerve_chan *req = nullptr, *rep = nullptr;
    Retired retired; // requests' channels req followed away from
    RenameLook look; // [mu] req's name asked (chan_renamed_unmarked)
    std::mutex mu;
};

struct Client {
    Node *node = nullptr;
    SrvTypes t;
    std::string name, req_name, rep_name;
    rmw_qos_profile_t qos{};
    rmw_gid_t gid{};
    nerve_chan *req = nullptr, *rep = nullptr;
    Retired retired; // replies' channels rep followed away from
    RenameLook look; // [mu] rep's name asked (chan_renamed_unmarked)
    int64_t next_seq = 1;
    std::mutex mu;
};

// THREADS. A service's request handle and a client's reply handle are
// replaced when their channel grows (chan_follow) and a client's is opened
// late (cli_open), while another thread's rmw_wait may look at them
// (rclcpp's multi-threaded executor): every use holds the entity's mu.

bool srv_ready(Service *s, int64_t *next_ns)
{
    std::lock_guard<std::mutex> lk(s->mu);
    return chan_has_news(s->req, &s->look, next_ns);
}

static bool cli_open(Client *c)
{
    if (c->rep)
        return true;
    std::string why;
    if (0 != chan_open_checked(c->rep_name, c->t.rep.name.c_str(), NERVE_O_READ,
                               &c->rep, &why))
        return false;
    struct nerve_stats st;
    if (nerve_chan_stat(c->rep, &st) == 0)
        nerve_chan_seek(c->rep, st.head_seq); // only replies from now on
    return true;
}

bool cli_ready(Client *c, int64_t *next_ns)
{
    std::lock_guard<std::mutex> lk(c->mu);
    if (!cli_open(c))
        return false;
    return chan_has_news(c->rep, &c->look, next_ns);
}

uint64_t srv_listen(Service *s, std::string *name, std::string *type,
                    uint64_t *base)
{
    std::lock_guard<std::mutex> lk(s->mu);
    *name = s->req_name;
    *type = s->t.req.name;
    return chan_unread(s->req, base);
}

uint64_t cli_listen(Client *c, std::string *name, std::string *type,
                    uint64_t *base)
{
    std::lock_guard<std::mutex> lk(c->mu);
    *name = c->rep_name;
    *type = c->t.rep.name;
    return chan_unread(cli_open(c) ? c->rep : nullptr, base);
}

nerve_chan *srv_chan(Service *s)
{
    std::lock_guard<std::mutex> lk(s->mu);
    return s->req;
}
nerve_chan *cli_chan(Client *c)
{
    std::lock_guard<std::mutex> lk(c->mu);
    return cli_open(c) ? c->rep : nullptr;
}

// Every rclpy node serves seven parameter services: their rings are kept
// small (256 KiB each unless a bounded type needs more for 64 messages;
// NERVE_RMW_SERVICE_SIZE sets it), and a larger request or reply fails
// with an error that says so.
static uint64_t ring_bytes(const MsgType &t)
{
    if (uint64_t e = env_size("NERVE_RMW_SERVICE_SIZE"))
        return e;
    uint64_t d = t.bounded ? 64 * (t.max_size + kHdr + 4) : (256u << 10);
    if (d < (64u << 10))
        d = 64u << 10;
    if (d > (16u << 20))
        d = 16u << 20;
    return d;
}

// Put header + CDR of msg into *ch, growing it (64 such messages, at
// least twice its ring) when the message does not fit.
static rmw_ret_t put_framed(nerve_chan **chp, const MsgType &t,
                            const uint8_t *gid, int64_t seq, const void *msg,
                            const std::string &what)
{
    size_t len = kHdr + serialized_size(t, msg);
    void *dst = nullptr;
    int r;
    for (int tries = 0;
         (r = nerve_chan_reserve(*chp, len, NERVE_FOREVER, &dst, 0)) != 0 &&
         tries < 8;
         tries++) {
        struct nerve_stats st {};
        (void)nerve_chan_stat(*chp, &st);
        uint64_t want = 64 * uint64_t(len) > 2 * st.data_size
                            ? 64 * uint64_t(len)
                            : 2 * st.data_size;
        if ((r = chan_make_room(chp, r, want, st.slots)) != 0)
            break;
    }
    nerve_chan *ch = *chp;
    if (r == NERVE_EMSGSIZE)
        return fail(RMW_RET_ERROR,
                    "rmw_nerve: %s: %zu bytes do not fit channel '%s', and "
                    "growing it past NERVE_RMW_MAX_DATA_SIZE (%" PRIu64
                    " bytes) is refused",
                    what.c_str(), len, nerve_chan_name(ch), chan_max_data());
    if (r)
        return fail(RMW_RET_ERROR, "rmw_nerve: %s: %s", what.c_str(),
                    nerve_strerror(r));
    auto *d = static_cast<uint8_t *>(dst);
    int64_t now = real_ns();
    memcpy(d, gid, 16);
    memcpy(d + 16, &seq, 8);
    memcpy(d + 24, &now, 8);
    long n = serialize(t, msg, d + kHdr, len - kHdr);
    if (n < 0) {
        (void)nerve_chan_abort(ch);
        return fail(RMW_RET_ERROR, "rmw_nerve: %s: cannot serialise the %s",
                    what.c_str(), t.name.c_str());
    }
    r = nerve_chan_commit(ch, kHdr + size_t(n), nullptr);
    if (r)
        return fail(RMW_RET_ERROR, "rmw_nerve: %s: %s", what.c_str(),
                    nerve_strerror(r));
    return RMW_RET_OK;
}

// Take the next message of ch addressed to `want` (any when NULL).
static rmw_ret_t take_framed(nerve_chan **chp, Retired *retired,
                             RenameLook *look, const MsgType &t,
                             const uint8_t *want, void *msg,
                             rmw_service_info_t *hdr, bool *taken,
                             const std::string &what)
{
    *taken = false;
    for (int attempt = 0; attempt < 1024; attempt++) {
        struct nerve_view v;
        nerve_chan *ch = *chp;
        int r = nerve_chan_view(ch, 0, 0, &v, NERVE_GET_NEXT);
        if (r == NERVE_EAGAIN && !chan_renamed_unmarked(ch, look))
            return RMW_RET_OK;
        if ((r == NERVE_ESUPERSEDED || r == NERVE_EAGAIN) &&
            chan_follow(chp, t.name.c_str(), retired) == 0)
            continue; // the other side grew the channel: read on there
        if (r == NERVE_EAGAIN)
            return RMW_RET_OK; // the successor could not be followed (said)
        if (r)
            return fail(RMW_RET_ERROR, "rmw_nerve: %s: %s", what.c_str(),
                        nerve_strerror(r));
        if (v.info.len < kHdr + 4) {
            fprintf(stderr,
                    "rmw_nerve: %s: message %" PRIu64
                    " too short for a service message; skipped\n",
                    what.c_str(), v.info.seq);
            continue;
        }
        const auto *d = static_cast<const uint8_t *>(v.data);
        rmw_service_info_t h{};
        memcpy(h.request_id.writer_guid, d, 16);
        memcpy(&h.request_id.sequence_number, d + 16, 8);
        memcpy(&h.source_timestamp, d + 24, 8);
        if (want && memcmp(want, d, 16) != 0) {
            continue; // another client's reply
        }
        bool ok = deserialize(t, d + kHdr, v.info.len - kHdr, msg);
        if (nerve_chan_view_check(ch, &v) != 0)
            continue;
        if (!ok) {
            fprintf(stderr,
                    "rmw_nerve: %s: message %" PRIu64
                    " is not a CDR %s; skipped\n",
                    what.c_str(), v.info.seq, t.name.c_str());
            continue;
        }
        h.received_timestamp = real_ns();
        *hdr = h;
        *taken = true;
        return RMW_RET_OK;
    }
    return RMW_RET_OK;
}

// The part a service and a client of `name` share: their node, QoS, types
// and the names of the request and the reply channels. False (the rmw
// error set) when one of them cannot be had.
template <class End>
static bool
resolve_ends(End *x, Node *n, const rosidl_service_type_support_t *ts,
             const char *name, const rmw_qos_profile_t *qos, const char *what)
{
    x->node = n;
    x->name = name;
    return qos_resolve(qos, &x->qos, what, name) == RMW_RET_OK &&
           srv_types(ts, &x->t) &&
           topic_channel(n->ctx->domain, name, "-req", &x->req_name) &&
           topic_channel(n->ctx->domain, name, "-rep", &x->rep_name);
}

static bool server_exists(Node *n, const std::string &name)
{
    return n->ctx->graph->snapshot().count(Kind::Srv, name) > 0;
}

} // namespace rmw_nerve

extern "C" {

rmw_service_t *rmw_create_service(const rmw_node_t *node,
                                  const rosidl_service_type_support_t *ts,
                                  const char *service_name,
                                  const rmw_qos_profile_t *qos)
{
    if (!node || !node->data || !ts || !service_name) {
        fail(RMW_RET_INVALID_ARGUMENT, "rmw_nerve: NULL argument");
        return nullptr;
    }
    Node *n = static_cast<Node *>(node->data);
    auto *s = new Service;
    if (!resolve_ends(s, n, ts, service_name, qos, "service")) {
        delete s;
        return nullptr;
    }
    uint64_t slots = s->qos.depth < 64 ? 64 : s->qos.depth;
    std::string why;
    // Made, then opened; made again if a sweep removed it in between (it
    // was unused for that moment).
    auto make_open = [&](const std::string &name, const auto &t, uint32_t flags,
                         nerve_chan **out) {
        int o = NERVE_ENOENT;
        for (int i = 0; i < 16 && o == NERVE_ENOENT; i++) {
            (void)chan_create_for(name, t.name, t.schema, slots, ring_bytes(t));
            o = chan_open_checked(name, t.name.c_str(), flags, out, &why);
        }
        return o;
    };
    if (0 != make_open(s->req_name, s->t.req, NERVE_O_READ, &s->req) ||
        0 != make_open(s->rep_name, s->t.rep, NERVE_O_WRITE, &s->rep)) {
        fail(RMW_RET_ERROR, "rmw_nerve: service '%s': %s", service_name,
             why.c_str());
        if (s->req)
            chan_release(s->req, s->req_name);
        delete s;
        return nullptr;
    }
    struct nerve_stats st;
    if (nerve_chan_stat(s->req, &st) == 0)
        nerve_chan_seek(s->req, st.head_seq); // not a dead server's requests
    s->gid = n->ctx->new_gid();
    auto *srv = new rmw_service_t;
    srv->implementation_identifier = kIdentifier;
    srv->data = s;
    srv->service_name = strdup(service_name);
    // The request message's REP 2011 hash, which is what a ROS 2 client on
    // DDS says in its request writer's "typehash=" (rmw_fastrtps_cpp):
    // nerve ros2 --services says it to DDS clients and checks theirs.
    announce(n, Kind::Srv, s->gid, service_name, s->t.name, s->qos, true,
             &s->t.req.hash);
    return srv;
}

rmw_ret_t rmw_destroy_service(rmw_node_t *node, rmw_service_t *srv)
{
    CHECK_HANDLE(node, "node");
    CHECK_HANDLE(srv, "service");
    auto *s = static_cast<Service *>(srv->data);
    listener_forget(s);
    s->node->ctx->graph->remove_endpoint(s->gid);
    chan_release(s->req, s->req_name);
    chan_release(s->rep, s->rep_name);
    free(const_cast<char *>(srv->service_name));
    delete s;
    delete srv;
    return RMW_RET_OK;
}

rmw_client_t *rmw_create_client(const rmw_node_t *node,
                                const rosidl_service_type_support_t *ts,
                                const char *service_name,
                                const rmw_qos_profile_t *qos)
{
    if (!node || !node->data || !ts || !service_name) {
        fail(RMW_RET_INVALID_ARGUMENT, "rmw_nerve: NULL argument");
        return nullptr;
    }
    Node *n = static_cast<Node *>(node->data);
    auto *c = new Client;
    if (!resolve_ends(c, n, ts, service_name, qos, "client")) {
        delete c;
        return nullptr;
    }
    (void)cli_open(c);
    c->gid = n->ctx->new_gid();
    auto *cli = new rmw_client_t;
    cli->implementation_identifier = kIdentifier;
    cli->data = c;
    cli->service_name = strdup(service_name);
    // The request's hash as a server's: nerve ros2 --services-from-ros
    // refuses a client whose request differs from the DDS server's.
    announce(n, Kind::Cli, c->gid, service_name, c->t.name, c->qos, false,
             &c->t.req.hash);
    return cli;
}

rmw_ret_t rmw_destroy_client(rmw_node_t *node, rmw_client_t *cli)
{
    CHECK_HANDLE(node, "node");
    CHECK_HANDLE(cli, "client");
    auto *c = static_cast<Client *>(cli->data);
    listener_forget(c);
    c->node->ctx->graph->remove_endpoint(c->gid);
    if (c->req)
        chan_release(c->req, c->req_name);
    if (c->rep)
        chan_release(c->rep, c->rep_name);
    free(const_cast<char *>(cli->service_name));
    delete c;
    delete cli;
    return RMW_RET_OK;
}

rmw_ret_t rmw_send_request(const rmw_client_t *cli, const void *req,
                           int64_t *seq)
{
    CHECK_HANDLE(cli, "client");
    if (!req || !seq)
        return fail(RMW_RET_INVALID_ARGUMENT, "rmw_nerve: NULL argument");
    auto *c = static_cast<Client *>(cli->data);
    std::lock_guard<std::mutex> lk(c->mu);
    if (!server_exists(c->node, c->name))
        return fail(RMW_RET_ERROR,
                    "rmw_nerve: request to '%s': no server for this service "
                    "(none in the graph of domain %zu)",
                    c->name.c_str(), c->node->ctx->domain);
    std::string why;
    if (!cli_open(c) ||
        (!c->req && 0 != chan_open_checked(c->req_name, c->t.req.name.c_str(),
                                           NERVE_O_WRITE, &c->req, &why)))
        return fail(RMW_RET_ERROR, "rmw_nerve: request to '%s': %s",
                    c->name.c_str(),
                    why.empty() ? "no reply channel" : why.c_str());
    int64_t s = c->next_seq;
    rmw_ret_t r = put_framed(&c->req, c->t.req, c->gid.data, s, req,
                             "request to '" + c->name + "'");
    if (r == RMW_RET_OK) {
        c->next_seq++;
        *seq = s;
    }
    return r;
}

rmw_ret_t rmw_take_request(const rmw_service_t *srv, rmw_service_info_t *hdr,
                           void *req, bool *taken)
{
    CHECK_HANDLE(srv, "service");
    if (!hdr || !req || !taken)
        return fail(RMW_RET_INVALID_ARGUMENT, "rmw_nerve: NULL argument");
    auto *s = static_cast<Service *>(srv->data);
    std::lock_guard<std::mutex> lk(s->mu);
    return take_framed(&s->req, &s->retired, &s->look, s->t.req, nullptr, req,
                       hdr, taken, "service '" + s->name + "'");
}

rmw_ret_t rmw_send_response(const rmw_service_t *srv, rmw_request_id_t *id,
                            void *rep)
{
    CHECK_HANDLE(srv, "service");
    if (!id || !rep)
        return fail(RMW_RET_INVALID_ARGUMENT, "rmw_nerve: NULL argument");
    auto *s = static_cast<Service *>(srv->data);
    std::lock_guard<std::mutex> lk(s->mu);
    return put_framed(&s->rep, s->t.rep, id->writer_guid, id->sequence_number,
                      rep, "reply of '" + s->name + "'");
}

rmw_ret_t rmw_take_response(const rmw_client_t *cli, rmw_service_info_t *hdr,
                            void *rep, bool *taken)
{
    CHECK_HANDLE(cli, "client");
    if (!hdr || !rep || !taken)
        return fail(RMW_RET_INVALID_ARGUMENT, "rmw_nerve: NULL argument");
    auto *c = static_cast<Client *>(cli->data);
    std::lock_guard<std::mutex> lk(c->mu);
    *taken = false;
    if (!cli_open(c))
        return RMW_RET_OK;
    return take_framed(&c->rep, &c->retired, &c->look, c->t.rep, c->gid.data,
                       rep, hdr, taken, "client of '" + c->name + "'");
}

rmw_ret_t rmw_service_server_is_available(const rmw_node_t *node,
                                          const rmw_client_t *cli,
                                          bool *available)
{
    CHECK_HANDLE(node, "node");
    CHECK_HANDLE(cli, "client");
    if (!available)
        return fail(RMW_RET_INVALID_ARGUMENT, "rmw_nerve: NULL argument");
    auto *c = static_cast<Client *>(cli->data);
    std::lock_guard<std::mutex> lk(c->mu);
    *available = server_exists(c->node, c->name) && cli_open(c);
    return RMW_RET_OK;
}

rmw_ret_t rmw_get_gid_for_client(const rmw_client_t *cli, rmw_gid_t *gid)
{
    CHECK_HANDLE(cli, "client");
    if (!gid)
        return fail(RMW_RET_INVALID_ARGUMENT, "rmw_nerve: gid is NULL");
    *gid = static_cast<Client *>(cli->data)->gid;
    return RMW_RET_OK;
}

rmw_ret_t rmw_client_request_publisher_get_actual_qos(const rmw_client_t *cli,
                                                      rmw_qos_profile_t *qos)
{
    CHECK_HANDLE(cli, "client");
    if (!qos)
        return fail(RMW_RET_INVALID_ARGUMENT, "rmw_nerve: qos is NULL");
    *qos = static_cast<Client *>(cli->data)->qos;
    return RMW_RET_OK;
}

rmw_ret_t
rmw_client_response_subscription_get_actual_qos(const rmw_client_t *cli,
                                                rmw_qos_profile_t *qos)
{
    return rmw_client_request_publisher_get_actual_qos(cli, qos);
}

rmw_ret_t
rmw_service_request_subscription_get_actual_qos(const rmw_service_t *srv,
                                                rmw_qos_profile_t *qos)
{
    CHECK_HANDLE(srv, "service");
    if (!qos)
        return fail(RMW_RET_INVALID_ARGUMENT, "rmw_nerve: qos is NULL");
    *qos = static_cast<Service *>(srv->data)->qos;
    return RMW_RET_OK;
}

rmw_ret_t
rmw_service_response_publisher_get_actual_qos(const rmw_service_t *srv,
                                              rmw_qos_profile_t *qos)
{
    return rmw_service_request_subscription_get_actual_qos(srv, qos);
}

} // extern "C"
