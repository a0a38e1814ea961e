/* nerve-cyclic (`nerve cyclic`): timing error of nerve's periodic tasks, in
 * the spirit of cyclictest and of Tobar et al.'s experiments.
 *
 * One run measures one scenario (one client: a single task of period P;
 * harmonic clients: six tasks of periods P, 2P ... 6P, started in phase)
 * under SCHED_OTHER and then under SCHED_FIFO, the same duration each, with
 * optional background load (stress-ng) running through both phases. It
 * prints a table, and optionally JSON lines (one per task and phase, plus a
 * host line) and a histogram data file (1 us bins of |error|).
 *
 * Errors follow Tobar et al.: absolute error = wake-up - release (eq. 2),
 * relative error = (wake[i] - wake[i-1]) - period (eq. 3); jitter is the
 * largest magnitude, RMS the root of the mean square. Percentiles come from
 * the histogram (1 us resolution); min, mean, max and RMS are exact (ns).
 *
 * Exit status: 0 done, 1 error, 2 usage. */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <nerve/nerve.h>
#include <nerve/rt.h>

#include "report.h"

extern char **environ;

#define MAX_TASKS 6
#define NS_PER_US 1000LL

struct hist {
    uint64_t *bins; /* bins[i]: |error| in [i, i+1) us */
    uint64_t over;  /* |error| >= nbins us */
    uint64_t n;
};

struct client {
    int index;
    int64_t period_ns;
    nerve_task *task;
    struct hist abs, rel;
    int64_t prev_wake, prev_release;
    struct nerve_task_stats st;
};

struct config {
    int64_t period_ns;
    double duration_s;
    int harmonic;
    int run_other, run_fifo;
    int prio; /* 0: rate-monotonic from the period */
    int cpu;  /* -1: no affinity */
    int load;
    int load_workers;
    const char *json_path, *hist_path;
    uint32_t hist_us;
    int quiet;
};

static volatile sig_atomic_t interrupted;

static void on_signal(int sig)
{
    (void)sig;
    interrupted = 1;
}

static void usage(FILE *f)
{
    fprintf(f,
            "usage: nerve cyclic [options]\n"
            "Measure the timing error of nerve periodic tasks the way Tobar et "
            "al.\n"
            "measure the ALMA Common Software's real-time tasks (absolute and\n"
            "relative error; docs/realtime.md).\n\n"
            "  -p, --period US        base period in microseconds (1000)\n"
            "  -d, --duration S       seconds per policy phase (10)\n"
            "  -s, --scenario NAME    one | harmonic (6 tasks: P..6P) (one)\n"
            "  -P, --policy NAME      other | fifo | both (both: side by "
            "side)\n"
            "      --prio N           SCHED_FIFO priority of every task "
            "(default:\n"
            "                         rate-monotonic from the period, eq. 1 "
            "of\n"
            "                         Tobar et al., \"Adding support to the "
            "ALMA\n"
            "                         Common Software for Real-Time "
            "operations\")\n"
            "  -a, --cpu N            pin every task to CPU N\n"
            "  -l, --load NAME        none | stress (stress-ng cpu+io+vm "
            "workers)\n"
            "      --load-workers N   stress-ng workers per kind (CPUs)\n"
            "  -j, --json PATH        JSON lines (- for stdout)\n"
            "  -H, --hist PATH        histogram data (1 us bins of |error|)\n"
            "      --hist-max US      histogram range (10000)\n"
            "  -q, --quiet            no table\n"
            "  -h, --help\n");
}

static int hist_init(struct hist *h, uint32_t nbins)
{
    h->bins = calloc(nbins, sizeof *h->bins);
    h->over = h->n = 0;
    return h->bins ? 0 : -1;
}

static uint32_t g_hist_us;

static void hist_add(struct hist *h, int64_t err_ns)
{
    int64_t us = (err_ns < 0 ? -err_ns : err_ns) / NS_PER_US;
    if (us >= (int64_t)g_hist_us)
        h->over++;
    else
        h->bins[us]++;
    h->n++;
}

