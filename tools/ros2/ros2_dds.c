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
 * numbers its own importer committed (the bridge kernel's guard,
 * nerve_own_*: docs/bridge-kernel.md §3).
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
 * thread creates and deletes entities; the lists of ros2_dds.h are changed
 * by it alone, under `lock` where a listener reads them. */
#include "ros2_dds.h"

/* ---- reporting --------------------------------------------------------- */

/* Type names, topics and channels come from DDS peers: every line is
 * escaped (ros2_log.c), so no peer writes escape sequences into the
 * operator's terminal; say_peer() is for the lines a peer can repeat at
 * will, which are rate-limited too. */
__attribute__((format(printf, 1, 2))) void say(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    ros2_logv(PROG, 0, fmt, ap);
    va_end(ap);
}

__attribute__((format(printf, 1, 2))) void say_peer(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    ros2_logv(PROG, 1, fmt, ap);
    va_end(ap);
}

/* ---- state --------------------------------------------------------------- */

volatile sig_atomic_t stop;
dds_entity_t pp;  /* the participant */
char shm_id[128]; /* this /dev/shm, see "No loops" */
pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
nerve_budget *import_budget; /* the channels this bridge created */

/* A channel both directions may touch: the guard of the sequence numbers
 * the importer committed, so that the exporter does not send them back. */
struct own {
    char name[NERVE_NAME_MAX + 1];
    nerve_own *g;
    struct own *next;
};

static struct own *owns;

/* The guard of channel `name`, made on first use (NULL: out of memory,
 * and that channel goes unguarded). */
nerve_own *own_get(const char *name)
{
    pthread_mutex_lock(&lock);
    struct own *o = owns;
    while (o != NULL && strcmp(o->name, name) != 0) {
        o = o->next;
    }
    if (o == NULL && (o = calloc(1, sizeof *o)) != NULL) {
        if (nerve_own_open(&o->g) != 0) {
            free(o);
            o = NULL;
        } else {
            snprintf(o->name, sizeof o->name, "%s", name);
            o->next = owns;
            owns = o;
        }
    }
    pthread_mutex_unlock(&lock);
    return o != NULL ? o->g : NULL;
}

static void owns_free(void)
{
    while (owns != NULL) {
        struct own *o = owns;
        owns = o->next;
        (void)nerve_own_close(o->g);
        free(o);
    }
}

struct topic *topics;

struct exporter *exporters;

struct importer *importers;

/* ---- main -------------------------------------------------------------- */

static void on_signal(int sig)
{
    (void)sig;
    stop = 1;
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
 * discovery news and the channel directory's changes (scan()); every
 * SCAN_NS polls the services and rmw_nerve's graph; and republishes the
 * ROS graph when what is bridged or the rmw_nerve nodes behind it may have
 * changed (graph_publish writes only a changed message). */
static void serve(dds_entity_t pubs, dds_entity_t subs)
{
    int changed = scan();
    graph_publish();
    int64_t next_scan = nerve_clock_now_ns() + SCAN_NS;
    while (!stop) {
        changed |= take_endpoints(pubs, subs);
        changed |= scan();
        if (nerve_clock_now_ns() >= next_scan) {
#ifdef NERVE_ROS2_SERVICES
            if (opt.nservices + opt.nservices_from > 0) {
                ros2_srv_poll();
            }
#endif
            next_scan = nerve_clock_now_ns() + SCAN_NS;
            changed = 1;
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
    scan_close();
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
    owns_free();
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
    int rc = nerve_budget_open(opt.max_chan, opt.max_total, &import_budget);
    if (rc != 0) {
        fprintf(stderr, "%s: %s\n", PROG, nerve_err_detail(rc));
        return 2;
    }
    rc = catalog_take();
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
    (void)nerve_budget_close(import_budget);
    ros2_log_flush(PROG);
    return 0;
}
