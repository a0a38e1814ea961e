/* The report of the latency plan: per measurement, the summary over its
 * receivers (percentiles exact from the samples when all of them fit,
 * else from the histogram), the check that every message is accounted
 * for, and the outputs: a table row, a JSON line (fields in docs/cli.md)
 * and the latency histogram (TSV). */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "bench_impl.h"

struct summary {
    uint64_t n, missed, lib_missed, stale, disorder;
    uint64_t p50, p90, p99, p999, max, min;
    double mean;
    int exact;
};

static void summarise(const struct meas *m, struct summary *s)
{
    unsigned R = m->cfg.receivers;
    memset(s, 0, sizeof *s);
    s->min = UINT64_MAX;
    s->exact = 1;
    double sum = 0;
    static uint64_t hist[HIST_BUCKETS];
    memset(hist, 0, sizeof hist);
    for (unsigned i = 0; i < R; i++) {
        const struct bench_recv *res = &m->res[i];
        s->n += res->received;
        s->missed += res->missed;
        s->lib_missed += res->lib_missed;
        s->stale += res->stale;
        s->disorder += res->disorder;
        sum += res->sum_ns;
        if (res->received) {
            s->max = res->max_ns > s->max ? res->max_ns : s->max;
            s->min = res->min_ns < s->min ? res->min_ns : s->min;
        }
        if (res->nsamples != res->received) {
            s->exact = 0;
        }
        for (unsigned b = 0; b < HIST_BUCKETS; b++) {
            hist[b] += res->hist[b];
        }
    }
    if (s->n == 0) {
        s->min = 0;
        return;
    }
    s->mean = sum / (double)s->n;
    uint32_t *all = s->exact ? malloc(s->n * sizeof *all) : NULL;
    if (all != NULL) {
        uint64_t k = 0;
        for (unsigned i = 0; i < R; i++) {
            memcpy(all + k, m->samples + (size_t)i * m->cap,
                   m->res[i].nsamples * sizeof *all);
            k += m->res[i].nsamples;
        }
        sort_u32(all, s->n);
        s->p50 = pct_sorted(all, s->n, 50);
        s->p90 = pct_sorted(all, s->n, 90);
        s->p99 = pct_sorted(all, s->n, 99);
        s->p999 = pct_sorted(all, s->n, 99.9);
        free(all);
    } else {
        s->exact = 0;
        s->p50 = pct_hist(hist, s->n, 50);
        s->p90 = pct_hist(hist, s->n, 90);
        s->p99 = pct_hist(hist, s->n, 99);
        s->p999 = pct_hist(hist, s->n, 99.9);
        uint64_t *p[] = {&s->p50, &s->p90, &s->p99, &s->p999};
        for (unsigned i = 0; i < 4; i++) {
            if (*p[i] > s->max) {
                *p[i] = s->max;
            }
        }
    }
}

/* Check that every message is accounted for at every receiver, and that
 * nerve's own missed counts agree with the counter gaps. */
static void account(struct meas *m, const struct summary *s)
{
    if (m->error[0] || m->skipped[0]) {
        return;
    }
    for (unsigned i = 0; i < m->cfg.receivers; i++) {
        const struct bench_recv *res = &m->res[i];
        if (res->received + res->missed != m->sent || res->disorder) {
            snprintf(m->error, sizeof m->error,
                     "receiver %u: received %" PRIu64 " + missed %" PRIu64
                     " != sent %" PRIu64 " (%" PRIu64 " out of order)",
                     i, res->received, res->missed, m->sent, res->disorder);
            return;
        }
    }
    if (m->cfg.transport == BT_NERVE && s->lib_missed + s->stale != s->missed) {
        snprintf(m->error, sizeof m->error,
                 "nerve reported %" PRIu64 " missed (+%" PRIu64
                 " stale views) but the counters show %" PRIu64,
                 s->lib_missed, s->stale, s->missed);
    }
}

static const char *mode_name(const struct bench_cfg *c)
{
    int mode = bench_transports[c->transport]->mode;
    return (mode == 1 || (mode == -1 && c->wait)) ? "wait" : "poll";
}

/* Which message a receiver takes: the stream and datagram baselines can
 * only take the next; futex and spin only ever hold the newest. */
static int reads_newest(const struct bench_cfg *c)
{
    if (c->transport == BT_FUTEX || c->transport == BT_SPIN) {
        return 1;
    }
    return c->newest &&
           (c->transport == BT_NERVE || c->transport == BT_CONDVAR);
}

