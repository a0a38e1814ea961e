/* A hostile DDS publisher for the nerve ros2 bound tests
 * (test_ros2_hostile.py), on Cyclone DDS's C API: it publishes
 * std_msgs/msg/String samples of a size the bridge must refuse, then small
 * ones that must still arrive.
 *
 *   hostile_peer TOPIC BIG_BYTES NBIG NSMALL
 *
 * Waits (bounded) until a reader matches on rt/TOPIC, prints READY, writes
 * NBIG samples whose string is BIG_BYTES long, then NSMALL samples "small
 * i" (i = 0..NSMALL-1) 100 ms apart, and prints one JSON line with what
 * dds_write returned. With NERVE_PEER_GO=FILE it waits for FILE before it
 * writes. Every wait is bounded (BOUND_S). Exit status 0, or 1 on a
 * failure of its own (not of the bridge). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <dds/dds.h>

#include "ros2_msgs.h"

#define BOUND_S 90

typedef std_msgs_msg_dds__String_ String;

/* hostile_peer flood NPART NEP SECONDS: NPART participants, NEP writers
 * among them on topics of their own (rt/flood_<pid>_<i>), kept for
 * SECONDS; READY once all exist. */
static int flood(int npart, int nep, int seconds)
{
    const char *dom = getenv("ROS_DOMAIN_ID");
    dds_domainid_t d = dom ? (dds_domainid_t)atoi(dom) : 0;
    dds_entity_t *pp = calloc((size_t)npart, sizeof *pp);
    if (pp == NULL || npart < 1) {
        return 1;
    }
    for (int i = 0; i < npart; i++) {
        pp[i] = dds_create_participant(d, NULL, NULL);
        if (pp[i] < 0) {
            fprintf(stderr, "hostile_peer: participant %d: %s\n", i,
                    dds_strretcode(pp[i]));
            return 1;
        }
    }
    for (int i = 0; i < nep; i++) {
        char name[64];
        snprintf(name, sizeof name, "rt/flood_%d_%d", (int)getpid(), i);
        dds_entity_t tp = dds_create_topic(
            pp[i % npart], &std_msgs_msg_dds__String__desc, name, NULL, NULL);
        if (tp < 0 || dds_create_writer(pp[i % npart], tp, NULL, NULL) < 0) {
            fprintf(stderr, "hostile_peer: writer %d failed\n", i);
            return 1;
        }
    }
    printf("READY\n");
    fflush(stdout);
    dds_sleepfor(DDS_SECS(seconds));
    printf("{\"participants\": %d, \"writers\": %d}\n", npart, nep);
    fflush(stdout);
    free(pp);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 5 && strcmp(argv[1], "flood") == 0) {
        return flood(atoi(argv[2]), atoi(argv[3]), atoi(argv[4]));
    }
    if (argc != 5) {
        fprintf(stderr, "usage: hostile_peer TOPIC BIG_BYTES NBIG NSMALL\n"
                        "       hostile_peer flood NPART NEP SECONDS\n");
        return 2;
    }
    char topic_name[256];
    snprintf(topic_name, sizeof topic_name, "rt%s", argv[1]);
    size_t big = strtoull(argv[2], NULL, 0);
    int nbig = atoi(argv[3]), nsmall = atoi(argv[4]);
    const char *dom = getenv("ROS_DOMAIN_ID");
    dds_entity_t pp =
        dds_create_participant(dom ? (dds_domainid_t)atoi(dom) : 0, NULL, NULL);
    if (pp < 0) {
        fprintf(stderr, "hostile_peer: participant: %s\n", dds_strretcode(pp));
        return 1;
    }
    dds_entity_t tp = dds_create_topic(pp, &std_msgs_msg_dds__String__desc,
                                       topic_name, NULL, NULL);
    dds_qos_t *q = dds_create_qos();
    dds_qset_reliability(q, DDS_RELIABILITY_RELIABLE, DDS_SECS(10));
    dds_qset_history(q, DDS_HISTORY_KEEP_LAST, 1);
    /* Plain CDR (XCDR1), as ROS 2's RMWs write. */
    dds_data_representation_id_t xcdr1 = DDS_DATA_REPRESENTATION_XCDR1;
    dds_qset_data_representation(q, 1, &xcdr1);
    dds_entity_t wr = dds_create_writer(pp, tp, q, NULL);
    dds_delete_qos(q);
    char *buf = malloc(big + 1);
    if (tp < 0 || wr < 0 || buf == NULL) {
        fprintf(stderr, "hostile_peer: topic/writer/buffer failed\n");
        return 1;
    }
    memset(buf, 'x', big);
    buf[big] = '\0';
    dds_publication_matched_status_t st = {0};
    int waited = 0;
    while (st.current_count == 0 && waited < BOUND_S * 10) {
        dds_get_publication_matched_status(wr, &st);
        if (st.current_count == 0) {
            dds_sleepfor(DDS_MSECS(100));
            waited++;
        }
    }
    if (st.current_count == 0) {
        fprintf(stderr, "hostile_peer: no reader matched\n");
        return 1;
    }
    printf("READY\n");
    fflush(stdout);
    const char *go = getenv("NERVE_PEER_GO");
    for (int i = 0; go != NULL && access(go, F_OK) != 0 && i < BOUND_S * 10;
         i++) {
        dds_sleepfor(DDS_MSECS(100));
    }
    String m = {.data = buf};
    int big_rc = 0, small_rc = 0;
    for (int i = 0; i < nbig; i++) {
        dds_return_t rc = dds_write(wr, &m);
        if (rc != DDS_RETCODE_OK) {
            big_rc = rc;
        }
    }
    free(buf);
    char small[32];
    m.data = small;
    for (int i = 0; i < nsmall; i++) {
        snprintf(small, sizeof small, "small %d", i);
        dds_return_t rc = dds_write(wr, &m);
        if (rc != DDS_RETCODE_OK) {
            small_rc = rc;
        }
        dds_sleepfor(DDS_MSECS(100));
    }
    /* Let the reader have the last ones (acknowledged, bounded). */
    dds_wait_for_acks(wr, DDS_SECS(10));
    printf("{\"big_rc\": %d, \"small_rc\": %d}\n", big_rc, small_rc);
    fflush(stdout);
    dds_delete(pp);
    return 0;
}
