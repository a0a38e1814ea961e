/* nerve bench: the latency and throughput benchmark. Its options and help
 * live here; the benchmark itself is a library (bench/: the plan, the
 * run, the report, the host description, and ping-pong), which also
 * builds without the command. */
#include "../cli.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../../bench/bench.h"
#include "../../bench/pingpong.h"

static const char help[] =
    "usage: nerve bench [options]\n"
    "Measure message latency (CLOCK_MONOTONIC, send to receive) between\n"
    "forked sender and receiver processes. Several transports in one run\n"
    "alternate in rounds, so they share the machine's conditions.\n"
    "  --transport LIST  comma-separated: nerve, pipe (a pipe per sender "
    "and\n"
    "                    receiver), unix (datagram socketpairs), mq (POSIX\n"
    "                    message queue per receiver), futex (bare wake-up "
    "of\n"
    "                    one shared word; no payload), spin (one shared "
    "cache\n"
    "                    line polled; no payload), condvar (Ach-style ring,\n"
    "                    readers copy under a process-shared mutex and wait "
    "on\n"
    "                    a condition variable); default nerve\n"
    "  --senders LIST    sender processes; a list runs one measurement per\n"
    "                    count (default 1)\n"
    "  --receivers LIST  receiver processes; a list (1,2,4,8) runs one\n"
    "                    measurement per count (default 1)\n"
    "  --rate HZ         messages per second per sender; 0 = back-to-back\n"
    "                    (default 1000)\n"
    "  --size LIST       message size, at least 24 (default 64; K, M "
    "suffix);\n"
    "                    a list runs one measurement per size\n"
    "  --duration SEC    sending time per measurement (default 1)\n"
    "  --rounds N        split each measurement into N alternating rounds\n"
    "                    (default 5 with several transports, else 1)\n"
    "  --wait            receivers block until a message arrives (default)\n"
    "  --poll            receivers spin on non-blocking reads\n"
    "                    (futex always waits and spin always polls)\n"
    "  --zero-copy       nerve receivers read through a zero-copy view\n"
    "  --newest          nerve and condvar receivers take the newest "
    "message\n"
    "                    (skipping older ones; counted as missed) instead\n"
    "                    of the next one\n"
    "  --fifo PRIO       SCHED_FIFO priority for senders and receivers, and\n"
    "                    locked memory; reported when not permitted\n"
    "  --cpus LIST       pin receiver i to LIST[i mod n] and sender j to\n"
    "                    LIST[(receivers + j) mod n], e.g. 0,1 or 2-5\n"
    "  --workload W      ach: 1 kHz, 64 B, 1 sender with 1/2/4/8 receivers,\n"
    "                    and 2 senders with 1 receiver; furom: 40 B at 2 "
    "kHz,\n"
    "                    8 KB at 100 Hz, 1 MB at 10 Hz (1 to 1); both over\n"
    "                    nerve, futex, condvar, pipe, unix and mq unless\n"
    "                    --transport is given; throughput: 64 B "
    "back-to-back\n"
    "                    to one polling receiver from 1, 2 and 4 senders,\n"
    "                    over nerve and pipe unless --transport is given,\n"
    "                    then 1, 2 and 4 nerve senders with no receiver\n"
    "                    (the writers' own ceiling)\n"
    "  --json FILE       write one JSON line per measurement ('-': stdout,\n"
    "                    then the table goes to stderr); fields in\n"
    "                    docs/cli.md\n"
    "  --histogram FILE  write each measurement's latency histogram (TSV)\n"
    "  --name PREFIX     prefix of the channel and queue names\n"
    "                    (default nerve-bench)\n"
    "  --quiet           no table\n"
    "Ping-pong (--pingpong): two processes pinned to --cpus A,B send a\n"
    "message back and forth; the hop is total / (2 x round trips), the\n"
    "percentiles are of half round trips, and the floors run in the same\n"
    "rounds: spin (one shared cache line), futex (bare wake-up), memcpy\n"
    "(one warm copy, one CPU), memcpy-xfer (the copies of poll-copy through\n"
    "a plain shared mapping between the two CPUs, with a one-line flag).\n"
    "  --pingpong        run the ping-pong plan instead; --size takes a "
    "list\n"
    "                    (default 64,4K,64K,1M, at least 8 bytes), "
    "--duration\n"
    "                    is per row over all rounds (default 1), --rounds\n"
    "                    defaults to 3; --poll, --wait, --zero-copy narrow\n"
    "                    the rows\n"
    "  --rows LIST       spin, futex, memcpy, memcpy-xfer, poll-zc,\n"
    "                    poll-copy, wait-zc, wait-copy, floors, nerve\n"
    "                    (default all)\n"
    "  --lines LIST      add lines-K floors: K cache lines per hop (1-8)\n"
    "  --iterations N    exactly N timed round trips per row and round\n"
    "  --ring N          data ring of the nerve and memcpy-xfer rows: N x\n"
    "                    (size + 256) bytes, at least 1 MiB (2-1024,\n"
    "                    default 16)\n"
    "  --warmup N        untimed round trips first (default 1000 polling,\n"
    "                    100 blocking)\n"
    "Exit 0 when every measurement ran (a transport that cannot carry the\n"
    "size is reported as skipped), 1 when one failed, 2 on usage errors.\n";

