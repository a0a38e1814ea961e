/* ach-bench: the Ach paper's latency benchmark, through Ach's API on
 * nerve, side by side with nerve's own API and with an Ach-style
 * mutex-and-condition-variable ring (`nerve bench`'s condvar transport).
 *
 * Procedure (Ach paper, seed 000): create the channel, fork the
 * receivers, fork one sender; the sender posts timestamped messages at
 * 1 kHz; every receiver waits for each message and records its latency
 * (CLOCK_MONOTONIC, send to receive). Receiver counts 1, 2, 4, 8. The
 * three transports alternate in rounds so that they share the machine's
 * conditions; every sample is kept and percentiles are exact.
 *
 *   ach-bench [--receivers 1,2,4,8] [--duration SEC] [--rounds N]
 *             [--rate HZ] [--size BYTES] [--fifo PRIO] [--name PREFIX]
 *
 * Prints a Markdown table: per transport and receiver count, the sample
 * count, messages missed, p50, p99, p99.9 and max latency in µs, and the
 * ratio of the Ach API to nerve's API at p50 and p99. */
#include <errno.h>
#include <math.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <ach.h>

#include "bench_impl.h"

/* ---- the Ach API as a transport -------------------------------------------- */

static ach_channel_t g_ach; /* one per process (after fork) */

static int ach_fail(char *err, size_t len, const char *what, enum ach_status r)
{
    snprintf(err, len, "%s: %s (%s)", what, ach_result_to_string(r),
             ach_errstr());
    return -1;
}

static int ab_setup(struct bench_run *r, char *err, size_t len)
{
    ach_unlink(r->name); /* a leftover of a killed run, if any */
    /* The same ring as the nerve transport: r->slots frames, data ring
     * of r->data_size bytes. */
    enum ach_status s =
        ach_create(r->name, r->slots, r->data_size / r->slots, NULL);
    if (s != ACH_OK)
        return ach_fail(err, len, "ach_create", s);
    ach_channel_t c;
    s = ach_open(&c, r->name, NULL);
    if (s != ACH_OK)
        return ach_fail(err, len, "ach_open", s);
    void *warm = calloc(1, r->cfg->size);
    if (warm == NULL) {
        ach_close(&c);
        snprintf(err, len, "out of memory");
        return -1;
    }
    /* Warm the ring once around, as the nerve transport does. */
    for (uint64_t i = 0; i < r->slots + 2 && s == ACH_OK; i++)
        s = ach_put(&c, warm, r->cfg->size);
    free(warm);
    ach_close(&c);
    return s == ACH_OK ? 0 : ach_fail(err, len, "ach_put (warm-up)", s);
}

static int ab_sender_init(struct bench_run *r, unsigned id, char *err,
                          size_t len)
{
    (void)id;
    enum ach_status s = ach_open(&g_ach, r->name, NULL);
    return s == ACH_OK ? 0 : ach_fail(err, len, "ach_open", s);
}

static int ab_send(struct bench_run *r, unsigned id, void *msg, char *err,
                   size_t len)
{
    (void)id;
    enum ach_status s = ach_put(&g_ach, msg, r->cfg->size);
    return s == ACH_OK ? 0 : ach_fail(err, len, "ach_put", s);
}

static int ab_receiver_init(struct bench_run *r, unsigned id, char *err,
                            size_t len)
{
    (void)id;
    enum ach_status s = ach_open(&g_ach, r->name, NULL);
    if (s == ACH_OK)
        s = ach_flush(&g_ach); /* start after the warm-up frames */
    if (s != ACH_OK)
        return ach_fail(err, len, "ach_open", s);
    r->buf = calloc(1, r->cfg->size);
    if (r->buf == NULL) {
        snprintf(err, len, "out of memory");
        return -1;
    }
    return 0;
}

