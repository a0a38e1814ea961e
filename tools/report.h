/* What the nerve programs write into their reports, written one way: a
 * JSON string, a UTC time stamp and the description of the host a result
 * was measured on. The nerve command (tools/), its benchmarks (bench/) and
 * nerve-cyclic (tools/cyclic/) link this file (library nerve_report), so
 * that a host record or a time stamp reads the same whichever printed it.
 * The Python writer of the same host record is nerve_tools.host. */
#ifndef NERVE_TOOLS_REPORT_H
#define NERVE_TOOLS_REPORT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* One byte of a JSON string, escaped as needed (quote, backslash, \n \r \t
 * \b \f, other C0 controls and DEL as \u00XX). With `latin1`, bytes >=
 * 0x80 are written as \u00XX too (the byte read as Latin-1). */
void json_byte(FILE *f, unsigned char c, int latin1);
/* s[0..len) as a JSON string, quotes included; bytes >= 0x80 as they are. */
void json_str(FILE *f, const char *s, size_t len);

/* ISO 8601 UTC with nanoseconds, e.g. 2026-11-22T10:00:00.123456789Z. */
void iso8601(char *out, size_t len, int64_t realtime_ns);
/* iso8601() of the realtime clock now. */
void iso8601_now(char *out, size_t len);

/* The machine a result was measured on. */
struct host {
    char cpu[256], kernel[512], governor[64], isolated[256];
    long cores;
    int vm; /* the CPU reports a hypervisor */
    int preempt_rt;
    int rt; /* SCHED_FIFO: -1 not requested, 0 denied, 1 granted */
};
/* Fill *h from /proc and /sys. With fifo > 0, also try SCHED_FIFO at that
 * priority (and go back to SCHED_OTHER) to fill h->rt. */
void host_probe(struct host *h, int fifo);
/* The host record, one JSON object: {"cpu", "cores", "kernel", "governor"
 * (null if unknown), "isolated", "vm", "preempt_rt", "rt_granted" (null if
 * not requested), "nerve" (the library's version)}. docs/cli.md. */
void host_json(FILE *f, const struct host *h);

#endif
