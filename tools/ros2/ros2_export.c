/* nerve-ros2-dds, to ROS 2: one exporter thread per channel, and the
 * channel scan. ros2_dds.c has the overview ("To ROS 2", "No loops") and
 * ros2_dds.h the map of the files. */
#include "ros2_dds.h"

/* ---- to ROS 2 ---------------------------------------------------------- */

static int view_check(const void *arg)
{
    const void *const *a = arg;
    return nerve_chan_view_check(a[0], a[1]) != 0;
}

/* Whether message `seq` of e's channel was put by this bridge's importer
 * of the same topic (the bridge kernel's guard). A put of the importer
 * stalled past NERVE_OWN_WAIT_NS makes a late answer: exported (an echo
 * is possible), counted and said once. */
static int export_is_own(struct exporter *e, uint64_t seq)
{
    if (e->own == NULL) {
        return 0;
    }
    int rc = nerve_own_check(e->own, seq);
    if (rc == NERVE_ETIMEDOUT && atomic_fetch_add(&e->late, 1) == 0) {
        say("warning: to-ros %s: %s; an echo to ROS 2 is possible", e->chan,
            nerve_err_detail(rc));
    }
    return rc == 1;
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
        if (export_is_own(e, v.info.seq)) {
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

/* The topic of channel `name` under the --to specs: 1, or 0 for none, or
 * -1 when the topic a spec gives it would be over TOPIC_MAX - 1 bytes (a
 * cut topic is never used: the caller says so once). The
 * name's own topic is the bridge kernel's (docs/bridge-kernel.md "How
 * names map"): with --domain N, rmw_nerve's "ros2-dN.a.b" is /a/b. */
static int export_topic(const char *name, char *topic, size_t len)
{
    for (size_t i = 0; i < opt.nto; i++) {
        const struct to_spec *s = &opt.to[i];
        int pattern = strpbrk(s->glob, "*?[") != NULL;
        if (pattern) {
            char t[NERVE_TOPIC_MAX + 1];
            if (nerve_glob_match(s->glob, name) != 1 ||
                nerve_topic_of_channel(name, opt.domain, t, sizeof t) != 0) {
                continue;
            }
            size_t pl = strlen(s->topic);
            while (pl > 0 && s->topic[pl - 1] == '/') {
                pl--;
            }
            int n = snprintf(topic, len, "%.*s%s", (int)pl, s->topic, t);
            return n > 0 && (size_t)n < len ? 1 : -1;
        }
        if (strcmp(s->glob, name) == 0) {
            if (s->topic[0] != '\0') {
                int n = snprintf(topic, len, "%s", s->topic);
                return n > 0 && (size_t)n < len ? 1 : -1;
            }
            return nerve_topic_of_channel(name, opt.domain, topic, len) == 0;
        }
    }
    return 0;
}

void export_stop(struct exporter *e)
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

void export_summary(const struct exporter *e)
{
    say("to-ros %s -> %s: %" PRIu64 " sent, %" PRIu64 " missed, %" PRIu64
        " overwritten while sent, %" PRIu64 " dropped by DDS, %" PRIu64
        " own skipped",
        e->chan, e->topic, atomic_load(&e->sent), atomic_load(&e->missed),
        atomic_load(&e->stale), atomic_load(&e->failed),
        atomic_load(&e->skipped));
    if (atomic_load(&e->late) > 0) {
        say("to-ros %s: %" PRIu64 " own-import checks answered late (the "
            "importer stalled; possible echoes)",
            e->chan, atomic_load(&e->late));
    }
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

/* Start the exporter of channel `name` if a --to spec serves it. */
static void scan_one(const char *name, struct scan_arg *sa)
{
    char topic[TOPIC_MAX];
    int served = export_topic(name, topic, sizeof topic);
    if (served == 0) {
        return;
    }
    struct nerve_stats st;
    if (nerve_chan_stat_name(name, &st) != 0) {
        return;
    }
    for (struct exporter *e = exporters; e != NULL; e = e->next) {
        if (strcmp(e->chan, name) == 0) {
            return;
        }
    }
    if (rejected(name, st.created_ns, 0)) {
        return;
    }
    if (served < 0) {
        say("error: to-ros %s: its topic would be over %d bytes; not published",
            name, TOPIC_MAX - 1);
        rejected(name, st.created_ns, 1);
        return;
    }
    if (export_start(name, topic, st.created_ns) != 0) {
        rejected(name, st.created_ns, 1);
    } else {
        sa->changed = 1;
    }
}

/* Stop the exporter of channel `name`, if any: its channel is gone, or
 * its file was replaced (a new channel under the name follows). */
static void export_gone(const char *name, struct scan_arg *sa)
{
    for (struct exporter **pe = &exporters; *pe != NULL; pe = &(*pe)->next) {
        struct exporter *e = *pe;
        if (strcmp(e->chan, name) != 0) {
            continue;
        }
        export_stop(e);
        pthread_mutex_lock(&lock);
        *pe = e->next;
        pthread_mutex_unlock(&lock);
        say("to-ros %s: channel gone; %s no longer published", e->chan,
            e->topic);
        export_summary(e);
        free(e);
        sa->changed = 1;
        return;
    }
}

/* The channel directory of the --to specs (nerve_dir: inotify on
 * /dev/shm, or a scan every 500 ms where there is none; the contract is
 * docs/bridge-kernel.md), opened by the first scan(). */
static nerve_dir *dir;

static int dir_open(void)
{
    const char *globs[64];
    for (size_t i = 0; i < opt.nto; i++) {
        globs[i] = opt.to[i].glob;
    }
    int rc = nerve_dir_open(globs, opt.nto, 0, &dir);
    if (rc != 0) {
        say("warning: cannot watch the channels in /dev/shm: %s",
            nerve_err_detail(rc));
    }
    return rc;
}

/* Start exporters for channels that appeared; stop those whose channel is
 * gone or was replaced. Cheap when nothing changed (one non-blocking read
 * of the directory's descriptor), so the loop calls it often. */
int scan(void)
{
    struct scan_arg sa = {0};
    if (opt.nto == 0 || (dir == NULL && dir_open() != 0)) {
        return 0;
    }
    struct nerve_dir_event ev;
    int rc;
    while ((rc = nerve_dir_next(dir, &ev)) == 0) {
        if (ev.kind == NERVE_DIR_REMOVED) {
            export_gone(ev.name, &sa);
        } else {
            scan_one(ev.name, &sa);
        }
    }
    if (rc != NERVE_EAGAIN) {
        say("warning: cannot list the channels in /dev/shm: %s",
            nerve_strerror(rc));
    }
    return sa.changed;
}

void scan_close(void)
{
    (void)nerve_dir_close(dir);
    dir = NULL;
}
