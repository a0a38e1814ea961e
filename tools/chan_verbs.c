/* The channel verbs of the `nerve` command: create, rm, ls, info, put, get,
 * cat, chmod and check. Each parses its own options (getopt_long), calls
 * the public API and maps the result to an exit code: 0 success, 1 a
 * failed operation (the library's error name and message on stderr), 2 a
 * usage error. */
#include "cli.h"

#include <errno.h>
#include <fnmatch.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

enum fmt { FMT_RAW, FMT_HEX, FMT_TEXT, FMT_JSON };

/* Handle for the SIGINT/SIGTERM handler of get and cat: cancelling its wait
 * is async-signal-safe by contract (nerve_chan_cancel). */
static nerve_chan *volatile g_wait_chan;
static volatile sig_atomic_t g_interrupted;

static void on_signal(int sig)
{
    (void)sig;
    g_interrupted = 1;
    nerve_chan *c = g_wait_chan;
    if (c != NULL) {
        nerve_chan_cancel(c);
    }
}

static void catch_signals(nerve_chan *c)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    g_wait_chan = c;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
}

static void human_bytes(char *out, size_t len, uint64_t v);

/* "64 KiB", "1.5 GiB", "512 bytes". */
static void mem_str(char *out, size_t len, uint64_t v)
{
    char h[32];
    human_bytes(h, sizeof h, v);
    size_t n = strlen(h);
    if (n > 0 && h[n - 1] >= 'A' && h[n - 1] <= 'Z') {
        snprintf(out, len, "%.*s %ciB", (int)(n - 1), h, h[n - 1]);
    } else {
        snprintf(out, len, "%s bytes", h);
    }
}

/* Common getopt handling of unknown options and missing arguments. */
static int bad_option(const char *verb, int argc, char **argv)
{
    const char *opt = optind - 1 < argc ? argv[optind - 1] : "?";
    return cli_usage(verb, "unknown option or missing value: '%s'", opt);
}

static void reset_getopt(void)
{
    optind = 1;
    opterr = 0;
}

static int parse_format(const char *verb, const char *s, enum fmt *f)
{
    if (strcmp(s, "raw") == 0) {
        *f = FMT_RAW;
    } else if (strcmp(s, "hex") == 0) {
        *f = FMT_HEX;
    } else if (strcmp(s, "text") == 0) {
        *f = FMT_TEXT;
    } else if (strcmp(s, "json") == 0) {
        *f = FMT_JSON;
    } else {
        return cli_usage(verb, "unknown format '%s' (raw, hex, text, json)", s);
    }
    return 0;
}

static int seconds_to_ns(const char *verb, const char *s, int64_t *ns)
{
    double sec;
    if (cli_parse_seconds(s, &sec) != 0 || sec > 9e9) {
        return cli_usage(verb, "bad time '%s' (seconds, e.g. 1.5)", s);
    }
    *ns = (int64_t)(sec * 1e9);
    return 0;
}

/* Check a name before using it in messages and paths. */
static int check_name(const char *verb, const char *name)
{
    int rc = nerve_chan_name_check(name);
    if (rc != 0) {
        fprintf(stderr,
                "nerve %s: '%s': %s: %s (names use A-Z a-z 0-9 _ . -, do not "
                "start with '.', at most %d bytes)\n",
                verb, name, nerve_err_name(rc), nerve_strerror(rc),
                NERVE_NAME_MAX);
        return CLI_USAGE;
    }
    return 0;
}

static void print_hex(FILE *f, const unsigned char *p, size_t len)
{
    for (size_t off = 0; off < len; off += 16) {
        fprintf(f, "%08zx ", off);
        for (size_t i = 0; i < 16; i++) {
            if (i == 8) {
                fputc(' ', f);
            }
            if (off + i < len) {
                fprintf(f, " %02x", p[off + i]);
            } else {
                fputs("   ", f);
            }
        }
        fputs("  |", f);
        for (size_t i = 0; i < 16 && off + i < len; i++) {
            unsigned char c = p[off + i];
            fputc(c >= 0x20 && c < 0x7f ? c : '.', f);
        }
        fputs("|\n", f);
    }
}

static void print_message(enum fmt fmt, const void *buf,
                          const struct nerve_get_info *info)
{
    switch (fmt) {
    case FMT_RAW:
        fwrite(buf, 1, info->len, stdout);
        break;
    case FMT_TEXT:
        fwrite(buf, 1, info->len, stdout);
        fputc('\n', stdout);
        break;
    case FMT_HEX: {
        char iso[64];
        iso8601(iso, sizeof iso, nerve_clock_to_realtime_ns(info->time_ns));
        printf("seq %" PRIu64 "  size %" PRIu64 "  missed %" PRIu64
               "  time %s\n",
               info->seq, info->len, info->missed, iso);
        print_hex(stdout, buf, info->len);
        break;
    }
    case FMT_JSON: {
        char iso[64];
        iso8601(iso, sizeof iso, nerve_clock_to_realtime_ns(info->time_ns));
        printf("{\"seq\":%" PRIu64 ",\"time\":\"%s\",\"time_ns\":%" PRId64
               ",\"size\":%" PRIu64 ",\"missed\":%" PRIu64,
               info->seq, iso, info->time_ns, info->len, info->missed);
        json_payload(stdout, "text", "base64", buf, info->len);
        fputs("}\n", stdout);
        break;
    }
    }
    fflush(stdout);
}


