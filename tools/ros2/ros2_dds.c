/* nerve-ros2-dds: the data path of `nerve ros2` on Cyclone DDS.
 *
 * `nerve ros2` (python-tools/src/nerve_tools/ros2/cli.py) parses the command
 * line, looks up message definitions and type hashes, and then runs this
 * program, which does everything else: it is a ROS 2 node as far as any
 * ROS 2 middleware on DDS can tell (docs/ros2.md has the mapping).
 *
 * To ROS 2. The main thread scans the channel list twice a second; each
 * channel matching a --to spec whose encoding is "cdr" and whose type is
 * "pkg/msg/Name" gets a DDS writer on "rt/<topic>" with type
 * "pkg::msg::dds_::Name_" and a thread that waits on the channel, views
 * each new message in place and writes its bytes to DDS (one copy, into a
 * pooled DDS sample: rawcdr.c). The source timestamp is the commit time.
 * The thread is the only reader of its channel handle; nerve writers never
 * wait for it (a slow DDS reader makes this thread miss messages, which
 * are counted, never the writers slower).
 *
 * From ROS 2. For each --from topic a reader is created once a publisher
 * of "rt/<topic>" is discovered whose type the catalog knows, with the
 * same type hash where the publisher says one (its type name gives the
 * channel's type; others are dropped: type_refused);
 * a listener takes each sample and writes its bytes into a reservation of
 * the channel, committed at the sample's source time translated to
 * CLOCK_MONOTONIC (nerve_chan_commit_at keeps ring times ordered). The
 * channel is created on the first sample, sized from it within the
 * --max-channel-size / --max-import-total bounds, and grown (GROWTH in
 * src/chan_open.c) within them when a later sample is larger; exporters
 * follow a channel that a writer grew.
 *
 * No loops. (1) Readers ignore this participant's writers (ignore local).
 * (2) Every writer of a nerve bridge says in its user data which /dev/shm
 * it serves ("nerveshm=<machine-id>.<dev>.<ino>;"); a reader drops samples
 * of writers of the same /dev/shm, whose channels it shares already. (3) A
 * channel both imported and exported: the exporter skips the sequence
 * numbers its own importer committed (OWN_N remembered per channel).
 *
 * Graph. The node's name and the GUIDs of its readers and writers are
 * published on "ros_discovery_info" (rmw_dds_common ParticipantEntitiesInfo,
 * reliable, transient local, keep last 1) whenever they change.
 *
 * Services. With --services GLOB, the services of rmw_nerve's nodes are
 * offered to DDS clients by ros2_services.cpp (on Fast DDS: see there why),
 * polled from the main loop; their channels are never topics here. With
 * --services-from-ros GLOB, the same file serves DDS services to rmw_nerve
 * clients.
 *
 * Threads: main (scan, discovery, graph), one per exported channel, and
 * Cyclone's own (the listeners run on its receive threads). Only the main
 * thread creates and deletes entities; the lists below are changed by it
 * alone, under `lock` where a listener reads them. */
#include <errno.h>
#include <fnmatch.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <nerve/nerve.h>

#include "../cli.h"
#include "rawcdr.h"
#include "ros2_config.h"
#include "ros2_log.h"
#include "ros2_services.h"

#define PROG "nerve ros2"
#define OWN_N 4096          /* own sequence numbers remembered per channel */
#define SCAN_NS 500000000LL /* channel list scan period */
#define WAIT_NS 250000000LL /* longest wait on a channel between stop checks */
#define HANDLES 32          /* publication handles remembered per reader */
#define TOPIC_MAX 512

/* ---- options ----------------------------------------------------------- */

struct to_spec {
    const char *glob;  /* channel name or glob */
    const char *topic; /* topic (name), topic prefix (glob), or "" */
};
struct from_spec {
    const char *topic;
    const char *chan;
};

static struct {
    uint32_t domain;
    const char *node, *ns;
    int sensor_data, latch;
    struct to_spec to[64];
    size_t nto;
    struct from_spec from[64];
    size_t nfrom;
    const char *services[64]; /* --services globs (ros2_services.cpp) */
    size_t nservices;
    const char *services_from[64]; /* --services-from-ros globs (same) */
    size_t nservices_from;
    uint64_t max_chan, max_total, slots, size;
    int catalog_fd;
} opt = {.node = "nerve_ros2",
         .ns = "/",
         .max_chan = 64u << 20,
         .max_total = 512u << 20,
         .catalog_fd = -1};

/* ---- the type catalog (from nerve ros2: rosbags' definitions) ---------- */

struct type_ent {
    const char *type, *hash, *schema;
    size_t schema_len;
};
static struct type_ent *types;
static size_t ntypes;

/* Records "T <type> <hash or -> <schema length>\n<schema>\n", read once. */
static int catalog_load(int fd)
{
    size_t cap = 1 << 20, len = 0;
    char *buf = malloc(cap + 1);
    if (buf == NULL) {
        return -1;
    }
    for (;;) {
        if (len == cap) {
            char *b = realloc(buf, 2 * cap + 1);
            if (b == NULL) {
                free(buf);
                return -1;
            }
            buf = b;
            cap *= 2;
        }
        ssize_t n = read(fd, buf + len, cap - len);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n < 0) {
            free(buf);
            return -1;
        }
        if (n == 0) {
            break;
        }
        len += (size_t)n;
    }
    buf[len] = '\0';
    size_t tcap = 0;
    char *p = buf, *end = buf + len;
    while (p < end) {
        char *nl = memchr(p, '\n', (size_t)(end - p));
        if (nl == NULL || p[0] != 'T' || p[1] != ' ') {
            return -1;
        }
        *nl = '\0';
        char *type = p + 2, *hash = strchr(type, ' ');
        if (hash == NULL) {
            return -1;
        }
        *hash++ = '\0';
        char *lens = strchr(hash, ' ');
        if (lens == NULL) {
            return -1;
        }
        *lens++ = '\0';
        size_t slen = strtoull(lens, NULL, 10);
        char *schema = nl + 1;
        if (slen > (size_t)(end - schema) - 1 || schema[slen] != '\n') {
            return -1;
        }
        schema[slen] = '\0';
        if (ntypes == tcap) {
            tcap = tcap ? 2 * tcap : 256;
            struct type_ent *t = realloc(types, tcap * sizeof *t);
            if (t == NULL) {
                return -1;
            }
            types = t;
        }
        types[ntypes++] = (struct type_ent){
            type, strcmp(hash, "-") == 0 ? NULL : hash, schema, slen};
        p = schema + slen + 1;
    }
    return 0;
}

static const struct type_ent *type_find(const char *type)
{
    for (size_t i = 0; i < ntypes; i++) {
        if (strcmp(types[i].type, type) == 0) {
            return &types[i];
        }
    }
    return NULL;
}

/* "pkg/msg/Name" -> "pkg::msg::dds_::Name_", and the same for an action's
 * messages ("pkg/action/Name_FeedbackMessage": an action's feedback topic
 * carries one); 0 or -1 when not a ROS 2 message type. */
