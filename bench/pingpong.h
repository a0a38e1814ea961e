/* `nerve bench --pingpong` (pingpong.c): two processes pinned to two CPUs
 * send a message back and forth over nerve and over the floors (spin,
 * lines-K, futex, memcpy, memcpy-xfer), in alternating rounds; the method
 * and the fields are in bench/README.md. Not installed. */
#ifndef NERVE_BENCH_PINGPONG_H
#define NERVE_BENCH_PINGPONG_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "report.h"

#define PP_MAX_SAMPLES (1u << 21) /* round trips per row and round */
#define PP_MAX_ROUNDS 100
#define PP_MAX_ROWS 128
#define PP_MAX_SIZES 16
#define PP_MIN_SIZE 8 /* bytes of a message: the round-trip counter */

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
/* the rows --wait, --poll and --zero-copy leave */
#define PP_ROWS_WAIT                                                           \
    (PP_ROW_FUTEX | PP_ROW_MEMCPY | PP_ROW_WAIT_ZC | PP_ROW_WAIT_COPY)
#define PP_ROWS_POLL                                                           \
    (PP_ROW_SPIN | PP_ROW_MEMCPY | PP_ROW_XFER | PP_ROW_POLL_ZC |              \
     PP_ROW_POLL_COPY)
#define PP_ROWS_COPY                                                           \
    (PP_ROW_MEMCPY | PP_ROW_XFER | PP_ROW_POLL_COPY | PP_ROW_WAIT_COPY)

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

/* The PP_ROW_* bits of a --rows name (len bytes of s: a row, "floors" or
 * "nerve"), or 0 if there is none of that name. */
unsigned pingpong_row_bits(const char *s, size_t len);

/* Run the ping-pong plan; returns the exit code (0, 1 when a row failed,
 * 2 when nothing was selected). */
int pingpong_run(const struct pp_opts *o, const struct host *h);

#endif
