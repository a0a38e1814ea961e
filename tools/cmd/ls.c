/* nerve ls: list channels, once or every --interval (--watch); --remote
 * lists the bridge's channels through nerve-bridge. */
#include "../cli.h"

#include <errno.h>
#include <fnmatch.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static const char help[] =
    "usage: nerve ls [PATTERN...] [--json] [--watch [--interval SEC]\n"
    "                [--count N]]\n"
    "List channels: slots, data size, messages present, bytes published, age\n"
    "of the newest message and type. Channels that cannot be opened are\n"
    "listed with the error. PATTERNs are shell globs (quote them): only the\n"
    "channels matching one are listed.\n"
    "  --json           one JSON array (fields in docs/cli.md)\n"
    "  --watch          list again every --interval SEC (default 1) until\n"
    "                   Ctrl-C, or --count N listings\n"
    "  --remote ...     the channels exported on the Zenoh network, by\n"
    "                   nerve-bridge ls (docs/bridge.md)\n";

static const struct option opts[] = {
    {"json", no_argument, NULL, 'j'},
    {"watch", no_argument, NULL, 'w'},
    {"interval", required_argument, NULL, 'i'},
    {"count", required_argument, NULL, 'c'},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

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

/* One channel's facts: rc 0, or why it could not be read. */
struct ls_row {
    const char *name;
    int rc;
    struct nerve_stats st;
    struct nerve_meta meta;
};

static void print_json_row(const struct ls_row *w, int64_t now, size_t shown)
{
    const struct nerve_stats *st = &w->st;
    fputs(shown ? ",\n " : "\n ", stdout);
    fputs("{\"name\":", stdout);
    json_cstr(stdout, w->name);
    if (w->rc != 0) {
        printf(",\"error\":\"%s\",\"message\":", nerve_err_name(w->rc));
        json_cstr(stdout, nerve_strerror(w->rc));
    } else {
        printf(",\"slots\":%" PRIu64 ",\"data_size\":%" PRIu64
               ",\"messages\":%" PRIu64 ",\"head_seq\":%" PRIu64
               ",\"bytes_total\":%" PRIu64 ",\"newest_age_ns\":",
               st->slots, st->data_size, cli_present(st), st->head_seq,
               st->bytes_total);
        if (st->head_seq > 0) {
            printf("%" PRId64, now - st->newest_time_ns);
        } else {
            fputs("null", stdout);
        }
        printf(",\"remove_unused\":%s,\"mode\":\"%04o\",\"type\":",
               (st->create_flags & NERVE_C_REMOVE_UNUSED) ? "true" : "false",
               st->mode);
        json_cstr(stdout, w->meta.type);
        fputs(",\"encoding\":", stdout);
        json_cstr(stdout, w->meta.encoding);
    }
    fputc('}', stdout);
}

static void print_text_row(const struct ls_row *w, int64_t now, int width)
{
    const struct nerve_stats *st = &w->st;
    if (w->rc != 0) {
        printf("%-*s %s: %s\n", width, w->name, nerve_err_name(w->rc),
               nerve_strerror(w->rc));
        return;
    }
    char size[32], bytes[32], age[32], type[4 * NERVE_TYPE_MAX + 8];
    cli_human_bytes(size, sizeof size, st->data_size);
    cli_human_bytes(bytes, sizeof bytes, st->bytes_total);
    if (st->head_seq > 0) {
        cli_human_age(age, sizeof age, now - st->newest_time_ns);
    } else {
        snprintf(age, sizeof age, "-");
    }
    printf("%-*s %7" PRIu64 " %7s %9" PRIu64 " %9s %8s  %s%s\n", width, w->name,
           st->slots, size, cli_present(st), bytes, age,
           w->meta.type[0] ? cli_text_buf(type, sizeof type, w->meta.type)
                           : "-",
           (st->create_flags & NERVE_C_REMOVE_UNUSED) ? " (auto-remove)" : "");
}

/* Read and print channel `name`'s row (shown: rows printed before; width:
 * of the NAME column). */
static void ls_one(const char *name, int json, int64_t now, size_t shown,
                   int width)
{
    nerve_chan *ch = NULL;
    struct ls_row w = {
        name, 0, {0}, {.type = "", .encoding = "", .schema = ""}};
    w.rc = nerve_chan_open(name, NERVE_O_READ, &ch);
    if (w.rc == 0) {
        w.rc = nerve_chan_stat(ch, &w.st);
    }
    if (w.rc == 0) {
        w.rc = nerve_chan_meta(ch, &w.meta);
    }
    if (json) {
        print_json_row(&w, now, shown);
    } else {
        print_text_row(&w, now, width);
    }
    nerve_chan_close(ch);
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
        char dir[256];
        return cli_err("ls", cli_shm_dir(dir, sizeof dir) == 0 ? dir : "?", rc);
    }
    qsort(l.v, l.n, sizeof l.v[0], cmp_str);
    int64_t now = nerve_clock_now_ns();
    /* The NAME column is as wide as the longest name shown (24 at least),
     * so long names (every rmw_nerve service channel) keep the columns. */
    int width = 24;
    for (size_t i = 0; i < l.n; i++) {
        size_t n = strlen(l.v[i]);
        if (ls_match(l.v[i], pat, npat) && n > (size_t)width) {
            width = (int)n; /* at most NERVE_NAME_MAX */
        }
    }
    if (json) {
        fputc('[', stdout);
    } else {
        printf("%-*s %7s %7s %9s %9s %8s  %s\n", width, "NAME", "SLOTS", "SIZE",
               "MESSAGES", "BYTES", "NEWEST", "TYPE");
    }
    size_t shown = 0;
    for (size_t i = 0; i < l.n; i++) {
        if (ls_match(l.v[i], pat, npat)) {
            ls_one(l.v[i], json, now, shown++, width);
        }
        free(l.v[i]);
    }
    if (json) {
        fputs(shown ? "\n]\n" : "]\n", stdout);
    }
    free(l.v);
    fflush(stdout);
    return CLI_OK;
}

static int run(int argc, char **argv)
{
    int json = 0, watch = 0, c;
    uint64_t count = 0;
    int64_t interval = 1000000000;
    /* Remote channels are listed by the bridge (docs/bridge.md). */
    for (int i = 1; i < argc && strcmp(argv[i], "--") != 0; i++) {
        if (strcmp(argv[i], "--remote") == 0) {
            return cli_exec_external("bridge", "ls", argc, argv);
        }
    }
    cli_reset_getopt();
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (c) {
        case 'j': json = 1; break;
        case 'w': watch = 1; break;
        case 'i':
            if (cli_seconds_to_ns("ls", optarg, &interval) != 0) {
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
        default: return cli_bad_option("ls", argc, argv);
        }
    }
    if (!watch) {
        return ls_once(argv + optind, argc - optind, json);
    }
    /* --watch: list again every interval until Ctrl-C (or --count
     * listings); on a terminal each listing replaces the previous one. */
    int tty = isatty(STDOUT_FILENO);
    cli_catch_signals(NULL);
    for (uint64_t n = 0; (count == 0 || n < count) && !cli_interrupted(); n++) {
        if (n > 0) {
            struct timespec ts = {interval / 1000000000, interval % 1000000000};
            while (nanosleep(&ts, &ts) != 0 && errno == EINTR &&
                   !cli_interrupted()) {
            }
            if (cli_interrupted()) {
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

const struct cli_verb cli_verb_ls = {"ls", "list channels", help, run};