/* The smallest bin edge below which a fraction q of the samples lie (the
 * upper edge of the bin holding the q-quantile), in us; -1 if the quantile
 * is in the overflow. */
static double hist_quantile(const struct hist *h, double q)
{
    if (h->n == 0)
        return 0;
    uint64_t want = (uint64_t)(q * (double)h->n);
    if (want >= h->n)
        want = h->n - 1;
    uint64_t acc = 0;
    for (uint32_t i = 0; i < g_hist_us; i++) {
        acc += h->bins[i];
        if (acc > want)
            return i + 1;
    }
    return -1;
}

/* The body: record this cycle's errors. No allocation, no system call. */
static int body(void *arg, const struct nerve_task_tick *tk)
{
    struct client *c = arg;
    hist_add(&c->abs, tk->wake_ns - tk->release_ns);
    if (tk->cycle > 0)
        hist_add(&c->rel, (tk->wake_ns - c->prev_wake) -
                              (tk->release_ns - c->prev_release));
    c->prev_wake = tk->wake_ns;
    c->prev_release = tk->release_ns;
    return 0;
}

static void sleep_until(int64_t t)
{
    struct timespec ts = {(time_t)(t / 1000000000LL), (long)(t % 1000000000LL)};
    while (!interrupted && clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts,
                                           NULL) == EINTR) {
    }
}

static const char *policy_name(int p)
{
    return p == NERVE_RT_FIFO ? "SCHED_FIFO"
           : p == NERVE_RT_RR ? "SCHED_RR"
                              : "SCHED_OTHER";
}

/* Run every client under `policy` for the configured duration. */
static int run_phase(const struct config *cfg, struct client *cl, int n,
                     int policy)
{
    int64_t start = nerve_clock_now_ns() + 20 * 1000000LL; /* all in phase */
    for (int i = 0; i < n; i++) {
        struct client *c = &cl[i];
        memset(c->abs.bins, 0, g_hist_us * sizeof *c->abs.bins);
        memset(c->rel.bins, 0, g_hist_us * sizeof *c->rel.bins);
        c->abs.over = c->abs.n = c->rel.over = c->rel.n = 0;
        struct nerve_task_opts o = NERVE_TASK_OPTS_INIT;
        o.period_ns = c->period_ns;
        o.start_ns = start;
        o.policy = policy;
        o.priority = policy == NERVE_RT_OTHER ? 0
                     : cfg->prio              ? cfg->prio
                                              : NERVE_TASK_PRIO_AUTO;
        o.cpus = cfg->cpu >= 0 ? 1ull << cfg->cpu : 0;
        o.stack_prefault = 128 * 1024;
        int rc = nerve_task_open(&o, body, c, &c->task);
        if (rc == 0) {
            rc = nerve_task_start(c->task);
            if (rc != 0) {
                nerve_task_close(c->task);
                c->task = NULL;
            }
        }
        if (rc != 0) {
            fprintf(stderr, "nerve cyclic: task %d (%s): %s\n", i,
                    policy_name(policy), nerve_strerror(rc));
            for (int j = 0; j < i; j++) {
                nerve_task_close(cl[j].task);
                cl[j].task = NULL;
            }
            return rc;
        }
    }
    sleep_until(start + (int64_t)(cfg->duration_s * 1e9));
    for (int i = 0; i < n; i++)
        nerve_task_stop(cl[i].task);
    int err = 0;
    for (int i = 0; i < n; i++) {
        int rc = nerve_task_join(cl[i].task);
        if (rc != 0)
            err = rc;
        if (nerve_task_stat(cl[i].task, &cl[i].st) != 0)
            memset(&cl[i].st, 0, sizeof cl[i].st);
        nerve_task_close(cl[i].task);
        cl[i].task = NULL;
    }
    return err;
}

/* A quantile for the table; one beyond the histogram's range is shown as
 * the (exact) maximum, since it can be no larger. */
static double tq(const struct hist *h, double q, int64_t max_ns)
{
    double v = hist_quantile(h, q);
    return v < 0 ? max_ns / 1e3 : v;
}

