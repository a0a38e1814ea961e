/* A ROS 2 service client and server as rmw_cyclonedds_cpp (Jazzy) makes
 * them, written on Cyclone DDS's C API: the peer of test_rmw_services.py's
 * rmw_cyclonedds tests of `nerve ros2 --services` and
 * --services-from-ros. Service test_msgs/srv/BasicTypes (the server
 * doubles int64_value and appends "!" to string_value).
 *
 *   cyclone_srv_peer client SERVICE CLIENTS CALLS HASH
 *   cyclone_srv_peer server SERVICE HASH
 *   cyclone_srv_peer short SERVICE
 *
 * The wire facts it follows, from rmw_cyclonedds_cpp's source (Jazzy):
 *  - every request and reply is CDR with a 16-byte header {uint64 guid;
 *    int64 seq} before the body (src/serdata.hpp, cdds_request_header_t;
 *    src/Serialization.cpp, serialize_top_level of a
 *    cdds_request_wrapper_t): here fields of the structs of ros2_srv.idl,
 *    serialized by Cyclone in the host's byte order as rmw_cyclonedds does;
 *  - a client's request says guid = its request writer's instance handle,
 *    seq = a process-wide counter (src/rmw_node.cpp, rmw_send_request),
 *    and it takes only replies whose guid is its own (rmw_take_response);
 *    a server answers with the request's guid and seq (rmw_send_response);
 *  - a client's request writer and reply reader say "clientid=<id>;", a
 *    server's request reader and reply writer "serviceid=<id>;", then
 *    "typehash=<hash>;" in USER_DATA (rmw_node.cpp, rmw_init_cs and
 *    create_readwrite_qos); <id> is the participant's GUID prefix and a
 *    big-endian counter, printed as csid_to_string does;
 *  - topics rq<SERVICE>Request / rr<SERVICE>Reply, ROS 2's services QoS
 *    (reliable, volatile, keep last 10).
 *
 * client: CLIENTS clients send CALLS requests each, all in flight at once
 * (request k of client i: int64_value 1000*i+k, string_value "c<i>-<k>"),
 * once their endpoints matched (prints "ready"); prints {"matched": ...,
 * "calls": N, "ok": N, "wrong": N}: a reply is ok when its guid is its
 * client's, its seq one of that client's requests not answered before, and
 * its values those of the request's answer.
 * server: serves until the file $NERVE_PEER_STOP exists; prints "ready",
 * then {"served": N}.
 * short: a client whose one request is 8 bytes, too short for the header
 * (a peer the bridge must refuse); prints {"matched": ...} once it is
 * acknowledged.
 * Every wait is bounded (BOUND_S). Exit status 0, or 1 on a failure. */
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <dds/dds.h>

#include "ros2_srv.h"

#define BOUND_S 60
#define MAX_CLIENTS 8
#define MAX_CALLS 64

typedef test_msgs_srv_dds__BasicTypes_Request_ Req;
typedef test_msgs_srv_dds__BasicTypes_Response_ Rep;

static dds_entity_t pp;
static uint32_t csid_counter;

/* "clientid=<id>;typehash=<hash>;" (or serviceid), <id> as rmw_cyclonedds
 * prints it: 16 bytes in hex, the first two digits wide, dot-separated. */
static void user_data(dds_qos_t *q, const char *key, const char *hash)
{
    dds_guid_t g;
    unsigned char id[16];
    char ud[256];
    (void)dds_get_guid(pp, &g);
    memcpy(id, g.v, 12);
    uint32_t x = ++csid_counter;
    for (int i = 0; i < 4; i++) {
        id[12 + i] = (unsigned char)(x >> (24 - 8 * i));
    }
    int n = snprintf(ud, sizeof ud, "%s=%02x", key, id[0]);
    for (int i = 1; i < 16; i++) {
        n += snprintf(ud + n, sizeof ud - (size_t)n, ".%x", id[i]);
    }
    if (hash) {
        n += snprintf(ud + n, sizeof ud - (size_t)n, ";typehash=%s", hash);
    }
    snprintf(ud + n, sizeof ud - (size_t)n, ";");
    dds_qset_userdata(q, ud, strlen(ud));
}

static dds_qos_t *srv_qos(const char *key, const char *hash)
{
    dds_qos_t *q = dds_create_qos();
    dds_qset_reliability(q, DDS_RELIABILITY_RELIABLE, DDS_SECS(1));
    dds_qset_durability(q, DDS_DURABILITY_VOLATILE);
    dds_qset_history(q, DDS_HISTORY_KEEP_LAST, 10);
    user_data(q, key, hash);
    return q;
}

static dds_entity_t topic(const dds_topic_descriptor_t *d, const char *pre,
                          const char *svc, const char *suf)
{
    char name[256];
    snprintf(name, sizeof name, "%s%s%s", pre, svc, suf);
    return dds_create_topic(pp, d, name, NULL, NULL);
}