static int dds_type_of(const char *ros, char *out, size_t len)
{
    const char *a = strchr(ros, '/');
    size_t kl = a == NULL                        ? 0
                : strncmp(a, "/msg/", 5) == 0    ? 3
                : strncmp(a, "/action/", 8) == 0 ? 6
                                                 : 0;
    if (a == NULL || a == ros || kl == 0) {
        return -1;
    }
    const char *name = a + kl + 2;
    if (*name == '\0' || strchr(name, '/') != NULL) {
        return -1;
    }
    int n = snprintf(out, len, "%.*s::%.*s::dds_::%s_", (int)(a - ros), ros,
                     (int)kl, a + 1, name);
    return n > 0 && (size_t)n < len ? 0 : -1;
}

/* The reverse: "pkg::msg::dds_::Name_" -> "pkg/msg/Name" (and
 * "::action::dds_::"). */
static int ros_type_of(const char *dds, char *out, size_t len)
{
    const char *a = strstr(dds, "::msg::dds_::");
    size_t kl = 3;
    if (a == NULL && (a = strstr(dds, "::action::dds_::")) != NULL) {
        kl = 6;
    }
    size_t n = strlen(dds);
    if (a == NULL || a == dds || n < 2 || dds[n - 1] != '_') {
        return -1;
    }
    const char *name = a + kl + 10;
    size_t nl = (size_t)(dds + n - 1 - name);
    if (nl == 0) {
        return -1;
    }
    int w = snprintf(out, len, "%.*s/%.*s/%.*s", (int)(a - dds), dds, (int)kl,
                     a + 2, (int)nl, name);
    return w > 0 && (size_t)w < len ? 0 : -1;
}

/* ---- reporting --------------------------------------------------------- */

/* Type names, topics and channels come from DDS peers: every line is
 * escaped (ros2_log.c), so no peer writes escape sequences into the
 * operator's terminal; say_peer() is for the lines a peer can repeat at
 * will, which are rate-limited too. */
__attribute__((format(printf, 1, 2))) static void say(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    ros2_logv(PROG, 0, fmt, ap);
    va_end(ap);
}

__attribute__((format(printf, 1, 2))) static void say_peer(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    ros2_logv(PROG, 1, fmt, ap);
    va_end(ap);
}

/* ---- state --------------------------------------------------------------- */

static volatile sig_atomic_t stop;
static dds_entity_t pp;  /* the participant */
static char shm_id[128]; /* this /dev/shm, see "No loops" */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static _Atomic uint64_t import_total; /* data bytes of channels created */

/* A channel both directions may touch: the sequence numbers the importer
 * committed, so that the exporter does not send them back. */
struct own {
    char name[NERVE_NAME_MAX + 1];
    _Atomic uint64_t seq[OWN_N];
    struct own *next;
};
static struct own *owns;

static struct own *own_get(const char *name)
{
    pthread_mutex_lock(&lock);
    struct own *o = owns;
    while (o != NULL && strcmp(o->name, name) != 0) {
        o = o->next;
    }
    if (o == NULL && (o = calloc(1, sizeof *o)) != NULL) {
        snprintf(o->name, sizeof o->name, "%s", name);
        o->next = owns;
        owns = o;
    }
    pthread_mutex_unlock(&lock);
    return o;
}

static void own_add(struct own *o, uint64_t seq)
{
    atomic_store_explicit(&o->seq[seq % OWN_N], seq, memory_order_release);
}

static int own_has(struct own *o, uint64_t seq)
{
    return atomic_load_explicit(&o->seq[seq % OWN_N], memory_order_acquire) ==
           seq;
}

struct topic {
    char name[TOPIC_MAX + 4]; /* "rt/..." */
    char type[NERVE_TYPE_MAX + 1];
    dds_entity_t t;
    struct topic *next;
};
static struct topic *topics;

struct exporter {
    char chan[NERVE_NAME_MAX + 1];
    char topic[TOPIC_MAX];
    char type[NERVE_TYPE_MAX + 1];
    int64_t created_ns;
    nerve_chan *c;
    dds_entity_t wr;
    dds_guid_t gid;
    struct own *own;
    pthread_t th;
    atomic_int quit;
    _Atomic uint64_t sent, missed, stale, failed, skipped;
    uint64_t rexmit; /* bytes retransmitted, read as the writer is deleted */
    int warned_type;
    struct exporter *next;
};
static struct exporter *exporters;

struct importer {
    char topic[TOPIC_MAX];
    char chan[NERVE_NAME_MAX + 1];
    char type[NERVE_TYPE_MAX + 1]; /* "" until a publisher is seen */
    dds_entity_t rd;
    dds_guid_t gid;
    nerve_chan *w; /* opened on the first sample */
    int counted;   /* w was made by this bridge: its bytes count in
                      --max-import-total */
    uint64_t data_size;
    struct own *own;
    atomic_int disabled; /* a fatal problem for this topic was reported
                          (set by the listener or the main thread) */
    struct {
        dds_instance_handle_t h;
        int ignore;
    } handles[HANDLES];
    unsigned nhandles;
    uint64_t received, put, ignored, refused_size, too_big, errors, clamped;
    uint64_t refused_type; /* samples of writers of another type hash */
    uint64_t own_late;
    char warned[4][NERVE_TYPE_MAX + 1]; /* other types reported once */
    struct importer *next;
};
static struct importer *importers;

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

static dds_qos_t *writer_qos(const struct type_ent *te)
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
static dds_qos_t *reader_qos(const dds_qos_t *pub, const struct type_ent *te)
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
static dds_entity_t topic_get(const char *name, const char *dds_type)
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

/* ---- graph: ros_discovery_info ----------------------------------------- */

static dds_entity_t graph_wr;
static dds_guid_t pp_gid;

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
static void graph_publish(void)
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

static void graph_init(void)
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

/* ---- to ROS 2 ---------------------------------------------------------- */

static int view_check(const void *arg)
{
    const void *const *a = arg;
    return nerve_chan_view_check(a[0], a[1]) != 0;
}

static void *export_run(void *arg)
{
    struct exporter *e = arg;
    while (!atomic_load(&e->quit)) {
        struct nerve_view v;
        int rc = nerve_chan_view(e->c, 0, WAIT_NS, &v,
                                 NERVE_GET_NEXT | NERVE_F_WAIT);
        if (rc == NERVE_ETIMEDOUT || rc == NERVE_EAGAIN) {
            continue;
        }
        if (rc == NERVE_ECANCELED) {
            break;
        }
        if (rc == NERVE_ESUPERSEDED) {
            /* A writer grew the channel: on with its successor, in order
             * (under `lock`, against export_stop()'s cancel). */
            pthread_mutex_lock(&lock);
            if (!atomic_load(&e->quit)) {
                rc = nerve_chan_follow(&e->c);
            }
            pthread_mutex_unlock(&lock);
            if (rc == 0) {
                continue;
            }
        }
        if (rc != 0) {
            say("to-ros %s: read failed: %s", e->chan, nerve_strerror(rc));
            struct timespec ts = {0, WAIT_NS};
            nanosleep(&ts, NULL);
            continue;
        }
        atomic_fetch_add(&e->missed, v.info.missed);
        if (e->own != NULL && own_has(e->own, v.info.seq)) {
            atomic_fetch_add(&e->skipped, 1);
            continue;
        }
        int stale = 0;
        const void *ca[2] = {e->c, &v};
        struct rawcdr_sample s = {v.data, v.info.len, view_check, ca, &stale};
        dds_return_t w =
            dds_write_ts(e->wr, &s, nerve_clock_to_realtime_ns(v.info.time_ns));
        if (w >= 0) {
            atomic_fetch_add(&e->sent, 1);
        } else if (stale) {
            atomic_fetch_add(&e->stale, 1);
        } else {
            atomic_fetch_add(&e->failed, 1);
        }
    }
    return NULL;
}