static const struct option opts[] = {
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

_Static_assert(PP_MAX_SAMPLES == 2097152, "the --iterations hint below");

/* What the usage error says after "bad --OPTION 'VALUE'". */
static const char *hint(int c)
{
    switch (c) {
    case 't':
        return " (nerve, pipe, unix, mq, futex, spin, condvar; each once)";
    case 'S':
    case 'R': return " (1 to 64, or a list)";
    case 's': return " (24 bytes to 256M, or a list; 8 bytes with --pingpong)";
    case 'f': return " (1 to 99)";
    case 'c': return " (e.g. 0,1 or 2-5)";
    case 'W': return " (ach, furom, throughput)";
    case 'N': return " (a channel name, at most 100 bytes)";
    case 'O':
        return " (spin, futex, memcpy, memcpy-xfer, poll-zc, poll-copy, "
               "wait-zc, wait-copy, floors, nerve)";
    case 'L': return " (1 to 8, or a list)";
    case 'I': return " (1 to 2097152)";
    case 'U': return " (0 to 1000000)";
    case 'G': return " (2 to 1024 messages)";
    default: return "";
    }
}

/* Everything the command line says: the latency plan's options, and
 * ping-pong's. */
struct args {
    struct bench_opts b;
    int pingpong, quiet;
    int modes; /* 1: --wait given, 2: --poll given */
    int have_senders, have_receivers, have_rounds;
    unsigned rows; /* --rows: PP_ROW_* */
    unsigned lines[8], nlines;
    uint64_t iterations;
    int64_t warmup;
    unsigned ring;
    int have_rows, have_iterations, have_warmup, have_ring;
    const char *json, *histogram;
};

/* ---- values ---------------------------------------------------------------- */

static int parse_uint(const char *s, unsigned lo, unsigned hi, unsigned *out)
{
    uint64_t v;
    if (cli_parse_u64(s, &v) != 0 || v < lo || v > hi) {
        return -1;
    }
    *out = (unsigned)v;
    return 0;
}

/* --rate: a non-negative decimal number (no unit). */
static int parse_number(const char *s, double *out)
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

/* Call fn on each item of a comma-separated list (len bytes at s, not
 * NUL-terminated); an empty list, an empty item or a failing fn is -1. */
static int each_item(const char *s,
                     int (*fn)(void *ctx, const char *s, size_t len), void *ctx)
{
    int n = 0;
    while (*s) {
        const char *comma = strchr(s, ',');
        size_t len = comma ? (size_t)(comma - s) : strlen(s);
        if (len == 0 || fn(ctx, s, len) != 0) {
            return -1;
        }
        n++;
        s += len + (comma ? 1 : 0);
    }
    return n ? 0 : -1;
}

/* A list item as a NUL-terminated string in tmp; 0 or -1 (too long). */
static int item(char *tmp, size_t cap, const char *s, size_t len)
{
    if (len >= cap) {
        return -1;
    }
    memcpy(tmp, s, len);
    tmp[len] = '\0';
    return 0;
}

struct uint_list {
    unsigned lo, hi, max;
    unsigned *out, *n;
};

static int add_uint(void *ctx, const char *s, size_t len)
{
    struct uint_list *l = ctx;
    char tmp[16];
    if (*l->n == l->max || item(tmp, sizeof tmp, s, len) != 0) {
        return -1;
    }
    return parse_uint(tmp, l->lo, l->hi, &l->out[(*l->n)++]);
}

/* A comma-separated list of at most `max` counts in [lo, hi]. */
static int parse_uint_list(const char *s, unsigned lo, unsigned hi,
                           unsigned *out, unsigned max, unsigned *n)
{
    struct uint_list l = {lo, hi, max, out, n};
    *n = 0;
    return each_item(s, add_uint, &l);
}

/* --size: sizes of 1 byte to 256M; the minimum of each plan is checked
 * once the plan is known. */
static int add_size(void *ctx, const char *s, size_t len)
{
    struct bench_opts *o = ctx;
    char tmp[32];
    uint64_t v;
    if (o->nsizes == BENCH_MAX_LIST || item(tmp, sizeof tmp, s, len) != 0 ||
        cli_parse_size(tmp, &v) != 0 || v < 1 || v > (256u << 20)) {
        return -1;
    }
    o->sizes[o->nsizes++] = v;
    return 0;
}

static int add_transport(void *ctx, const char *s, size_t len)
{
    struct bench_opts *o = ctx;
    int t = bench_transport_by_name(s, len);
    if (t < 0 || o->ntransports == BT_COUNT) {
        return -1;
    }
    for (unsigned i = 0; i < o->ntransports; i++) {
        if (o->transports[i] == t) {
            return -1;
        }
    }
    o->transports[o->ntransports++] = t;
    return 0;
}

static int add_rows(void *ctx, const char *s, size_t len)
{
    unsigned bits = pingpong_row_bits(s, len);
    *(unsigned *)ctx |= bits;
    return bits ? 0 : -1;
}

/* --cpus: a list of CPUs and ranges, e.g. 0,1 or 2-5. */
static int parse_cpus(const char *s, struct bench_opts *o)
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

/* ---- options ---------------------------------------------------------------- */

/* The options that shape the latency plan's measurements. Returns 0, -1
 * for a bad value, or 1 if c is not one of them. */
static int set_plan_option(struct args *a, int c, const char *arg)
{
    struct bench_opts *o = &a->b;
    switch (c) {
    case 't':
        o->have_transport = 1;
        o->ntransports = 0;
        return each_item(arg, add_transport, o);
    case 'S':
        a->have_senders = 1;
        return parse_uint_list(arg, 1, BENCH_MAX_PROCS, o->senders,
                               BENCH_MAX_LIST, &o->nsenders);
    case 'R':
        a->have_receivers = 1;
        return parse_uint_list(arg, 1, BENCH_MAX_PROCS, o->receivers,
                               BENCH_MAX_LIST, &o->nreceivers);
    case 'r':
        /* 0 is back-to-back; below 1e-3 Hz the period would not fit
         * the nanosecond clock arithmetic. */
        o->have_rate = 1;
        return parse_number(arg, &o->rate) != 0 || o->rate > 1e8 ||
                       (o->rate > 0 && o->rate < 1e-3)
                   ? -1
                   : 0;
    case 's':
        o->have_size = 1;
        o->nsizes = 0;
        return each_item(arg, add_size, o);
    case 'd':
        o->have_duration = 1;
        return cli_parse_seconds(arg, &o->duration) != 0 || o->duration <= 0 ||
                       o->duration > 86400
                   ? -1
                   : 0;
    case 'n': a->have_rounds = 1; return parse_uint(arg, 1, 1000, &o->rounds);
    case 'W': o->workload = arg; return bench_workload_known(arg) ? 0 : -1;
    default: return 1;
    }
}

/* How receivers read, where processes run, where results go. */
static int set_run_option(struct args *a, int c, const char *arg)
{
    struct bench_opts *o = &a->b;
    unsigned prio;
    switch (c) {
    case 'w':
        o->wait = 1;
        a->modes |= 1;
        return 0;
    case 'p':
        o->wait = 0;
        a->modes |= 2;
        return 0;
    case 'z': o->zero_copy = 1; return 0;
    case 'E': o->newest = 1; return 0;
    case 'f':
        if (parse_uint(arg, 1, 99, &prio) != 0) {
            return -1;
        }
        o->fifo = (int)prio;
        return 0;
    case 'c': o->cpus_text = arg; return parse_cpus(arg, o);
    case 'j': a->json = arg; return 0;
    case 'H': a->histogram = arg; return 0;
    case 'N':
        o->prefix = arg;
        return strlen(arg) > 100 || nerve_chan_name_check(arg) != 0 ? -1 : 0;
    case 'q': a->quiet = 1; return 0;
    default: return 1;
    }
}

static int set_pingpong_option(struct args *a, int c, const char *arg)
{
    unsigned v;
    switch (c) {
    case 'P': a->pingpong = 1; return 0;
    case 'O':
        a->have_rows = 1;
        a->rows = 0;
        return each_item(arg, add_rows, &a->rows);
    case 'L': return parse_uint_list(arg, 1, 8, a->lines, 8, &a->nlines);
    case 'I':
        a->have_iterations = 1;
        if (parse_uint(arg, 1, PP_MAX_SAMPLES, &v) != 0) {
            return -1;
        }
        a->iterations = v;
        return 0;
    case 'U':
        a->have_warmup = 1;
        if (parse_uint(arg, 0, 1000000, &v) != 0) {
            return -1;
        }
        a->warmup = v;
        return 0;
    case 'G': a->have_ring = 1; return parse_uint(arg, 2, 1024, &a->ring);
    default: return 1;
    }
}

static void defaults(struct args *a)
{
    memset(a, 0, sizeof *a);
    struct bench_opts *o = &a->b;
    o->transports[0] = BT_NERVE;
    o->ntransports = 1;
    o->senders[0] = 1;
    o->nsenders = 1;
    o->receivers[0] = 1;
    o->nreceivers = 1;
    o->rate = 1000;
    o->duration = 1;
    o->sizes[0] = 64;
    o->nsizes = 1;
    o->wait = 1;
    o->prefix = "nerve-bench";
    a->warmup = -1;
    a->rows = PP_ROW_ALL;
}

/* Parse argv into a. Returns -1 to go on, or the exit code (help
 * printed, or a usage error). */
static int parse(struct args *a, int argc, char **argv)
{
    int c, idx = 0;
    defaults(a);
    cli_reset_getopt();
    while ((c = getopt_long(argc, argv, "h", opts, &idx)) != -1) {
        if (c == 'h') {
            return cli_print_help("bench");
        }
        if (c == '?' || c == ':') {
            return cli_bad_option("bench", argc, argv);
        }
        int rc = set_plan_option(a, c, optarg);
        if (rc > 0) {
            rc = set_run_option(a, c, optarg);
        }
        if (rc > 0) {
            rc = set_pingpong_option(a, c, optarg);
        }
        if (rc != 0) {
            return cli_usage("bench", "%s --%s '%s'%s",
                             c == 'W' ? "unknown" : "bad", opts[idx].name,
                             optarg, hint(c));
        }
    }
    if (optind != argc) {
        return cli_usage("bench", "unexpected argument '%s'", argv[optind]);
    }
    if (a->modes == 3) {
        return cli_usage("bench", "%s", "give --wait or --poll, not both");
    }
    return -1;
}

/* ---- running ---------------------------------------------------------------- */

/* Describe the machine; say so when --fifo was not granted. */
static void probe(struct host *h, int fifo, const char *consequence)
{
    host_probe(h, fifo);
    if (fifo > 0 && h->rt != 1) {
        fprintf(stderr,
                "nerve bench: SCHED_FIFO priority %d is not "
                "permitted here; running with normal scheduling%s\n",
                fifo, consequence);
    }
}

/* --pingpong: the options that apply, as pingpong.c's plan. Returns -1
 * to go on, or CLI_USAGE after a message. */
static int pingpong_opts(const struct args *a, struct pp_opts *p)
{
    const struct bench_opts *o = &a->b;
    const char *bad = o->have_transport   ? "--transport"
                      : a->have_senders   ? "--senders"
                      : a->have_receivers ? "--receivers"
                      : o->have_rate      ? "--rate"
                      : o->workload       ? "--workload"
                      : o->newest         ? "--newest"
                      : a->histogram      ? "--histogram"
                                          : NULL;
    if (bad) {
        return cli_usage("bench", "%s does not apply to --pingpong", bad);
    }
    memset(p, 0, sizeof *p);
    p->rows = a->rows;
    if (a->modes == 1) { /* --wait: the blocking rows and their floor */
        p->rows &= PP_ROWS_WAIT;
    } else if (a->modes == 2) {
        p->rows &= PP_ROWS_POLL;
    }
    if (o->zero_copy) {
        p->rows &= ~PP_ROWS_COPY;
    }
    memcpy(p->lines, a->lines, sizeof p->lines);
    p->nlines = a->modes == 1 ? 0 : a->nlines;
    if (p->rows == 0 && p->nlines == 0) {
        return cli_usage("bench", "%s",
                         "--pingpong: the options leave no row to run");
    }
    static const uint64_t sizes[] = {64, 4096, 65536, 1u << 20};
    p->nsizes = o->have_size ? o->nsizes : 4;
    for (unsigned i = 0; i < p->nsizes; i++) {
        p->sizes[i] = o->have_size ? o->sizes[i] : sizes[i];
        if (p->sizes[i] < PP_MIN_SIZE) {
            return cli_usage("bench",
                             "bad --size %" PRIu64 " (at least %u bytes)",
                             p->sizes[i], PP_MIN_SIZE);
        }
    }
    if (o->ncpus == 1) {
        return cli_usage("bench", "%s",
                         "--pingpong --cpus needs two CPUs (ping, pong)");
    }
    p->rounds = a->have_rounds ? o->rounds : 3;
    if (p->rounds > PP_MAX_ROUNDS) {
        return cli_usage("bench",
                         "bad --rounds %u (at most %u with --pingpong)",
                         p->rounds, PP_MAX_ROUNDS);
    }
    if (o->ncpus >= 2) {
        p->cpus[0] = o->cpus[0];
        p->cpus[1] = o->cpus[1];
        p->pinned = 1;
        p->cpus_text = o->cpus_text;
    }
    p->duration = o->duration;
    p->iterations = a->iterations;
    p->warmup = a->warmup;
    p->ring = a->have_ring ? a->ring : 16;
    p->fifo = o->fifo;
    p->prefix = o->prefix;
    return -1;
}

static int run_pingpong(const struct args *a)
{
    struct pp_opts p;
    int rc = pingpong_opts(a, &p);
    if (rc >= 0) {
        return rc;
    }
    struct bench_out out;
    if (bench_out_open(&out, a->json, NULL, a->quiet) != 0) {
        return CLI_FAIL;
    }
    p.table = out.table;
    p.json = out.json;
    struct host h;
    probe(&h, p.fifo, "");
    return bench_out_close(&out, pingpong_run(&p, &h));
}

static int run_plan(const struct args *a)
{
    const struct bench_opts *o = &a->b;
    if (a->have_rows || a->nlines || a->have_iterations || a->have_warmup ||
        a->have_ring) {
        return cli_usage("bench", "%s",
                         "--rows, --lines, --iterations, --warmup and "
                         "--ring need --pingpong");
    }
    static struct bench_plan plan;
    char err[256];
    if (bench_plan_make(o, &plan, err, sizeof err) != 0) {
        return cli_usage("bench", "%s", err);
    }
    struct bench_out out;
    if (bench_out_open(&out, a->json, a->histogram, a->quiet) != 0) {
        return CLI_FAIL;
    }
    struct host h;
    probe(&h, o->fifo, " (reported as \"rt\": false)");
    return bench_out_close(&out, bench_run(o, &plan, &h, &out));
}

static int run(int argc, char **argv)
{
    static struct args a;
    int rc = parse(&a, argc, argv);
    if (rc >= 0) {
        return rc;
    }
    return a.pingpong ? run_pingpong(&a) : run_plan(&a);
}

const struct cli_verb cli_verb_bench = {
    "bench", "latency and throughput benchmark", help, run};
