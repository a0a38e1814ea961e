/* `nerve bench`: options, the measurement plan, the forked senders and
 * receivers, and the output (table, JSON lines, histograms).
 *
 * A measurement is one transport with one configuration (senders,
 * receivers, size, rate, wait or poll). Measurements of the same
 * configuration over several transports form a group; a group runs in
 * rounds, each round giving every transport one slice of its duration in
 * turn, so that all of them see the same machine conditions. Every round
 * starts fresh: new channel (or pipes, queues, ...), receivers forked and
 * ready before the senders are forked.
 *
 * Every receiver records every message: a counter gap per sender counts as
 * missed, messages still unread when it stops count as missed, and the
 * parent checks that received + missed equals what the senders sent. The
 * latencies go into a preallocated histogram (always) and a preallocated
 * sample array (exact percentiles while all samples fit). Nothing in the
 * timed loops allocates. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"
#include "bench_impl.h"

int64_t bench_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* ---- options and plan ---------------------------------------------------- */

struct group {
    unsigned senders, receivers;
    uint64_t size;
    double rate, duration;
};

struct opts {
    int transports[BT_COUNT];
    unsigned ntransports;
    unsigned senders[16];
    unsigned nsenders;
    unsigned receivers[16];
    unsigned nreceivers;
    double rate, duration;
    int have_rate, have_size, have_duration, have_transport, have_rounds;
    uint64_t sizes[PP_MAX_SIZES];
    unsigned nsizes;
    unsigned rounds;
    /* --pingpong */
    int pingpong, have_rows, have_iterations, have_warmup, have_ring;
    unsigned ring;
    int have_senders, have_receivers;
    unsigned pp_rows;
    unsigned lines[8];
    unsigned nlines;
    uint64_t iterations;
    int64_t warmup;
    int wait, zero_copy, newest, fifo, quiet;
    int cpus[BENCH_MAX_CPUS];
    unsigned ncpus;
    const char *cpus_text, *json, *histogram, *prefix, *workload;
};

/* One measurement and its results, accumulated over the rounds. */
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

static volatile sig_atomic_t g_stop, g_alarm;

static void on_stop(int sig)
{
    (void)sig;
    g_stop = 1;
}

static void on_alarm(int sig)
{
    (void)sig;
    g_alarm = 1;
}

static int usage(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static int usage(const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "nerve bench: ");
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\nTry 'nerve bench --help'.\n");
    return 2;
}

static int parse_uint(const char *s, unsigned lo, unsigned hi, unsigned *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < (long)lo || v > (long)hi) {
        return -1;
    }
    *out = (unsigned)v;
    return 0;
}

static int parse_double(const char *s, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || !isfinite(v) || v < 0) {
        return -1;
    }
    *out = v;
    return 0;
}

static int parse_size(const char *s, uint64_t *out)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || end == s || *s == '-') {
        return -1;
    }
    unsigned shift = 0;
    if (*end == 'k' || *end == 'K') {
        shift = 10;
        end++;
    } else if (*end == 'm' || *end == 'M') {
        shift = 20;
        end++;
    }
    if (*end == 'i') {
        end++;
    }
    if (*end == 'B' || *end == 'b') {
        end++;
    }
    if (*end || v > (1ull << 40)) {
        return -1;
    }
    *out = (uint64_t)v << shift;
    return 0;
}

static int parse_cpus(const char *s, struct opts *o)
{
    const char *p = s;
    o->ncpus = 0;
    while (*p) {
        char *end;
        long a = strtol(p, &end, 10), b;
        if (end == p || a < 0 || a >= 4096) {
            return -1;
        }
        b = a;
        p = end;
        if (*p == '-') {
            b = strtol(p + 1, &end, 10);
            if (end == p + 1 || b < a || b >= 4096) {
                return -1;
            }
            p = end;
        }
        for (long c = a; c <= b; c++) {
            if (o->ncpus == BENCH_MAX_CPUS) {
                return -1;
            }
            o->cpus[o->ncpus++] = (int)c;
        }
        if (*p == ',') {
            p++;
        } else if (*p) {
            return -1;
        }
    }
    return o->ncpus ? 0 : -1;
}

static int transport_by_name(const char *s, size_t len)
{
    for (int t = 0; t < BT_COUNT; t++) {
        if (strlen(bench_transports[t]->name) == len &&
            strncmp(bench_transports[t]->name, s, len) == 0) {
            return t;
        }
    }
    return -1;
}

static int parse_transports(const char *s, struct opts *o)
{
    o->ntransports = 0;
    while (*s) {
        const char *comma = strchr(s, ',');
        size_t len = comma ? (size_t)(comma - s) : strlen(s);
        int t = transport_by_name(s, len);
        if (t < 0 || o->ntransports == BT_COUNT) {
            return -1;
        }
        for (unsigned i = 0; i < o->ntransports; i++) {
            if (o->transports[i] == t) {
                return -1;
            }
        }
        o->transports[o->ntransports++] = t;
        s += len + (comma ? 1 : 0);
    }
    return o->ntransports ? 0 : -1;
}