/* rmw_nerve's channel of topic /a/b in DDS domain N > 0 is "ros2-dN.a.b"
 * (rmw_nerve/src/names.cpp; domain 0 has no prefix): the length of that
 * prefix when `name` carries the one of the bridge's own --domain, else 0,
 * so that such a channel maps back to /a/b and not to /ros2_dN/a/b. */
static size_t rmw_domain_prefix(const char *name)
{
    char p[32];
    if (opt.domain == 0) {
        return 0;
    }
    int n = snprintf(p, sizeof p, "ros2-d%" PRIu32 ".", opt.domain);
    if (n <= 0 || (size_t)n >= sizeof p || strncmp(name, p, (size_t)n) != 0 ||
        name[n] == '\0') {
        return 0;
    }
    return (size_t)n;
}

static void topic_of_channel(const char *name, char *out, size_t len)
{
    size_t j = 0;
    name += rmw_domain_prefix(name);
    if (j + 1 < len) {
        out[j++] = '/';
    }
    for (size_t i = 0; name[i] != '\0' && j + 1 < len; i++) {
        char ch = name[i];
        out[j++] = ch == '.' ? '/' : ch == '-' ? '_' : ch;
    }
    out[j] = '\0';
}

/* The topic of channel `name` under the --to specs, or 0 for none. */
static int export_topic(const char *name, char *topic, size_t len)
{
    for (size_t i = 0; i < opt.nto; i++) {
        const struct to_spec *s = &opt.to[i];
        int pattern = strpbrk(s->glob, "*?[") != NULL;
        if (pattern) {
            if (fnmatch(s->glob, name, 0) != 0) {
                continue;
            }
            char t[TOPIC_MAX];
            topic_of_channel(name, t, sizeof t);
            size_t pl = strlen(s->topic);
            while (pl > 0 && s->topic[pl - 1] == '/') {
                pl--;
            }
            int n = snprintf(topic, len, "%.*s%s", (int)pl, s->topic, t);
            return n > 0 && (size_t)n < len; /* a cut topic is not used */
        }
        if (strcmp(s->glob, name) == 0) {
            if (s->topic[0] != '\0') {
                snprintf(topic, len, "%s", s->topic);
            } else {
                topic_of_channel(name, topic, len);
            }
            return 1;
        }
    }
    return 0;
}

static void export_stop(struct exporter *e)
{
    pthread_mutex_lock(&lock); /* e->c may be following a growth */
    atomic_store(&e->quit, 1);
    nerve_chan_cancel(e->c);
    pthread_mutex_unlock(&lock);
    pthread_join(e->th, NULL);
    e->rexmit = ros2_writer_rexmit_bytes(e->wr);
    dds_delete(e->wr);
    e->wr = 0;
    (void)nerve_chan_close(e->c);
    e->c = NULL;
}

static void export_summary(const struct exporter *e)
{
    say("to-ros %s -> %s: %" PRIu64 " sent, %" PRIu64 " missed, %" PRIu64
        " overwritten while sent, %" PRIu64 " dropped by DDS, %" PRIu64
        " own skipped",
        e->chan, e->topic, atomic_load(&e->sent), atomic_load(&e->missed),
        atomic_load(&e->stale), atomic_load(&e->failed),
        atomic_load(&e->skipped));
    if (e->rexmit > 0) {
        say("to-ros %s: reliable DDS readers kept losing samples: %" PRIu64
            " bytes sent again (their socket buffers are smaller than a "
            "burst; see 'nerve ros2 config' for the large-data settings)",
            e->chan, e->rexmit);
    }
}

/* Cyclone's publication-matched listener of an exporter's writer: one
 * line each time the set of DDS readers it delivers to changes. A reliable
 * volatile reader gets only what is written after this line says it is
 * matched (the tests wait for it before putting). */
static void on_pub_matched(dds_entity_t wr,
                           const dds_publication_matched_status_t st, void *arg)
{
    (void)wr;
    const struct exporter *e = arg;
    say("to-ros %s matched %" PRIu32 " reader(s)", e->chan, st.current_count);
}

/* Names rejected once, with their creation time (not retried until the
 * channel is recreated). */
struct rejected {
    char name[NERVE_NAME_MAX + 1];
    int64_t created_ns;
    struct rejected *next;
};
static struct rejected *rejects;

static int rejected(const char *name, int64_t created, int add)
{
    for (struct rejected *r = rejects; r != NULL; r = r->next) {
        if (strcmp(r->name, name) == 0) {
            if (add) {
                r->created_ns = created;
            }
            return r->created_ns == created;
        }
    }
    if (add) {
        struct rejected *r = calloc(1, sizeof *r);
        if (r != NULL) {
            snprintf(r->name, sizeof r->name, "%s", name);
            r->created_ns = created;
            r->next = rejects;
            rejects = r;
        }
    }
    return 0;
}

/* Opens channel `name` for reading and checks that it carries a ROS 2
 * message as CDR: fills `*c`, `*m` and the DDS type name `dds_type`, or
 * says why not, leaves nothing open and returns -1. */
static int export_open(const char *name, nerve_chan **c, struct nerve_meta *m,
                       char *dds_type, size_t len)
{
    int rc = nerve_chan_open(name, NERVE_O_READ, c);
    if (rc != 0) {
        say("error: to-ros %s: cannot open: %s", name, nerve_strerror(rc));
        return -1;
    }
    if (nerve_chan_meta(*c, m) == 0 && m->encoding != NULL &&
        strcmp(m->encoding, "rmw_nerve-service") == 0) {
        /* rmw_nerve's request/reply channels are a service's, not a
         * topic's: never published, and not an error. */
        (void)nerve_chan_close(*c);
        return -1;
    }
    if (nerve_chan_meta(*c, m) != 0 || m->encoding == NULL ||
        strcmp(m->encoding, "cdr") != 0) {
        say("error: to-ros %s: encoding is '%s', not 'cdr'; not published",
            name, m->encoding ? m->encoding : "");
        (void)nerve_chan_close(*c);
        return -1;
    }
    if (m->type == NULL || dds_type_of(m->type, dds_type, len) != 0) {
        say("error: to-ros %s: type '%s' is not a ROS 2 message type "
            "(pkg/msg/Name); not published",
            name, m->type ? m->type : "");
        (void)nerve_chan_close(*c);
        return -1;
    }
    return 0;
}