static void print_table_header(void)
{
    printf("%-6s %4s %9s %-11s %4s %8s %5s | %-49s | %-31s\n", "phase", "task",
           "period_us", "policy", "prio", "cycles", "ovr",
           "absolute error (us): min mean max rms p99 p99.9",
           "relative error (us): max rms p99");
}

static void print_row(const char *phase, const struct client *c)
{
    const struct nerve_task_stats *s = &c->st;
    printf("%-6s %4d %9.0f %-11s %4d %8llu %5llu | %7.1f %7.1f %7.1f %6.1f "
           "%6.0f %6.0f | %8.1f %7.1f %6.0f\n",
           phase, c->index, c->period_ns / 1e3, policy_name(s->policy),
           s->priority, (unsigned long long)s->cycles,
           (unsigned long long)s->overruns, s->abs_err.min_ns / 1e3,
           s->abs_err.mean_ns / 1e3, s->abs_err.max_ns / 1e3,
           s->abs_err.rms_ns / 1e3, tq(&c->abs, 0.99, s->abs_err.max_abs_ns),
           tq(&c->abs, 0.999, s->abs_err.max_abs_ns),
           s->rel_err.max_abs_ns / 1e3, s->rel_err.rms_ns / 1e3,
           tq(&c->rel, 0.99, s->rel_err.max_abs_ns));
}

/* A quantile as JSON: a number, or null when it lies in the overflow. */
static const char *jq(char *buf, size_t len, double q)
{
    if (q < 0)
        snprintf(buf, len, "null");
    else
        snprintf(buf, len, "%.0f", q);
    return buf;
}

static void json_series(FILE *f, const char *key,
                        const struct nerve_rt_series *s, const struct hist *h)
{
    char q1[24], q2[24], q3[24];
    fprintf(f,
            "\"%s\":{\"n\":%llu,\"min_us\":%.3f,\"mean_us\":%.3f,"
            "\"max_us\":%.3f,\"jitter_us\":%.3f,\"rms_us\":%.3f,"
            "\"p50_us\":%s,\"p99_us\":%s,\"p999_us\":%s}",
            key, (unsigned long long)s->n, s->min_ns / 1e3, s->mean_ns / 1e3,
            s->max_ns / 1e3, s->max_abs_ns / 1e3, s->rms_ns / 1e3,
            jq(q1, sizeof q1, hist_quantile(h, 0.5)),
            jq(q2, sizeof q2, hist_quantile(h, 0.99)),
            jq(q3, sizeof q3, hist_quantile(h, 0.999)));
}

static void json_row(FILE *f, const struct config *cfg, const char *phase,
                     const struct client *c, int sched_refused)
{
    const struct nerve_task_stats *s = &c->st;
    fprintf(f,
            "{\"tool\":\"nerve-cyclic\",\"scenario\":\"%s\",\"load\":\"%s\","
            "\"phase\":\"%s\",\"task\":%d,\"period_us\":%.3f,"
            "\"policy\":\"%s\",\"prio\":%d,\"fifo_refused\":%s,"
            "\"duration_s\":%.3f,\"cycles\":%llu,\"overruns\":%llu,"
            "\"skipped\":%llu,",
            cfg->harmonic ? "harmonic" : "one", cfg->load ? "stress" : "none",
            phase, c->index, c->period_ns / 1e3, policy_name(s->policy),
            s->priority, sched_refused ? "true" : "false", cfg->duration_s,
            (unsigned long long)s->cycles, (unsigned long long)s->overruns,
            (unsigned long long)s->skipped);
    json_series(f, "abs", &s->abs_err, &c->abs);
    fputc(',', f);
    json_series(f, "rel", &s->rel_err, &c->rel);
    fprintf(f, ",\"hist_overflow\":%llu}\n", (unsigned long long)c->abs.over);
}

/* The host line: {"host": the record of report.h}; rt_granted says
 * whether SCHED_FIFO is permitted (the tasks ask for it). */
static void json_host(FILE *f, const struct nerve_rt_caps *caps)
{
    struct host h;
    host_probe(&h, 0);
    h.rt = caps->fifo_ok ? 1 : 0;
    fputs("{\"host\":", f);
    host_json(f, &h);
    fputs("}\n", f);
}

