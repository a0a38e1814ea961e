/* Internals of the latency plan of `nerve bench`, shared by run.c (the
 * forked senders and receivers), report.c (table, JSON lines,
 * histograms), transports.c (the mechanisms compared) and ach_bench.c
 * (ach-bench, built by src/ach/). Not installed. */
#ifndef NERVE_BENCH_IMPL_H
#define NERVE_BENCH_IMPL_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <nerve/nerve.h>

#include "bench.h"
#include "report.h"
#include "stats.h"

/* What one measurement does. */
struct bench_cfg {
    int transport;
    int wait; /* 1: receivers block; 0: they poll */
    unsigned senders;
    unsigned receivers;
    uint64_t size;   /* bytes per message, >= sizeof(struct bench_hdr) */
    double rate;     /* Hz per sender; 0 = back-to-back */
    double duration; /* seconds of sending, summed over the rounds */
    unsigned rounds;
    int zero_copy;
    int newest; /* nerve, condvar: read the newest, not the next */
    int fifo;   /* SCHED_FIFO priority; 0 = normal scheduling */
    int cpus[BENCH_MAX_CPUS];
    unsigned ncpus; /* 0: no pinning */
    const char *cpus_text;
    const char *prefix;   /* channel / queue name prefix */
    const char *workload; /* label, or NULL */
};

/* The head of every message a sender posts (the rest is a pattern). */
struct bench_hdr {
    int64_t t_send;   /* CLOCK_MONOTONIC ns just before the send */
    uint64_t counter; /* 1, 2, ... per sender */
    uint32_t sender;
    uint32_t magic;
};
#define BENCH_MAGIC 0x6e657276u

/* What one receiver found, in memory shared with the parent. Written only
 * by that receiver while it runs; read by the parent after it exits. */
struct bench_recv {
    uint64_t received;
    uint64_t missed;     /* counter gaps per sender, incl. the tail */
    uint64_t lib_missed; /* missed as the transport reported it (nerve) */
    uint64_t stale;      /* zero-copy views overwritten while read */
    uint64_t disorder;   /* counters that went backwards (a bug) */
    uint64_t nsamples;   /* latencies stored in the sample array */
    uint64_t min_ns, max_ns;
    double sum_ns;
    uint64_t last[BENCH_MAX_PROCS]; /* last counter seen per sender */
    uint64_t hist[HIST_BUCKETS];
};

/* Control block of one round, shared by the parent and its children. */
struct bench_shared {
    _Atomic uint32_t ready;  /* receivers set up and about to receive */
    _Atomic uint32_t done;   /* every sender has exited */
    _Atomic uint32_t failed; /* a child failed; error[] says why */
    _Atomic uint32_t rt_denied;
    char error[256];
    uint64_t sent[BENCH_MAX_PROCS];   /* messages per sender this round */
    int64_t t_first[BENCH_MAX_PROCS]; /* first and last send times */
    int64_t t_last[BENCH_MAX_PROCS];
};

/* One round of one measurement. Built by the parent; forked children
 * inherit it and keep their per-process transport state in it. */
struct bench_run {
    const struct bench_cfg *cfg;
    struct bench_shared *sh;
    struct bench_recv *res; /* [receivers] */
    uint32_t *samples;      /* [receivers][cap] */
    uint64_t cap;           /* samples per receiver */
    char name[NERVE_NAME_MAX + 1];
    uint64_t data_size; /* ring bytes (nerve, condvar) */
    uint64_t slots;
    /* transport state */
    int *fds;  /* pipe, unix: [(s * R + r) * 2 + end] */
    int *mqs;  /* mq: [r] in the parent */
    void *shm; /* futex, spin, condvar */
    size_t shm_len;
    /* per-process state (in the child) */
    nerve_chan *chan;
    void *buf;           /* receive buffer, or a pipe's assembly */
    uint64_t *off;       /* pipe: bytes assembled per sender */
    int mq;              /* this process's descriptor(s) */
    int *mqw;            /* sender: [r] */
    uint64_t *last_word; /* futex, spin: per sender */
    uint64_t next;       /* condvar: next sequence to read */
    unsigned rr;         /* round-robin start among senders */
    uint64_t stale;
    uint64_t lib_missed;
};

/* A mechanism compared by the benchmark. Every call returns 0 or -1 with
 * a reason in err[]; recv returns 1 (a message: *hdr filled), 0 (none yet)
 * or -1. */
struct bench_ops {
    const char *name;
    int payload; /* 1 if the message bytes travel (0: futex, spin) */
    int mode;    /* -1: --wait/--poll apply; 0 always polls; 1 waits */
    int t40;     /* t_send holds only the low 40 bits of the time */
    int (*setup)(struct bench_run *r, char *err, size_t len);
    int (*sender_init)(struct bench_run *r, unsigned id, char *err, size_t len);
    int (*send)(struct bench_run *r, unsigned id, void *msg, char *err,
                size_t len);
    int (*receiver_init)(struct bench_run *r, unsigned id, char *err,
                         size_t len);
    int (*recv)(struct bench_run *r, unsigned id, int block,
                struct bench_hdr *hdr, char *err, size_t len);
    void (*teardown)(struct bench_run *r);
};

extern const struct bench_ops *const bench_transports[BT_COUNT];

/* One measurement and its results, accumulated over the rounds (run.c
 * fills it, report.c reports it). */
struct meas {
    struct bench_cfg cfg;
    struct bench_recv *res; /* shared: [receivers] */
    uint32_t *samples;      /* shared: [receivers][cap] */
    uint64_t cap;
    size_t map_len;
    uint64_t sent;
    double send_s;     /* seconds the senders were sending */
    char error[300];   /* a failure: the row reports it */
    char skipped[300]; /* the transport cannot do this: reported */
    int rt_denied;
};

/* report.c: the table's header, and every output of one group's
 * measurements (table row, JSON line, histogram); returns 1 if one of
 * them failed, else 0. memcpy_ns: the copy floor of the group's size;
 * started: when the group started (ISO 8601, UTC). */
void report_header(FILE *table);
int report_group(struct meas *ms, unsigned n, const struct host *h,
                 const struct bench_out *out, double memcpy_ns,
                 const char *started, int interrupted);

#endif