/* The own-import filter of exporter `e` (channel `name` to `topic`): set
 * only when a --from spec imports that same topic into that same channel. */
static void export_own(struct exporter *e, const char *name, const char *topic)
{
    for (size_t i = 0; i < opt.nfrom; i++) {
        /* Only what would go back to the topic it came from is skipped;
         * re-published under another topic, an import is new there. */
        if (strcmp(opt.from[i].chan, name) == 0 &&
            strcmp(opt.from[i].topic, topic) == 0) {
            e->own = own_get(name);
        }
    }
}

/* Start after what is there; with --latch, at the newest message, so
 * that a late subscriber gets it from the writer's history. */
static void export_seek_start(nerve_chan *c)
{
    struct nerve_stats st;
    if (nerve_chan_stat(c, &st) == 0) {
        uint64_t head = st.head_seq;
        nerve_chan_seek(c, opt.latch && head > 0 ? head - 1 : head);
    }
}

/* Publishes channel `name` (created at `created`) on DDS topic `topic`:
 * checks it, makes the topic and writer, and starts its export thread.
 * 0, or -1 with the reason said and nothing left behind. */
static int export_start(const char *name, const char *topic, int64_t created)
{
    nerve_chan *c;
    struct nerve_meta m;
    char dds_type[NERVE_TYPE_MAX + 32];
    if (export_open(name, &c, &m, dds_type, sizeof dds_type) != 0) {
        return -1;
    }
    char rt[TOPIC_MAX + 4];
    snprintf(rt, sizeof rt, "rt%s", topic);
    dds_entity_t t = topic_get(rt, dds_type);
    if (t < 0) {
        say("error: to-ros %s: topic %s: %s", name, topic,
            t == DDS_RETCODE_PRECONDITION_NOT_MET
                ? "already bridged with another type"
                : dds_strretcode(t));
        (void)nerve_chan_close(c);
        return -1;
    }
    const struct type_ent *te = type_find(m.type);
    struct exporter *e = calloc(1, sizeof *e);
    if (e == NULL) {
        (void)nerve_chan_close(c);
        return -1;
    }
    snprintf(e->chan, sizeof e->chan, "%s", name);
    snprintf(e->topic, sizeof e->topic, "%s", topic);
    snprintf(e->type, sizeof e->type, "%s", m.type);
    e->created_ns = created;
    e->c = c;
    dds_qos_t *q = writer_qos(te);
    dds_listener_t *l = dds_create_listener(e);
    dds_lset_publication_matched(l, on_pub_matched);
    e->wr = dds_create_writer(pp, t, q, l);
    dds_delete_listener(l);
    dds_delete_qos(q);
    if (e->wr < 0) {
        say("error: to-ros %s: no DDS writer: %s", name, dds_strretcode(e->wr));
        (void)nerve_chan_close(c);
        free(e);
        return -1;
    }
    (void)dds_get_guid(e->wr, &e->gid);
    export_own(e, name, topic);
    export_seek_start(c);
    if (pthread_create(&e->th, NULL, export_run, e) != 0) {
        say("error: to-ros %s: no thread", name);
        dds_delete(e->wr);
        (void)nerve_chan_close(c);
        free(e);
        return -1;
    }
    pthread_mutex_lock(&lock);
    e->next = exporters;
    exporters = e;
    pthread_mutex_unlock(&lock);
    say("to-ros %s -> %s [%s]%s", name, topic, m.type,
        te && te->hash ? "" : " (no type hash known for this type)");
    return 0;
}

struct scan_arg {
    int changed;
};

static int scan_one(const char *name, void *arg)
{
    struct scan_arg *sa = arg;
    char topic[TOPIC_MAX];
    if (!export_topic(name, topic, sizeof topic)) {
        return 0;
    }
    struct nerve_stats st;
    if (nerve_chan_stat_name(name, &st) != 0) {
        return 0;
    }
    for (struct exporter *e = exporters; e != NULL; e = e->next) {
        if (strcmp(e->chan, name) == 0) {
            return 0;
        }
    }
    if (rejected(name, st.created_ns, 0)) {
        return 0;
    }
    if (export_start(name, topic, st.created_ns) != 0) {
        rejected(name, st.created_ns, 1);
    } else {
        sa->changed = 1;
    }
    return 0;
}

/* Start exporters for new matching channels; stop those whose channel is
 * gone or was recreated. */
static int scan(void)
{
    struct scan_arg sa = {0};
    for (struct exporter **pe = &exporters; *pe != NULL;) {
        struct exporter *e = *pe;
        struct nerve_stats st;
        if (nerve_chan_stat_name(e->chan, &st) != 0 ||
            st.created_ns != e->created_ns) {
            export_stop(e);
            pthread_mutex_lock(&lock);
            *pe = e->next;
            pthread_mutex_unlock(&lock);
            say("to-ros %s: channel gone; %s no longer published", e->chan,
                e->topic);
            export_summary(e);
            free(e);
            sa.changed = 1;
            continue;
        }
        pe = &e->next;
    }
    if (opt.nto > 0) {
        if (nerve_chan_list(scan_one, &sa) != 0) {
            say("warning: cannot list the channels in /dev/shm");
        }
    }
    return sa.changed;
}

/* ---- from ROS 2 -------------------------------------------------------- */

static int userdata_has(const dds_qos_t *q, const char *needle)
{
    void *ud = NULL;
    size_t n = 0;
    int found = 0;
    if (q != NULL && dds_qget_userdata(q, &ud, &n) && ud != NULL) {
        found = memmem(ud, n, needle, strlen(needle)) != NULL;
    }
    dds_free(ud);
    return found;
}

/* The "typehash=" value of an endpoint's user data, or "". */
static void userdata_hash(const dds_qos_t *q, char *out, size_t len)
{
    void *ud = NULL;
    size_t n = 0;
    out[0] = '\0';
    if (q != NULL && dds_qget_userdata(q, &ud, &n) && ud != NULL) {
        const char *p = memmem(ud, n, "typehash=", 9);
        if (p != NULL) {
            p += 9;
            size_t k = 0;
            while (p + k < (const char *)ud + n && p[k] != ';' && k + 1 < len) {
                out[k] = p[k];
                k++;
            }
            out[k] = '\0';
        }
    }
    dds_free(ud);
}

/* Whether the endpoint says a type hash (into h) other than te's; a peer
 * that says none (before Iron), or a type without a known hash, does not
 * differ. */
static int hash_differs(const dds_qos_t *q, const struct type_ent *te, char *h,
                        size_t len)
{
    userdata_hash(q, h, len);
    return te != NULL && te->hash != NULL && h[0] != '\0' &&
           strcmp(h, te->hash) != 0;
}

/* Whether samples of publication `h` are dropped: a writer of a nerve
 * bridge serving this same /dev/shm. */