static bool matched(dds_entity_t wr, dds_entity_t rd)
{
    dds_publication_matched_status_t pm = {0};
    dds_subscription_matched_status_t sm = {0};
    if (wr && dds_get_publication_matched_status(wr, &pm) < 0) {
        return false;
    }
    if (rd && dds_get_subscription_matched_status(rd, &sm) < 0) {
        return false;
    }
    return (!wr || pm.current_count > 0) && (!rd || sm.current_count > 0);
}

static bool past(dds_time_t end)
{
    return dds_time() > end;
}

/* The client's calls: every request in flight at once (seq from one
 * counter of the process, as rmw_send_request's), then each client's
 * replies taken until all are in or `end`. */
static void calls_run(const dds_entity_t *wr, const dds_entity_t *rd,
                      const dds_instance_handle_t *guid, int nc, int calls,
                      dds_time_t end, int *ok, int *wrong)
{
    int64_t seqs[MAX_CLIENTS][MAX_CALLS];
    bool answered[MAX_CLIENTS][MAX_CALLS] = {{false}};
    int64_t next_seq = 0;
    char s[32];
    for (int k = 0; k < calls; k++) {
        for (int i = 0; i < nc; i++) {
            Req r;
            memset(&r, 0, sizeof r);
            r.header_guid = guid[i];
            r.header_seq = seqs[i][k] = ++next_seq;
            r.int64_value = 1000 * i + k;
            snprintf(s, sizeof s, "c%d-%d", i, k);
            r.string_value = s;
            if (dds_write(wr[i], &r) < 0) {
                fprintf(stderr, "cyclone_srv_peer: write failed\n");
            }
        }
    }
    while (*ok + *wrong < nc * calls && !past(end)) {
        bool took = false;
        for (int i = 0; i < nc; i++) {
            void *buf[1] = {NULL};
            dds_sample_info_t si;
            while (dds_take(rd[i], buf, &si, 1, 1) == 1) {
                took = true;
                const Rep *p = buf[0];
                if (!si.valid_data || p->header_guid != guid[i]) {
                    /* another client's reply (rmw_take_response's filter) */
                    (void)dds_return_loan(rd[i], buf, 1);
                    continue;
                }
                int k = 0;
                while (k < calls && seqs[i][k] != p->header_seq) {
                    k++;
                }
                snprintf(s, sizeof s, "c%d-%d!", i, k);
                if (k < calls && !answered[i][k] &&
                    p->int64_value == 2 * (1000 * i + k) &&
                    strcmp(p->string_value, s) == 0) {
                    answered[i][k] = true;
                    (*ok)++;
                } else {
                    (*wrong)++;
                }
                (void)dds_return_loan(rd[i], buf, 1);
            }
        }
        if (!took) {
            dds_sleepfor(DDS_MSECS(10));
        }
    }
}

static int role_client(const char *svc, int nc, int calls, const char *hash)
{
    dds_entity_t tq = topic(&test_msgs_srv_dds__BasicTypes_Request__desc, "rq",
                            svc, "Request");
    dds_entity_t tr = topic(&test_msgs_srv_dds__BasicTypes_Response__desc, "rr",
                            svc, "Reply");
    if (tq < 0 || tr < 0) {
        fprintf(stderr, "cyclone_srv_peer: topics: %s\n",
                dds_strretcode(tq < 0 ? tq : tr));
        return 1;
    }
    dds_entity_t wr[MAX_CLIENTS], rd[MAX_CLIENTS];
    dds_instance_handle_t guid[MAX_CLIENTS];
    for (int i = 0; i < nc; i++) {
        dds_qos_t *q = srv_qos("clientid", hash);
        wr[i] = dds_create_writer(pp, tq, q, NULL);
        rd[i] = dds_create_reader(pp, tr, q, NULL);
        dds_delete_qos(q);
        if (wr[i] < 0 || rd[i] < 0 ||
            dds_get_instance_handle(wr[i], &guid[i]) < 0) {
            fprintf(stderr, "cyclone_srv_peer: no endpoints\n");
            return 1;
        }
    }
    dds_time_t end = dds_time() + DDS_SECS(BOUND_S);
    bool ok_match = false;
    while (!ok_match && !past(end)) {
        ok_match = true;
        for (int i = 0; i < nc; i++) {
            ok_match = ok_match && matched(wr[i], rd[i]);
        }
        dds_sleepfor(DDS_MSECS(20));
    }
    printf("%s\n", ok_match ? "ready" : "unmatched");
    fflush(stdout);
    int ok = 0, wrong = 0;
    if (ok_match) {
        calls_run(wr, rd, guid, nc, calls, end, &ok, &wrong);
    }
    printf("{\"matched\": %s, \"calls\": %d, \"ok\": %d, \"wrong\": %d}\n",
           ok_match ? "true" : "false", nc * calls, ok, wrong);
    return 0;
}