/* stress-ng with cpu, io and vm workers for longer than the run (killed at
 * the end). Returns its pid, or -1. */
static pid_t start_load(const struct config *cfg, double seconds)
{
    char workers[16], timeout[32];
    snprintf(workers, sizeof workers, "%d", cfg->load_workers);
    snprintf(timeout, sizeof timeout, "%.0fs", seconds + 30);
    char *argv[] = {"stress-ng", "--cpu",   workers,      "--io", "1",
                    "--vm",      "1",       "--vm-bytes", "64M",  "--timeout",
                    timeout,     "--quiet", NULL};
    pid_t pid;
    int e = posix_spawnp(&pid, "stress-ng", NULL, NULL, argv, environ);
    if (e != 0) {
        fprintf(stderr,
                "nerve cyclic: cannot start stress-ng (%s); install it with "
                "`make deps` (Debian package stress-ng)\n",
                strerror(e));
        return -1;
    }
    /* Let the workers spin up before the first phase. */
    struct timespec ts = {1, 0};
    nanosleep(&ts, NULL);
    int st;
    if (waitpid(pid, &st, WNOHANG) == pid) {
        fprintf(stderr, "nerve cyclic: stress-ng exited at once\n");
        return -1;
    }
    return pid;
}

static void stop_load(pid_t pid)
{
    if (pid <= 0)
        return;
    kill(pid, SIGTERM);
    int st;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
    }
}

/* The options that shape the measurement (-p -d -s -P --prio -a), checked
 * against their ranges: 0 set, -1 out of range, 1 not one of these. */
static int parse_run_opt(int ch, const char *arg, struct config *cfg)
{
    char *end;
    switch (ch) {
    case 'p': {
        double us = strtod(arg, &end);
        if (*end || us < 10 || us > 10e6)
            return -1;
        cfg->period_ns = (int64_t)(us * 1e3);
        return 0;
    }
    case 'd':
        cfg->duration_s = strtod(arg, &end);
        return *end || cfg->duration_s <= 0 ? -1 : 0;
    case 's':
        if (strcmp(arg, "one") == 0)
            cfg->harmonic = 0;
        else if (strcmp(arg, "harmonic") == 0)
            cfg->harmonic = 1;
        else
            return -1;
        return 0;
    case 'P':
        cfg->run_other = strcmp(arg, "other") == 0 || strcmp(arg, "both") == 0;
        cfg->run_fifo = strcmp(arg, "fifo") == 0 || strcmp(arg, "both") == 0;
        return !cfg->run_other && !cfg->run_fifo ? -1 : 0;
    case 1:
        cfg->prio = (int)strtol(arg, &end, 10);
        return *end || cfg->prio < 1 || cfg->prio > 99 ? -1 : 0;
    case 'a':
        cfg->cpu = (int)strtol(arg, &end, 10);
        return *end || cfg->cpu < 0 || cfg->cpu > 63 ? -1 : 0;
    default: return 1;
    }
}

/* The options for load and output (-l --load-workers -j -H --hist-max -q):
 * 0 set, -1 out of range or not an option at all. */
static int parse_out_opt(int ch, const char *arg, struct config *cfg)
{
    char *end;
    switch (ch) {
    case 'l':
        if (strcmp(arg, "none") == 0)
            cfg->load = 0;
        else if (strcmp(arg, "stress") == 0)
            cfg->load = 1;
        else
            return -1;
        return 0;
    case 2:
        cfg->load_workers = (int)strtol(arg, &end, 10);
        return *end || cfg->load_workers < 1 ? -1 : 0;
    case 'j': cfg->json_path = arg; return 0;
    case 'H': cfg->hist_path = arg; return 0;
    case 3: {
        long v = strtol(arg, &end, 10);
        if (*end || v < 10 || v > 10000000)
            return -1;
        cfg->hist_us = (uint32_t)v;
        return 0;
    }
    case 'q': cfg->quiet = 1; return 0;
    default: return -1;
    }
}

/* Fills `cfg` from the command line: 0, or -1 for a usage error (the
 * caller prints the usage); --help prints it and exits 0. */
