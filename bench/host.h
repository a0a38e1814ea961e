/* The machine a result was measured on (host.c), as every `nerve bench`
 * JSON line carries it under "host". Not installed. */
#ifndef NERVE_BENCH_HOST_H
#define NERVE_BENCH_HOST_H

#include <stdio.h>

struct host {
    char cpu[256], kernel[512], governor[64], isolated[256];
    long cores;
    int vm; /* the CPU reports a hypervisor */
    int preempt_rt;
    int rt; /* -1 not requested, 0 denied, 1 granted */
};

/* Describe this machine; with fifo > 0, try SCHED_FIFO at that priority
 * (and go back to normal scheduling) to fill in rt. */
void host_probe(struct host *h, int fifo);
void host_json(FILE *f, const struct host *h);
void json_string(FILE *f, const char *s);

#endif