static int ab_recv(struct bench_run *r, unsigned id, int block,
                   struct bench_hdr *hdr, char *err, size_t len)
{
    (void)id;
    struct timespec ts = {0, 50000000}; /* as the other transports */
    size_t fs = 0;
    int opt = (r->cfg->newest ? ACH_O_LAST : 0) |
              (block ? ACH_O_WAIT | ACH_O_RELTIME : 0);
    enum ach_status s =
        ach_get(&g_ach, r->buf, r->cfg->size, &fs, block ? &ts : NULL, opt);
    if (s == ACH_OK || s == ACH_MISSED_FRAME) {
        memcpy(hdr, r->buf, sizeof *hdr);
        return 1;
    }
    if (s == ACH_TIMEOUT || s == ACH_STALE_FRAMES)
        return 0;
    return ach_fail(err, len, "ach_get", s);
}

static void ab_teardown(struct bench_run *r)
{
    ach_unlink(r->name);
}

static const struct bench_ops ops_ach = {
    "ach-api", 1,
    -1,        0,
    ab_setup,  ab_sender_init,
    ab_send,   ab_receiver_init,
    ab_recv,   ab_teardown,
};

/* ---- orchestration --------------------------------------------------------- */

#define NTRANSPORTS 3

static const struct bench_ops *transport(int t)
{
    return t == 0   ? &ops_ach
           : t == 1 ? bench_transports[BT_NERVE]
                    : bench_transports[BT_CONDVAR];
}

static void *shared(size_t len)
{
    void *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
                   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

static void child_fail(struct bench_shared *sh, const char *who,
                       const char *err)
{
    uint32_t zero = 0;
    if (atomic_compare_exchange_strong(&sh->failed, &zero, 1))
        snprintf(sh->error, sizeof sh->error, "%s: %s", who, err);
    _exit(1);
}

static void child_rt(const struct bench_cfg *cfg, struct bench_shared *sh)
{
    if (cfg->fifo > 0) {
        struct sched_param sp = {.sched_priority = cfg->fifo};
        if (sched_setscheduler(0, SCHED_FIFO, &sp) != 0)
            atomic_store(&sh->rt_denied, 1);
        (void)mlockall(MCL_CURRENT | MCL_FUTURE);
    }
}

static void record(struct bench_run *r, unsigned id, const struct bench_hdr *h)
{
    struct bench_recv *res = &r->res[id];
    int64_t now = bench_now();
    if (h->magic != BENCH_MAGIC || h->sender != 0)
        child_fail(r->sh, "receiver", "message with a bad header");
    if (h->counter <= res->last[0]) {
        res->disorder++;
        return;
    }
    res->missed += h->counter - res->last[0] - 1;
    res->last[0] = h->counter;
    int64_t lat = now - h->t_send;
    uint32_t v = lat < 0 ? 0 : lat > UINT32_MAX ? UINT32_MAX : (uint32_t)lat;
    res->received++;
    if (res->nsamples < r->cap)
        r->samples[(size_t)id * r->cap + res->nsamples++] = v;
}

static void receiver(struct bench_run *r, const struct bench_ops *ops,
                     unsigned id)
{
    char err[256];
    child_rt(r->cfg, r->sh);
    if (ops->receiver_init(r, id, err, sizeof err) != 0)
        child_fail(r->sh, "receiver", err);
    atomic_fetch_add(&r->sh->ready, 1);
    struct bench_hdr h;
    for (;;) {
        int got = ops->recv(r, id, 1, &h, err, sizeof err);
        if (got > 0) {
            record(r, id, &h);
            continue;
        }
        if (got < 0)
            child_fail(r->sh, "receiver", err);
        if (atomic_load(&r->sh->done)) {
            while ((got = ops->recv(r, id, 0, &h, err, sizeof err)) > 0)
                record(r, id, &h);
            if (got < 0)
                child_fail(r->sh, "receiver", err);
            break;
        }
    }
    if (r->sh->sent[0] > r->res[id].last[0])
        r->res[id].missed += r->sh->sent[0] - r->res[id].last[0];
    _exit(0);
}

static void sender(struct bench_run *r, const struct bench_ops *ops,
                   double seconds)
{
    char err[256];
    child_rt(r->cfg, r->sh);
    if (ops->sender_init(r, 0, err, sizeof err) != 0)
        child_fail(r->sh, "sender", err);
    unsigned char *msg = calloc(1, r->cfg->size);
    if (msg == NULL)
        child_fail(r->sh, "sender", "out of memory");
    uint64_t count = (uint64_t)llround(r->cfg->rate * seconds);
    int64_t period = (int64_t)(1e9 / r->cfg->rate);
    int64_t next = bench_now();
    uint64_t k;
    for (k = 1; k <= count; k++) {
        next += period;
        struct timespec ts = {(time_t)(next / 1000000000),
                              (long)(next % 1000000000)};
        while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) ==
               EINTR) {
        }
        struct bench_hdr h = {bench_now(), k, 0, BENCH_MAGIC};
        memcpy(msg, &h, sizeof h);
        if (ops->send(r, 0, msg, err, sizeof err) != 0)
            child_fail(r->sh, "sender", err);
    }
    r->sh->sent[0] = k - 1;
    _exit(0);
}