static int import_ignored(struct importer *im, dds_instance_handle_t h)
{
    for (unsigned i = 0; i < im->nhandles; i++) {
        if (im->handles[i].h == h) {
            return im->handles[i].ignore;
        }
    }
    dds_builtintopic_endpoint_t *ep =
        dds_get_matched_publication_data(im->rd, h);
    char needle[160];
    snprintf(needle, sizeof needle, "nerveshm=%s;", shm_id);
    int ignore = ep != NULL && userdata_has(ep->qos, needle);
    char hash[96];
    if (ep != NULL && !ignore &&
        hash_differs(ep->qos, type_find(im->type), hash, sizeof hash)) {
        ignore = 2; /* another type hash: type_refused said so */
    }
    if (ep != NULL) {
        dds_builtintopic_free_endpoint(ep);
    }
    unsigned k = im->nhandles < HANDLES ? im->nhandles++ : h % HANDLES;
    im->handles[k].h = h;
    im->handles[k].ignore = ignore;
    return ignore;
}

static void default_geometry(uint64_t msg, uint64_t *slots, uint64_t *size)
{
    uint64_t s = 1u << 20;
    while (s < 16 * (msg ? msg : 1) && s < (256u << 20)) {
        s <<= 1;
    }
    uint64_t n = s / (msg > 64 ? msg : 64);
    *slots = n < 16 ? 16 : n > 1024 ? 1024 : n;
    *size = s;
}

/* Open (or create, sized from the first message of `len` bytes) the
 * channel of `im`. 0, or -1 with the reason reported and counted. */
static int import_open(struct importer *im, size_t len)
{
    nerve_chan *w;
    int rc = nerve_chan_open(im->chan, NERVE_O_WRITE, &w);
    if (rc == NERVE_ENOENT) {
        uint64_t slots, size;
        default_geometry(len, &slots, &size);
        if (opt.slots) {
            slots = opt.slots;
        }
        if (opt.size) {
            size = opt.size;
        }
        if (size < len) {
            size = len;
        }
        if (size > opt.max_chan ||
            atomic_load(&import_total) + size > opt.max_total) {
            im->refused_size++;
            say("error: from-ros %s: channel %s of %" PRIu64
                " bytes refused (--max-channel-size %" PRIu64
                ", --max-import-total %" PRIu64 ", %" PRIu64 " used)",
                im->topic, im->chan, size, opt.max_chan, opt.max_total,
                atomic_load(&import_total));
            return -1;
        }
        const struct type_ent *te = type_find(im->type);
        struct nerve_chan_opts o = NERVE_CHAN_OPTS_INIT;
        o.slots = slots;
        o.data_size = size;
        o.type = im->type;
        o.encoding = "cdr";
        o.schema = te ? te->schema : NULL;
        o.schema_len = te ? te->schema_len : 0;
        rc = nerve_chan_create(im->chan, &o);
        if (rc == 0 || rc == NERVE_EEXIST) {
            if (rc == 0) {
                atomic_fetch_add(&import_total, size);
                im->counted = 1;
                say("from-ros %s: created channel %s (%" PRIu64
                    " slots, %" PRIu64 " bytes)%s",
                    im->topic, im->chan, slots, size,
                    te ? "" : "; no message definition known: no schema");
            }
            rc = nerve_chan_open(im->chan, NERVE_O_WRITE, &w);
        }
    }
    if (rc != 0) {
        im->disabled = 1;
        say("error: from-ros %s: channel %s: %s", im->topic, im->chan,
            nerve_strerror(rc));
        return -1;
    }
    struct nerve_meta m;
    if (nerve_chan_meta(w, &m) != 0 || m.type == NULL ||
        strcmp(m.type, im->type) != 0 || m.encoding == NULL ||
        strcmp(m.encoding, "cdr") != 0) {
        im->disabled = 1;
        say("error: from-ros %s: channel %s holds type '%s' encoding '%s', "
            "the topic carries '%s' (cdr); topic not bridged",
            im->topic, im->chan, m.type ? m.type : "",
            m.encoding ? m.encoding : "", im->type);
        (void)nerve_chan_close(w);
        return -1;
    }
    struct nerve_stats st;
    im->data_size = nerve_chan_stat(w, &st) == 0 ? st.data_size : 0;
    im->w = w;
    return 0;
}

/* A sample of `len` bytes larger than the channel of `im`: grow the channel
 * (nerve_chan_grow: a larger successor under the name, every message
 * kept; readers follow it) to the size a first sample of `len` would have
 * got, within --max-channel-size and, for a channel this bridge made,
 * --max-import-total. 0, or -1 (the sample is dropped and counted). */
static int import_grow(struct importer *im, size_t len)
{
    uint64_t slots, size;
    default_geometry(len, &slots, &size);
    if (size < 2 * im->data_size) {
        size = 2 * im->data_size;
    }
    if (size < len) {
        size = len;
    }
    uint64_t grown = size - im->data_size;
    if (size > opt.max_chan ||
        (im->counted && atomic_load(&import_total) + grown > opt.max_total)) {
        return -1;
    }
    int rc = nerve_chan_grow(&im->w, size, 0);
    if (rc != 0) {
        say("error: from-ros %s: cannot grow channel %s: %s", im->topic,
            im->chan, nerve_strerror(rc));
        return -1;
    }
    struct nerve_stats st;
    uint64_t now = nerve_chan_stat(im->w, &st) == 0 ? st.data_size : size;
    if (im->counted) {
        atomic_fetch_add(&import_total, now - im->data_size);
    }
    say("from-ros %s: grew channel %s from %" PRIu64 " to %" PRIu64
        " bytes for a message of %zu",
        im->topic, im->chan, im->data_size, now, len);
    im->data_size = now;
    return len > now ? -1 : 0;
}

static void import_deliver(struct importer *im, struct ddsi_serdata *sd,
                           const dds_sample_info_t *si)
{
    size_t len;
    const void *bytes = rawcdr_bytes(sd, &len);
    im->received++;
    if (im->disabled || (im->w == NULL && import_open(im, len) != 0)) {
        return;
    }
    if (len > im->data_size && import_grow(im, len) != 0) {
        if (im->too_big++ == 0) {
            say("error: from-ros %s: a message of %zu bytes is larger than "
                "channel %s (%" PRIu64 " bytes) and may not grow it "
                "(--max-channel-size %" PRIu64 ", --max-import-total %" PRIu64
                "); dropped (counted)",
                im->topic, len, im->chan, im->data_size, opt.max_chan,
                opt.max_total);
        }
        return;
    }
    void *p;
    int rc = nerve_chan_reserve(im->w, len, 100000000LL, &p, 0);
    if (rc == NERVE_ESUPERSEDED && nerve_chan_follow(&im->w) == 0) {
        struct nerve_stats fs; /* another writer grew it */
        im->data_size = nerve_chan_stat(im->w, &fs) == 0 ? fs.data_size : 0;
        rc = len > im->data_size
                 ? NERVE_EMSGSIZE
                 : nerve_chan_reserve(im->w, len, 100000000LL, &p, 0);
    }
    if (rc != 0) {
        if (im->errors++ == 0) {
            say("error: from-ros %s: put into %s failed: %s", im->topic,
                im->chan, nerve_strerror(rc));
        }
        return;
    }
    memcpy(p, bytes, len);
    /* The exporter of this channel may view the message as soon as it is
     * committed, so its sequence number is marked as ours before: the
     * writer lock is held from the reservation to the commit, so the
     * commit takes head + 1. */
    struct nerve_stats st;
    if (im->own != NULL && nerve_chan_stat(im->w, &st) == 0) {
        own_add(im->own, st.head_seq + 1);
    }
    int64_t t = si->source_timestamp - nerve_clock_to_realtime_ns(0);
    struct nerve_put_info pi;
    rc = nerve_chan_commit_at(im->w, len, t, &pi);
    if (rc != 0) {
        if (nerve_chan_abort(im->w) != 0) {
            im->errors++;
        }
        im->errors++;
        return;
    }
    if (pi.time_ns != t) {
        im->clamped++;
    }
    if (im->own != NULL && !own_has(im->own, pi.seq)) {
        own_add(im->own, pi.seq);
        if (im->own_late++ == 0) {
            say("warning: from-ros %s: sequence number not foreseen; an "
                "echo to ROS 2 is possible",
                im->topic);
        }
    }
    im->put++;
}

