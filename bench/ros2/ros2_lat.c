/* One-way latency of ROS 2 messages over DDS and through `nerve ros2`
 * (bench/ros2/run.sh, results in bench/results/ros2-*.md).
 *
 *   ros2_lat ddspub TOPIC DDSTYPE SIZE N HZ   Cyclone DDS writer, CDR blobs
 *   ros2_lat nervepub CHANNEL SIZE N HZ       nerve_chan_put into a channel
 *                                             (that `nerve ros2` exports)
 *   ros2_lat sub TOPIC DDSTYPE N              Cyclone DDS reader
 *   ros2_lat nervesub CHANNEL N [poll]        nerve reader, blocking (or
 *                                             busy polling)
 *   ros2_lat fixpub TOPIC SIZE N HZ           Cyclone DDS writer of a fixed-size
 *   ros2_lat fixsub TOPIC SIZE N              type (SIZE octets) and its reader:
 *                                             with <SharedMemory> enabled these
 *                                             go over iceoryx, loaned samples
 *   ros2_lat relay CHANNEL TOPIC DDSTYPE N OUT  what `nerve ros2` does per
 *                                             message (view, copy, dds_write_ts
 *                                             at the commit time), timed per leg
 *
 * sub takes an optional OUT after N: one line per sample, "source-time
 * latency" in ns, for run.py to join with relay's OUT ("source-time wake
 * write": the nerve wake-up after the commit, and the copy + dds_write).
 *
 * Latency = reception time - origin time: for DDS the sample's source
 * timestamp (the writer's dds_write time, or the channel's commit time that
 * the bridge sends as source timestamp) against CLOCK_REALTIME at take;
 * for nerve the commit time against CLOCK_MONOTONIC after the wake-up. Both
 * ends run on one host, so the clocks are the same. The topic uses ROS 2's
 * names and QoS (reliable, volatile, keep last 10) and the bridge's raw
 * CDR type (tools/ros2/rawcdr.c). A sub prints one JSON line: count,
 * p50/p99/max in microseconds, and CPU seconds of its own process. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include <dds/dds.h>
#include <dds/ddsc/dds_loan_api.h>
#include <nerve/nerve.h>

#include "rawcdr.h"

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

static double cpu_s(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + (double)ru.ru_stime.tv_sec +
           1e-6 * (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
}

/* One JSON line; `extra` (may be "") is appended inside the object. */
static void report_x(int64_t *lat, int n, int want, double cpu,
                     const char *extra)
{
    if (n == 0) {
        printf("{\"n\": 0, \"want\": %d, \"cpu_s\": %.3f%s}\n", want, cpu,
               extra);
        return;
    }
    qsort(lat, (size_t)n, sizeof *lat, cmp_i64);
    printf("{\"n\": %d, \"want\": %d, \"p50_us\": %.1f, \"p99_us\": %.1f, "
           "\"max_us\": %.1f, \"cpu_s\": %.3f%s}\n",
           n, want, lat[n / 2] / 1e3, lat[(n * 99) / 100] / 1e3,
           lat[n - 1] / 1e3, cpu, extra);
}

static void report(int64_t *lat, int n, int want, double cpu)
{
    report_x(lat, n, want, cpu, "");
}

/* p50 of n values in microseconds (sorts them). */
static double p50_us(int64_t *v, int n)
{
    if (n == 0) {
        return 0;
    }
    qsort(v, (size_t)n, sizeof *v, cmp_i64);
    return v[n / 2] / 1e3;
}

/* The rawcdr.c copy check, as tools/ros2/ros2_dds.c passes it. */
static int view_check(const void *arg)
{
    const void *const *a = arg;
    return nerve_chan_view_check(a[0], a[1]) != 0;
}

static dds_entity_t participant(void)
{
    const char *dom = getenv("ROS_DOMAIN_ID");
    return dds_create_participant(dom ? (dds_domainid_t)atoi(dom) : 0, NULL,
                                  NULL);
}

static dds_qos_t *ros2_qos(void)
{
    dds_qos_t *q = dds_create_qos();
    dds_qset_reliability(q, DDS_RELIABILITY_RELIABLE, DDS_SECS(1));
    dds_qset_history(q, DDS_HISTORY_KEEP_LAST, 10);
    return q;
}

