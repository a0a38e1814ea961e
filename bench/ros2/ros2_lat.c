/* One-way latency of ROS 2 messages over DDS and through `nerve ros2`
 * (bench/ros2/run.sh, results in bench/results/ros2-*.md).
 *
 *   ros2_lat ddspub TOPIC DDSTYPE SIZE N HZ   Cyclone DDS writer, CDR blobs
 *   ros2_lat nervepub CHANNEL SIZE N HZ       nerve_chan_put into a channel
 *                                             (that `nerve ros2` exports)
 *   ros2_lat sub TOPIC DDSTYPE N              Cyclone DDS reader
 *   ros2_lat nervesub CHANNEL N [poll]        nerve reader, blocking (or
 *                                             busy polling)
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

static void report(int64_t *lat, int n, int want, double cpu)
{
    if (n == 0) {
        printf("{\"n\": 0, \"want\": %d}\n", want);
        return;
    }
    qsort(lat, (size_t)n, sizeof *lat, cmp_i64);
    printf("{\"n\": %d, \"want\": %d, \"p50_us\": %.1f, \"p99_us\": %.1f, "
           "\"max_us\": %.1f, \"cpu_s\": %.3f}\n",
           n, want, lat[n / 2] / 1e3, lat[(n * 99) / 100] / 1e3,
           lat[n - 1] / 1e3, cpu);
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
        int64_t next = nerve_clock_now_ns();
        for (int i = 0; i < n; i++) {
            struct rawcdr_sample s = {buf, size, NULL, NULL, NULL};
            dds_return_t rc = dds_write_ts(w, &s, dds_time());
            if (rc < 0) {
                fprintf(stderr, "ros2_lat: write: %s\n", dds_strretcode(rc));
            }
            pace(&next, hz);
        }
        dds_sleepfor(DDS_MSECS(500));
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
    if (strcmp(mode, "sub") == 0 && argc == 5) {
        int want = atoi(argv[4]), n = 0;
        int64_t *lat = calloc((size_t)want, sizeof *lat);
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
                    lat[n++] = dds_time() - si.source_timestamp;
                }
                ddsi_serdata_unref(sd);
            }
        }
        report(lat, n, want, cpu_s() - cpu0);
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
    fprintf(stderr, "usage: see bench/ros2/ros2_lat.c\n");
    return 2;
}