static void on_data(dds_entity_t rd, void *arg)
{
    struct importer *im = arg;
    struct ddsi_serdata *sd;
    dds_sample_info_t si;
    while (dds_takecdr(rd, &sd, 1, &si, DDS_ANY_STATE) == 1) {
        if (si.valid_data) {
            int ig = import_ignored(im, si.publication_handle);
            if (ig) {
                im->ignored += ig == 1;
                im->refused_type += ig == 2;
            } else {
                import_deliver(im, sd, &si);
            }
        }
        ddsi_serdata_unref(sd);
    }
}

/* The subscription-matched listener of an importer's reader: one line
 * each time the set of DDS writers it receives from changes. */
static void on_sub_matched(dds_entity_t rd,
                           const dds_subscription_matched_status_t st,
                           void *arg)
{
    (void)rd;
    const struct importer *im = arg;
    say("from-ros %s matched %" PRIu32 " writer(s)", im->topic,
        st.current_count);
}

static void import_start(struct importer *im, const char *ros_type,
                         const dds_builtintopic_endpoint_t *pub)
{
    char dds_type[NERVE_TYPE_MAX + 32];
    char rt[TOPIC_MAX + 4];
    snprintf(rt, sizeof rt, "rt%s", im->topic);
    if (dds_type_of(ros_type, dds_type, sizeof dds_type) != 0) {
        return;
    }
    dds_entity_t t = topic_get(rt, dds_type);
    if (t < 0) {
        say("error: from-ros %s: %s", im->topic,
            t == DDS_RETCODE_PRECONDITION_NOT_MET
                ? "exported by this bridge with another type"
                : dds_strretcode(t));
        im->disabled = 1;
        return;
    }
    snprintf(im->type, sizeof im->type, "%s", ros_type);
    const struct type_ent *te = type_find(ros_type);
    dds_listener_t *l = dds_create_listener(im);
    dds_lset_data_available(l, on_data);
    dds_lset_subscription_matched(l, on_sub_matched);
    dds_qos_t *q = reader_qos(pub ? pub->qos : NULL, te);
    im->rd = dds_create_reader(pp, t, q, l);
    dds_delete_qos(q);
    dds_delete_listener(l);
    if (im->rd < 0) {
        say("error: from-ros %s: no DDS reader: %s", im->topic,
            dds_strretcode(im->rd));
        im->rd = 0;
        im->disabled = 1;
        return;
    }
    (void)dds_get_guid(im->rd, &im->gid);
    say("from-ros %s [%s] -> %s%s", im->topic, ros_type, im->chan,
        te ? "" : " (type not known to rosbags: channel without schema)");
}

/* Strangers do not decide a topic's type: a publication is bridged only
 * when its type is a ROS 2 message type in the catalog and, where the
 * publisher says a type hash ("typehash=" in its user data; peers older
 * than Iron say none), that hash is the catalog's. Otherwise that writer
 * is dropped with one rate-limited line, and the topic waits for (or
 * keeps serving) the publishers that match: no channel is made from a
 * type the bridge does not know. Returns 1 when refused (and said). */
static int type_refused(const char *topic,
                        const dds_builtintopic_endpoint_t *ep,
                        const char *ros_type, int typed)
{
    const struct type_ent *te = typed ? type_find(ros_type) : NULL;
    char h[96];
    if (te != NULL && !hash_differs(ep->qos, te, h, sizeof h)) {
        return 0;
    }
    if (!typed) {
        say_peer("error: from-ros %s: a publisher has DDS type '%s', not a "
                 "ROS 2 message type; that publisher is not bridged",
                 topic, ep->type_name ? ep->type_name : "");
    } else if (te == NULL) {
        say_peer("error: from-ros %s: a publisher has type '%s', which this "
                 "bridge does not know; that publisher is not bridged",
                 topic, ros_type);
    } else {
        say_peer("error: from-ros %s: a publisher of %s has type hash %s, "
                 "this bridge knows %s; that publisher is not bridged",
                 topic, ros_type, h, te->hash);
    }
    return 1;
}

/* A publication seen in discovery: start the importer of its topic, or
 * report a type that differs from the one bridged. */
static int on_publication(const dds_builtintopic_endpoint_t *ep)
{
    int changed = 0;
    if (ep->topic_name == NULL || strncmp(ep->topic_name, "rt/", 3) != 0) {
        return 0;
    }
    if (memcmp(ep->participant_key.v, pp_gid.v, 12) == 0) {
        return 0; /* our own writer */
    }
    const char *topic = ep->topic_name + 2;
    char ros_type[NERVE_TYPE_MAX + 1];
    int typed = ep->type_name != NULL &&
                ros_type_of(ep->type_name, ros_type, sizeof ros_type) == 0;
    for (struct importer *im = importers; im != NULL; im = im->next) {
        if (strcmp(im->topic, topic) != 0 || im->disabled) {
            continue;
        }
        if (type_refused(topic, ep, ros_type, typed)) {
            continue;
        }
        if (im->rd == 0) {
            import_start(im, ros_type, ep);
            changed = 1;
        }
        if (strcmp(im->type, ros_type) != 0) {
            int seen = 0;
            for (int k = 0; k < 4; k++) {
                seen |= strcmp(im->warned[k], ros_type) == 0;
            }
            if (!seen) {
                for (int k = 0; k < 4; k++) {
                    if (im->warned[k][0] == '\0') {
                        snprintf(im->warned[k], sizeof im->warned[k], "%s",
                                 ros_type);
                        break;
                    }
                }
                say_peer("error: type mismatch on %s: bridged as %s, a "
                         "publisher offers %s; that publisher is not bridged",
                         topic, im->type, ros_type);
            }
        }
    }
    return changed;
}