/* A topic of a fixed-size type: a struct of `size` octets, described at
 * run time as idlc would describe `struct Blob { octet data[SIZE]; };`.
 * Cyclone DDS 0.10 exchanges samples over iceoryx only for fixed-size
 * types (its manual, "Limitations of shared memory"); the raw CDR type of
 * `nerve ros2` is not one, so its samples go over the network even where
 * <SharedMemory> is enabled. The descriptor must outlive the topic. */
static dds_entity_t fixed_topic(dds_entity_t pp, const char *topic,
                                uint32_t size)
{
    static uint32_t ops[4];
    static char name[64];
    ops[0] = DDS_OP_ADR | DDS_OP_TYPE_ARR | DDS_OP_SUBTYPE_1BY;
    ops[1] = 0;
    ops[2] = size;
    ops[3] = DDS_OP_RTS;
    snprintf(name, sizeof name, "nerve_bench::msg::dds_::Blob%" PRIu32 "_",
             size);
    static dds_topic_descriptor_t *desc;
    dds_topic_descriptor_t d = {.m_size = size,
                                .m_align = 1,
                                .m_flagset = DDS_TOPIC_FIXED_SIZE,
                                .m_nkeys = 0,
                                .m_typename = name,
                                .m_keys = NULL,
                                .m_nops = 2,
                                .m_ops = ops,
                                .m_meta = ""};
    desc = malloc(sizeof *desc);
    if (desc == NULL) {
        return -1;
    }
    memcpy(desc, &d, sizeof d);
    char rt[256];
    snprintf(rt, sizeof rt, "rt%s", topic);
    return dds_create_topic(pp, desc, rt, NULL, NULL);
}

static dds_entity_t endpoint(const char *topic, const char *type, int writer)
{
    const char *dom = getenv("ROS_DOMAIN_ID");
    dds_entity_t pp =
        dds_create_participant(dom ? (dds_domainid_t)atoi(dom) : 0, NULL, NULL);
    struct ddsi_sertype *st = rawcdr_type_new(type);
    char rt[256];
    snprintf(rt, sizeof rt, "rt%s", topic);
    dds_entity_t tp = dds_create_topic_sertype(pp, rt, &st, NULL, NULL, NULL);
    dds_qos_t *q = dds_create_qos();
    dds_qset_reliability(q, DDS_RELIABILITY_RELIABLE, DDS_SECS(1));
    dds_qset_history(q, DDS_HISTORY_KEEP_LAST, 10);
    dds_entity_t e = writer ? dds_create_writer(pp, tp, q, NULL)
                            : dds_create_reader(pp, tp, q, NULL);
    dds_delete_qos(q);
    if (pp < 0 || tp < 0 || e < 0) {
        fprintf(stderr, "ros2_lat: no DDS endpoint\n");
        exit(1);
    }
    return e;
}

