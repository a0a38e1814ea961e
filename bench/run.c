/* The run of the latency plan: the forked senders and receivers, one
 * round, one group.
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
 * parent checks (report.c) that received + missed equals what the senders
 * sent. The latencies go into a preallocated histogram (always) and a
 * preallocated sample array (exact percentiles while all samples fit).
 * Nothing in the timed loops allocates. */
#include <errno.h>
#include <math.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench_impl.h"

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

static void cfg_init(struct bench_cfg *c, const struct bench_opts *o,
                     const struct bench_plan *p, const struct bench_group *g,
                     int transport, unsigned rounds)
{
    c->transport = transport;
    c->wait = p->wait;
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
}

/* The shared memory of one measurement: its receivers' results and
 * samples, sized for every message the group may send. */
static void meas_map(struct meas *m, const struct bench_group *g)
{
    if (g->receivers == 0) {
        /* The writer alone: the most a writer can put with no reader
         * at all, the ceiling of every receiver row. Only nerve runs
         * it; every other transport blocks its sender when full. */
        if (m->cfg.transport != BT_NERVE) {
            snprintf(m->skipped, sizeof m->skipped, "%s",
                     "no reader: only nerve never waits for readers");
        }
        return;
    }
    if (g->rate > 0) {
        double per = ceil(g->rate * g->duration * 1.1) + 1024;
        m->cap = (uint64_t)per * g->senders;
    } else {
        m->cap = (8u << 20) / g->receivers;
        m->cap = m->cap > (1u << 20) ? (1u << 20) : m->cap;
    }
    m->map_len =
        g->receivers * (sizeof(struct bench_recv) + m->cap * sizeof(uint32_t));
    void *p = mmap(NULL, m->map_len, PROT_READ | PROT_WRITE,
                   MAP_SHARED | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) {
        snprintf(m->error, sizeof m->error, "mmap: %s", strerror(errno));
        m->map_len = 0;
        return;
    }
    m->res = p;
    m->samples = (uint32_t *)(m->res + g->receivers);
    for (unsigned k = 0; k < g->receivers; k++) {
        m->res[k].min_ns = UINT64_MAX;
    }
}

static int run_group(const struct bench_opts *o, const struct bench_plan *p,
                     const struct bench_group *g, const struct host *h,
                     const struct bench_out *out)
{
    struct meas ms[BT_COUNT];
    unsigned nm = p->ntransports;
    unsigned rounds = o->rounds ? o->rounds : (nm > 1 ? 5 : 1);
    double slice = g->duration / rounds;
    char started[64];
    iso8601_now(started, sizeof started); /* the group starts */
    struct bench_shared *sh = mmap(NULL, sizeof *sh, PROT_READ | PROT_WRITE,
                                   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (sh == MAP_FAILED) {
        perror("nerve bench: mmap");
        return 1;
    }
    for (unsigned i = 0; i < nm; i++) {
        memset(&ms[i], 0, sizeof ms[i]);
        cfg_init(&ms[i].cfg, o, p, g, p->transports[i], rounds);
        meas_map(&ms[i], g);
    }
    for (unsigned k = 0; k < rounds && !g_stop; k++) {
        for (unsigned i = 0; i < nm && !g_stop; i++) {
            if (ms[i].error[0] == '\0' && ms[i].skipped[0] == '\0') {
                run_round(&ms[i], sh, slice);
            }
        }
    }
    double mc = memcpy_p50(g->size);
    int status = report_group(ms, nm, h, out, mc, started, g_stop != 0);
    for (unsigned i = 0; i < nm; i++) {
        if (ms[i].map_len) {
            munmap(ms[i].res, ms[i].map_len);
        }
    }
    munmap(sh, sizeof *sh);
    return status;
}

int bench_run(const struct bench_opts *o, const struct bench_plan *p,
              const struct host *h, const struct bench_out *out)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_stop;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sa.sa_handler = on_alarm;
    sigaction(SIGALRM, &sa, NULL);
    if (out->table) {
        report_header(out->table);
    }
    int status = 0;
    for (unsigned i = 0; i < p->ngroups && !g_stop; i++) {
        if (run_group(o, p, &p->groups[i], h, out) != 0) {
            status = 1;
        }
    }
    if (g_stop) {
        fprintf(stderr, "nerve bench: interrupted\n");
        return 1;
    }
    return status;
}
