/* `nerve bench`: the latency and throughput benchmark, as a library that
 * the nerve command links (tools/cmd/bench.c parses the options and calls
 * in here). The procedure is the Ach paper's: create a channel, fork
 * receivers, fork senders; senders post timestamped messages at a rate,
 * receivers record the latency of every message and count what they
 * missed. The baselines (pipe, unix, mq, futex, spin, condvar) do the same
 * job with other mechanisms. Ping-pong has its own plan (pingpong.h).
 *
 * plan.c turns the options into measurements (workloads as a table),
 * run.c runs them in forked processes, report.c writes the table, JSON
 * lines and histograms, host.c describes the machine. */
#ifndef NERVE_BENCH_H
#define NERVE_BENCH_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "report.h"

#define BENCH_MAX_PROCS 64 /* senders, and receivers, per measurement */
#define BENCH_MAX_CPUS 256
#define BENCH_MAX_LIST 16 /* entries of --senders, --receivers, --size */
#define BENCH_MAX_GROUPS (16 * 16)

enum bench_transport {
    BT_NERVE,
    BT_PIPE,
    BT_UNIX,
    BT_MQ,
    BT_FUTEX,
    BT_SPIN,
    BT_CONDVAR,
    BT_COUNT
};

/* The options of the latency plan, as the command line gave them. */
struct bench_opts {
    int transports[BT_COUNT];
    unsigned ntransports;
    unsigned senders[BENCH_MAX_LIST];
    unsigned nsenders;
    unsigned receivers[BENCH_MAX_LIST];
    unsigned nreceivers;
    uint64_t sizes[BENCH_MAX_LIST];
    unsigned nsizes;
    double rate, duration;
    unsigned rounds; /* 0: 5 with several transports, else 1 */
    int have_rate, have_size, have_duration, have_transport;
    int wait, zero_copy, newest, fifo;
    int cpus[BENCH_MAX_CPUS];
    unsigned ncpus;
    const char *cpus_text, *prefix, *workload;
};

/* Measurements of one configuration, one per transport of the plan. */
struct bench_group {
    unsigned senders, receivers;
    uint64_t size;
    double rate, duration;
};

struct bench_plan {
    struct bench_group groups[BENCH_MAX_GROUPS];
    unsigned ngroups;
    int transports[BT_COUNT];
    unsigned ntransports;
    int wait; /* receivers block (a workload may make them poll) */
};

/* Where the results go; NULL: not wanted. */
struct bench_out {
    FILE *table, *json, *hist;
    const char *json_path, *hist_path;
};

/* plan.c: a transport by name (len bytes of s), or -1. */
int bench_transport_by_name(const char *s, size_t len);
/* plan.c: whether --workload NAME is one of the table's. */
int bench_workload_known(const char *name);
/* plan.c: the measurements the options ask for. Returns 0, or -1 with a
 * usage message (no "nerve bench: " prefix) in err. */
int bench_plan_make(const struct bench_opts *o, struct bench_plan *p, char *err,
                    size_t len);

/* report.c: open --json FILE ('-': stdout, then the table goes to
 * stderr) and --histogram FILE; paths may be NULL. Returns 0, or 1 after
 * a message. bench_out_close() closes them and returns status, or 1 when
 * a file could not be written. */
int bench_out_open(struct bench_out *out, const char *json, const char *hist,
                   int quiet);
int bench_out_close(struct bench_out *out, int status);

/* run.c: run the plan, every group in turn (Ctrl-C stops). Returns the
 * exit code: 0, or 1 when a measurement failed or was interrupted. */
int bench_run(const struct bench_opts *o, const struct bench_plan *p,
              const struct host *h, const struct bench_out *out);

#endif