/* A comma-separated list of at most `max` counts in [lo, hi]. */
static int parse_uint_list(const char *s, unsigned lo, unsigned hi,
                           unsigned *out, unsigned max, unsigned *n)
{
    *n = 0;
    while (*s) {
        const char *comma = strchr(s, ',');
        char tmp[16];
        size_t len = comma ? (size_t)(comma - s) : strlen(s);
        if (len == 0 || len >= sizeof tmp || *n == max) {
            return -1;
        }
        memcpy(tmp, s, len);
        tmp[len] = '\0';
        if (parse_uint(tmp, lo, hi, &out[(*n)++]) != 0) {
            return -1;
        }
        s += len + (comma ? 1 : 0);
    }
    return *n ? 0 : -1;
}

/* A comma-separated list of sizes (K, M suffixes), each in [lo, hi]. */
static int parse_size_list(const char *s, uint64_t lo, uint64_t hi,
                           struct opts *o)
{
    o->nsizes = 0;
    while (*s) {
        const char *comma = strchr(s, ',');
        char tmp[32];
        size_t len = comma ? (size_t)(comma - s) : strlen(s);
        if (len == 0 || len >= sizeof tmp || o->nsizes == PP_MAX_SIZES) {
            return -1;
        }
        memcpy(tmp, s, len);
        tmp[len] = '\0';
        uint64_t v;
        if (parse_size(tmp, &v) != 0 || v < lo || v > hi) {
            return -1;
        }
        o->sizes[o->nsizes++] = v;
        s += len + (comma ? 1 : 0);
    }
    return o->nsizes ? 0 : -1;
}

/* --rows of --pingpong. */
static int parse_pp_rows(const char *s, struct opts *o)
{
    static const struct {
        const char *name;
        unsigned bit;
    } names[] = {
        {"spin", PP_ROW_SPIN},
        {"futex", PP_ROW_FUTEX},
        {"memcpy", PP_ROW_MEMCPY},
        {"memcpy-xfer", PP_ROW_XFER},
        {"poll-zc", PP_ROW_POLL_ZC},
        {"poll-copy", PP_ROW_POLL_COPY},
        {"wait-zc", PP_ROW_WAIT_ZC},
        {"wait-copy", PP_ROW_WAIT_COPY},
        {"floors", PP_ROW_SPIN | PP_ROW_FUTEX | PP_ROW_MEMCPY | PP_ROW_XFER},
        {"nerve",
         PP_ROW_POLL_ZC | PP_ROW_POLL_COPY | PP_ROW_WAIT_ZC | PP_ROW_WAIT_COPY},
    };
    o->pp_rows = 0;
    while (*s) {
        const char *comma = strchr(s, ',');
        size_t len = comma ? (size_t)(comma - s) : strlen(s);
        unsigned i, nn = sizeof names / sizeof names[0];
        for (i = 0; i < nn; i++) {
            if (strlen(names[i].name) == len &&
                strncmp(names[i].name, s, len) == 0) {
                break;
            }
        }
        if (i == nn) {
            return -1;
        }
        o->pp_rows |= names[i].bit;
        s += len + (comma ? 1 : 0);
    }
    return o->pp_rows ? 0 : -1;
}

/* ---- children -------------------------------------------------------------- */

static void child_setup(const struct bench_cfg *cfg, unsigned slot,
                        struct bench_shared *sh)
{
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    signal(SIGALRM, SIG_DFL);
    if (cfg->ncpus > 0) {
        cpu_set_t set;
        CPU_ZERO(&set);
        CPU_SET(cfg->cpus[slot % cfg->ncpus], &set);
        if (sched_setaffinity(0, sizeof set, &set) != 0) {
            /* reported through the missing pinning in the failure below */
            snprintf(sh->error, sizeof sh->error,
                     "sched_setaffinity(cpu %d):"
                     " %s",
                     cfg->cpus[slot % cfg->ncpus], strerror(errno));
            atomic_store(&sh->failed, 1);
            _exit(1);
        }
    }
    if (cfg->fifo > 0) {
        struct sched_param sp = {.sched_priority = cfg->fifo};
        if (sched_setscheduler(0, SCHED_FIFO, &sp) != 0) {
            atomic_store(&sh->rt_denied, 1);
        }
        if (mlockall(MCL_CURRENT | MCL_FUTURE) != 0) {
            /* best effort: pages are touched before the timed loop anyway */
        }
    }
}

static void child_fail(struct bench_shared *sh, const char *who, unsigned id,
                       const char *err)
{
    uint32_t zero = 0;
    if (atomic_compare_exchange_strong(&sh->failed, &zero, 1)) {
        snprintf(sh->error, sizeof sh->error, "%s %u: %s", who, id, err);
    }
    _exit(1);
}

static void record(struct bench_run *r, struct bench_recv *res,
                   uint32_t *samples, const struct bench_hdr *h, int64_t now,
                   int t40, unsigned id)
{
    if (h->magic != BENCH_MAGIC || h->sender >= r->cfg->senders) {
        child_fail(r->sh, "receiver", id, "message with a bad header");
    }
    uint64_t last = res->last[h->sender];
    if (h->counter <= last) {
        res->disorder++;
        return;
    }
    res->missed += h->counter - last - 1;
    res->last[h->sender] = h->counter;
    uint64_t lat = (uint64_t)(now - h->t_send);
    if (t40) {
        lat &= (UINT64_C(1) << 40) - 1;
    }
    if (now < h->t_send && !t40) {
        lat = 0;
    }
    uint32_t v = lat > UINT32_MAX ? UINT32_MAX : (uint32_t)lat;
    res->received++;
    res->hist[hist_index(v)]++;
    if (res->nsamples < r->cap) {
        samples[res->nsamples++] = v;
    }
    if (v < res->min_ns) {
        res->min_ns = v;
    }
    if (v > res->max_ns) {
        res->max_ns = v;
    }
    res->sum_ns += v;
}