static int parse_args(int argc, char **argv, struct config *cfg)
{
    static const struct option longopts[] = {
        {"period", required_argument, 0, 'p'},
        {"duration", required_argument, 0, 'd'},
        {"scenario", required_argument, 0, 's'},
        {"policy", required_argument, 0, 'P'},
        {"prio", required_argument, 0, 1},
        {"cpu", required_argument, 0, 'a'},
        {"load", required_argument, 0, 'l'},
        {"load-workers", required_argument, 0, 2},
        {"json", required_argument, 0, 'j'},
        {"hist", required_argument, 0, 'H'},
        {"hist-max", required_argument, 0, 3},
        {"quiet", no_argument, 0, 'q'},
        {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0}};
    int ch;
    while ((ch = getopt_long(argc, argv, "p:d:s:P:a:l:j:H:qh", longopts,
                             NULL)) != -1) {
        if (ch == 'h') {
            usage(stdout);
            exit(0);
        }
        int rc = parse_run_opt(ch, optarg, cfg);
        if (rc > 0)
            rc = parse_out_opt(ch, optarg, cfg);
        if (rc != 0)
            return -1;
    }
    return optind == argc ? 0 : -1;
}

static void signals_init(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
}

/* Probes the real-time capabilities into `caps` and locks memory (best
 * effort), saying on stderr what is refused. Returns whether the fifo
 * phase was asked for but is not permitted (it is then skipped). */
static int rt_prepare(const struct config *cfg, struct nerve_rt_caps *caps)
{
    if (nerve_rt_probe(caps) != 0)
        memset(caps, 0, sizeof *caps);
    int fifo_refused = cfg->run_fifo && !caps->fifo_ok;
    if (fifo_refused)
        fprintf(stderr,
                "nerve cyclic: SCHED_FIFO is NOT permitted for this process "
                "(needs root, CAP_SYS_NICE or RLIMIT_RTPRIO); the fifo phase "
                "is skipped\n");
    struct nerve_rt_applied ap;
    if (nerve_rt_lock_memory(256 * 1024, 0, NERVE_RT_BEST_EFFORT, &ap) == 0 &&
        !ap.mem_locked)
        fprintf(stderr, "nerve cyclic: %s\n", ap.msg);
    return fifo_refused;
}

/* The `n` clients, client i of period (i+1)P with empty histograms of
 * cfg->hist_us bins. 0, or -1 out of memory (said). */
static int clients_init(const struct config *cfg, struct client *cl, int n)
{
    memset(cl, 0, MAX_TASKS * sizeof *cl);
    for (int i = 0; i < n; i++) {
        cl[i].index = i;
        cl[i].period_ns = cfg->period_ns * (i + 1);
        if (hist_init(&cl[i].abs, cfg->hist_us) ||
            hist_init(&cl[i].rel, cfg->hist_us)) {
            fprintf(stderr, "nerve cyclic: out of memory\n");
            return -1;
        }
    }
    return 0;
}

/* Opens the --json file (stdout for "-"; the host line written first) and
 * the --hist file (its header written), each only if asked for. 0, or -1
 * with the path and reason said. */
static int outputs_open(const struct config *cfg,
                        const struct nerve_rt_caps *caps, FILE **json,
                        FILE **hist)
{
    if (cfg->json_path) {
        *json = strcmp(cfg->json_path, "-") == 0 ? stdout
                                                 : fopen(cfg->json_path, "w");
        if (!*json) {
            fprintf(stderr, "nerve cyclic: %s: %s\n", cfg->json_path,
                    strerror(errno));
            return -1;
        }
        json_host(*json, caps);
    }
    if (cfg->hist_path) {
        *hist = fopen(cfg->hist_path, "w");
        if (!*hist) {
            fprintf(stderr, "nerve cyclic: %s: %s\n", cfg->hist_path,
                    strerror(errno));
            return -1;
        }
        fprintf(*hist,
                "# nerve-cyclic histogram: 1 us bins of |error|; "
                "non-empty bins only; bin %u = overflow\n"
                "# phase task period_us bin_us abs_count rel_count\n",
                cfg->hist_us);
    }
    return 0;
}