/* A subscription (or publication) on a topic this bridge exports, with
 * another type: it never matches; say so once. */
static void on_remote_endpoint(const dds_builtintopic_endpoint_t *ep)
{
    if (ep->topic_name == NULL || strncmp(ep->topic_name, "rt/", 3) != 0 ||
        memcmp(ep->participant_key.v, pp_gid.v, 12) == 0) {
        return;
    }
    char ros_type[NERVE_TYPE_MAX + 1];
    if (ep->type_name == NULL ||
        ros_type_of(ep->type_name, ros_type, sizeof ros_type) != 0) {
        snprintf(ros_type, sizeof ros_type, "%s",
                 ep->type_name ? ep->type_name : "?");
    }
    for (struct exporter *e = exporters; e != NULL; e = e->next) {
        if (strcmp(e->topic, ep->topic_name + 2) != 0) {
            continue;
        }
        if (strcmp(e->type, ros_type) != 0) {
            if (!e->warned_type) {
                e->warned_type = 1;
                say("error: type mismatch on %s: channel %s has %s, a remote "
                    "endpoint uses %s; they do not match",
                    e->topic, e->chan, e->type, ros_type);
            }
        } else {
            const struct type_ent *te = type_find(e->type);
            char h[96];
            userdata_hash(ep->qos, h, sizeof h);
            if (te && te->hash && h[0] && strcmp(h, te->hash) != 0 &&
                e->warned_type != 2) {
                e->warned_type = 2;
                say("warning: type hash mismatch on %s [%s]: a remote "
                    "endpoint has %s, this bridge knows %s",
                    e->topic, e->type, h, te->hash);
            }
        }
    }
}

static void import_summary(const struct importer *im)
{
    say("from-ros %s -> %s: %" PRIu64 " received, %" PRIu64 " put, %" PRIu64
        " from same-host bridges ignored, %" PRIu64 " too big, %" PRIu64
        " errors, refused_size %" PRIu64 ", %" PRIu64 " times clamped, %" PRIu64
        " of another type hash dropped",
        im->topic, im->chan, im->received, im->put, im->ignored, im->too_big,
        im->errors, im->refused_size, im->clamped, im->refused_type);
}

/* ---- main -------------------------------------------------------------- */

static void on_signal(int sig)
{
    (void)sig;
    stop = 1;
}

/* A size in the nerve command's one grammar (tools/cli_size.c); a bad one
 * ends the program with a usage error. */
static uint64_t parse_size(const char *s)
{
    uint64_t v;
    if (cli_parse_size(s, &v) != 0) {
        fprintf(stderr, "%s: bad size '%s' (" CLI_SIZE_WORDS ")\n", PROG, s);
        exit(2);
    }
    return v;
}

/* --services only where it is built (a test looks for it here). */
#ifdef NERVE_ROS2_SERVICES
#define SERVICES_USAGE " [--services GLOB]... [--services-from-ros GLOB]..."
#else
#define SERVICES_USAGE ""
#endif

static void usage_to(FILE *f)
{
    fprintf(f,
            "usage: nerve-ros2-dds [--domain N] [--node NAME] [--namespace NS]"
            " [--qos default|sensor_data] [--latch] [--to GLOB=TOPIC]..."
            " [--from TOPIC=CHANNEL]..." SERVICES_USAGE " [--catalog-fd FD]"
            " [--max-channel-size N] [--max-import-total N] [--slots N]"
            " [--size N]\n"
            "(the data path of `nerve ros2`; run that instead)\n");
}

static void usage(void)
{
    usage_to(stderr);
    exit(2);
}

static void parse_args(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            usage_to(stdout);
            exit(0);
        }
        if (strcmp(a, "--latch") == 0) {
            opt.latch = 1;
            continue;
        }
        if (i + 1 >= argc) {
            usage();
        }
        char *v = argv[++i];
        if (strcmp(a, "--domain") == 0) {
            opt.domain = (uint32_t)strtoul(v, NULL, 10);
        } else if (strcmp(a, "--node") == 0) {
            opt.node = v;
        } else if (strcmp(a, "--namespace") == 0) {
            opt.ns = v;
        } else if (strcmp(a, "--qos") == 0) {
            if (strcmp(v, "sensor_data") == 0) {
                opt.sensor_data = 1;
            } else if (strcmp(v, "default") != 0) {
                usage();
            }
        } else if (strcmp(a, "--to") == 0 || strcmp(a, "--from") == 0) {
            char *eq = strchr(v, '=');
            if (eq == NULL) {
                usage();
            }
            *eq = '\0';
            if (a[2] == 't') {
                if (opt.nto == 64) {
                    usage();
                }
                opt.to[opt.nto++] = (struct to_spec){v, eq + 1};
            } else {
                if (opt.nfrom == 64 || strlen(v) >= TOPIC_MAX ||
                    strlen(eq + 1) > NERVE_NAME_MAX) {
                    usage();
                }
                opt.from[opt.nfrom++] = (struct from_spec){v, eq + 1};
            }
        } else if (strcmp(a, "--services") == 0) {
            if (opt.nservices == 64) {
                usage();
            }
            opt.services[opt.nservices++] = v;
        } else if (strcmp(a, "--services-from-ros") == 0) {
            if (opt.nservices_from == 64) {
                usage();
            }
            opt.services_from[opt.nservices_from++] = v;
        } else if (strcmp(a, "--catalog-fd") == 0) {
            opt.catalog_fd = atoi(v);
        } else if (strcmp(a, "--max-channel-size") == 0) {
            opt.max_chan = parse_size(v);
        } else if (strcmp(a, "--max-import-total") == 0) {
            opt.max_total = parse_size(v);
        } else if (strcmp(a, "--slots") == 0) {
            opt.slots = parse_size(v);
        } else if (strcmp(a, "--size") == 0) {
            opt.size = parse_size(v);
        } else {
            usage();
        }
    }
}

/* "<machine-id>.<dev>.<ino>" of /dev/shm: equal for two bridges exactly
 * when they see the same channels. */
static void make_shm_id(void)
{
    char mid[64] = "nomachineid";
    FILE *f = fopen("/etc/machine-id", "r");
    if (f != NULL) {
        if (fscanf(f, "%63s", mid) != 1) {
            snprintf(mid, sizeof mid, "nomachineid");
        }
        fclose(f);
    }
    struct stat st;
    if (stat("/dev/shm", &st) != 0) {
        memset(&st, 0, sizeof st);
    }
    snprintf(shm_id, sizeof shm_id, "%s.%llx.%llx", mid,
             (unsigned long long)st.st_dev, (unsigned long long)st.st_ino);
}

/* The type catalog handed over on --catalog-fd, if any, loaded and its fd
 * closed. 0, or 2 (the exit code) with the error said. */
static int catalog_take(void)
{
    if (opt.catalog_fd >= 0) {
        if (catalog_load(opt.catalog_fd) != 0) {
            fprintf(stderr, "%s: bad type catalog\n", PROG);
            return 2;
        }
        close(opt.catalog_fd);
    }
    return 0;
}