static void receiver_main(struct bench_run *r, unsigned id)
{
    const struct bench_cfg *cfg = r->cfg;
    const struct bench_ops *ops = bench_transports[cfg->transport];
    char err[256];
    child_setup(cfg, id, r->sh);
    struct bench_recv *res = &r->res[id];
    uint32_t *samples = r->samples + (size_t)id * r->cap;
    if (ops->receiver_init(r, id, err, sizeof err) != 0) {
        child_fail(r->sh, "receiver", id, err);
    }
    /* Fault in what the timed loop writes. */
    memset(samples + res->nsamples, 0,
           (size_t)(r->cap - res->nsamples) * sizeof *samples);
    memset(res->last, 0, sizeof res->last);
    volatile uint64_t *vh = res->hist;
    for (unsigned i = 0; i < HIST_BUCKETS; i += 512) {
        vh[i] = vh[i];
    }
    int block = ops->mode == 1 || (ops->mode == -1 && cfg->wait);
    atomic_fetch_add_explicit(&r->sh->ready, 1, memory_order_release);
    struct bench_hdr h;
    for (;;) {
        int got = ops->recv(r, id, block, &h, err, sizeof err);
        if (got > 0) {
            record(r, res, samples, &h, bench_now(), ops->t40, id);
            continue;
        }
        if (got < 0) {
            child_fail(r->sh, "receiver", id, err);
        }
        if (atomic_load_explicit(&r->sh->done, memory_order_acquire)) {
            /* Every sender has exited: what is left is in the transport. */
            while ((got = ops->recv(r, id, 0, &h, err, sizeof err)) > 0) {
                record(r, res, samples, &h, bench_now(), ops->t40, id);
            }
            if (got < 0) {
                child_fail(r->sh, "receiver", id, err);
            }
            break;
        }
    }
    for (unsigned s = 0; s < cfg->senders; s++) {
        uint64_t sent = r->sh->sent[s];
        if (sent >= res->last[s]) {
            res->missed += sent - res->last[s];
        } else {
            res->disorder++;
        }
    }
    res->stale += r->stale;
    res->lib_missed += r->lib_missed;
    _exit(0);
}

static void sender_main(struct bench_run *r, unsigned id, double slice)
{
    const struct bench_cfg *cfg = r->cfg;
    const struct bench_ops *ops = bench_transports[cfg->transport];
    char err[256];
    child_setup(cfg, cfg->receivers + id, r->sh);
    if (ops->sender_init(r, id, err, sizeof err) != 0) {
        child_fail(r->sh, "sender", id, err);
    }
    unsigned char *msg = malloc(cfg->size);
    if (msg == NULL) {
        child_fail(r->sh, "sender", id, "out of memory");
    }
    for (uint64_t i = 0; i < cfg->size; i++) {
        msg[i] = (unsigned char)(i * 131 + id);
    }
    uint64_t count = cfg->rate > 0 ? (uint64_t)llround(cfg->rate * slice) : 0;
    int64_t period = cfg->rate > 0 ? (int64_t)(1e9 / cfg->rate) : 0;
    int64_t t0 = bench_now(), end = t0 + (int64_t)(slice * 1e9);
    int64_t next = t0;
    uint64_t k;
    r->sh->t_first[id] = t0;
    for (k = 1;; k++) {
        if (period > 0) {
            if (k > count) {
                break;
            }
            int64_t now = bench_now();
            if (next > now) {
                struct timespec ts = {(time_t)(next / 1000000000),
                                      (long)(next % 1000000000)};
                while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts,
                                       NULL) == EINTR) {
                }
            } else if (now - next > period) {
                next = now; /* fell behind: resume the schedule from now */
            }
            next += period;
        }
        struct bench_hdr h;
        h.t_send = bench_now();
        if (period == 0 && h.t_send >= end) {
            break;
        }
        h.counter = k;
        h.sender = id;
        h.magic = BENCH_MAGIC;
        memcpy(msg, &h, sizeof h);
        if (ops->send(r, id, msg, err, sizeof err) != 0) {
            child_fail(r->sh, "sender", id, err);
        }
    }
    r->sh->sent[id] = k - 1;
    r->sh->t_last[id] = bench_now();
    _exit(0);
}

/* ---- one round ------------------------------------------------------------- */

static pid_t spawn_receiver(struct bench_run *r, unsigned id)
{
    pid_t p = fork();
    if (p == 0) {
        receiver_main(r, id);
    }
    return p;
}

static pid_t spawn_sender(struct bench_run *r, unsigned id, double slice)
{
    pid_t p = fork();
    if (p == 0) {
        sender_main(r, id, slice);
    }
    return p;
}

/* Wait for pids[0..n) with a deadline in seconds; kill them on timeout or
 * Ctrl-C. Returns 0 when all exited with status 0. */
