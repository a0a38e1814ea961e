/* A ROS 2 node written directly on Cyclone DDS's C API, for the nerve ros2
 * tests (test_ros2_peers.py): it uses ROS 2's DDS names (topic rt/<name>,
 * type pkg::msg::dds_::Name_), its default QoS (reliable, volatile, keep
 * last 10) and plain CDR, with Cyclone's own serializer (types generated
 * by idlc from ros2_msgs.idl) -- independent of the bridge's pass-through.
 *
 *   cyclone_peer pub KIND TOPIC N   publish messages 0..N-1 once matched
 *   cyclone_peer sub KIND TOPIC N   take N messages, check each field
 *
 * KIND is String, Imu or PointCloud2; message i is the same function of i
 * as rclpy_peer.make(). Prints READY once matched, then one JSON line.
 * A publisher with NERVE_PEER_GO=FILE in its environment waits for FILE
 * before it writes; NERVE_PEER_TYPE_NAME=NAME announces NAME as the DDS
 * type name instead of the real one.
 * Every wait is bounded (30 s). Exit status 0, or 1 on a failure. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <dds/dds.h>

#include "ros2_msgs.h"

#define CLOUD_POINTS 65536
#define MAX_N 64
/* Every wait of this program is bounded by this many seconds in all:
 * generous, for a loaded host. */
#define BOUND_S 90

typedef std_msgs_msg_dds__String_ String;
typedef sensor_msgs_msg_dds__Imu_ Imu;
typedef sensor_msgs_msg_dds__PointCloud2_ Cloud;

static void make_string(String *m, int i, char *buf, size_t len)
{
    int n = snprintf(buf, len, "hello %d", i);
    for (int k = 0; k < i % 4 && (size_t)n + 1 < len; k++) {
        buf[n++] = '!';
    }
    buf[n] = '\0';
    m->data = buf;
}

static void make_imu(Imu *m, int i, char *frame, size_t len)
{
    memset(m, 0, sizeof *m);
    m->header.stamp.sec = i;
    m->header.stamp.nanosec = (uint32_t)(1000 + i);
    snprintf(frame, len, "imu%.*s", i % 3, "__");
    m->header.frame_id = frame;
    m->orientation.w = 1.0;
    m->orientation.x = 0.25 * i;
    m->angular_velocity.x = 0.5 * i;
    m->linear_acceleration.z = 9.81;
    for (int k = 0; k < 9; k++) {
        m->orientation_covariance[k] = (double)(i + k);
        m->angular_velocity_covariance[k] = 0.1 * k;
        m->linear_acceleration_covariance[k] = -1.0;
    }
}

static char *field_names[4] = {"x", "y", "z", "intensity"};

static void make_cloud(Cloud *m, int i, sensor_msgs_msg_dds__PointField_ *f,
                       uint8_t *data)
{
    memset(m, 0, sizeof *m);
    m->header.stamp.sec = i;
    m->header.frame_id = "lidar";
    m->height = 1;
    m->width = CLOUD_POINTS;
    for (uint32_t k = 0; k < 4; k++) {
        f[k].name = field_names[k];
        f[k].offset = 4 * k;
        f[k].datatype = 7; /* PointField.FLOAT32 */
        f[k].count = 1;
    }
    m->fields._length = m->fields._maximum = 4;
    m->fields._buffer = f;
    m->is_bigendian = false;
    m->point_step = 16;
    m->row_step = 16 * CLOUD_POINTS;
    for (uint32_t k = 0; k < 16 * CLOUD_POINTS; k++) {
        data[k] = (uint8_t)((k + (uint32_t)i) % 251);
    }
    m->data._length = m->data._maximum = 16 * CLOUD_POINTS;
    m->data._buffer = data;
    m->is_dense = true;
}

static int index_of(const char *kind, const void *s)
{
    if (strcmp(kind, "String") == 0) {
        return atoi(((const String *)s)->data + 6);
    }
    if (strcmp(kind, "Imu") == 0) {
        return ((const Imu *)s)->header.stamp.sec;
    }
    return ((const Cloud *)s)->header.stamp.sec;
}

