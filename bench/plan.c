/* The plan of `nerve bench`: from the options to the list of groups (one
 * configuration each, measured over every transport of the plan). A
 * --workload is a row of the table below; without one, the plan is every
 * combination of the --senders, --receivers and --size lists. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "bench_impl.h"

/* One group of a workload; size 0: --size, else 64. */
struct workload_group {
    unsigned senders, receivers;
    uint64_t size;
    double rate;
    double duration; /* unless --duration */
};

struct workload {
    const char *name;
    int poll; /* the receivers poll, whatever --wait says */
    unsigned ngroups;
    struct workload_group groups[6];
    unsigned ntransports; /* unless --transport */
    int transports[BT_COUNT];
};

static const struct workload workloads[] = {
    /* The Ach paper's: 1 kHz, 64 B, 1 sender with 1/2/4/8 receivers, and
     * 2 senders with 1 receiver. */
    {"ach",
     0,
     5,
     {{1, 1, 0, 1000, 2},
      {1, 2, 0, 1000, 2},
      {1, 4, 0, 1000, 2},
      {1, 8, 0, 1000, 2},
      {2, 1, 0, 1000, 2}},
     6,
     {BT_NERVE, BT_FUTEX, BT_CONDVAR, BT_PIPE, BT_UNIX, BT_MQ}},
    /* FUROM's message classes, 1 to 1, each for at least 100 messages. */
    {"furom",
     0,
     3,
     {{1, 1, 40, 2000, 2}, {1, 1, 8192, 100, 2}, {1, 1, 1u << 20, 10, 10}},
     6,
     {BT_NERVE, BT_FUTEX, BT_CONDVAR, BT_PIPE, BT_UNIX, BT_MQ}},
    /* Back-to-back 64 B to one polling receiver from 1, 2 and 4 senders:
     * the aggregate rate (recv_rate_per_s) against the pipe's; then
     * nerve's 1, 2 and 4 senders with no receiver: the ceiling no reader
     * can raise, and the writer lock's own cost. */
    {"throughput",
     1,
     6,
     {{1, 1, 0, 0, 2},
      {2, 1, 0, 0, 2},
      {4, 1, 0, 0, 2},
      {1, 0, 0, 0, 2},
      {2, 0, 0, 0, 2},
      {4, 0, 0, 0, 2}},
     2,
     {BT_NERVE, BT_PIPE}},
};

static const struct workload *workload_by_name(const char *name)
{
    for (size_t i = 0; i < sizeof workloads / sizeof workloads[0]; i++) {
        if (strcmp(workloads[i].name, name) == 0) {
            return &workloads[i];
        }
    }
    return NULL;
}

int bench_workload_known(const char *name)
{
    return workload_by_name(name) != NULL;
}

int bench_transport_by_name(const char *s, size_t len)
{
    for (int t = 0; t < BT_COUNT; t++) {
        if (strlen(bench_transports[t]->name) == len &&
            strncmp(bench_transports[t]->name, s, len) == 0) {
            return t;
        }
    }
    return -1;
}

static void plan_workload(const struct bench_opts *o, const struct workload *w,
                          struct bench_plan *p)
{
    for (unsigned i = 0; i < w->ngroups; i++) {
        const struct workload_group *wg = &w->groups[i];
        p->groups[p->ngroups++] = (struct bench_group){
            wg->senders, wg->receivers,
            wg->size       ? wg->size
            : o->have_size ? o->sizes[0]
                           : 64,
            wg->rate, o->have_duration ? o->duration : wg->duration};
    }
    if (w->poll) {
        p->wait = 0;
    }
    if (!o->have_transport) {
        memcpy(p->transports, w->transports, sizeof p->transports);
        p->ntransports = w->ntransports;
    }
}

static int plan_lists(const struct bench_opts *o, struct bench_plan *p)
{
    if (o->nsenders * o->nreceivers * o->nsizes > BENCH_MAX_GROUPS) {
        return -1;
    }
    for (unsigned a = 0; a < o->nsenders; a++) {
        for (unsigned i = 0; i < o->nreceivers; i++) {
            for (unsigned z = 0; z < o->nsizes; z++) {
                p->groups[p->ngroups++] =
                    (struct bench_group){o->senders[a], o->receivers[i],
                                         o->sizes[z], o->rate, o->duration};
            }
        }
    }
    return 0;
}

int bench_plan_make(const struct bench_opts *o, struct bench_plan *p, char *err,
                    size_t len)
{
    memset(p, 0, sizeof *p);
    memcpy(p->transports, o->transports, sizeof p->transports);
    p->ntransports = o->ntransports;
    p->wait = o->wait;
    for (unsigned i = 0; i < o->nsizes; i++) {
        if (o->sizes[i] < sizeof(struct bench_hdr)) {
            snprintf(err, len, "bad --size %" PRIu64 " (at least %zu bytes)",
                     o->sizes[i], sizeof(struct bench_hdr));
            return -1;
        }
    }
    const struct workload *w =
        o->workload ? workload_by_name(o->workload) : NULL;
    if (w) {
        plan_workload(o, w, p);
    } else if (plan_lists(o, p) != 0) {
        snprintf(err, len, "%s",
                 "--senders x --receivers x --size lists give more than 256 "
                 "measurements");
        return -1;
    }
    /* Every sample is kept (preallocated, none dropped), so bound how many
     * one measurement may take: 20 M samples are 80 MB per receiver. */
    unsigned max_senders = 1;
    for (unsigned i = 0; i < o->nsenders; i++) {
        max_senders = o->senders[i] > max_senders ? o->senders[i] : max_senders;
    }
    if (o->rate * o->duration * max_senders > 2e7) {
        snprintf(err, len, "%s",
                 "--rate x --duration x --senders exceeds 20 M samples per "
                 "receiver; shorten the run");
        return -1;
    }
    if (o->workload &&
        (o->have_rate || o->nreceivers > 1 || o->nsenders > 1 ||
         o->senders[0] > 1 || o->receivers[0] > 1 || o->nsizes > 1)) {
        snprintf(err, len, "%s",
                 "--workload fixes --rate, --senders and --receivers, and "
                 "takes one --size");
        return -1;
    }
    return 0;
}
