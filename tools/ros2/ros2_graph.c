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

/* ---- the nodes named: rmw_nerve's nodes behind the bridged endpoints ---
 *
 * A DDS node's graph (rmw_dds_common's GraphCache) learns which node owns
 * an endpoint from ros_discovery_info: per participant, its nodes with the
 * GIDs of their readers and writers. The bridge's endpoints stand for
 * rmw_nerve's nodes, so each is listed under the rmw_nerve node(s) behind
 * it, as read from rmw_nerve's graph of domain --domain
 * (ros2_rmw_graph_walk): an exported channel's writer under the nodes
 * that publish the topic of that channel, an imported topic's reader
 * under the nodes that subscribe to it, a service offered to DDS (its
 * Fast DDS request reader and reply writer) under the nodes that serve
 * it, one served from DDS (reply reader, request writer) under the nodes
 * that call it. What stands for no rmw_nerve node (a plain nerve channel)
 * stays under the bridge's own node. All goes out in the Cyclone
 * participant's message: a node query (get_node_names,
 * get_publisher_names_and_types_by_node) looks a node's GIDs up among all
 * endpoints, whichever participant has them; only get_*_info_by_topic,
 * which looks for the endpoint's node under its own participant, names
 * the Fast DDS endpoints' node unknown.
 *
 * Bounds: the graph is written by whoever may write its channels, so at
 * most GRAPH_NODES nodes are listed (the others' endpoints stay under the
 * bridge's node) and a node's GIDs are the bridge's endpoints, which are
 * bounded already. */
#define GRAPH_NODES 1024

struct gids {
    unsigned char (*v)[16];
    uint32_t n, cap;
};

struct gnode {
    char *ns, *name;
    struct gids rd, wr;
};

struct gview {
    struct gnode *nodes;
    size_t n;
    struct gids own_rd, own_wr; /* the bridge's node */
    char *e_used, *i_used;      /* exporters/importers listed under a node */
    int bad;
};

static void gids_add(struct gview *g, struct gids *s, const unsigned char *v)
{
    for (uint32_t i = 0; i < s->n; i++) {
        if (memcmp(s->v[i], v, 16) == 0) {
            return;
        }
    }
    if (s->n == s->cap) {
        uint32_t cap = s->cap ? 2 * s->cap : 8;
        void *p = realloc(s->v, cap * sizeof *s->v);
        if (p == NULL) {
            g->bad = 1;
            return;
        }
        s->v = p;
        s->cap = cap;
    }
    memcpy(s->v[s->n++], v, 16);
}

static struct gnode *gnode_get(struct gview *g, const char *ns,
                               const char *name)
{
    for (size_t i = 0; i < g->n; i++) {
        if (strcmp(g->nodes[i].ns, ns) == 0 &&
            strcmp(g->nodes[i].name, name) == 0) {
            return &g->nodes[i];
        }
    }
    if (g->n == GRAPH_NODES) {
        return NULL;
    }
    if (g->n % 16 == 0) {
        void *p = realloc(g->nodes, (g->n + 16) * sizeof *g->nodes);
        if (p == NULL) {
            g->bad = 1;
            return NULL;
        }
        g->nodes = p;
    }
    struct gnode *n = &g->nodes[g->n];
    memset(n, 0, sizeof *n);
    n->ns = strdup(ns);
    n->name = strdup(name);
    if (n->ns == NULL || n->name == NULL) {
        free(n->ns);
        free(n->name);
        g->bad = 1;
        return NULL;
    }
    g->n++;
    return n;
}

#ifdef NERVE_ROS2_SERVICES
struct srv_ep {
    char kind;
    char *name;
    unsigned char rd[16], wr[16];
};

struct srv_eps {
    struct srv_ep *v;
    size_t n;
    int bad;
};

static void on_srv_ep(char kind, const char *service,
                      const unsigned char reader[16],
                      const unsigned char writer[16], void *arg)
{
    struct srv_eps *s = arg;
    void *p = realloc(s->v, (s->n + 1) * sizeof *s->v);
    if (p == NULL) {
        s->bad = 1;
        return;
    }
    s->v = p;
    struct srv_ep *e = &s->v[s->n];
    e->kind = kind;
    e->name = strdup(service);
    if (e->name == NULL) {
        s->bad = 1;
        return;
    }
    memcpy(e->rd, reader, 16);
    memcpy(e->wr, writer, 16);
    s->n++;
}

struct walk {
    struct gview *g;
    struct srv_eps *srv;
};

/* One endpoint of an rmw_nerve node: the bridge's endpoints standing for
 * it go under that node. */