void report_header(FILE *f)
{
    fprintf(f, "%-8s %-4s %3s %3s %8s %7s %9s %8s %9s %9s %9s %9s %9s\n",
            "TRANSPRT", "MODE", "S", "R", "SIZE", "RATE", "N", "MISSED",
            "P50(us)", "P90(us)", "P99(us)", "P99.9(us)", "MAX(us)");
}

static void table_row(FILE *f, const struct meas *m, const struct summary *s)
{
    const struct bench_cfg *c = &m->cfg;
    char name[16];
    snprintf(name, sizeof name, "%s%s%s", bench_transports[c->transport]->name,
             c->zero_copy && c->transport == BT_NERVE ? "/zc" : "",
             c->newest && reads_newest(c) && c->transport != BT_FUTEX &&
                     c->transport != BT_SPIN
                 ? "/n"
                 : "");
    fprintf(f, "%-8s %-4s %3u %3u %8" PRIu64 " %7.0f ", name, mode_name(c),
            c->senders, c->receivers, c->size, c->rate);
    if (m->skipped[0]) {
        fprintf(f, "skipped: %s\n", m->skipped);
        return;
    }
    if (m->error[0]) {
        fprintf(f, "error: %s\n", m->error);
        return;
    }
    if (c->receivers == 0) {
        fprintf(f, "%9" PRIu64 " sent in %.2f s, no reader\n", m->sent,
                m->send_s);
        return;
    }
    fprintf(f, "%9" PRIu64 " %8" PRIu64 " %9.2f %9.2f %9.2f %9.2f %9.2f%s\n",
            s->n, s->missed, s->p50 / 1e3, s->p90 / 1e3, s->p99 / 1e3,
            s->p999 / 1e3, s->max / 1e3, s->exact ? "" : " ~");
}

static void json_row(FILE *f, const struct meas *m, const struct summary *s,
                     const struct host *h, double memcpy_ns,
                     const char *started)
{
    const struct bench_cfg *c = &m->cfg;
    const struct bench_ops *ops = bench_transports[c->transport];
    fprintf(f,
            "{\"transport\":\"%s\",\"mode\":\"%s\",\"senders\":%u,"
            "\"receivers\":%u,\"size\":%" PRIu64 ",\"rate\":%g,"
            "\"duration_s\":%g,\"rounds\":%u,\"zero_copy\":%s,"
            "\"read\":\"%s\",\"payload\":%s,\"workload\":",
            ops->name, mode_name(c), c->senders, c->receivers, c->size, c->rate,
            c->duration, c->rounds,
            c->zero_copy && c->transport == BT_NERVE ? "true" : "false",
            reads_newest(c) ? "newest" : "next",
            ops->payload ? "true" : "false");
    if (c->workload) {
        json_str(f, c->workload, strlen(c->workload));
    } else {
        fputs("null", f);
    }
    fprintf(f, ",\"cpus\":");
    if (c->cpus_text) {
        json_str(f, c->cpus_text, strlen(c->cpus_text));
    } else {
        fputs("null", f);
    }
    fprintf(f, ",\"fifo\":%d,\"rt\":%s,\"started\":\"%s\"", c->fifo,
            c->fifo <= 0                    ? "null"
            : (h->rt == 1 && !m->rt_denied) ? "true"
                                            : "false",
            started);
    if (m->skipped[0] || m->error[0]) {
        const char *why = m->skipped[0] ? m->skipped : m->error;
        fprintf(f, ",\"%s\":", m->skipped[0] ? "skipped" : "error");
        json_str(f, why, strlen(why));
    }
    if (!m->skipped[0]) {
        fprintf(f,
                ",\"sent\":%" PRIu64 ",\"n\":%" PRIu64 ",\"missed\":%" PRIu64
                ",\"per_receiver\":[",
                m->sent, s->n, s->missed);
        for (unsigned i = 0; i < c->receivers; i++) {
            fprintf(f, "%s{\"received\":%" PRIu64 ",\"missed\":%" PRIu64 "}",
                    i ? "," : "", m->res[i].received, m->res[i].missed);
        }
        fprintf(f, "],\"accounted\":%s", m->error[0] ? "false" : "true");
        if (c->transport == BT_NERVE) {
            fprintf(f, ",\"missed_reported\":%" PRIu64 ",\"stale\":%" PRIu64,
                    s->lib_missed, s->stale);
        }
        fprintf(f,
                ",\"p50_ns\":%" PRIu64 ",\"p90_ns\":%" PRIu64
                ",\"p99_ns\":%" PRIu64 ",\"p999_ns\":%" PRIu64
                ",\"max_ns\":%" PRIu64 ",\"min_ns\":%" PRIu64
                ",\"mean_ns\":%.0f,\"exact\":%s",
                s->p50, s->p90, s->p99, s->p999, s->max, s->min, s->mean,
                s->exact ? "true" : "false");
        double secs = m->send_s > 0 ? m->send_s : 1;
        fprintf(f,
                ",\"send_s\":%.6f,\"send_rate_per_s\":%.0f"
                ",\"recv_rate_per_s\":%.0f",
                m->send_s, (double)m->sent / secs,
                c->receivers ? (double)s->n / c->receivers / secs : 0.0);
    }
    fprintf(f, ",\"memcpy_p50_ns\":%.0f,\"host\":", memcpy_ns);
    host_json(f, h);
    fputs("}\n", f);
    fflush(f);
}

