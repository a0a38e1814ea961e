/* nerve-ros2-dds: the graph (ros_discovery_info). ros2_dds.c has the
 * overview and ros2_dds.h the map of the files. */
#include "ros2_dds.h"

/* ---- graph: ros_discovery_info ----------------------------------------- */

static dds_entity_t graph_wr;
dds_guid_t pp_gid;

struct cdr {
    unsigned char *b;
    size_t n, cap;
};

static int cdr_room(struct cdr *c, size_t n)
{
    if (c->n + n + 3 <= c->cap) {
        return 0;
    }
    size_t cap = c->cap ? c->cap : 1024;
    while (cap < c->n + n + 3) {
        cap *= 2;
    }
    unsigned char *b = realloc(c->b, cap);
    if (b == NULL) {
        return -1;
    }
    c->b = b;
    c->cap = cap;
    return 0;
}

/* Little-endian CDR; alignment counts from after the 4-byte header. */
static int cdr_u32(struct cdr *c, uint32_t v)
{
    if (cdr_room(c, 8) != 0) {
        return -1;
    }
    while ((c->n - 4) % 4 != 0) {
        c->b[c->n++] = 0;
    }
    for (int i = 0; i < 4; i++) {
        c->b[c->n++] = (unsigned char)(v >> (8 * i));
    }
    return 0;
}

static int cdr_bytes(struct cdr *c, const void *p, size_t n)
{
    if (cdr_room(c, n) != 0) {
        return -1;
    }
    memcpy(c->b + c->n, p, n);
    c->n += n;
    return 0;
}

static int cdr_str(struct cdr *c, const char *s)
{
    size_t n = strlen(s) + 1;
    return cdr_u32(c, (uint32_t)n) || cdr_bytes(c, s, n);
}

/* ParticipantEntitiesInfo{gid, [NodeEntitiesInfo{ns, name, readers,
 * writers}]}, with Jazzy's 16-byte Gid (char[16]: the RTPS GUID). */
void graph_publish(void)
{
    if (graph_wr <= 0) {
        return;
    }
    struct cdr c = {0};
    uint32_t nr = 0, nw = 0;
    for (struct importer *i = importers; i != NULL; i = i->next) {
        nr += i->rd > 0;
    }
    for (struct exporter *e = exporters; e != NULL; e = e->next) {
        nw += e->wr > 0;
    }
    static const unsigned char hdr[4] = {0, 1, 0, 0};
    int bad = cdr_bytes(&c, hdr, 4) || cdr_bytes(&c, pp_gid.v, 16) ||
              cdr_u32(&c, 1) || cdr_str(&c, opt.ns) || cdr_str(&c, opt.node) ||
              cdr_u32(&c, nr);
    for (struct importer *i = importers; i != NULL && !bad; i = i->next) {
        if (i->rd > 0) {
            bad = cdr_bytes(&c, i->gid.v, 16);
        }
    }
    bad = bad || cdr_u32(&c, nw);
    for (struct exporter *e = exporters; e != NULL && !bad; e = e->next) {
        if (e->wr > 0) {
            bad = cdr_bytes(&c, e->gid.v, 16);
        }
    }
    if (!bad) {
        struct rawcdr_sample s = {c.b, c.n, NULL, NULL, NULL};
        dds_return_t rc = dds_write(graph_wr, &s);
        if (rc < 0) {
            say("warning: ros_discovery_info not published: %s",
                dds_strretcode(rc));
        }
    }
    free(c.b);
}

void graph_init(void)
{
    const struct type_ent *te =
        type_find("rmw_dds_common/msg/ParticipantEntitiesInfo");
    dds_entity_t t =
        topic_get("ros_discovery_info",
                  "rmw_dds_common::msg::dds_::ParticipantEntitiesInfo_");
    if (t < 0) {
        say("warning: no ros_discovery_info topic (%s): the node is not in "
            "the ROS graph",
            dds_strretcode(t));
        return;
    }
    dds_qos_t *q = dds_create_qos();
    dds_qset_reliability(q, DDS_RELIABILITY_RELIABLE, DDS_MSECS(100));
    dds_qset_durability(q, DDS_DURABILITY_TRANSIENT_LOCAL);
    dds_qset_history(q, DDS_HISTORY_KEEP_LAST, 1);
    if (te != NULL && te->hash != NULL) {
        char ud[128];
        int n = snprintf(ud, sizeof ud, "typehash=%s;", te->hash);
        dds_qset_userdata(q, ud, (size_t)n);
    }
    graph_wr = dds_create_writer(pp, t, q, NULL);
    dds_delete_qos(q);
    if (graph_wr < 0) {
        say("warning: no ros_discovery_info writer (%s)",
            dds_strretcode(graph_wr));
    }
}