static void on_node_ep(const char *ns, const char *node, char kind,
                       const char *ros_name, const char *chan, void *arg)
{
    struct walk *w = arg;
    struct gview *g = w->g;
    struct gnode *n = NULL;
    size_t k = 0;
    if (kind == 'P') {
        for (struct exporter *e = exporters; e != NULL; e = e->next, k++) {
            if (e->wr > 0 && strcmp(e->chan, chan) == 0 &&
                (n != NULL || (n = gnode_get(g, ns, node)) != NULL)) {
                gids_add(g, &n->wr, e->gid.v);
                g->e_used[k] = 1;
            }
        }
    } else if (kind == 'S') {
        for (struct importer *i = importers; i != NULL; i = i->next, k++) {
            if (i->rd > 0 && strcmp(i->chan, chan) == 0 &&
                (n != NULL || (n = gnode_get(g, ns, node)) != NULL)) {
                gids_add(g, &n->rd, i->gid.v);
                g->i_used[k] = 1;
            }
        }
    } else if (kind == 'V' || kind == 'C') {
        for (size_t j = 0; j < w->srv->n; j++) {
            const struct srv_ep *e = &w->srv->v[j];
            if (e->kind == kind && strcmp(e->name, ros_name) == 0 &&
                (n != NULL || (n = gnode_get(g, ns, node)) != NULL)) {
                gids_add(g, &n->rd, e->rd);
                gids_add(g, &n->wr, e->wr);
            }
        }
    }
}
#endif

/* The nodes to list: rmw_nerve's behind the bridged endpoints, and the
 * bridge's own with the rest. */
static void gview_build(struct gview *g)
{
    size_t ne = 0, ni = 0, k = 0;
    for (struct exporter *e = exporters; e != NULL; e = e->next) {
        ne++;
    }
    for (struct importer *i = importers; i != NULL; i = i->next) {
        ni++;
    }
    g->e_used = calloc(ne + 1, 1);
    g->i_used = calloc(ni + 1, 1);
    if (g->e_used == NULL || g->i_used == NULL) {
        g->bad = 1;
        return;
    }
#ifdef NERVE_ROS2_SERVICES
    struct srv_eps srv = {0};
    ros2_srv_endpoints(on_srv_ep, &srv);
    struct walk w = {g, &srv};
    ros2_rmw_graph_walk(opt.domain, on_node_ep, &w);
    g->bad |= srv.bad;
    for (size_t j = 0; j < srv.n; j++) {
        free(srv.v[j].name);
    }
    free(srv.v);
#endif
    for (struct exporter *e = exporters; e != NULL; e = e->next, k++) {
        if (e->wr > 0 && !g->e_used[k]) {
            gids_add(g, &g->own_wr, e->gid.v);
        }
    }
    k = 0;
    for (struct importer *i = importers; i != NULL; i = i->next, k++) {
        if (i->rd > 0 && !g->i_used[k]) {
            gids_add(g, &g->own_rd, i->gid.v);
        }
    }
}

static void gview_free(struct gview *g)
{
    for (size_t i = 0; i < g->n; i++) {
        free(g->nodes[i].ns);
        free(g->nodes[i].name);
        free(g->nodes[i].rd.v);
        free(g->nodes[i].wr.v);
    }
    free(g->nodes);
    free(g->own_rd.v);
    free(g->own_wr.v);
    free(g->e_used);
    free(g->i_used);
}

static int cdr_gids(struct cdr *c, const struct gids *s)
{
    int bad = cdr_u32(c, s->n);
    for (uint32_t i = 0; i < s->n && !bad; i++) {
        bad = cdr_bytes(c, s->v[i], 16);
    }
    return bad;
}

/* The last message published: sent again only when it changes. */
static struct cdr last;

/* ParticipantEntitiesInfo{gid, [NodeEntitiesInfo{ns, name, readers,
 * writers}]}, with Jazzy's 16-byte Gid (char[16]: the RTPS GUID): the
 * bridge's node, then rmw_nerve's nodes behind its endpoints. Called on
 * every change of what is bridged and every channel scan (rmw_nerve's
 * graph changes without the bridge's knowing); written only when it
 * differs from the last one. */
void graph_publish(void)
{
    if (graph_wr <= 0) {
        return;
    }
    struct gview g = {0};
    gview_build(&g);
    struct cdr c = {0};
    static const unsigned char hdr[4] = {0, 1, 0, 0};
    int bad = g.bad || cdr_bytes(&c, hdr, 4) || cdr_bytes(&c, pp_gid.v, 16) ||
              cdr_u32(&c, (uint32_t)(1 + g.n)) || cdr_str(&c, opt.ns) ||
              cdr_str(&c, opt.node) || cdr_gids(&c, &g.own_rd) ||
              cdr_gids(&c, &g.own_wr);
    for (size_t i = 0; i < g.n && !bad; i++) {
        bad = cdr_str(&c, g.nodes[i].ns) || cdr_str(&c, g.nodes[i].name) ||
              cdr_gids(&c, &g.nodes[i].rd) || cdr_gids(&c, &g.nodes[i].wr);
    }
    gview_free(&g);
    if (!bad && (c.n != last.n || memcmp(c.b, last.b, c.n) != 0)) {
        struct rawcdr_sample s = {c.b, c.n, NULL, NULL, NULL};
        dds_return_t rc = dds_write(graph_wr, &s);
        if (rc < 0) {
            say("warning: ros_discovery_info not published: %s",
                dds_strretcode(rc));
        } else {
            free(last.b);
            last = c;
            return;
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