static int reap(pid_t *pids, unsigned n, unsigned deadline_s, char *why,
                size_t len)
{
    int bad = 0;
    g_alarm = 0;
    alarm(deadline_s);
    for (unsigned i = 0; i < n; i++) {
        if (pids[i] <= 0) {
            continue;
        }
        int st;
        pid_t w;
        while ((w = waitpid(pids[i], &st, 0)) < 0 && errno == EINTR &&
               !g_alarm && !g_stop) {
        }
        if (w < 0) {
            if (!bad) {
                snprintf(why, len,
                         g_stop ? "interrupted"
                                : "a process did not finish within "
                                  "%u s",
                         deadline_s);
            }
            bad = 1;
            for (unsigned j = i; j < n; j++) {
                if (pids[j] > 0) {
                    kill(pids[j], SIGKILL);
                    while (waitpid(pids[j], &st, 0) < 0 && errno == EINTR) {
                    }
                    pids[j] = 0;
                }
            }
            break;
        }
        pids[i] = 0;
        if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
            if (!bad && why[0] == '\0') {
                snprintf(why, len, "a process %s %d",
                         WIFSIGNALED(st) ? "was killed by signal" : "exited",
                         WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
            }
            bad = 1;
        }
    }
    alarm(0);
    return bad ? -1 : 0;
}