static int reap(pid_t p, int seconds)
{
    int64_t limit = bench_now() + (int64_t)seconds * 1000000000;
    for (;;) {
        int st;
        pid_t w = waitpid(p, &st, WNOHANG);
        if (w == p)
            return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -1;
        if (w < 0 || bench_now() > limit) {
            kill(p, SIGKILL);
            waitpid(p, &st, 0);
            return -1;
        }
        struct timespec ts = {0, 2000000};
        nanosleep(&ts, NULL);
    }
}

/* One round: fork the receivers, wait until they are ready, fork the
 * sender, collect. Samples are appended to the caller's arrays. */
static int round_run(struct bench_run *r, const struct bench_ops *ops,
                     double seconds, char *why, size_t len)
{
    memset(r->sh, 0, sizeof *r->sh);
    char err[256] = "";
    if (ops->setup(r, err, sizeof err) != 0) {
        snprintf(why, len, "%s setup: %s", ops->name, err);
        return -1;
    }
    pid_t rp[BENCH_MAX_PROCS];
    int bad = 0;
    for (unsigned i = 0; i < r->cfg->receivers; i++) {
        rp[i] = fork();
        if (rp[i] == 0)
            receiver(r, ops, i);
        bad |= rp[i] < 0;
    }
    int64_t limit = bench_now() + 20 * (int64_t)1000000000;
    while (!bad && atomic_load(&r->sh->ready) < r->cfg->receivers) {
        if (atomic_load(&r->sh->failed) || bench_now() > limit)
            bad = 1;
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
    if (!bad) {
        pid_t sp = fork();
        if (sp == 0)
            sender(r, ops, seconds);
        bad |= sp < 0 || reap(sp, (int)seconds + 30) != 0;
    }
    atomic_store(&r->sh->done, 1);
    for (unsigned i = 0; i < r->cfg->receivers; i++) {
        if (rp[i] > 0 && reap(rp[i], 30) != 0)
            bad = 1;
    }
    ops->teardown(r);
    if (bad || atomic_load(&r->sh->failed)) {
        snprintf(why, len, "%s: %s", ops->name,
                 r->sh->error[0] ? r->sh->error : "a process failed");
        return -1;
    }
    return 0;
}

/* ---- call cost without waiting ------------------------------------------ */

/* ns per put + get pair (a 64-byte frame, copied in and out, in one
 * process), through the Ach API and through nerve's API on the same kind
 * of channel: the library's own overhead, apart from wake-ups. Best of
 * `batches` batches of `n` pairs. */
static int call_cost(const char *prefix, uint64_t size, double *ach_ns,
                     double *nerve_ns)
{
    char name[NERVE_NAME_MAX + 1];
    snprintf(name, sizeof name, "%s-%ld-cost", prefix, (long)getpid());
    ach_unlink(name);
    if (ach_create(name, 1024, 1024, NULL) != ACH_OK)
        return -1;
    ach_channel_t c;
    nerve_chan *nc = NULL;
    if (ach_open(&c, name, NULL) != ACH_OK ||
        nerve_chan_open(name, NERVE_O_WRITE, &nc) != 0) {
        ach_unlink(name);
        return -1;
    }
    unsigned char *msg = calloc(1, size), *buf = calloc(1, size);
    const int n = 20000, batches = 15;
    double best_a = 1e30, best_n = 1e30;
    int bad = 0;
    for (int b = 0; b < batches && !bad; b++) {
        int64_t t0 = bench_now();
        for (int i = 0; i < n; i++) {
            size_t fs;
            bad |= ach_put(&c, msg, size) != ACH_OK;
            enum ach_status r = ach_get(&c, buf, size, &fs, NULL, 0);
            bad |= r != ACH_OK && r != ACH_MISSED_FRAME;
        }
        int64_t t1 = bench_now();
        for (int i = 0; i < n; i++) {
            struct nerve_get_info gi;
            bad |= nerve_chan_put(nc, msg, size, NERVE_FOREVER, NULL, 0) != 0;
            bad |=
                nerve_chan_get(nc, buf, size, 0, 0, &gi, NERVE_GET_NEXT) != 0;
        }
        int64_t t2 = bench_now();
        double a = (double)(t1 - t0) / n, v = (double)(t2 - t1) / n;
        best_a = a < best_a ? a : best_a;
        best_n = v < best_n ? v : best_n;
    }
    free(msg);
    free(buf);
    nerve_chan_close(nc);
    ach_close(&c);
    ach_unlink(name);
    *ach_ns = best_a;
    *nerve_ns = best_n;
    return bad ? -1 : 0;
}

struct result {
    uint64_t n, missed, disorder;
    double p50, p99, p999, max;
    int rt_denied;
};

static int parse_list(const char *s, unsigned *out, unsigned *n)
{
    *n = 0;
    char *copy = strdup(s), *save = NULL;
    for (char *t = strtok_r(copy, ",", &save); t;
         t = strtok_r(NULL, ",", &save)) {
        int v = atoi(t);
        if (v < 1 || v > 32 || *n == 16) {
            free(copy);
            return -1;
        }
        out[(*n)++] = (unsigned)v;
    }
    free(copy);
    return *n ? 0 : -1;
}

static int usage(void)
{
    fprintf(stderr, "usage: ach-bench [--receivers 1,2,4,8] [--duration SEC] "
                    "[--rounds N]\n"
                    "                 [--rate HZ] [--size BYTES] [--fifo PRIO] "
                    "[--name PREFIX]\n");
    return 2;
}

struct args {
    unsigned recv_list[16], nrecv, rounds;
    double duration, rate;
    uint64_t size;
    int fifo;
    const char *prefix;
};

/* The command line into `a`, checked: 0, or 2 (the exit status) after the
 * usage line. */
static int parse_args(int argc, char **argv, struct args *a)
{
    for (int i = 1; i < argc; i++) {
        const char *o = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(o, "--receivers") && v) {
            if (parse_list(v, a->recv_list, &a->nrecv))
                return usage();
        } else if (!strcmp(o, "--duration") && v) {
            a->duration = atof(v);
        } else if (!strcmp(o, "--rounds") && v) {
            a->rounds = (unsigned)atoi(v);
        } else if (!strcmp(o, "--rate") && v) {
            a->rate = atof(v);
        } else if (!strcmp(o, "--size") && v) {
            a->size = (uint64_t)atoll(v);
        } else if (!strcmp(o, "--fifo") && v) {
            a->fifo = atoi(v);
        } else if (!strcmp(o, "--name") && v) {
            a->prefix = v;
        } else {
            return usage();
        }
        i++;
    }
    if (a->duration <= 0 || a->rounds < 1 || a->rate <= 0 || a->rate > 1e6 ||
        a->size < sizeof(struct bench_hdr) || a->size > (1u << 20))
        return usage();
    return 0;
}