/* SIGINT and SIGTERM end the main loop (via `stop`); a closed pipe is an
 * error return, not a death. */
static void signals_init(void)
{
    struct sigaction sa = {0};
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
}

/* Joins the DDS domain as participant `pp` and starts the ROS graph.
 * 0, or 1 (the exit code) with the error said. */
static int participant_join(void)
{
    /* The participant says its enclave as ROS 2 Iron and later do. */
    /* Large-data settings and the DDS-side bounds (ros2_config.c). */
    int crc = ros2_config_domain(opt.domain, opt.max_chan, opt.max_total);
    if (crc != 0) {
        fprintf(stderr,
                "%s: cannot configure DDS domain %u: %s (check CYCLONEDDS_URI "
                "/ --dds-config)\n",
                PROG, opt.domain, dds_strretcode(crc));
        return 1;
    }
    dds_qos_t *pq = dds_create_qos();
    dds_qset_userdata(pq, "enclave=/;", 10);
    pp = dds_create_participant(opt.domain, pq, NULL);
    dds_delete_qos(pq);
    if (pp < 0) {
        fprintf(stderr,
                "%s: cannot join DDS domain %u: %s (check CYCLONEDDS_URI / "
                "--dds-config)\n",
                PROG, opt.domain, dds_strretcode(pp));
        return 1;
    }
    (void)dds_get_guid(pp, &pp_gid);
    graph_init();
    return 0;
}

/* One importer per --from spec, not yet reading: its reader is made when
 * a matching publication is seen. 0, or -1 out of memory. */
static int importers_init(void)
{
    for (size_t i = 0; i < opt.nfrom; i++) {
        struct importer *im = calloc(1, sizeof *im);
        if (im == NULL) {
            return -1;
        }
        snprintf(im->topic, sizeof im->topic, "%s", opt.from[i].topic);
        snprintf(im->chan, sizeof im->chan, "%s", opt.from[i].chan);
        im->own = own_get(im->chan);
        im->next = importers;
        importers = im;
    }
    return 0;
}

/* Takes what discovery has said since the last call from the built-in
 * readers `pubs` and `subs` (at most 16 samples each): every live
 * endpoint goes to the graph, publications also to the importers.
 * Nonzero when the set of bridged topics changed. */
static int take_endpoints(dds_entity_t pubs, dds_entity_t subs)
{
    int changed = 0;
    void *samples[16] = {0};
    dds_sample_info_t infos[16];
    dds_entity_t rds[2] = {pubs, subs};
    for (int r = 0; r < 2; r++) {
        dds_return_t n = dds_take(rds[r], samples, infos, 16, 16);
        for (dds_return_t k = 0; k < n; k++) {
            if (!infos[k].valid_data ||
                infos[k].instance_state != DDS_IST_ALIVE) {
                continue;
            }
            const dds_builtintopic_endpoint_t *ep = samples[k];
            if (r == 0) {
                changed |= on_publication(ep);
            }
            on_remote_endpoint(ep);
        }
        if (n > 0) {
            dds_return_loan(rds[r], samples, n);
        }
    }
    return changed;
}

/* The bridge's loop until a signal sets `stop`: every 50 ms takes
 * discovery news, every SCAN_NS rescans the channels, and republishes the
 * ROS graph when either changed what is bridged. */
static void serve(dds_entity_t pubs, dds_entity_t subs)
{
    int changed = scan();
    graph_publish();
    int64_t next_scan = nerve_clock_now_ns() + SCAN_NS;
    while (!stop) {
        changed |= take_endpoints(pubs, subs);
        if (nerve_clock_now_ns() >= next_scan) {
            changed |= scan();
#ifdef NERVE_ROS2_SERVICES
            if (opt.nservices + opt.nservices_from > 0) {
                ros2_srv_poll();
            }
#endif
            next_scan = nerve_clock_now_ns() + SCAN_NS;
        }
        if (changed) {
            graph_publish();
            changed = 0;
        }
        struct timespec ts = {0, 50000000};
        nanosleep(&ts, NULL);
    }
}

/* Stops every exporter and importer, then prints their summaries: all
 * threads and listeners are gone before any counter is read. */
static void shutdown_all(void)
{
    for (struct exporter *e = exporters; e != NULL; e = e->next) {
        export_stop(e);
    }
    for (struct importer *im = importers; im != NULL; im = im->next) {
        if (im->rd > 0) {
            dds_delete(im->rd); /* waits for a running listener */
            im->rd = 0;
        }
    }
    for (struct exporter *e = exporters; e != NULL; e = e->next) {
        export_summary(e);
    }
    for (struct importer *im = importers; im != NULL; im = im->next) {
        import_summary(im);
        (void)nerve_chan_close(im->w);
    }
}

/* --services: rmw_nerve's services offered to DDS (ros2_services.cpp), in
 * a build with Fast DDS. 0, or 1 (the exit code) with the error said. */
static int services_start(void)
{
    if (opt.nservices + opt.nservices_from == 0) {
        return 0;
    }
#ifdef NERVE_ROS2_SERVICES
    /* The imports, "topic", "channel" pairs: an action served from DDS
     * names its imported feedback and status in rmw_nerve's graph. */
    const char *imports[2 * 64];
    for (size_t i = 0; i < opt.nfrom; i++) {
        imports[2 * i] = opt.from[i].topic;
        imports[2 * i + 1] = opt.from[i].chan;
    }
    return ros2_srv_start(opt.domain, opt.services, opt.nservices,
                          opt.services_from, opt.nservices_from, imports,
                          opt.nfrom, say) == 0
               ? 0
               : 1;
#else
    say("error: --services and --services-from-ros need Fast DDS, and this "
        "nerve-ros2-dds was "
        "built without it (apt-get install libfastrtps-dev, then rebuild)");
    return 1;
#endif
}

int main(int argc, char **argv)
{
    parse_args(argc, argv);
    int rc = catalog_take();
    if (rc != 0) {
        return rc;
    }
    make_shm_id();
    signals_init();
    ros2_log_route_dds(PROG);
    if (participant_join() != 0) {
        return 1;
    }
    if (importers_init() != 0) {
        return 1;
    }
    dds_entity_t pubs =
        dds_create_reader(pp, DDS_BUILTIN_TOPIC_DCPSPUBLICATION, NULL, NULL);
    dds_entity_t subs =
        dds_create_reader(pp, DDS_BUILTIN_TOPIC_DCPSSUBSCRIPTION, NULL, NULL);
    if (services_start() != 0) {
        return 1;
    }
    say("node %s%s%s on DDS domain %u (Cyclone DDS); Ctrl-C to stop", opt.ns,
        strcmp(opt.ns, "/") == 0 ? "" : "/", opt.node, opt.domain);
    serve(pubs, subs);
    shutdown_all();
#ifdef NERVE_ROS2_SERVICES
    if (opt.nservices + opt.nservices_from > 0) {
        ros2_srv_stop();
    }
#endif
    dds_delete(pp);
    rawcdr_pool_fini();
    ros2_log_flush(PROG);
    return 0;
}