static bool same(const char *kind, const void *s, int i)
{
    static uint8_t data[16 * CLOUD_POINTS];
    char buf[64];
    if (strcmp(kind, "String") == 0) {
        String e;
        make_string(&e, i, buf, sizeof buf);
        return strcmp(((const String *)s)->data, e.data) == 0;
    }
    if (strcmp(kind, "Imu") == 0) {
        const Imu *g = s;
        Imu e;
        make_imu(&e, i, buf, sizeof buf);
        return g->header.stamp.sec == e.header.stamp.sec &&
               g->header.stamp.nanosec == e.header.stamp.nanosec &&
               strcmp(g->header.frame_id, e.header.frame_id) == 0 &&
               memcmp(&g->orientation, &e.orientation, sizeof e.orientation) ==
                   0 &&
               memcmp(g->orientation_covariance, e.orientation_covariance,
                      sizeof e.orientation_covariance) == 0 &&
               memcmp(&g->angular_velocity, &e.angular_velocity,
                      sizeof e.angular_velocity) == 0 &&
               memcmp(g->angular_velocity_covariance,
                      e.angular_velocity_covariance,
                      sizeof e.angular_velocity_covariance) == 0 &&
               memcmp(&g->linear_acceleration, &e.linear_acceleration,
                      sizeof e.linear_acceleration) == 0 &&
               memcmp(g->linear_acceleration_covariance,
                      e.linear_acceleration_covariance,
                      sizeof e.linear_acceleration_covariance) == 0;
    }
    const Cloud *g = s;
    Cloud e;
    sensor_msgs_msg_dds__PointField_ f[4];
    make_cloud(&e, i, f, data);
    if (g->header.stamp.sec != i || strcmp(g->header.frame_id, "lidar") != 0 ||
        g->height != e.height || g->width != e.width ||
        g->fields._length != 4 || g->is_bigendian != e.is_bigendian ||
        g->point_step != e.point_step || g->row_step != e.row_step ||
        g->is_dense != e.is_dense || g->data._length != e.data._length ||
        memcmp(g->data._buffer, data, e.data._length) != 0) {
        return false;
    }
    for (int k = 0; k < 4; k++) {
        const sensor_msgs_msg_dds__PointField_ *a = &g->fields._buffer[k];
        if (strcmp(a->name, f[k].name) != 0 || a->offset != f[k].offset ||
            a->datatype != f[k].datatype || a->count != f[k].count) {
            return false;
        }
    }
    return true;
}

