/* What the files of nerve-ros2-dds share (internal; the overview is in
 * ros2_dds.c):
 *   ros2_dds.c      reporting, the shared state, setup and the main loop
 *   ros2_args.c     the command line
 *   ros2_catalog.c  the type catalog handed over by `nerve ros2`
 *   ros2_qos.c      QoS of the bridge's readers and writers, and its topics
 *   ros2_graph.c    the graph: ros_discovery_info
 *   ros2_export.c   to ROS 2: one exporter thread per channel, the channel directory
 *   ros2_import.c   from ROS 2: readers, listeners, the channels they make */
#ifndef NERVE_ROS2_DDS_H
#define NERVE_ROS2_DDS_H

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
#define SCAN_NS 500000000LL /* services poll period */
#define WAIT_NS 250000000LL /* longest wait on a channel between stop checks */
#define HANDLES 32          /* publication handles remembered per reader */
#define TOPIC_MAX 512

struct to_spec {
    const char *glob;  /* channel name or glob */
    const char *topic; /* topic (name), topic prefix (glob), or "" */
};

struct from_spec {
    const char *topic;
    const char *chan;
};

struct type_ent {
    const char *type, *hash, *schema;
    size_t schema_len;
};

struct topic {
    char name[TOPIC_MAX + 4]; /* "rt/..." */
    char type[NERVE_TYPE_MAX + 1];
    dds_entity_t t;
    struct topic *next;
};

struct exporter {
    char chan[NERVE_NAME_MAX + 1];
    char topic[TOPIC_MAX];
    char type[NERVE_TYPE_MAX + 1];
    int64_t created_ns;
    nerve_chan *c;
    dds_entity_t wr;
    dds_guid_t gid;
    nerve_own *own; /* the importer's numbers, if it imports this topic */
    pthread_t th;
    atomic_int quit;
    _Atomic uint64_t sent, missed, stale, failed, skipped, late;
    uint64_t rexmit; /* bytes retransmitted, read as the writer is deleted */
    int warned_type;
    struct exporter *next;
};

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
    nerve_own *own;      /* the numbers it commits (the exporter skips them) */
    atomic_int disabled; /* a fatal problem for this topic was reported
                          (set by the listener or the main thread) */
    struct {
        dds_instance_handle_t h;
        int ignore;
    } handles[HANDLES];
    unsigned nhandles;
    uint64_t received, put, ignored, refused_size, too_big, errors, clamped;
    uint64_t refused_type; /* samples of writers of another type hash */
    char warned[4][NERVE_TYPE_MAX + 1]; /* other types reported once */
    struct importer *next;
};

/* The command line (ros2_args.c). */
struct ros2_opt {
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
};
extern struct ros2_opt opt;

/* ros2_dds.c */
__attribute__((format(printf, 1, 2))) void say(const char *fmt, ...);
__attribute__((format(printf, 1, 2))) void say_peer(const char *fmt, ...);
nerve_own *own_get(const char *name);
extern volatile sig_atomic_t stop;
extern dds_entity_t pp;  /* the participant */
extern char shm_id[128]; /* this /dev/shm, see "No loops" */
extern pthread_mutex_t lock;
extern nerve_budget *import_budget; /* the channels this bridge created */
extern struct topic *topics;
extern struct exporter *exporters;
extern struct importer *importers;

/* ros2_args.c */
void parse_args(int argc, char **argv);

/* ros2_catalog.c */
int catalog_load(int fd);
const struct type_ent *type_find(const char *type);
int dds_type_of(const char *ros, char *out, size_t len);
int ros_type_of(const char *dds, char *out, size_t len);

/* ros2_qos.c */
dds_qos_t *writer_qos(const struct type_ent *te);
dds_qos_t *reader_qos(const dds_qos_t *pub, const struct type_ent *te);
dds_entity_t topic_get(const char *name, const char *dds_type);

/* ros2_graph.c */
void graph_publish(void);
void graph_init(void);
extern dds_guid_t pp_gid;

/* ros2_export.c */
void export_stop(struct exporter *e);
void export_summary(const struct exporter *e);
int scan(void);
void scan_close(void);

/* ros2_import.c */
int on_publication(const dds_builtintopic_endpoint_t *ep);
void on_remote_endpoint(const dds_builtintopic_endpoint_t *ep);
void import_summary(const struct importer *im);

#endif
