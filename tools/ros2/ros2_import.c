/* nerve-ros2-dds, from ROS 2: readers, their listeners and the channels
 * they make. ros2_dds.c has the overview ("From ROS 2", "No loops") and
 * ros2_dds.h the map of the files. */
#include "ros2_dds.h"

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

/* The options of the channel of `im`: its type, encoding cdr and the
 * type's definition, `slots` and `size`. */
static void import_opts(const struct importer *im, uint64_t slots,
                        uint64_t size, struct nerve_chan_opts *o)
{
    const struct type_ent *te = type_find(im->type);
    struct nerve_chan_opts d = NERVE_CHAN_OPTS_INIT;
    *o = d;
    o->slots = slots;
    o->data_size = size;
    o->type = im->type;
    o->encoding = "cdr";
    o->schema = te ? te->schema : NULL;
    o->schema_len = te ? te->schema_len : 0;
}

/* Create the channel of `im`, sized from a first message of `len` bytes,
 * within the import budget (the bridge kernel's: docs/bridge-kernel.md).
 * Returns nerve_chan_create()'s code, or 1 when the budget refused it
 * (reported and counted). */
static int import_create(struct importer *im, size_t len)
{
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
    struct nerve_chan_opts o;
    import_opts(im, slots, size, &o);
    int rc = nerve_budget_admit(import_budget, im->chan, &o, 0, NULL);
    if (rc != 0) {
        struct nerve_budget_stats bs = {0};
        if (nerve_budget_stat(import_budget, &bs) != 0) {
            bs.used = 0;
        }
        im->refused_size++;
        say("error: from-ros %s: channel %s of %" PRIu64
            " bytes refused (--max-channel-size %" PRIu64
            ", --max-import-total %" PRIu64 ", %" PRIu64 " used): %s",
            im->topic, im->chan, size, opt.max_chan, opt.max_total, bs.used,
            nerve_err_detail(rc));
        return 1;
    }
    rc = nerve_chan_create(im->chan, &o);
    if (rc != 0) {
        (void)nerve_budget_release(import_budget, im->chan); /* not ours */
        return rc;
    }
    im->counted = 1;
    say("from-ros %s: created channel %s (%" PRIu64 " slots, %" PRIu64
        " bytes)%s",
        im->topic, im->chan, slots, size,
        o.schema ? "" : "; no message definition known: no schema");
    return 0;
}

/* Open (or create, sized from the first message of `len` bytes) the
 * channel of `im`. 0, or -1 with the reason reported and counted. */
static int import_open(struct importer *im, size_t len)
{
    nerve_chan *w;
    int rc = nerve_chan_open(im->chan, NERVE_O_WRITE, &w);
    if (rc == NERVE_ENOENT) {
        rc = import_create(im, len);
        if (rc == 1) {
            return -1;
        }
        if (rc == 0 || rc == NERVE_EEXIST) {
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
    struct nerve_stats st;
    struct nerve_chan_opts o, was;
    if (nerve_chan_stat(im->w, &st) != 0) {
        return -1;
    }
    import_opts(im, st.slots, size, &o);
    import_opts(im, st.slots, im->data_size, &was);
    if (size > opt.max_chan ||
        (im->counted &&
         nerve_budget_admit(import_budget, im->chan, &o, 0, NULL) != 0)) {
        return -1;
    }
    int rc = nerve_chan_grow(&im->w, size, 0);
    if (rc != 0) {
        if (im->counted && /* back to what it holds, which fitted */
            nerve_budget_admit(import_budget, im->chan, &was,
                               NERVE_BUDGET_UNCOUNTED, NULL) != 0) {
            im->counted = 0;
        }
        say("error: from-ros %s: cannot grow channel %s: %s", im->topic,
            im->chan, nerve_strerror(rc));
        return -1;
    }
    uint64_t now = nerve_chan_stat(im->w, &st) == 0 ? st.data_size : size;
    say("from-ros %s: grew channel %s from %" PRIu64 " to %" PRIu64
        " bytes for a message of %zu",
        im->topic, im->chan, im->data_size, now, len);
    im->data_size = now;
    return len > now ? -1 : 0;
}

/* Reserve, copy and commit one message of `len` bytes with source time
 * `ts` (realtime ns). Returns 0 with *pi set, or -1 (counted). */
static int import_put(struct importer *im, const void *bytes, size_t len,
                      int64_t ts, struct nerve_put_info *pi)
{
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
        return -1;
    }
    memcpy(p, bytes, len);
    int64_t t = ts - nerve_clock_to_realtime_ns(0);
    rc = nerve_chan_commit_at(im->w, len, t, pi);
    if (rc != 0) {
        if (nerve_chan_abort(im->w) != 0) {
            im->errors++;
        }
        im->errors++;
        return -1;
    }
    if (pi->time_ns != t) {
        im->clamped++;
    }
    return 0;
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
    /* The exporter of this channel may view the message as soon as it is
     * committed, before its number is known here: the guard's begin
     * marks the put in flight first, and the exporter waits for it. */
    uint32_t tok;
    int guarded = im->own != NULL && nerve_own_begin(im->own, &tok) == 0;
    struct nerve_put_info pi;
    int rc = import_put(im, bytes, len, si->source_timestamp, &pi);
    if (guarded && rc == 0) {
        (void)nerve_own_commit(im->own, tok, pi.seq);
    } else if (guarded) {
        (void)nerve_own_abort(im->own, tok);
    }
    if (rc == 0) {
        im->put++;
    }
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
int on_publication(const dds_builtintopic_endpoint_t *ep)
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
void on_remote_endpoint(const dds_builtintopic_endpoint_t *ep)
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

void import_summary(const struct importer *im)
{
    say("from-ros %s -> %s: %" PRIu64 " received, %" PRIu64 " put, %" PRIu64
        " from same-host bridges ignored, %" PRIu64 " too big, %" PRIu64
        " errors, refused_size %" PRIu64 ", %" PRIu64 " times clamped, %" PRIu64
        " of another type hash dropped",
        im->topic, im->chan, im->received, im->put, im->ignored, im->too_big,
        im->errors, im->refused_size, im->clamped, im->refused_type);
}