/* Parse the options of a verb that has none but --help. Returns -1 to go
 * on with the verb, or the exit code (help printed, or a usage error). */
static int help_only(const char *verb, int argc, char **argv)
{
    static const struct option opts[] = {
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int c;
    reset_getopt();
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        if (c == 'h') {
            return cli_print_help(verb);
        }
        return bad_option(verb, argc, argv);
    }
    return -1;
}

/* ---- create ------------------------------------------------------------ */

int cli_create(int argc, char **argv)
{
    static const struct option opts[] = {
        {"slots", required_argument, NULL, 'n'},
        {"size", required_argument, NULL, 's'},
        {"mode", required_argument, NULL, 'm'},
        {"type", required_argument, NULL, 't'},
        {"encoding", required_argument, NULL, 'e'},
        {"schema", required_argument, NULL, 'S'},
        {"exist-ok", no_argument, NULL, 'x'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    struct nerve_chan_opts o = NERVE_CHAN_OPTS_INIT;
    const char *schema_file = NULL;
    int c;
    reset_getopt();
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (c) {
        case 'n':
            if (cli_parse_u64(optarg, &o.slots) != 0 || o.slots == 0) {
                return cli_usage("create", "bad --slots '%s'", optarg);
            }
            break;
        case 's':
            if (cli_parse_size(optarg, &o.data_size) != 0 ||
                o.data_size == 0) {
                return cli_usage("create", "bad --size '%s'", optarg);
            }
            break;
        case 'm':
            if (cli_parse_mode(optarg, &o.mode) != 0) {
                return cli_usage("create", "bad --mode '%s' (octal, e.g. 0640)",
                                 optarg);
            }
            break;
        case 't': o.type = optarg; break;
        case 'e': o.encoding = optarg; break;
        case 'S': schema_file = optarg; break;
        case 'x': o.flags |= NERVE_C_EXIST_OK; break;
        case 'h': return cli_print_help("create");
        default: return bad_option("create", argc, argv);
        }
    }
    if (optind != argc - 1) {
        return cli_usage("create", optind >= argc ? "missing NAME"
                                                  : "too many arguments");
    }
    const char *name = argv[optind];
    if (check_name("create", name) != 0) {
        return CLI_USAGE;
    }
    char *schema = NULL;
    if (schema_file != NULL) {
        FILE *f = strcmp(schema_file, "-") == 0 ? stdin
                                                : fopen(schema_file, "rb");
        size_t len = 0;
        if (f == NULL || read_all(f, &schema, &len) != 0) {
            fprintf(stderr, "nerve create: --schema %s: %s\n", schema_file,
                    strerror(errno));
            if (f != NULL && f != stdin) {
                fclose(f);
            }
            return CLI_FAIL;
        }
        if (f != stdin) {
            fclose(f);
        }
        o.schema = schema;
        o.schema_len = len;
    }
    /* The file is memory, committed at creation: refuse what /dev/shm
     * cannot hold (header and metadata pages + 32-byte index entries +
     * the data ring, as docs/design/0001-shm-layout.md lays them out). */
    uint64_t need = o.data_size + o.slots * 32 + 64 * 1024;
    struct statvfs vfs;
    if (statvfs("/dev/shm", &vfs) == 0) {
        uint64_t avail = (uint64_t)vfs.f_bavail * vfs.f_frsize;
        if (need > avail) {
            char n[40], a[40];
            mem_str(n, sizeof n, need);
            mem_str(a, sizeof a, avail);
            fprintf(stderr, "nerve create: %s: ENOSPC: this channel needs "
                            "about %s of memory and /dev/shm has %s free "
                            "(a channel's memory is committed when it is "
                            "created)\n", name, n, a);
            free(schema);
            return CLI_FAIL;
        }
    }
    int rc = nerve_chan_create(name, &o);
    free(schema);
    if (rc == NERVE_EINVAL) {
        /* Say which field: type and encoding must be UTF-8 text. */
        const char *bad = o.type && !utf8_valid(o.type, strlen(o.type))
                              ? "--type"
                          : o.encoding &&
                                  !utf8_valid(o.encoding, strlen(o.encoding))
                              ? "--encoding"
                              : NULL;
        if (bad != NULL) {
            fprintf(stderr, "nerve create: %s: EINVAL: %s is not valid "
                            "UTF-8\n", name, bad);
            return CLI_FAIL;
        }
    }
    if (rc != 0) {
        return cli_err("create", name, rc);
    }
    struct nerve_stats st;
    if (nerve_chan_stat_name(name, &st) == 0) {
        char fs[40], ds[40];
        mem_str(fs, sizeof fs, st.file_size);
        mem_str(ds, sizeof ds, st.data_size);
        printf("%s: %" PRIu64 " slots, %s data ring: %s of memory committed "
               "(/dev/shm/nerve.%s)\n", name, st.slots, ds, fs, name);
    }
    return CLI_OK;
}

/* ---- rm ---------------------------------------------------------------- */

int cli_rm(int argc, char **argv)
{
    int done = help_only("rm", argc, argv);
    if (done >= 0) {
        return done;
    }
    if (optind >= argc) {
        return cli_usage("rm", "missing NAME");
    }
    int status = CLI_OK;
    for (int i = optind; i < argc; i++) {
        if (check_name("rm", argv[i]) != 0) {
            status = CLI_USAGE;
            continue;
        }
        int rc = nerve_chan_unlink(argv[i]);
        if (rc != 0) {
            status = cli_err("rm", argv[i], rc);
        }
    }
    return status;
}

/* ---- ls ---------------------------------------------------------------- */

struct name_list {
    char **v;
    size_t n, cap;
};

static int collect_name(const char *name, void *arg)
{
    struct name_list *l = arg;
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 64;
        char **v = realloc(l->v, cap * sizeof *v);
        if (v == NULL) {
            return NERVE_ENOMEM;
        }
        l->v = v;
        l->cap = cap;
    }
    l->v[l->n] = strdup(name);
    if (l->v[l->n] == NULL) {
        return NERVE_ENOMEM;
    }
    l->n++;
    return 0;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static uint64_t present(const struct nerve_stats *st)
{
    return st->head_seq >= st->tail_seq ? st->head_seq - st->tail_seq + 1 : 0;
}

static void human_bytes(char *out, size_t len, uint64_t v)
{
    static const char *unit[] = {"", "K", "M", "G", "T"};
    int u = 0;
    double d = (double)v;
    while (d >= 1024 && u < 4 && (v % 1024 == 0 || d >= 10 * 1024)) {
        d /= 1024;
        v /= 1024;
        u++;
    }
    if (d == (double)(uint64_t)d) {
        snprintf(out, len, "%" PRIu64 "%s", (uint64_t)d, unit[u]);
    } else {
        snprintf(out, len, "%.1f%s", d, unit[u]);
    }
}

static void human_age(char *out, size_t len, int64_t ns)
{
    double s = (double)ns / 1e9;
    if (s < 1e-3) {
        snprintf(out, len, "%.0fus", s * 1e6);
    } else if (s < 1) {
        snprintf(out, len, "%.0fms", s * 1e3);
    } else if (s < 120) {
        snprintf(out, len, "%.1fs", s);
    } else if (s < 7200) {
        snprintf(out, len, "%.0fm", s / 60);
    } else if (s < 172800) {
        snprintf(out, len, "%.0fh", s / 3600);
    } else {
        snprintf(out, len, "%.0fd", s / 86400);
    }
}

static int ls_match(const char *name, char **pat, int npat)
{
    if (npat == 0) {
        return 1;
    }
    for (int i = 0; i < npat; i++) {
        if (fnmatch(pat[i], name, 0) == 0) {
            return 1;
        }
    }
    return 0;
}

/* One listing of the channels matching any of pat[0..npat) (all when
 * npat is 0). */
static int ls_once(char **pat, int npat, int json)
{
    struct name_list l = {NULL, 0, 0};
    int rc = nerve_chan_list(collect_name, &l);
    if (rc != 0) {
        for (size_t i = 0; i < l.n; i++) {
            free(l.v[i]);
        }
        free(l.v);
        return cli_err("ls", "/dev/shm", rc);
    }
    qsort(l.v, l.n, sizeof l.v[0], cmp_str);
    int64_t now = nerve_clock_now_ns();
    if (json) {
        fputc('[', stdout);
    } else {
        printf("%-24s %7s %7s %9s %9s %8s  %s\n", "NAME", "SLOTS", "SIZE",
               "MESSAGES", "BYTES", "NEWEST", "TYPE");
    }
    size_t shown = 0;
    for (size_t i = 0; i < l.n; i++) {
        if (!ls_match(l.v[i], pat, npat)) {
            free(l.v[i]);
            continue;
        }
        nerve_chan *ch = NULL;
        struct nerve_stats st;
        struct nerve_meta meta = {.type = "", .encoding = "", .schema = ""};
        rc = nerve_chan_open(l.v[i], NERVE_O_READ, &ch);
        if (rc == 0) {
            rc = nerve_chan_stat(ch, &st);
        }
        if (rc == 0) {
            rc = nerve_chan_meta(ch, &meta);
        }
        if (json) {
            fputs(shown ? ",\n " : "\n ", stdout);
            fputs("{\"name\":", stdout);
            json_cstr(stdout, l.v[i]);
            if (rc != 0) {
                printf(",\"error\":\"%s\",\"message\":", nerve_err_name(rc));
                json_cstr(stdout, nerve_strerror(rc));
            } else {
                printf(",\"slots\":%" PRIu64 ",\"data_size\":%" PRIu64
                       ",\"messages\":%" PRIu64 ",\"head_seq\":%" PRIu64
                       ",\"bytes_total\":%" PRIu64 ",\"newest_age_ns\":",
                       st.slots, st.data_size, present(&st), st.head_seq,
                       st.bytes_total);
                if (st.head_seq > 0) {
                    printf("%" PRId64, now - st.newest_time_ns);
                } else {
                    fputs("null", stdout);
                }
                printf(",\"mode\":\"%04o\",\"type\":", st.mode);
                json_cstr(stdout, meta.type);
                fputs(",\"encoding\":", stdout);
                json_cstr(stdout, meta.encoding);
            }
            fputc('}', stdout);
        } else if (rc != 0) {
            printf("%-24s %s: %s\n", l.v[i], nerve_err_name(rc),
                   nerve_strerror(rc));
        } else {
            char size[32], bytes[32], age[32];
            human_bytes(size, sizeof size, st.data_size);
            human_bytes(bytes, sizeof bytes, st.bytes_total);
            if (st.head_seq > 0) {
                human_age(age, sizeof age, now - st.newest_time_ns);
            } else {
                snprintf(age, sizeof age, "-");
            }
            printf("%-24s %7" PRIu64 " %7s %9" PRIu64 " %9s %8s  %s\n",
                   l.v[i], st.slots, size, present(&st), bytes, age,
                   meta.type[0] ? meta.type : "-");
        }
        nerve_chan_close(ch);
        free(l.v[i]);
        shown++;
    }
    if (json) {
        fputs(shown ? "\n]\n" : "]\n", stdout);
    }
    free(l.v);
    fflush(stdout);
    return CLI_OK;
}

int cli_ls(int argc, char **argv)
{
    static const struct option opts[] = {
        {"json", no_argument, NULL, 'j'},
        {"watch", no_argument, NULL, 'w'},
        {"interval", required_argument, NULL, 'i'},
        {"count", required_argument, NULL, 'c'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int json = 0, watch = 0, c;
    uint64_t count = 0;
    int64_t interval = 1000000000;
    /* Remote channels are listed by the bridge (docs/bridge.md). */
    for (int i = 1; i < argc && strcmp(argv[i], "--") != 0; i++) {
        if (strcmp(argv[i], "--remote") == 0) {
            return cli_exec_external("bridge", "ls", argc, argv);
        }
    }
    reset_getopt();
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (c) {
        case 'j': json = 1; break;
        case 'w': watch = 1; break;
        case 'i':
            if (seconds_to_ns("ls", optarg, &interval) != 0) {
                return CLI_USAGE;
            }
            if (interval <= 0) {
                return cli_usage("ls", "bad --interval '%s'", optarg);
            }
            break;
        case 'c':
            if (cli_parse_u64(optarg, &count) != 0 || count == 0) {
                return cli_usage("ls", "bad --count '%s'", optarg);
            }
            break;
        case 'h': return cli_print_help("ls");
        default: return bad_option("ls", argc, argv);
        }
    }
    if (!watch) {
        return ls_once(argv + optind, argc - optind, json);
    }
    /* --watch: list again every interval until Ctrl-C (or --count
     * listings); on a terminal each listing replaces the previous one. */
    int tty = isatty(STDOUT_FILENO);
    catch_signals(NULL);
    for (uint64_t n = 0; (count == 0 || n < count) && !g_interrupted; n++) {
        if (n > 0) {
            struct timespec ts = {interval / 1000000000,
                                  interval % 1000000000};
            while (nanosleep(&ts, &ts) != 0 && errno == EINTR &&
                   !g_interrupted) {
            }
            if (g_interrupted) {
                break;
            }
            if (!tty) {
                fputc('\n', stdout);
            }
        }
        if (tty) {
            fputs("\033[H\033[2J", stdout);
        }
        int rc = ls_once(argv + optind, argc - optind, json);
        if (rc != CLI_OK) {
            return rc;
        }
    }
    return CLI_OK;
}

/* ---- info -------------------------------------------------------------- */

int cli_info(int argc, char **argv)
{
    static const struct option opts[] = {
        {"json", no_argument, NULL, 'j'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int json = 0, c;
    reset_getopt();
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (c) {
        case 'j': json = 1; break;
        case 'h': return cli_print_help("info");
        default: return bad_option("info", argc, argv);
        }
    }
    if (optind != argc - 1) {
        return cli_usage("info", optind >= argc ? "missing NAME"
                                                : "too many arguments");
    }
    const char *name = argv[optind];
    if (check_name("info", name) != 0) {
        return CLI_USAGE;
    }
    nerve_chan *ch;
    int rc = nerve_chan_open(name, NERVE_O_READ, &ch);
    if (rc != 0) {
        return cli_err("info", name, rc);
    }
    struct nerve_stats st;
    struct nerve_meta meta;
    rc = nerve_chan_stat(ch, &st);
    if (rc == 0) {
        rc = nerve_chan_meta(ch, &meta);
    }
    if (rc != 0) {
        nerve_chan_close(ch);
        return cli_err("info", name, rc);
    }
    int64_t now = nerve_clock_now_ns();
    char created[64], newest[64] = "";
    iso8601(created, sizeof created, st.created_ns);
    if (st.head_seq > 0) {
        iso8601(newest, sizeof newest,
                nerve_clock_to_realtime_ns(st.newest_time_ns));
    }
    unsigned cv = st.creator_version;
    if (json) {
        printf("{\"name\":");
        json_cstr(stdout, name);
        printf(",\"layout_version\":%u,\"creator_version\":\"%u.%u.%u\""
               ",\"file_size\":%" PRIu64 ",\"slots\":%" PRIu64
               ",\"data_size\":%" PRIu64 ",\"head_seq\":%" PRIu64
               ",\"tail_seq\":%" PRIu64 ",\"messages\":%" PRIu64
               ",\"bytes_total\":%" PRIu64 ",\"waiters\":%" PRIu64
               ",\"created\":\"%s\",\"created_ns\":%" PRId64,
               st.layout_version, cv / 10000, cv / 100 % 100, cv % 100,
               st.file_size, st.slots, st.data_size, st.head_seq, st.tail_seq,
               present(&st), st.bytes_total, st.waiters, created,
               st.created_ns);
        if (st.head_seq > 0) {
            printf(",\"newest_time\":\"%s\",\"newest_time_ns\":%" PRId64
                   ",\"newest_age_ns\":%" PRId64,
                   newest, st.newest_time_ns, now - st.newest_time_ns);
        } else {
            fputs(",\"newest_time\":null,\"newest_time_ns\":null"
                  ",\"newest_age_ns\":null",
                  stdout);
        }
        printf(",\"mode\":\"%04o\",\"uid\":%u,\"gid\":%u,\"type\":", st.mode,
               st.uid, st.gid);
        json_cstr(stdout, meta.type);
        fputs(",\"encoding\":", stdout);
        json_cstr(stdout, meta.encoding);
        printf(",\"schema_len\":%" PRIu64, meta.schema_len);
        json_payload(stdout, "schema", "schema_base64", meta.schema,
                     meta.schema_len);
        fputs("}\n", stdout);
    } else {
        printf("name:            %s\n", name);
        printf("layout version:  %u (creator nerve %u.%u.%u)\n",
               st.layout_version, cv / 10000, cv / 100 % 100, cv % 100);
        printf("file size:       %" PRIu64 " bytes\n", st.file_size);
        printf("slots:           %" PRIu64 "\n", st.slots);
        printf("data size:       %" PRIu64 " bytes\n", st.data_size);
        printf("sequence:        head %" PRIu64 ", tail %" PRIu64
               " (%" PRIu64 " messages present)\n",
               st.head_seq, st.tail_seq, present(&st));
        printf("bytes published: %" PRIu64 "\n", st.bytes_total);
        if (st.head_seq > 0) {
            char age[32];
            human_age(age, sizeof age, now - st.newest_time_ns);
            printf("newest:          %s (%s ago)\n", newest, age);
        } else {
            printf("newest:          -\n");
        }
        printf("waiting readers: %" PRIu64 "\n", st.waiters);
        printf("created:         %s\n", created);
        printf("mode:            %04o (uid %u, gid %u)\n", st.mode, st.uid,
               st.gid);
        printf("type:            %s\n", meta.type[0] ? meta.type : "-");
        printf("encoding:        %s\n",
               meta.encoding[0] ? meta.encoding : "-");
        if (meta.schema_len == 0) {
            printf("schema:          -\n");
        } else if (utf8_valid(meta.schema, meta.schema_len)) {
            printf("schema:          %" PRIu64 " bytes\n%s%s",
                   meta.schema_len, meta.schema,
                   meta.schema[meta.schema_len - 1] == '\n' ? "" : "\n");
        } else {
            printf("schema:          %" PRIu64 " bytes (binary)\n",
                   meta.schema_len);
        }
    }
    nerve_chan_close(ch);
    return CLI_OK;
}

/* ---- put --------------------------------------------------------------- */

/* The writer lock's holder, from the lock word of the channel header (a
 * robust PI mutex whose futex word is the owner's thread id; offset 128,
 * docs/design/0001-shm-layout.md), as "thread T (pid P: command)". Reads
 * the file only. Returns 0, or -1 when the lock is free or unreadable. */
static int lock_holder(const char *name, char *out, size_t len)
{
    char path[300];
    snprintf(path, sizeof path, "/dev/shm/nerve.%s", name);
    FILE *f = fopen(path, "rb");
    uint32_t word = 0;
    int ok = f != NULL && fseek(f, 128, SEEK_SET) == 0 &&
             fread(&word, sizeof word, 1, f) == 1;
    if (f != NULL) {
        fclose(f);
    }
    unsigned tid = word & 0x3fffffffu;
    if (!ok || tid == 0) {
        return -1;
    }
    char cmd[128] = "", line[256];
    long pid = -1;
    snprintf(path, sizeof path, "/proc/%u/status", tid);
    if ((f = fopen(path, "r")) != NULL) {
        while (fgets(line, sizeof line, f) != NULL) {
            if (strncmp(line, "Tgid:", 5) == 0) {
                pid = strtol(line + 5, NULL, 10);
            }
        }
        fclose(f);
    }
    if (pid > 0) {
        snprintf(path, sizeof path, "/proc/%ld/cmdline", pid);
        if ((f = fopen(path, "r")) != NULL) {
            size_t n = fread(cmd, 1, sizeof cmd - 1, f);
            fclose(f);
            for (size_t i = 0; i + 1 < n; i++) {
                cmd[i] = cmd[i] ? cmd[i] : ' ';
            }
            cmd[n] = '\0';
        }
        snprintf(out, len, "thread %u (pid %ld: %s)", tid, pid,
                 cmd[0] ? cmd : "?");
    } else {
        snprintf(out, len, "thread %u (not visible here: another PID "
                           "namespace?)", tid);
    }
    return 0;
}

static int put_one(nerve_chan *ch, const char *name, const void *buf,
                   size_t len, int64_t timeout, int json)
{
    struct nerve_put_info info;
    int rc = nerve_chan_put(ch, buf, len, timeout, &info, 0);
    if (rc == NERVE_EMSGSIZE) {
        struct nerve_stats st;
        if (nerve_chan_stat(ch, &st) == 0) {
            fprintf(stderr, "nerve put: %s: EMSGSIZE: a message of %zu bytes "
                            "does not fit: the channel's data ring is %" PRIu64
                            " bytes (the largest message; nerve create "
                            "--size)\n", name, len, st.data_size);
            return CLI_FAIL;
        }
    }
    if (rc == NERVE_ETIMEDOUT) {
        char who[256];
        if (lock_holder(name, who, sizeof who) == 0) {
            fprintf(stderr, "nerve put: %s: ETIMEDOUT: the writer lock was "
                            "not free within %.3g s: held by %s\n",
                    name, (double)timeout / 1e9, who);
        } else {
            fprintf(stderr, "nerve put: %s: ETIMEDOUT: the writer lock was "
                            "not free within %.3g s\n",
                    name, (double)timeout / 1e9);
        }
        return CLI_FAIL;
    }
    if (rc != 0) {
        return cli_err("put", name, rc);
    }
    if (info.recovered) {
        fprintf(stderr, "nerve put: %s: recovered the writer lock from a "
                        "writer that died\n", name);
    }
    if (json) {
        printf("{\"seq\":%" PRIu64 ",\"time_ns\":%" PRId64 "}\n", info.seq,
               info.time_ns);
    }
    return CLI_OK;
}

int cli_put(int argc, char **argv)
{
    static const struct option opts[] = {
        {"lines", no_argument, NULL, 'l'},
        {"timeout", required_argument, NULL, 't'},
        {"json", no_argument, NULL, 'j'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int lines = 0, json = 0, c;
    int64_t timeout = NERVE_FOREVER;
    reset_getopt();
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (c) {
        case 'l': lines = 1; break;
        case 'j': json = 1; break;
        case 't':
            if (seconds_to_ns("put", optarg, &timeout) != 0) {
                return CLI_USAGE;
            }
            break;
        case 'h': return cli_print_help("put");
        default: return bad_option("put", argc, argv);
        }
    }
    if (optind >= argc) {
        return cli_usage("put", "missing NAME");
    }
    if (argc - optind > 2) {
        return cli_usage("put", "too many arguments (quote DATA)");
    }
    const char *name = argv[optind];
    if (check_name("put", name) != 0) {
        return CLI_USAGE;
    }
    char *data;
    size_t len;
    int owned = 0;
    if (optind + 1 < argc) {
        data = argv[optind + 1];
        len = strlen(data);
    } else {
        if (read_all(stdin, &data, &len) != 0) {
            fprintf(stderr, "nerve put: standard input: %s\n",
                    strerror(errno));
            return CLI_FAIL;
        }
        owned = 1;
    }
    nerve_chan *ch;
    int rc = nerve_chan_open(name, NERVE_O_WRITE, &ch);
    if (rc != 0) {
        if (owned) {
            free(data);
        }
        return cli_err("put", name, rc);
    }
    int status = CLI_OK;
    if (!lines) {
        status = put_one(ch, name, data, len, timeout, json);
    } else {
        size_t start = 0;
        while (start < len && status == CLI_OK) {
            char *nl = memchr(data + start, '\n', len - start);
            size_t end = nl ? (size_t)(nl - data) : len;
            status = put_one(ch, name, data + start, end - start, timeout,
                             json);
            start = end + 1;
        }
    }
    nerve_chan_close(ch);
    if (owned) {
        free(data);
    }
    return status;
}

/* ---- get and cat ------------------------------------------------------- */

/* One get into a buffer that grows to the message size if needed. */
static int get_grow(nerve_chan *ch, char **buf, size_t *cap, int64_t arg,
                    int64_t timeout, struct nerve_get_info *info,
                    uint32_t flags)
{
    for (;;) {
        int rc = nerve_chan_get(ch, *buf, *cap, arg, timeout, info, flags);
        if (rc != NERVE_EMSGSIZE) {
            return rc;
        }
        char *nb = realloc(*buf, info->len);
        if (nb == NULL) {
            return NERVE_ENOMEM;
        }
        *buf = nb;
        *cap = info->len;
    }
}

static int open_reader(const char *verb, const char *name, nerve_chan **ch,
                       char **buf, size_t *cap, struct nerve_stats *st)
{
    if (check_name(verb, name) != 0) {
        return CLI_USAGE;
    }
    int rc = nerve_chan_open(name, NERVE_O_READ, ch);
    if (rc == 0) {
        rc = nerve_chan_stat(*ch, st);
        if (rc != 0) {
            nerve_chan_close(*ch);
        }
    }
    if (rc != 0) {
        return cli_err(verb, name, rc);
    }
    *cap = st->data_size ? st->data_size : 4096;
    *buf = malloc(*cap);
    if (*buf == NULL) {
        nerve_chan_close(*ch);
        return cli_err(verb, name, NERVE_ENOMEM);
    }
    return CLI_OK;
}

/* Why --seq or --at found nothing, with the range that is present. */
static int explain_get(const char *name, int rc, uint32_t which, int64_t arg,
                       const struct nerve_stats *st, nerve_chan *ch)
{
    const char *code = nerve_err_name(rc);
    uint64_t tail = st->tail_seq ? st->tail_seq : 1;
    if (st->head_seq == 0) {
        fprintf(stderr, "nerve get: %s: %s: the channel has no message yet\n",
                name, code);
    } else if (which == NERVE_GET_SEQ && rc == NERVE_EAGAIN) {
        fprintf(stderr, "nerve get: %s: %s: message %" PRId64 " is not "
                        "published yet (the newest is %" PRIu64 "; --wait "
                        "waits for it)\n",
                name, code, arg, st->head_seq);
    } else if (which == NERVE_GET_SEQ) {
        fprintf(stderr, "nerve get: %s: %s: message %" PRId64 " was "
                        "overwritten (present: %" PRIu64 " to %" PRIu64 ")\n",
                name, code, arg, tail, st->head_seq);
    } else {
        struct nerve_get_info oi;
        char b;
        int64_t oldest = -1;
        int r = nerve_chan_get(ch, &b, 0, (int64_t)tail, 0, &oi,
                               NERVE_GET_SEQ);
        if (r == 0 || r == NERVE_EMSGSIZE) {
            oldest = oi.time_ns;
        }
        if (oldest >= 0) {
            char iso[64];
            iso8601(iso, sizeof iso, nerve_clock_to_realtime_ns(oldest));
            fprintf(stderr, "nerve get: %s: %s: no message committed at or "
                            "before %" PRId64 " ns: the oldest present (seq %"
                            PRIu64 ") was committed at %" PRId64 " ns (%s)\n",
                    name, code, arg, tail, oldest, iso);
        } else {
            fprintf(stderr, "nerve get: %s: %s: no message committed at or "
                            "before %" PRId64 " ns is still present\n",
                    name, code, arg);
        }
    }
    return CLI_FAIL;
}

int cli_get(int argc, char **argv)
{
    static const struct option opts[] = {
        {"newest", no_argument, NULL, 'N'},
        {"next", no_argument, NULL, 'n'},
        {"seq", required_argument, NULL, 's'},
        {"at", required_argument, NULL, 'a'},
        {"wait", no_argument, NULL, 'w'},
        {"timeout", required_argument, NULL, 't'},
        {"format", required_argument, NULL, 'f'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    uint32_t which = NERVE_GET_NEWEST;
    int nwhich = 0, wait = 0, c;
    int64_t arg = 0, timeout = NERVE_FOREVER;
    int have_timeout = 0;
    const char *at = NULL;
    enum fmt fmt = FMT_TEXT;
    reset_getopt();
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (c) {
        case 'N': which = NERVE_GET_NEWEST; nwhich++; break;
        case 'n': which = NERVE_GET_NEXT; nwhich++; break;
        case 's': {
            uint64_t v;
            if (cli_parse_u64(optarg, &v) != 0 || v == 0 || v > INT64_MAX) {
                return cli_usage("get", "bad --seq '%s'", optarg);
            }
            which = NERVE_GET_SEQ;
            arg = (int64_t)v;
            nwhich++;
            break;
        }
        case 'a': at = optarg; which = NERVE_GET_AT; nwhich++; break;
        case 'w': wait = 1; break;
        case 't':
            if (seconds_to_ns("get", optarg, &timeout) != 0) {
                return CLI_USAGE;
            }
            have_timeout = 1;
            break;
        case 'f':
            if (parse_format("get", optarg, &fmt) != 0) {
                return CLI_USAGE;
            }
            break;
        case 'h': return cli_print_help("get");
        default: return bad_option("get", argc, argv);
        }
    }
    if (optind != argc - 1) {
        return cli_usage("get", optind >= argc ? "missing NAME"
                                               : "too many arguments");
    }
    if (nwhich > 1) {
        return cli_usage("get", "give at most one of --newest, --next, --seq, "
                                "--at");
    }
    if (wait && which == NERVE_GET_AT) {
        return cli_usage("get", "--wait does not apply to --at");
    }
    if (have_timeout && !wait) {
        return cli_usage("get", "--timeout needs --wait");
    }
    if (at != NULL && cli_parse_time(at, nerve_clock_now_ns(), &arg) != 0) {
        return cli_usage("get", "bad --at '%s' (nanoseconds, or -1.5s, "
                                "-200ms, -30us)", at);
    }
    const char *name = argv[optind];
    nerve_chan *ch;
    char *buf;
    size_t cap;
    struct nerve_stats st;
    int status = open_reader("get", name, &ch, &buf, &cap, &st);
    if (status != CLI_OK) {
        return status;
    }
    /* "missed" counts what this reader could have had and lost: a one-shot
     * get has no previous message, so the history before it is not loss
     * (--next: the oldest present; --newest: the newest present). */
    if (which == NERVE_GET_NEXT && st.tail_seq > 1) {
        nerve_chan_seek(ch, st.tail_seq - 1);
    } else if (which == NERVE_GET_NEWEST && st.head_seq > 1) {
        nerve_chan_seek(ch, st.head_seq - 1);
    }
    catch_signals(ch);
    struct nerve_get_info info;
    uint32_t flags = which | (wait ? NERVE_F_WAIT : 0);
    int rc = get_grow(ch, &buf, &cap, arg, wait ? timeout : 0, &info, flags);
    struct nerve_stats now;
    if (rc == 0) {
        print_message(fmt, buf, &info);
    } else if ((rc == NERVE_EAGAIN || rc == NERVE_EOVERWRITTEN) &&
               (which == NERVE_GET_AT || which == NERVE_GET_SEQ) &&
               nerve_chan_stat(ch, &now) == 0) {
        status = explain_get(name, rc, which, arg, &now, ch);
    } else {
        status = cli_err("get", name, rc);
    }
    g_wait_chan = NULL;
    nerve_chan_close(ch);
    free(buf);
    return status;
}

int cli_cat(int argc, char **argv)
{
    static const struct option opts[] = {
        {"newest", no_argument, NULL, 'N'},
        {"all", no_argument, NULL, 'a'},
        {"count", required_argument, NULL, 'c'},
        {"timeout", required_argument, NULL, 't'},
        {"format", required_argument, NULL, 'f'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int newest = 0, all = 0, c;
    uint64_t count = 0;
    int64_t timeout = NERVE_FOREVER;
    enum fmt fmt = FMT_TEXT;
    reset_getopt();
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (c) {
        case 'N': newest = 1; break;
        case 'a': all = 1; break;
        case 'c':
            if (cli_parse_u64(optarg, &count) != 0 || count == 0) {
                return cli_usage("cat", "bad --count '%s'", optarg);
            }
            break;
        case 't':
            if (seconds_to_ns("cat", optarg, &timeout) != 0) {
                return CLI_USAGE;
            }
            break;
        case 'f':
            if (parse_format("cat", optarg, &fmt) != 0) {
                return CLI_USAGE;
            }
            break;
        case 'h': return cli_print_help("cat");
        default: return bad_option("cat", argc, argv);
        }
    }
    if (optind != argc - 1) {
        return cli_usage("cat", optind >= argc ? "missing NAME"
                                               : "too many arguments");
    }
    const char *name = argv[optind];
    nerve_chan *ch;
    char *buf;
    size_t cap;
    struct nerve_stats st;
    int status = open_reader("cat", name, &ch, &buf, &cap, &st);
    if (status != CLI_OK) {
        return status;
    }
    if (!all) {
        /* Follow from now: the next NEXT returns head_seq + 1. */
        nerve_chan_seek(ch, st.head_seq);
    } else if (st.tail_seq > 1) {
        /* From the oldest present, which is not preceded by a loss. */
        nerve_chan_seek(ch, st.tail_seq - 1);
    }
    catch_signals(ch);
    uint32_t flags = (newest ? NERVE_GET_NEWEST : NERVE_GET_NEXT) |
                     NERVE_F_WAIT;
    for (uint64_t n = 0; count == 0 || n < count; n++) {
        struct nerve_get_info info;
        int rc = get_grow(ch, &buf, &cap, 0, timeout, &info, flags);
        if (rc == NERVE_ECANCELED && g_interrupted) {
            break; /* Ctrl-C is the normal end of a follow */
        }
        if (rc != 0) {
            status = cli_err("cat", name, rc);
            break;
        }
        print_message(fmt, buf, &info);
    }
    g_wait_chan = NULL;
    nerve_chan_close(ch);
    free(buf);
    return status;
}

/* ---- chmod ------------------------------------------------------------- */

int cli_chmod(int argc, char **argv)
{
    int done = help_only("chmod", argc, argv);
    if (done >= 0) {
        return done;
    }
    if (argc - optind != 2) {
        return cli_usage("chmod", argc - optind < 2 ? "missing MODE or NAME"
                                                    : "too many arguments");
    }
    uint32_t mode;
    if (cli_parse_mode(argv[optind], &mode) != 0) {
        return cli_usage("chmod", "bad mode '%s' (octal, e.g. 0640)",
                         argv[optind]);
    }
    const char *name = argv[optind + 1];
    if (check_name("chmod", name) != 0) {
        return CLI_USAGE;
    }
    /* Only a valid channel is touched: nerve_chan_stat_name validates the header. */
    struct nerve_stats st;
    int rc = nerve_chan_stat_name(name, &st);
    if (rc != 0) {
        return cli_err("chmod", name, rc);
    }
    rc = nerve_chan_chmod(name, mode);
    if (rc != 0) {
        return cli_err("chmod", name, rc);
    }
    return CLI_OK;
}

/* ---- check ------------------------------------------------------------- */

int cli_check(int argc, char **argv)
{
    static const struct option opts[] = {
        {"repair", no_argument, NULL, 'r'},
        {"force", no_argument, NULL, 'f'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int repair = 0, force = 0, c;
    reset_getopt();
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (c) {
        case 'r': repair = 1; break;
        case 'f': force = 1; break;
        case 'h': return cli_print_help("check");
        default: return bad_option("check", argc, argv);
        }
    }
    if (force && !repair) {
        return cli_usage("check", "--force needs --repair");
    }
    if (optind >= argc) {
        return cli_usage("check", "missing NAME");
    }
    /* Every NAME is checked (as rm tries every NAME); the worst status. */
    int status = CLI_OK;
    for (int i = optind; i < argc; i++) {
        const char *name = argv[i];
        if (check_name("check", name) != 0) {
            status = CLI_USAGE;
            continue;
        }
        char msg[512] = "";
        int rc;
        if (repair) {
            /* Opens for writing: only writers may repair. */
            rc = nerve_chan_repair(name, force ? NERVE_REPAIR_FORCE : 0, msg,
                                   sizeof msg);
            if (rc < 0) {
                fprintf(stderr, "nerve check: %s: %s: %s\n", name,
                        nerve_err_name(rc), msg);
                status = CLI_FAIL;
                continue;
            }
            printf("%s: %s\n", name, msg);
        }
        rc = nerve_chan_check(name, msg, sizeof msg);
        if (strcmp(msg, nerve_strerror(rc)) == 0) {
            msg[0] = '\0'; /* the explanation adds nothing to the message */
        }
        if (rc != 0) {
            fprintf(stderr, "nerve check: %s: %s: %s%s%s\n", name,
                    nerve_err_name(rc), nerve_strerror(rc), msg[0] ? ": " : "",
                    msg);
            if (status == CLI_OK) {
                status = CLI_FAIL;
            }
            continue;
        }
        /* "ok; writer lock: STATE", and why the bell is not used if not */
        printf("%s: %s\n", name, msg[0] ? msg : "ok");
    }
    return status;
}