static void pace(int64_t *next, int hz)
{
    *next += 1000000000LL / hz;
    struct timespec ts = {(time_t)(*next / 1000000000LL),
                          (long)(*next % 1000000000LL)};
    clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
}

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: see bench/ros2/ros2_lat.c\n");
        return 2;
    }
    const char *mode = argv[1];
    if (strcmp(mode, "ddspub") == 0 && argc == 7) {
        size_t size = strtoull(argv[4], NULL, 10);
        int n = atoi(argv[5]), hz = atoi(argv[6]);
        dds_entity_t w = endpoint(argv[2], argv[3], 1);
        unsigned char *buf = calloc(1, size);
        buf[1] = 1;                /* CDR little-endian */
        dds_sleepfor(DDS_SECS(2)); /* discovery */
        int64_t *wr = calloc((size_t)n, sizeof *wr);
        int nw = 0;
        int64_t next = nerve_clock_now_ns();
        for (int i = 0; i < n; i++) {
            struct rawcdr_sample s = {buf, size, NULL, NULL, NULL};
            int64_t t0 = nerve_clock_now_ns();
            dds_return_t rc = dds_write_ts(w, &s, dds_time());
            if (rc < 0) {
                fprintf(stderr, "ros2_lat: write: %s\n", dds_strretcode(rc));
            } else if (wr != NULL) {
                wr[nw++] = nerve_clock_now_ns() - t0;
            }
            pace(&next, hz);
        }
        dds_sleepfor(DDS_MSECS(500));
        /* the copy + dds_write of a buffer this process just wrote, for
         * the relay's (run.py compares them) */
        printf("{\"write_p50_us\": %.1f, \"shm\": %s}\n", p50_us(wr, nw),
               dds_is_shared_memory_available(w) ? "true" : "false");
        return 0;
    }
    if (strcmp(mode, "nervepub") == 0 && argc == 6) {
        size_t size = strtoull(argv[3], NULL, 10);
        int n = atoi(argv[4]), hz = atoi(argv[5]);
        nerve_chan *c;
        if (nerve_chan_open(argv[2], NERVE_O_WRITE, &c) != 0) {
            fprintf(stderr, "ros2_lat: cannot open %s\n", argv[2]);
            return 1;
        }
        struct timespec ts = {2, 0};
        nanosleep(&ts, NULL);
        int64_t next = nerve_clock_now_ns();
        for (int i = 0; i < n; i++) {
            void *p;
            if (nerve_chan_reserve(c, size, NERVE_FOREVER, &p, 0) == 0) {
                memset(p, 0, size);
                ((unsigned char *)p)[1] = 1;
                if (nerve_chan_commit(c, size, NULL) != 0) {
                    return 1;
                }
            }
            pace(&next, hz);
        }
        return nerve_chan_close(c);
    }
    if (strcmp(mode, "sub") == 0 && (argc == 5 || argc == 6)) {
        int want = atoi(argv[4]), n = 0;
        int64_t *lat = calloc((size_t)want, sizeof *lat);
        int64_t *src = calloc((size_t)want, sizeof *src);
        dds_entity_t r = endpoint(argv[2], argv[3], 0);
        dds_entity_t ws = dds_create_waitset(DDS_CYCLONEDDS_HANDLE);
        dds_entity_t rc = dds_create_readcondition(r, DDS_ANY_STATE);
        dds_waitset_attach(ws, rc, 0);
        printf("READY\n");
        fflush(stdout);
        dds_time_t end = dds_time() + DDS_SECS(60);
        double cpu0 = cpu_s();
        while (n < want && dds_time() < end) {
            if (dds_waitset_wait(ws, NULL, 0, DDS_MSECS(500)) <= 0) {
                continue;
            }
            struct ddsi_serdata *sd;
            dds_sample_info_t si;
            while (n < want &&
                   dds_takecdr(r, &sd, 1, &si, DDS_ANY_STATE) == 1) {
                if (si.valid_data) {
                    src[n] = si.source_timestamp;
                    lat[n++] = dds_time() - si.source_timestamp;
                }
                ddsi_serdata_unref(sd);
            }
        }
        FILE *f = argc == 6 ? fopen(argv[5], "w") : NULL;
        for (int i = 0; f != NULL && i < n; i++) {
            fprintf(f, "%" PRId64 " %" PRId64 "\n", src[i], lat[i]);
        }
        if (argc == 6 && (f == NULL || fclose(f) != 0)) {
            fprintf(stderr, "ros2_lat: cannot write %s\n", argv[5]);
            return 1;
        }
        char extra[64];
        snprintf(extra, sizeof extra, ", \"shm\": %s",
                 dds_is_shared_memory_available(r) ? "true" : "false");
        report_x(lat, n, want, cpu_s() - cpu0, extra);
        return 0;
    }
    if (strcmp(mode, "nervesub") == 0 && (argc == 4 || argc == 5)) {
        /* "poll" as 5th argument: spin on the channel instead of sleeping
         * in the futex wait (one CPU busy). */
        int poll = argc == 5 && strcmp(argv[4], "poll") == 0;
        int want = atoi(argv[3]), n = 0;
        int64_t *lat = calloc((size_t)want, sizeof *lat);
        nerve_chan *c;
        if (nerve_chan_open(argv[2], NERVE_O_READ, &c) != 0) {
            return 1;
        }
        struct nerve_stats st;
        if (nerve_chan_stat(c, &st) == 0) {
            nerve_chan_seek(c, st.head_seq);
        }
        printf("READY\n");
        fflush(stdout);
        double cpu0 = cpu_s();
        int64_t end = nerve_clock_now_ns() + 60000000000LL;
        while (n < want && nerve_clock_now_ns() < end) {
            struct nerve_view v;
            int rc = poll ? nerve_chan_view(c, 0, 0, &v, NERVE_GET_NEXT)
                          : nerve_chan_view(c, 0, 500000000LL, &v,
                                            NERVE_GET_NEXT | NERVE_F_WAIT);
            if (rc == 0) {
                lat[n++] = nerve_clock_now_ns() - v.info.time_ns;
            }
        }
        report(lat, n, want, cpu_s() - cpu0);
        return nerve_chan_close(c);
    }
    if (strcmp(mode, "fixpub") == 0 && argc == 6) {
        uint32_t size = (uint32_t)strtoul(argv[3], NULL, 10);
        int n = atoi(argv[4]), hz = atoi(argv[5]);
        dds_entity_t pp = participant();
        dds_entity_t tp = fixed_topic(pp, argv[2], size);
        dds_qos_t *q = ros2_qos();
        dds_entity_t w = dds_create_writer(pp, tp, q, NULL);
        dds_delete_qos(q);
        if (pp < 0 || tp < 0 || w < 0) {
            fprintf(stderr, "ros2_lat: no DDS writer\n");
            return 1;
        }
        int shm = dds_is_shared_memory_available(w),
            loan = dds_is_loan_available(w), failed = 0;
        unsigned char *buf = calloc(1, size);
        dds_sleepfor(DDS_SECS(2)); /* discovery */
        int64_t next = nerve_clock_now_ns();
        for (int i = 0; i < n; i++) {
            void *p = buf;
            if (loan && dds_loan_sample(w, &p) != DDS_RETCODE_OK) {
                failed++;
                pace(&next, hz);
                continue;
            }
            /* fill as nervepub fills its reservation */
            memset(p, 0, size);
            ((unsigned char *)p)[1] = 1;
            if (dds_write(w, p) < 0) {
                failed++;
            }
            pace(&next, hz);
        }
        dds_sleepfor(DDS_MSECS(500));
        printf("{\"shm\": %s, \"loan\": %s, \"failed\": %d}\n",
               shm ? "true" : "false", loan ? "true" : "false", failed);
        return dds_delete(pp) < 0;
    }
    if (strcmp(mode, "fixsub") == 0 && argc == 5) {
        uint32_t size = (uint32_t)strtoul(argv[3], NULL, 10);
        int want = atoi(argv[4]), n = 0;
        int64_t *lat = calloc((size_t)want, sizeof *lat);
        dds_entity_t pp = participant();
        dds_entity_t tp = fixed_topic(pp, argv[2], size);
        dds_qos_t *q = ros2_qos();
        dds_entity_t r = dds_create_reader(pp, tp, q, NULL);
        dds_delete_qos(q);
        if (lat == NULL || pp < 0 || tp < 0 || r < 0) {
            fprintf(stderr, "ros2_lat: no DDS reader\n");
            return 1;
        }
        dds_entity_t ws = dds_create_waitset(pp);
        dds_entity_t rc = dds_create_readcondition(r, DDS_ANY_STATE);
        dds_waitset_attach(ws, rc, 0);
        printf("READY\n");
        fflush(stdout);
        dds_time_t end = dds_time() + DDS_SECS(60);
        double cpu0 = cpu_s();
        while (n < want && dds_time() < end) {
            if (dds_waitset_wait(ws, NULL, 0, DDS_MSECS(500)) <= 0) {
                continue;
            }
            void *ptr[1] = {NULL}; /* a loan: no copy out of iceoryx */
            dds_sample_info_t si;
            while (n < want && dds_take(r, ptr, &si, 1, 1) == 1) {
                if (si.valid_data) {
                    lat[n++] = dds_time() - si.source_timestamp;
                }
                dds_return_loan(r, ptr, 1);
                ptr[0] = NULL;
            }
        }
        char extra[64];
        snprintf(extra, sizeof extra, ", \"shm\": %s",
                 dds_is_shared_memory_available(r) ? "true" : "false");
        report_x(lat, n, want, cpu_s() - cpu0, extra);
        return dds_delete(pp) < 0;
    }
    if (strcmp(mode, "relay") == 0 && argc == 7) {
        /* As tools/ros2/ros2_dds.c export_run: wait on the channel, view the
         * message, write its bytes with the commit time as source time, the
         * bridge's writer QoS (reliable, 10 ms blocking, keep last 10). */
        int want = atoi(argv[5]), n = 0;
        int64_t *src = calloc((size_t)want, sizeof *src);
        int64_t *wake = calloc((size_t)want, sizeof *wake);
        int64_t *wr = calloc((size_t)want, sizeof *wr);
        nerve_chan *c;
        if (src == NULL || wake == NULL || wr == NULL ||
            nerve_chan_open(argv[2], NERVE_O_READ, &c) != 0) {
            fprintf(stderr, "ros2_lat: cannot open %s\n", argv[2]);
            return 1;
        }
        dds_entity_t pp = participant();
        struct ddsi_sertype *st = rawcdr_type_new(argv[4]);
        char rt[256];
        snprintf(rt, sizeof rt, "rt%s", argv[3]);
        dds_entity_t tp =
            dds_create_topic_sertype(pp, rt, &st, NULL, NULL, NULL);
        dds_qos_t *q = dds_create_qos();
        dds_qset_reliability(q, DDS_RELIABILITY_RELIABLE, DDS_MSECS(10));
        dds_qset_history(q, DDS_HISTORY_KEEP_LAST, 10);
        dds_entity_t w = dds_create_writer(pp, tp, q, NULL);
        dds_delete_qos(q);
        if (pp < 0 || tp < 0 || w < 0) {
            fprintf(stderr, "ros2_lat: no DDS writer\n");
            return 1;
        }
        struct nerve_stats stt;
        if (nerve_chan_stat(c, &stt) == 0) {
            nerve_chan_seek(c, stt.head_seq);
        }
        printf("READY\n");
        fflush(stdout);
        int64_t end = nerve_clock_now_ns() + 60000000000LL;
        while (n < want && nerve_clock_now_ns() < end) {
            struct nerve_view v;
            if (nerve_chan_view(c, 0, 500000000LL, &v,
                                NERVE_GET_NEXT | NERVE_F_WAIT) != 0) {
                continue;
            }
            int64_t t0 = nerve_clock_now_ns();
            int stale = 0;
            const void *ca[2] = {c, &v};
            struct rawcdr_sample s = {v.data, v.info.len, view_check, ca,
                                      &stale};
            int64_t ts = nerve_clock_to_realtime_ns(v.info.time_ns);
            dds_return_t rc = dds_write_ts(w, &s, ts);
            int64_t t1 = nerve_clock_now_ns();
            if (rc < 0) {
                continue;
            }
            src[n] = ts;
            wake[n] = t0 - v.info.time_ns;
            wr[n++] = t1 - t0;
        }
        FILE *f = fopen(argv[6], "w");
        for (int i = 0; f != NULL && i < n; i++) {
            fprintf(f, "%" PRId64 " %" PRId64 " %" PRId64 "\n", src[i], wake[i],
                    wr[i]);
        }
        if (f == NULL || fclose(f) != 0) {
            fprintf(stderr, "ros2_lat: cannot write %s\n", argv[6]);
            return 1;
        }
        dds_sleepfor(DDS_MSECS(500));
        printf("{\"n\": %d, \"want\": %d, \"wake_p50_us\": %.1f, "
               "\"write_p50_us\": %.1f}\n",
               n, want, p50_us(wake, n), p50_us(wr, n));
        dds_delete(pp);
        return nerve_chan_close(c);
    }
    fprintf(stderr, "usage: see bench/ros2/ros2_lat.c\n");
    return 2;
}