/* What the table stands on: the host and settings, the single-process call
 * cost of both APIs, and the table header. 0, or 1 if the call-cost
 * measurement failed (said). */
static int print_preamble(const struct args *a)
{
    struct utsname un;
    uname(&un);
    printf("ach-bench: %s %s, %ld CPUs; 1 sender at %.0f Hz, %llu-byte "
           "messages, %.1f s per transport and receiver count in %u "
           "alternating rounds%s\n\n",
           un.sysname, un.release, sysconf(_SC_NPROCESSORS_ONLN), a->rate,
           (unsigned long long)a->size, a->duration, a->rounds,
           a->fifo ? " (SCHED_FIFO)" : "");
    double ca, cn;
    if (call_cost(a->prefix, a->size, &ca, &cn) != 0) {
        fprintf(stderr, "ach-bench: the call-cost measurement failed\n");
        return 1;
    }
    printf("Call cost, put + get of one %llu-byte frame in one process "
           "(best of 15 x 20000): Ach API %.0f ns, nerve API %.0f ns "
           "(%.2f×).\n\n",
           (unsigned long long)a->size, ca, cn, cn > 0 ? ca / cn : 0);
    printf("| receivers | transport | samples | missed | p50 µs | p99 µs | "
           "p99.9 µs | max µs |\n"
           "|---:|---|---:|---:|---:|---:|---:|---:|\n");
    fflush(stdout);
    return 0;
}