static int role_server(const char *svc, const char *hash)
{
    dds_entity_t tq = topic(&test_msgs_srv_dds__BasicTypes_Request__desc, "rq",
                            svc, "Request");
    dds_entity_t tr = topic(&test_msgs_srv_dds__BasicTypes_Response__desc, "rr",
                            svc, "Reply");
    dds_qos_t *q = srv_qos("serviceid", hash);
    dds_entity_t rd = tq < 0 ? tq : dds_create_reader(pp, tq, q, NULL);
    dds_entity_t wr = tr < 0 ? tr : dds_create_writer(pp, tr, q, NULL);
    dds_delete_qos(q);
    if (rd < 0 || wr < 0) {
        fprintf(stderr, "cyclone_srv_peer: no endpoints\n");
        return 1;
    }
    printf("ready\n");
    fflush(stdout);
    const char *stop = getenv("NERVE_PEER_STOP");
    dds_time_t end = dds_time() + DDS_SECS(BOUND_S);
    int served = 0;
    char s[300];
    while (!past(end) && !(stop && access(stop, F_OK) == 0)) {
        void *buf[1] = {NULL};
        dds_sample_info_t si;
        if (dds_take(rd, buf, &si, 1, 1) != 1) {
            dds_sleepfor(DDS_MSECS(10));
            continue;
        }
        const Req *r = buf[0];
        if (si.valid_data) {
            Rep p;
            memset(&p, 0, sizeof p);
            p.header_guid = r->header_guid; /* as rmw_send_response */
            p.header_seq = r->header_seq;
            p.int64_value = 2 * r->int64_value;
            snprintf(s, sizeof s, "%.200s!", r->string_value);
            p.string_value = s;
            served += dds_write(wr, &p) >= 0;
        }
        (void)dds_return_loan(rd, buf, 1);
    }
    printf("{\"served\": %d}\n", served);
    return 0;
}

static int role_short(const char *svc)
{
    /* Short_ announced under the request's type name (its fields are
     * const: set by copying). */
    dds_topic_descriptor_t lie;
    const char *tn = test_msgs_srv_dds__BasicTypes_Request__desc.m_typename;
    memcpy(&lie, &test_msgs_srv_dds__Short__desc, sizeof lie);
    memcpy((void *)&lie.m_typename, &tn, sizeof tn);
    dds_entity_t tq = topic(&lie, "rq", svc, "Request");
    dds_qos_t *q = srv_qos("clientid", NULL);
    dds_entity_t wr = tq < 0 ? tq : dds_create_writer(pp, tq, q, NULL);
    dds_delete_qos(q);
    if (wr < 0) {
        fprintf(stderr, "cyclone_srv_peer: no writer: %s\n",
                dds_strretcode(wr));
        return 1;
    }
    dds_time_t end = dds_time() + DDS_SECS(BOUND_S);
    bool ok = false;
    while (!(ok = matched(wr, 0)) && !past(end)) {
        dds_sleepfor(DDS_MSECS(20));
    }
    if (ok) {
        test_msgs_srv_dds__Short_ m = {7};
        ok = dds_write(wr, &m) >= 0 &&
             dds_wait_for_acks(wr, DDS_SECS(BOUND_S)) == DDS_RETCODE_OK;
    }
    printf("{\"matched\": %s}\n", ok ? "true" : "false");
    return 0;
}

int main(int argc, char **argv)
{
    const char *role = argc > 2 ? argv[1] : "";
    bool client = strcmp(role, "client") == 0 && argc == 6;
    bool server = strcmp(role, "server") == 0 && argc == 4;
    bool shrt = strcmp(role, "short") == 0 && argc == 3;
    int nc = client ? atoi(argv[3]) : 0, calls = client ? atoi(argv[4]) : 0;
    if (!(client || server || shrt) ||
        (client &&
         (nc < 1 || nc > MAX_CLIENTS || calls < 1 || calls > MAX_CALLS))) {
        fprintf(stderr,
                "usage: cyclone_srv_peer client SERVICE CLIENTS CALLS HASH\n"
                "       cyclone_srv_peer server SERVICE HASH\n"
                "       cyclone_srv_peer short SERVICE\n");
        return 2;
    }
    const char *dom = getenv("ROS_DOMAIN_ID");
    pp =
        dds_create_participant(dom ? (dds_domainid_t)atoi(dom) : 0, NULL, NULL);
    if (pp < 0) {
        fprintf(stderr, "cyclone_srv_peer: %s\n", dds_strretcode(pp));
        return 1;
    }
    int rc = client   ? role_client(argv[2], nc, calls, argv[5])
             : server ? role_server(argv[2], argv[3])
                      : role_short(argv[2]);
    fflush(stdout);
    (void)dds_delete(pp);
    return rc;
}