int main(int argc, char **argv)
{
    if (argc != 5) {
        fprintf(stderr, "usage: cyclone_peer pub|sub KIND TOPIC N\n");
        return 2;
    }
    const char *mode = argv[1], *kind = argv[2], *topic = argv[3];
    int n = atoi(argv[4]);
    const dds_topic_descriptor_t *desc =
        strcmp(kind, "String") == 0 ? &std_msgs_msg_dds__String__desc
        : strcmp(kind, "Imu") == 0  ? &sensor_msgs_msg_dds__Imu__desc
                                    : &sensor_msgs_msg_dds__PointCloud2__desc;
    if (n < 0 || n > MAX_N) {
        return 2;
    }
    /* NERVE_PEER_TYPE_NAME: the DDS type name to announce instead (a
     * hostile peer lying about, or hiding escapes in, its type). */
    dds_topic_descriptor_t lie; /* its fields are const: set by copying */
    const char *tn = getenv("NERVE_PEER_TYPE_NAME");
    if (tn) {
        memcpy(&lie, desc, sizeof lie);
        memcpy((void *)&lie.m_typename, &tn, sizeof tn);
        desc = &lie;
    }
    const char *dom = getenv("ROS_DOMAIN_ID");
    dds_entity_t pp =
        dds_create_participant(dom ? (dds_domainid_t)atoi(dom) : 0, NULL, NULL);
    if (pp < 0) {
        fprintf(stderr, "cyclone_peer: %s\n", dds_strretcode(pp));
        return 1;
    }
    char rt[256];
    snprintf(rt, sizeof rt, "rt%s", topic);
    dds_entity_t tp = dds_create_topic(pp, desc, rt, NULL, NULL);
    dds_qos_t *q = dds_create_qos();
    dds_qset_reliability(q, DDS_RELIABILITY_RELIABLE, DDS_SECS(1));
    dds_qset_durability(q, DDS_DURABILITY_VOLATILE);
    dds_qset_history(q, DDS_HISTORY_KEEP_LAST, 10);
    dds_data_representation_id_t xcdr1 = DDS_DATA_REPRESENTATION_XCDR1;
    dds_qset_data_representation(q, 1, &xcdr1);
    bool pub = strcmp(mode, "pub") == 0;
    dds_entity_t ep = pub ? dds_create_writer(pp, tp, q, NULL)
                          : dds_create_reader(pp, tp, q, NULL);
    dds_delete_qos(q);
    if (tp < 0 || ep < 0) {
        fprintf(stderr, "cyclone_peer: no topic or endpoint\n");
        return 1;
    }
    dds_time_t end = dds_time() + DDS_SECS(BOUND_S);
    bool matched = false;
    while (!matched && dds_time() < end) {
        if (pub) {
            dds_publication_matched_status_t st;
            matched = dds_get_publication_matched_status(ep, &st) == 0 &&
                      st.current_count > 0;
        } else {
            dds_subscription_matched_status_t st;
            matched = dds_get_subscription_matched_status(ep, &st) == 0 &&
                      st.current_count > 0;
        }
        dds_sleepfor(DDS_MSECS(20));
    }
    printf("%s\n", matched ? "READY" : "UNMATCHED");
    fflush(stdout);
    int rc = 0;
    /* With NERVE_PEER_GO set, a publisher waits for that file: the test
     * creates it once the bridge's reader has matched this writer too
     * (samples written before that are lost for a volatile reader). */
    const char *go = getenv("NERVE_PEER_GO");
    while (pub && matched && go != NULL && access(go, F_OK) != 0) {
        if (dds_time() >= end) {
            fprintf(stderr, "cyclone_peer: %s never appeared\n", go);
            matched = false;
            break;
        }
        dds_sleepfor(DDS_MSECS(20));
    }
    if (pub) {
        static uint8_t data[16 * CLOUD_POINTS];
        for (int i = 0; i < n && matched; i++) {
            char buf[64];
            String s;
            Imu m;
            Cloud c;
            sensor_msgs_msg_dds__PointField_ f[4];
            const void *sample = &s;
            if (strcmp(kind, "String") == 0) {
                make_string(&s, i, buf, sizeof buf);
            } else if (strcmp(kind, "Imu") == 0) {
                make_imu(&m, i, buf, sizeof buf);
                sample = &m;
            } else {
                make_cloud(&c, i, f, data);
                sample = &c;
            }
            if (dds_write(ep, sample) < 0) {
                rc = 1;
            }
            dds_sleepfor(DDS_MSECS(50));
        }
        rc |= dds_wait_for_acks(ep, DDS_SECS(10)) < 0;
        printf("{\"written\": %d, \"matched\": %s}\n", matched ? n : 0,
               matched ? "true" : "false");
    } else {
        int got = 0, bad = 0, idx[MAX_N];
        while (got < n && dds_time() < end) {
            void *buf[1] = {NULL};
            dds_sample_info_t si;
            if (dds_take(ep, buf, &si, 1, 1) == 1) {
                if (si.valid_data) {
                    int i = index_of(kind, buf[0]);
                    idx[got++] = i;
                    bad += !same(kind, buf[0], i);
                }
                dds_return_loan(ep, buf, 1);
            } else {
                dds_sleepfor(DDS_MSECS(10));
            }
        }
        printf("{\"n\": %d, \"bad\": %d, \"idx\": [", got, bad);
        for (int k = 0; k < got; k++) {
            printf("%s%d", k ? ", " : "", idx[k]);
        }
        printf("]}\n");
    }
    dds_delete(pp);
    return rc;
}