/* One receiver count's measurement: the pages shared with the children
 * (`sh`, `rr`, and `samples`: `cap` per receiver per round) and, per
 * transport, every sample of every round in all[t][0 .. nall[t]). */
struct count_run {
    unsigned nr;
    uint64_t cap;
    struct bench_cfg cfg;
    struct bench_shared *sh;
    struct bench_recv *rr;
    uint32_t *samples;
    uint32_t *all[NTRANSPORTS];
    uint64_t nall[NTRANSPORTS];
    struct result res[NTRANSPORTS];
};

/* Sizes and allocates `c` for `nr` receivers. 0, or -1 (said if the shared
 * mapping failed). */
static int count_alloc(struct count_run *c, const struct args *a, unsigned nr)
{
    memset(c, 0, sizeof *c);
    c->nr = nr;
    c->cap = (uint64_t)(a->rate * a->duration / a->rounds * 1.1) + 100;
    for (int t = 0; t < NTRANSPORTS; t++) {
        c->all[t] =
            malloc((size_t)(c->cap * a->rounds * nr) * sizeof(uint32_t));
        if (c->all[t] == NULL)
            return -1;
    }
    c->cfg.wait = 1;
    c->cfg.senders = 1;
    c->cfg.receivers = nr;
    c->cfg.size = a->size;
    c->cfg.rate = a->rate;
    c->cfg.duration = a->duration;
    c->cfg.rounds = a->rounds;
    c->cfg.fifo = a->fifo;
    c->cfg.prefix = a->prefix;
    c->sh = shared(sizeof *c->sh);
    c->rr = shared(sizeof *c->rr * nr);
    c->samples = shared((size_t)(c->cap * nr) * sizeof(uint32_t));
    if (!c->sh || !c->rr || !c->samples) {
        perror("mmap");
        return -1;
    }
    return 0;
}

/* One round of transport `t`, its samples appended to all[t]. 0, or -1
 * with the failure said. */