static void histogram_out(FILE *f, const struct meas *m)
{
    const struct bench_cfg *c = &m->cfg;
    fprintf(f,
            "# transport=%s mode=%s senders=%u receivers=%u size=%" PRIu64
            " rate=%g zero_copy=%d\n# low_ns\thigh_ns\tcount\n",
            bench_transports[c->transport]->name, mode_name(c), c->senders,
            c->receivers, c->size, c->rate, c->zero_copy);
    for (unsigned b = 0; b < HIST_BUCKETS; b++) {
        uint64_t n = 0;
        for (unsigned i = 0; i < c->receivers; i++) {
            n += m->res[i].hist[b];
        }
        if (n) {
            fprintf(f, "%" PRIu64 "\t%" PRIu64 "\t%" PRIu64 "\n", hist_low(b),
                    hist_high(b), n);
        }
    }
    fputc('\n', f);
    fflush(f);
}

int report_group(struct meas *ms, unsigned n, const struct host *h,
                 const struct bench_out *out, double memcpy_ns,
                 const char *started, int interrupted)
{
    int status = 0;
    for (unsigned i = 0; i < n; i++) {
        struct meas *m = &ms[i];
        struct summary s;
        if (interrupted && !m->error[0]) {
            snprintf(m->error, sizeof m->error, "interrupted");
        }
        if (m->res != NULL) {
            summarise(m, &s);
        } else {
            memset(&s, 0, sizeof s);
        }
        account(m, &s);
        if (out->table) {
            table_row(out->table, m, &s);
        }
        if (out->json) {
            json_row(out->json, m, &s, h, memcpy_ns, started);
        }
        if (out->hist && !m->skipped[0] && m->res != NULL) {
            histogram_out(out->hist, m);
        }
        if (m->error[0]) {
            status = 1;
        }
    }
    return status;
}

int bench_out_open(struct bench_out *out, const char *json, const char *hist,
                   int quiet)
{
    memset(out, 0, sizeof *out);
    out->table = quiet ? NULL : stdout;
    out->json_path = json;
    out->hist_path = hist;
    if (json) {
        if (strcmp(json, "-") == 0) {
            out->json = stdout;
            out->table = quiet ? NULL : stderr;
        } else if ((out->json = fopen(json, "w")) == NULL) {
            fprintf(stderr, "nerve bench: %s: %s\n", json, strerror(errno));
            return 1;
        }
    }
    if (hist && (out->hist = fopen(hist, "w")) == NULL) {
        fprintf(stderr, "nerve bench: %s: %s\n", hist, strerror(errno));
        bench_out_close(out, 1);
        return 1;
    }
    return 0;
}

/* Close a file we opened; 0, or -1 after a message. */
static int out_close(FILE *f, const char *path)
{
    if (f == NULL || f == stdout) {
        return 0;
    }
    if (fclose(f) != 0) {
        fprintf(stderr, "nerve bench: %s: %s\n", path, strerror(errno));
        return -1;
    }
    return 0;
}

int bench_out_close(struct bench_out *out, int status)
{
    if (out_close(out->json, out->json_path) != 0 && status == 0) {
        status = 1;
    }
    if (out_close(out->hist, out->hist_path) != 0 && status == 0) {
        status = 1;
    }
    out->json = out->hist = NULL;
    return status;
}
