/* nerve-ros2-dds: QoS of the bridge's readers and writers, and its topics.
 * ros2_dds.c has the overview and ros2_dds.h the map of the files. */
#include "ros2_dds.h"

/* ---- QoS --------------------------------------------------------------- */

/* The user data of the bridge's readers and writers: the type's hash
 * ("typehash=...;", when known) and the id of the /dev/shm it serves
 * ("nerveshm=...;"). */
static void set_userdata(dds_qos_t *q, const struct type_ent *te)
{
    char ud[256];
    int n = snprintf(
        ud, sizeof ud, "%s%s%snerveshm=%s;", te && te->hash ? "typehash=" : "",
        te && te->hash ? te->hash : "", te && te->hash ? ";" : "", shm_id);
    dds_qset_userdata(q, ud, (size_t)n);
}

dds_qos_t *writer_qos(const struct type_ent *te)
{
    dds_qos_t *q = dds_create_qos();
    /* Reliable: matches reliable and best-effort subscribers alike. The
     * write gives up after DDS's default blocking time for a reliable
     * writer (100 ms) rather than wait longer for a slow reliable reader;
     * what it gives up is counted. Only this channel's exporter thread
     * waits: nerve writers never do, and what the ring overwrites meanwhile
     * is counted as missed. A shorter bound dropped samples for readers
     * that were only descheduled for a moment on a loaded host. */
    dds_qset_reliability(q, DDS_RELIABILITY_RELIABLE, DDS_MSECS(100));
    dds_qset_durability(q, opt.latch ? DDS_DURABILITY_TRANSIENT_LOCAL
                                     : DDS_DURABILITY_VOLATILE);
    dds_qset_history(q, DDS_HISTORY_KEEP_LAST, opt.sensor_data ? 5 : 10);
    set_userdata(q, te);
    return q;
}

/* A reader as the publisher found: reliable unless it is best effort
 * (or --qos sensor_data), transient local only if it is (a transient-local
 * reader would not match a volatile writer). */
dds_qos_t *reader_qos(const dds_qos_t *pub, const struct type_ent *te)
{
    dds_qos_t *q = dds_create_qos();
    dds_reliability_kind_t rel = DDS_RELIABILITY_RELIABLE;
    dds_duration_t mbt;
    dds_durability_kind_t dur = DDS_DURABILITY_VOLATILE;
    if (pub != NULL) {
        dds_qget_reliability(pub, &rel, &mbt);
        dds_qget_durability(pub, &dur);
    }
    if (opt.sensor_data) {
        rel = DDS_RELIABILITY_BEST_EFFORT;
    }
    dds_qset_reliability(q, rel, DDS_MSECS(100));
    dds_qset_durability(q, dur == DDS_DURABILITY_VOLATILE
                               ? DDS_DURABILITY_VOLATILE
                               : DDS_DURABILITY_TRANSIENT_LOCAL);
    dds_qset_history(q, DDS_HISTORY_KEEP_LAST, opt.sensor_data ? 5 : 10);
    dds_qset_ignorelocal(q, DDS_IGNORELOCAL_PARTICIPANT);
    set_userdata(q, te);
    return q;
}

/* The topic named `name` ("rt/...") of DDS type `dds_type`, created once. */
dds_entity_t topic_get(const char *name, const char *dds_type)
{
    for (struct topic *t = topics; t != NULL; t = t->next) {
        if (strcmp(t->name, name) == 0) {
            if (strcmp(t->type, dds_type) != 0) {
                return DDS_RETCODE_PRECONDITION_NOT_MET;
            }
            return t->t;
        }
    }
    struct topic *t = calloc(1, sizeof *t);
    struct ddsi_sertype *st = rawcdr_type_new(dds_type);
    if (t == NULL || st == NULL) {
        free(t);
        return DDS_RETCODE_OUT_OF_RESOURCES;
    }
    dds_entity_t e = dds_create_topic_sertype(pp, name, &st, NULL, NULL, NULL);
    if (e < 0) {
        free(t);
        return e;
    }
    snprintf(t->name, sizeof t->name, "%s", name);
    snprintf(t->type, sizeof t->type, "%s", dds_type);
    t->t = e;
    t->next = topics;
    topics = t;
    return e;
}