static void print_banner(const struct config *cfg,
                         const struct nerve_rt_caps *caps)
{
    printf("nerve cyclic: scenario %s, base period %.0f us, %.1f s per "
           "phase, load %s, PREEMPT_RT %s\n",
           cfg->harmonic ? "harmonic (P..6P)" : "one client",
           cfg->period_ns / 1e3, cfg->duration_s,
           cfg->load ? "stress-ng" : "none", caps->preempt_rt ? "yes" : "no");
    print_table_header();
}

/* The histogram file's lines of client `c` in `phase`: non-empty bins
 * only, bin cfg->hist_us holding the overflow. */
static void hist_rows(FILE *f, const struct config *cfg, const char *phase,
                      const struct client *c)
{
    for (uint32_t b = 0; b <= cfg->hist_us; b++) {
        uint64_t a = b < cfg->hist_us ? c->abs.bins[b] : c->abs.over;
        uint64_t r = b < cfg->hist_us ? c->rel.bins[b] : c->rel.over;
        if (a || r)
            fprintf(f, "%s %d %.0f %u %llu %llu\n", phase, c->index,
                    c->period_ns / 1e3, b, (unsigned long long)a,
                    (unsigned long long)r);
    }
}

/* Runs the phases (other, then fifo unless refused) until done or
 * interrupted, reporting each client after each phase to the table and
 * the files opened. 1 if a phase failed, else 0. */
static int run_phases(const struct config *cfg, struct client *cl, int n,
                      const int *phases, int np, int fifo_refused, FILE *json,
                      FILE *hist)
{
    int err = 0;
    for (int p = 0; p < np && !interrupted; p++) {
        const char *phase = phases[p] == NERVE_RT_FIFO ? "fifo" : "other";
        int rc = run_phase(cfg, cl, n, phases[p]);
        if (rc != 0) {
            err = 1;
            continue;
        }
        for (int i = 0; i < n; i++) {
            if (!cfg->quiet)
                print_row(phase, &cl[i]);
            if (json)
                json_row(json, cfg, phase, &cl[i], fifo_refused);
            if (hist)
                hist_rows(hist, cfg, phase, &cl[i]);
        }
    }
    return err;
}

int main(int argc, char **argv)
{
    struct config cfg = {1000000, 10, 0,    1,    1,     0, -1,
                         0,       0,  NULL, NULL, 10000, 0};
    cfg.load_workers = (int)sysconf(_SC_NPROCESSORS_ONLN);
    if (parse_args(argc, argv, &cfg) != 0) {
        usage(stderr);
        return 2;
    }
    g_hist_us = cfg.hist_us;
    signals_init();
    struct nerve_rt_caps caps;
    int fifo_refused = rt_prepare(&cfg, &caps);

    int n = cfg.harmonic ? MAX_TASKS : 1;
    struct client cl[MAX_TASKS];
    if (clients_init(&cfg, cl, n) != 0)
        return 1;
    FILE *json = NULL, *hist = NULL;
    if (outputs_open(&cfg, &caps, &json, &hist) != 0)
        return 1;

    int phases[2], np = 0;
    if (cfg.run_other)
        phases[np++] = NERVE_RT_OTHER;
    if (cfg.run_fifo && !fifo_refused)
        phases[np++] = NERVE_RT_FIFO;
    pid_t load = -1;
    if (cfg.load) {
        load = start_load(&cfg, cfg.duration_s * np);
        if (load < 0)
            return 1;
    }
    if (!cfg.quiet)
        print_banner(&cfg, &caps);
    int err = run_phases(&cfg, cl, n, phases, np, fifo_refused, json, hist);
    stop_load(load);
    if (fifo_refused && !cfg.quiet)
        printf("fifo   (skipped: SCHED_FIFO not permitted)\n");
    if (json && json != stdout)
        fclose(json);
    if (hist)
        fclose(hist);
    for (int i = 0; i < n; i++) {
        free(cl[i].abs.bins);
        free(cl[i].rel.bins);
    }
    return err;
}
