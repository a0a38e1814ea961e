/* Internals of `nerve bench` shared by bench.c (options, orchestration,
 * output), transports.c (the mechanisms compared) and stats.c (latency
 * histogram and percentiles). Not installed. */
#ifndef NERVE_BENCH_IMPL_H
#define NERVE_BENCH_IMPL_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <nerve/nerve.h>

#include "report.h"

#define BENCH_MAX_PROCS 64 /* senders, and receivers, per measurement */
#define BENCH_MAX_CPUS 256

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

/* Latency histogram: exact below 256 ns, then 128 linear sub-buckets per
 * power of two (relative error below 0.8 %), up to 2^32 ns (latencies are
 * saturated at 4.29 s). */
#define HIST_SUB 128
#define HIST_BUCKETS (2 * HIST_SUB + 24 * HIST_SUB)

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

/* Clock of every timestamp: CLOCK_MONOTONIC ns. */
int64_t bench_now(void);

/* ---- pingpong.c: `nerve bench --pingpong` ---- */

#define PP_MAX_SAMPLES (1u << 21) /* round trips per row and round */
#define PP_MAX_ROUNDS 100
#define PP_MAX_ROWS 128
#define PP_MAX_SIZES 16

enum pp_kind { PP_SPIN, PP_LINES, PP_FUTEX, PP_MEMCPY, PP_XFER, PP_NERVE };

/* --rows bits */
#define PP_ROW_SPIN 0x01u
#define PP_ROW_FUTEX 0x02u
#define PP_ROW_MEMCPY 0x04u
#define PP_ROW_POLL_ZC 0x08u
#define PP_ROW_POLL_COPY 0x10u
#define PP_ROW_WAIT_ZC 0x20u
#define PP_ROW_WAIT_COPY 0x40u
#define PP_ROW_XFER 0x80u
#define PP_ROW_ALL 0xffu

struct pp_opts {
    unsigned rows;     /* PP_ROW_* */
    unsigned lines[8]; /* lines-K floors to add */
    unsigned nlines;
    uint64_t sizes[PP_MAX_SIZES];
    unsigned nsizes;
    double duration;     /* timed seconds per row, over all rounds */
    uint64_t iterations; /* 0: by duration; else per row and round */
    int64_t warmup;      /* -1: 1000 polling, 100 blocking */
    unsigned rounds;
    unsigned ring; /* messages per data ring (--ring) */
    int cpus[2];
    int pinned;
    const char *cpus_text;
    int fifo;
    const char *prefix;
    FILE *table, *json; /* NULL: not wanted */
};

/* Run the ping-pong plan; returns the exit code (0, 1 when a row failed,
 * 2 when nothing was selected). */
int pingpong_run(const struct pp_opts *o, const struct host *h);

/* stats.c */
unsigned hist_index(uint32_t v);
uint64_t hist_low(unsigned i);
uint64_t hist_high(unsigned i);
/* Percentile p (0..100) by nearest rank of n sorted samples. */
uint64_t pct_sorted(const uint32_t *s, uint64_t n, double p);
uint64_t pct_hist(const uint64_t *hist, uint64_t n, double p);
void sort_u32(uint32_t *v, uint64_t n);

#endif