static int count_round(struct count_run *c, int t, double seconds)
{
    const struct bench_ops *ops = transport(t);
    struct bench_run r;
    memset(&r, 0, sizeof r);
    c->cfg.transport = t == 1 ? BT_NERVE : t == 2 ? BT_CONDVAR : 0;
    r.cfg = &c->cfg;
    r.sh = c->sh;
    r.res = c->rr;
    r.samples = c->samples;
    r.cap = c->cap;
    r.slots = 1024;
    r.data_size = 1u << 20;
    snprintf(r.name, sizeof r.name, "%s-%ld-%s", c->cfg.prefix, (long)getpid(),
             ops->name);
    memset(c->rr, 0, sizeof *c->rr * c->nr);
    char why[512] = "";
    if (round_run(&r, ops, seconds, why, sizeof why) != 0) {
        fprintf(stderr, "ach-bench: %s\n", why);
        return -1;
    }
    struct result *res = &c->res[t];
    res->rt_denied |= (int)atomic_load(&c->sh->rt_denied);
    for (unsigned i = 0; i < c->nr; i++) {
        res->n += c->rr[i].received;
        res->missed += c->rr[i].missed;
        res->disorder += c->rr[i].disorder;
        memcpy(c->all[t] + c->nall[t], c->samples + (size_t)i * c->cap,
               c->rr[i].nsamples * sizeof(uint32_t));
        c->nall[t] += c->rr[i].nsamples;
    }
    return 0;
}

/* The table's rows for one receiver count: per transport the exact
 * percentiles of all its samples (sorted here), then the Ach API / nerve
 * ratio row. */
static void count_report(struct count_run *c)
{
    struct result *res = c->res;
    for (int t = 0; t < NTRANSPORTS; t++) {
        sort_u32(c->all[t], c->nall[t]);
        uint64_t n = c->nall[t];
        res[t].p50 = n ? pct_sorted(c->all[t], n, 50) / 1e3 : 0;
        res[t].p99 = n ? pct_sorted(c->all[t], n, 99) / 1e3 : 0;
        res[t].p999 = n ? pct_sorted(c->all[t], n, 99.9) / 1e3 : 0;
        res[t].max = n ? c->all[t][n - 1] / 1e3 : 0;
        printf("| %u | %s | %llu | %llu | %.1f | %.1f | %.1f | %.1f |\n", c->nr,
               transport(t)->name, (unsigned long long)res[t].n,
               (unsigned long long)res[t].missed, res[t].p50, res[t].p99,
               res[t].p999, res[t].max);
        if (res[t].disorder)
            printf("|   | (%s: %llu out of order: a bug) | | | | | | |\n",
                   transport(t)->name, (unsigned long long)res[t].disorder);
    }
    printf("| %u | **ach-api / nerve** | | | **%.2f×** | **%.2f×** | "
           "%.2f× | |\n",
           c->nr, res[1].p50 > 0 ? res[0].p50 / res[1].p50 : 0,
           res[1].p99 > 0 ? res[0].p99 / res[1].p99 : 0,
           res[1].p999 > 0 ? res[0].p999 / res[1].p999 : 0);
    if (res[0].rt_denied || res[1].rt_denied || res[2].rt_denied)
        printf("|   | (SCHED_FIFO was not permitted) | | | | | | |\n");
    fflush(stdout);
}

static void count_free(struct count_run *c)
{
    for (int t = 0; t < NTRANSPORTS; t++)
        free(c->all[t]);
    munmap(c->sh, sizeof *c->sh);
    munmap(c->rr, sizeof *c->rr * c->nr);
    munmap(c->samples, (size_t)(c->cap * c->nr) * sizeof(uint32_t));
}

int main(int argc, char **argv)
{
    struct args a = {{1, 2, 4, 8}, 4, 5, 5, 1000, 64, 0, "ach-bench"};
    int rc = parse_args(argc, argv, &a);
    if (rc != 0)
        return rc;
    if (print_preamble(&a) != 0)
        return 1;
    /* The transports alternate within each round, so that they share the
     * machine's conditions. */
    for (unsigned ri = 0; ri < a.nrecv; ri++) {
        struct count_run c;
        if (count_alloc(&c, &a, a.recv_list[ri]) != 0)
            return 1;
        for (unsigned k = 0; k < a.rounds; k++) {
            for (int t = 0; t < NTRANSPORTS; t++) {
                if (count_round(&c, t, a.duration / a.rounds) != 0)
                    return 1;
            }
        }
        count_report(&c);
        count_free(&c);
    }
    return 0;
}