static void run_round(struct meas *m, struct bench_shared *sh, double slice)
{
    const struct bench_cfg *cfg = &m->cfg;
    const struct bench_ops *ops = bench_transports[cfg->transport];
    struct bench_run r;
    memset(&r, 0, sizeof r);
    r.cfg = cfg;
    r.sh = sh;
    r.res = m->res;
    r.samples = m->samples;
    r.cap = m->cap;
    snprintf(r.name, sizeof r.name, "%s-%ld-%s", cfg->prefix, (long)getpid(),
             ops->name);
    r.slots = 1024;
    r.data_size = 16 * (cfg->size + 256);
    if (r.data_size < (1u << 20)) {
        r.data_size = 1u << 20;
    }
    memset(sh, 0, sizeof *sh);
    char err[256] = "";
    if (ops->setup(&r, err, sizeof err) != 0) {
        snprintf(m->skipped, sizeof m->skipped, "%s", err);
        return;
    }
    pid_t rp[BENCH_MAX_PROCS] = {0}, sp[BENCH_MAX_PROCS] = {0};
    char why[256] = "";
    int bad = 0;
    for (unsigned i = 0; i < cfg->receivers && !bad; i++) {
        rp[i] = spawn_receiver(&r, i);
        bad = rp[i] < 0;
    }
    /* Receivers first, all set up, as in the Ach procedure. */
    int64_t limit = bench_now() + 30 * (int64_t)1000000000;
    while (!bad && atomic_load(&sh->ready) < cfg->receivers) {
        if (atomic_load(&sh->failed) || g_stop || bench_now() > limit) {
            bad = 1;
            break;
        }
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
    for (unsigned i = 0; i < cfg->senders && !bad; i++) {
        sp[i] = spawn_sender(&r, i, slice);
        bad = sp[i] < 0;
    }
    if (reap(sp, cfg->senders, (unsigned)slice + 60, why, sizeof why) != 0) {
        bad = 1;
    }
    /* SYNC: sent[] and every message are out before done (release); the
     * receivers read done with acquire, then drain and read sent[]. */
    atomic_store_explicit(&sh->done, 1, memory_order_release);
    if (reap(rp, cfg->receivers, 60, why, sizeof why) != 0) {
        bad = 1;
    }
    ops->teardown(&r);
    if (bad || atomic_load(&sh->failed)) {
        if (m->error[0] == '\0') {
            snprintf(m->error, sizeof m->error, "%s",
                     sh->error[0] ? sh->error
                     : why[0]     ? why
                                  : "fork failed");
        }
        return;
    }
    if (atomic_load(&sh->rt_denied)) {
        m->rt_denied = 1;
    }
    int64_t t0 = INT64_MAX, t1 = INT64_MIN;
    for (unsigned s = 0; s < cfg->senders; s++) {
        m->sent += sh->sent[s];
        t0 = sh->t_first[s] < t0 ? sh->t_first[s] : t0;
        t1 = sh->t_last[s] > t1 ? sh->t_last[s] : t1;
    }
    m->send_s += (double)(t1 - t0) / 1e9;
}

/* ---- results --------------------------------------------------------------- */

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

static void table_header(FILE *f)
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
        fprintf(f, ",\"%s\":", m->skipped[0] ? "skipped" : "error");
        json_str(f, m->skipped[0] ? m->skipped : m->error,
                 strlen(m->skipped[0] ? m->skipped : m->error));
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

/* p50 of copying `size` bytes between two warm buffers: the floor of a
 * large message's copy, reported beside every row of its size. */
static double memcpy_p50(uint64_t size)
{
    char *a = malloc(size), *b = malloc(size);
    if (a == NULL || b == NULL) {
        free(a);
        free(b);
        return -1;
    }
    memset(a, 1, size);
    memset(b, 2, size);
    unsigned reps = (unsigned)((64u << 20) / size);
    reps = reps < 11 ? 11 : reps > 1001 ? 1001 : reps;
    uint32_t *t = malloc(reps * sizeof *t);
    if (t == NULL) {
        free(a);
        free(b);
        return -1;
    }
    for (unsigned i = 0; i < reps; i++) {
        int64_t t0 = bench_now();
        memcpy(b, a, size);
        __asm__ volatile("" : : "r"(b) : "memory"); /* keep the copy */
        int64_t d = bench_now() - t0;
        t[i] = d > UINT32_MAX ? UINT32_MAX : (uint32_t)d;
        a[i % size] ^= 1;
    }
    sort_u32(t, reps);
    double v = (double)pct_sorted(t, reps, 50);
    free(t);
    free(a);
    free(b);
    return v;
}

/* ---- groups ---------------------------------------------------------------- */

static int run_group(const struct opts *o, const struct group *g,
                     const struct host *h, FILE *table, FILE *json, FILE *hist)
{
    struct meas ms[BT_COUNT];
    unsigned nm = o->ntransports;
    int status = 0;
    unsigned rounds = o->rounds ? o->rounds : (nm > 1 ? 5 : 1);
    double slice = g->duration / rounds;
    char started[64];
    iso8601_now(started, sizeof started);
    struct bench_shared *sh = mmap(NULL, sizeof *sh, PROT_READ | PROT_WRITE,
                                   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (sh == MAP_FAILED) {
        perror("nerve bench: mmap");
        return 1;
    }
    for (unsigned i = 0; i < nm; i++) {
        struct meas *m = &ms[i];
        memset(m, 0, sizeof *m);
        struct bench_cfg *c = &m->cfg;
        c->transport = o->transports[i];
        c->wait = o->wait;
        c->senders = g->senders;
        c->receivers = g->receivers;
        c->size = g->size;
        c->rate = g->rate;
        c->duration = g->duration;
        c->rounds = rounds;
        c->zero_copy = o->zero_copy;
        c->newest = o->newest;
        c->fifo = o->fifo;
        memcpy(c->cpus, o->cpus, sizeof c->cpus);
        c->ncpus = o->ncpus;
        c->cpus_text = o->cpus_text;
        c->prefix = o->prefix;
        c->workload = o->workload;
        if (g->receivers == 0) {
            /* The writer alone: the most a writer can put with no reader
             * at all, the ceiling of every receiver row. Only nerve runs
             * it; every other transport blocks its sender when full. */
            if (c->transport != BT_NERVE) {
                snprintf(m->skipped, sizeof m->skipped, "%s",
                         "no reader: only nerve never waits for readers");
            }
            continue;
        }
        if (g->rate > 0) {
            double per = ceil(g->rate * g->duration * 1.1) + 1024;
            m->cap = (uint64_t)per * g->senders;
        } else {
            m->cap = (8u << 20) / g->receivers;
            m->cap = m->cap > (1u << 20) ? (1u << 20) : m->cap;
        }
        m->map_len = g->receivers *
                     (sizeof(struct bench_recv) + m->cap * sizeof(uint32_t));
        void *p = mmap(NULL, m->map_len, PROT_READ | PROT_WRITE,
                       MAP_SHARED | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (p == MAP_FAILED) {
            snprintf(m->error, sizeof m->error, "mmap: %s", strerror(errno));
            m->map_len = 0;
            continue;
        }
        m->res = p;
        m->samples = (uint32_t *)(m->res + g->receivers);
        for (unsigned k = 0; k < g->receivers; k++) {
            m->res[k].min_ns = UINT64_MAX;
        }
    }
    for (unsigned k = 0; k < rounds && !g_stop; k++) {
        for (unsigned i = 0; i < nm && !g_stop; i++) {
            if (ms[i].error[0] == '\0' && ms[i].skipped[0] == '\0') {
                run_round(&ms[i], sh, slice);
            }
        }
    }
    double mc = memcpy_p50(g->size);
    for (unsigned i = 0; i < nm; i++) {
        struct meas *m = &ms[i];
        struct summary s;
        if (g_stop && !m->error[0]) {
            snprintf(m->error, sizeof m->error, "interrupted");
        }
        if (m->res != NULL) {
            summarise(m, &s);
        } else {
            memset(&s, 0, sizeof s);
        }
        account(m, &s);
        if (table) {
            table_row(table, m, &s);
        }
        if (json) {
            json_row(json, m, &s, h, mc, started);
        }
        if (hist && !m->skipped[0] && m->res != NULL) {
            histogram_out(hist, m);
        }
        if (m->error[0]) {
            status = 1;
        }
        if (m->map_len) {
            munmap(m->res, m->map_len);
        }
    }
    munmap(sh, sizeof *sh);
    return status;
}

/* `--pingpong`: check the options that apply and run pingpong.c's plan.
 * `modes`: 1 --wait, 2 --poll given. */
static int pingpong_main(struct opts *o, int modes)
{
    const char *bad = o->have_transport   ? "--transport"
                      : o->have_senders   ? "--senders"
                      : o->have_receivers ? "--receivers"
                      : o->have_rate      ? "--rate"
                      : o->workload       ? "--workload"
                      : o->newest         ? "--newest"
                      : o->histogram      ? "--histogram"
                                          : NULL;
    if (bad) {
        return usage("%s does not apply to --pingpong", bad);
    }
    struct pp_opts p;
    memset(&p, 0, sizeof p);
    p.rows = o->pp_rows;
    if (modes == 1) { /* --wait: the blocking rows and their floor */
        p.rows &=
            PP_ROW_FUTEX | PP_ROW_MEMCPY | PP_ROW_WAIT_ZC | PP_ROW_WAIT_COPY;
    } else if (modes == 2) {
        p.rows &= PP_ROW_SPIN | PP_ROW_MEMCPY | PP_ROW_XFER | PP_ROW_POLL_ZC |
                  PP_ROW_POLL_COPY;
    }
    if (o->zero_copy) {
        p.rows &= ~(PP_ROW_MEMCPY | PP_ROW_XFER | PP_ROW_POLL_COPY |
                    PP_ROW_WAIT_COPY);
    }
    memcpy(p.lines, o->lines, sizeof p.lines);
    p.nlines = modes == 1 ? 0 : o->nlines;
    if (p.rows == 0 && p.nlines == 0) {
        return usage("%s", "--pingpong: the options leave no row to run");
    }
    if (o->have_size) {
        for (unsigned i = 0; i < o->nsizes; i++) {
            if (o->sizes[i] < 8) {
                return usage("bad --size %" PRIu64 " (at least 8 bytes)",
                             o->sizes[i]);
            }
            p.sizes[i] = o->sizes[i];
        }
        p.nsizes = o->nsizes;
    } else {
        static const uint64_t def[] = {64, 4096, 65536, 1u << 20};
        memcpy(p.sizes, def, sizeof def);
        p.nsizes = 4;
    }
    if (o->ncpus == 1) {
        return usage("%s", "--pingpong --cpus needs two CPUs (ping, pong)");
    }
    if (o->ncpus >= 2) {
        p.cpus[0] = o->cpus[0];
        p.cpus[1] = o->cpus[1];
        p.pinned = 1;
        p.cpus_text = o->cpus_text;
    }
    p.duration = o->duration;
    p.iterations = o->iterations;
    p.warmup = o->warmup;
    p.ring = o->have_ring ? o->ring : 16;
    p.rounds = o->have_rounds ? o->rounds : 3;
    if (p.rounds > PP_MAX_ROUNDS) {
        return usage("bad --rounds %u (at most %u with --pingpong)", p.rounds,
                     PP_MAX_ROUNDS);
    }
    p.fifo = o->fifo;
    p.prefix = o->prefix;
    p.table = o->quiet ? NULL : stdout;
    if (o->json) {
        if (strcmp(o->json, "-") == 0) {
            p.json = stdout;
            p.table = o->quiet ? NULL : stderr;
        } else if ((p.json = fopen(o->json, "w")) == NULL) {
            fprintf(stderr, "nerve bench: %s: %s\n", o->json, strerror(errno));
            return 1;
        }
    }
    struct host h;
    host_probe(&h, o->fifo);
    if (o->fifo > 0 && h.rt != 1) {
        fprintf(stderr,
                "nerve bench: SCHED_FIFO priority %d is not "
                "permitted here; running with normal scheduling\n",
                o->fifo);
    }
    int status = pingpong_run(&p, &h);
    if (p.json && p.json != stdout && fclose(p.json) != 0) {
        fprintf(stderr, "nerve bench: %s: %s\n", o->json, strerror(errno));
        status = status ? status : 1;
    }
    return status;
}

int bench_main(int argc, char **argv)
{
    static const struct option lopts[] = {
        {"transport", required_argument, NULL, 't'},
        {"senders", required_argument, NULL, 'S'},
        {"receivers", required_argument, NULL, 'R'},
        {"rate", required_argument, NULL, 'r'},
        {"size", required_argument, NULL, 's'},
        {"duration", required_argument, NULL, 'd'},
        {"rounds", required_argument, NULL, 'n'},
        {"wait", no_argument, NULL, 'w'},
        {"poll", no_argument, NULL, 'p'},
        {"zero-copy", no_argument, NULL, 'z'},
        {"newest", no_argument, NULL, 'E'},
        {"fifo", required_argument, NULL, 'f'},
        {"cpus", required_argument, NULL, 'c'},
        {"workload", required_argument, NULL, 'W'},
        {"json", required_argument, NULL, 'j'},
        {"histogram", required_argument, NULL, 'H'},
        {"name", required_argument, NULL, 'N'},
        {"quiet", no_argument, NULL, 'q'},
        {"pingpong", no_argument, NULL, 'P'},
        {"rows", required_argument, NULL, 'O'},
        {"lines", required_argument, NULL, 'L'},
        {"iterations", required_argument, NULL, 'I'},
        {"warmup", required_argument, NULL, 'U'},
        {"ring", required_argument, NULL, 'G'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    struct opts o;
    memset(&o, 0, sizeof o);
    o.transports[0] = BT_NERVE;
    o.ntransports = 1;
    o.senders[0] = 1;
    o.nsenders = 1;
    o.receivers[0] = 1;
    o.nreceivers = 1;
    o.rate = 1000;
    o.duration = 1;
    o.sizes[0] = 64;
    o.nsizes = 1;
    o.warmup = -1;
    o.pp_rows = PP_ROW_ALL;
    o.wait = 1;
    o.prefix = "nerve-bench";
    int c, modes = 0;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "h", lopts, NULL)) != -1) {
        switch (c) {
        case 't':
            if (parse_transports(optarg, &o) != 0) {
                return usage("bad --transport '%s' (nerve, pipe, unix, mq, "
                             "futex, spin, condvar; each once)",
                             optarg);
            }
            o.have_transport = 1;
            break;
        case 'S':
            if (parse_uint_list(optarg, 1, BENCH_MAX_PROCS, o.senders, 16,
                                &o.nsenders) != 0) {
                return usage("bad --senders '%s' (1 to 64, or a list)", optarg);
            }
            o.have_senders = 1;
            break;
        case 'R':
            if (parse_uint_list(optarg, 1, BENCH_MAX_PROCS, o.receivers, 16,
                                &o.nreceivers) != 0) {
                return usage("bad --receivers '%s' (1 to 64, or a list)",
                             optarg);
            }
            o.have_receivers = 1;
            break;
        case 'r':
            /* 0 is back-to-back; below 1e-3 Hz the period would not fit
             * the nanosecond clock arithmetic. */
            if (parse_double(optarg, &o.rate) != 0 || o.rate > 1e8 ||
                (o.rate > 0 && o.rate < 1e-3)) {
                return usage("bad --rate '%s'", optarg);
            }
            o.have_rate = 1;
            break;
        case 's':
            /* The minimum (24 bytes, 8 with --pingpong) is checked once
             * the mode is known. */
            if (parse_size_list(optarg, 1, 256u << 20, &o) != 0) {
                return usage("bad --size '%s' (24 bytes to 256M, or a list; "
                             "8 bytes with --pingpong)",
                             optarg);
            }
            o.have_size = 1;
            break;
        case 'd':
            if (parse_double(optarg, &o.duration) != 0 || o.duration <= 0 ||
                o.duration > 86400) {
                return usage("bad --duration '%s'", optarg);
            }
            o.have_duration = 1;
            break;
        case 'n':
            if (parse_uint(optarg, 1, 1000, &o.rounds) != 0) {
                return usage("bad --rounds '%s'", optarg);
            }
            o.have_rounds = 1;
            break;
        case 'w':
            o.wait = 1;
            modes |= 1;
            break;
        case 'p':
            o.wait = 0;
            modes |= 2;
            break;
        case 'z': o.zero_copy = 1; break;
        case 'E': o.newest = 1; break;
        case 'f': {
            unsigned prio;
            if (parse_uint(optarg, 1, 99, &prio) != 0) {
                return usage("bad --fifo '%s' (1 to 99)", optarg);
            }
            o.fifo = (int)prio;
            break;
        }
        case 'c':
            if (parse_cpus(optarg, &o) != 0) {
                return usage("bad --cpus '%s' (e.g. 0,1 or 2-5)", optarg);
            }
            o.cpus_text = optarg;
            break;
        case 'W':
            if (strcmp(optarg, "ach") != 0 && strcmp(optarg, "furom") != 0 &&
                strcmp(optarg, "throughput") != 0) {
                return usage("unknown --workload '%s' (ach, furom, "
                             "throughput)",
                             optarg);
            }
            o.workload = optarg;
            break;
        case 'j': o.json = optarg; break;
        case 'H': o.histogram = optarg; break;
        case 'N':
            if (strlen(optarg) > 100 || nerve_chan_name_check(optarg) != 0) {
                return usage("bad --name '%s' (a channel name, at most 100 "
                             "bytes)",
                             optarg);
            }
            o.prefix = optarg;
            break;
        case 'q': o.quiet = 1; break;
        case 'P': o.pingpong = 1; break;
        case 'O':
            if (parse_pp_rows(optarg, &o) != 0) {
                return usage("bad --rows '%s' (spin, futex, memcpy, "
                             "memcpy-xfer, poll-zc, poll-copy, wait-zc, "
                             "wait-copy, floors, nerve)",
                             optarg);
            }
            o.have_rows = 1;
            break;
        case 'L':
            if (parse_uint_list(optarg, 1, 8, o.lines, 8, &o.nlines) != 0) {
                return usage("bad --lines '%s' (1 to 8, or a list)", optarg);
            }
            break;
        case 'I': {
            unsigned v;
            if (parse_uint(optarg, 1, PP_MAX_SAMPLES, &v) != 0) {
                return usage("bad --iterations '%s' (1 to %u)", optarg,
                             PP_MAX_SAMPLES);
            }
            o.iterations = v;
            o.have_iterations = 1;
            break;
        }
        case 'U': {
            unsigned v;
            if (parse_uint(optarg, 0, 1000000, &v) != 0) {
                return usage("bad --warmup '%s' (0 to 1000000)", optarg);
            }
            o.warmup = v;
            o.have_warmup = 1;
            break;
        }
        case 'G':
            if (parse_uint(optarg, 2, 1024, &o.ring) != 0) {
                return usage("bad --ring '%s' (2 to 1024 messages)", optarg);
            }
            o.have_ring = 1;
            break;
        case 'h': fputs(BENCH_HELP, stdout); return 0;
        default:
            return usage("unknown option or missing value: '%s'",
                         argv[optind - 1]);
        }
    }
    if (optind != argc) {
        return usage("unexpected argument '%s'", argv[optind]);
    }
    if (modes == 3) {
        return usage("%s", "give --wait or --poll, not both");
    }
    if (o.pingpong) {
        return pingpong_main(&o, modes);
    }
    if (o.have_rows || o.nlines || o.have_iterations || o.have_warmup ||
        o.have_ring) {
        return usage("%s", "--rows, --lines, --iterations, --warmup and "
                           "--ring need --pingpong");
    }
    for (unsigned i = 0; i < o.nsizes; i++) {
        if (o.sizes[i] < sizeof(struct bench_hdr)) {
            return usage("bad --size %" PRIu64 " (at least 24 bytes)",
                         o.sizes[i]);
        }
    }
    /* The plan. */
    struct group groups[16 * 16];
    unsigned ng = 0;
    if (o.workload && strcmp(o.workload, "ach") == 0) {
        static const unsigned sr[][2] = {
            {1, 1}, {1, 2}, {1, 4}, {1, 8}, {2, 1}};
        for (unsigned i = 0; i < 5; i++) {
            groups[ng++] = (struct group){sr[i][0], sr[i][1],
                                          o.have_size ? o.sizes[0] : 64, 1000,
                                          o.have_duration ? o.duration : 2};
        }
    } else if (o.workload && strcmp(o.workload, "throughput") == 0) {
        /* Back-to-back 64 B to one polling receiver from 1, 2 and 4
         * senders: the aggregate rate (recv_rate_per_s) against the
         * pipe's; then nerve's 1, 2 and 4 senders with no receiver: the
         * ceiling no reader can raise, and the writer lock's own cost. */
        static const unsigned ws[][2] = {{1, 1}, {2, 1}, {4, 1},
                                         {1, 0}, {2, 0}, {4, 0}};
        o.wait = 0;
        for (unsigned i = 0; i < 6; i++) {
            groups[ng++] = (struct group){ws[i][0], ws[i][1],
                                          o.have_size ? o.sizes[0] : 64, 0,
                                          o.have_duration ? o.duration : 2};
        }
    } else if (o.workload) {
        static const struct {
            uint64_t size;
            double rate;
        } rows[] = {{40, 2000}, {8192, 100}, {1u << 20, 10}};
        for (unsigned i = 0; i < 3; i++) {
            double d =
                o.have_duration ? o.duration : fmax(2, 100 / rows[i].rate);
            groups[ng++] = (struct group){1, 1, rows[i].size, rows[i].rate, d};
        }
    } else {
        if (o.nsenders * o.nreceivers * o.nsizes > 16 * 16) {
            return usage("%s", "--senders x --receivers x --size lists give "
                               "more than 256 measurements");
        }
        for (unsigned a = 0; a < o.nsenders; a++) {
            for (unsigned i = 0; i < o.nreceivers; i++) {
                for (unsigned z = 0; z < o.nsizes; z++) {
                    groups[ng++] =
                        (struct group){o.senders[a], o.receivers[i], o.sizes[z],
                                       o.rate, o.duration};
                }
            }
        }
    }
    if (o.workload && strcmp(o.workload, "throughput") == 0 &&
        !o.have_transport) {
        o.transports[0] = BT_NERVE;
        o.transports[1] = BT_PIPE;
        o.ntransports = 2;
    } else if (o.workload && !o.have_transport) {
        static const int wl[] = {BT_NERVE, BT_FUTEX, BT_CONDVAR,
                                 BT_PIPE,  BT_UNIX,  BT_MQ};
        memcpy(o.transports, wl, sizeof wl);
        o.ntransports = 6;
    }
    /* Every sample is kept (preallocated, none dropped), so bound how many
     * one measurement may take: 20 M samples are 80 MB per receiver. */
    unsigned max_senders = 1;
    for (unsigned i = 0; i < o.nsenders; i++) {
        max_senders = o.senders[i] > max_senders ? o.senders[i] : max_senders;
    }
    if (o.rate * o.duration * max_senders > 2e7) {
        return usage("%s", "--rate x --duration x --senders exceeds 20 M "
                           "samples per receiver; shorten the run");
    }
    if (o.workload &&
        (o.have_rate || o.nreceivers > 1 || o.nsenders > 1 ||
         o.senders[0] > 1 || o.receivers[0] > 1 || o.nsizes > 1)) {
        return usage("%s", "--workload fixes --rate, --senders and "
                           "--receivers, and takes one --size");
    }
    FILE *json = NULL, *hist = NULL, *table = o.quiet ? NULL : stdout;
    if (o.json) {
        if (strcmp(o.json, "-") == 0) {
            json = stdout;
            table = o.quiet ? NULL : stderr;
        } else if ((json = fopen(o.json, "w")) == NULL) {
            fprintf(stderr, "nerve bench: %s: %s\n", o.json, strerror(errno));
            return 1;
        }
    }
    if (o.histogram && (hist = fopen(o.histogram, "w")) == NULL) {
        fprintf(stderr, "nerve bench: %s: %s\n", o.histogram, strerror(errno));
        if (json && json != stdout) {
            fclose(json);
        }
        return 1;
    }
    struct host h;
    host_probe(&h, o.fifo);
    if (o.fifo > 0 && h.rt != 1) {
        fprintf(stderr,
                "nerve bench: SCHED_FIFO priority %d is not "
                "permitted here; running with normal scheduling "
                "(reported as \"rt\": false)\n",
                o.fifo);
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_stop;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sa.sa_handler = on_alarm;
    sigaction(SIGALRM, &sa, NULL);
    if (table) {
        table_header(table);
    }
    int status = 0;
    for (unsigned i = 0; i < ng && !g_stop; i++) {
        if (run_group(&o, &groups[i], &h, table, json, hist) != 0) {
            status = 1;
        }
    }
    if (json && json != stdout) {
        fclose(json);
    }
    if (hist) {
        fclose(hist);
    }
    if (g_stop) {
        fprintf(stderr, "nerve bench: interrupted\n");
        return 1;
    }
    return status;
}
