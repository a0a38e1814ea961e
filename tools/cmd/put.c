/* nerve put: publish DATA, standard input, or one message per line. */
#include "../cli.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char help[] =
    "usage: nerve put NAME [DATA] [--lines] [--timeout SEC]\n"
    "Publish DATA, or all of standard input, as one message.\n"
    "  --lines          one message per line of input (without the newline)\n"
    "  --timeout SEC    longest wait for the writer lock (default: forever)\n"
    "  --json           print {\"seq\":N,\"time_ns\":T} per message\n";

static const struct option opts[] = {
    {"lines", no_argument, NULL, 'l'},
    {"timeout", required_argument, NULL, 't'},
    {"json", no_argument, NULL, 'j'},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

/* The writer lock's holder, as the channel's statistics report it
 * (nerve_stats.lock_owner_tid, a thread id), described as "thread T (pid
 * P: command)" from /proc. Returns 0, or -1 when the lock is free or the
 * channel unreadable. */
static int lock_holder(nerve_chan *ch, char *out, size_t len)
{
    struct nerve_stats st;
    if (nerve_chan_stat(ch, &st) != 0 || st.lock_owner_tid == 0) {
        return -1;
    }
    unsigned tid = st.lock_owner_tid;
    char path[64];
    FILE *f;
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
        /* The command line is anyone's text: escaped for the terminal. */
        char esc[4 * sizeof cmd];
        snprintf(out, len, "thread %u (pid %ld: %s)", tid, pid,
                 cmd[0] ? cli_text_buf(esc, sizeof esc, cmd) : "?");
    } else {
        snprintf(out, len,
                 "thread %u (not visible here: another PID "
                 "namespace?)",
                 tid);
    }
    return 0;
}

static int put_one(nerve_chan *ch, const char *name, const void *buf,
                   size_t len, int64_t timeout, int json)
{
    struct nerve_put_info info;
    /* EMSGSIZE: the library's detail names both sizes (cli_err). */
    int rc = nerve_chan_put(ch, buf, len, timeout, &info, 0);
    if (rc == NERVE_ETIMEDOUT) {
        char who[256];
        int held = lock_holder(ch, who, sizeof who) == 0;
        return cli_fail("put",
                        "%s: ETIMEDOUT: the writer lock was not free within "
                        "%.3g s%s%s",
                        name, (double)timeout / 1e9, held ? ": held by " : "",
                        held ? who : "");
    }
    if (rc != 0) {
        return cli_err("put", name, rc);
    }
    if (info.recovered) {
        cli_note("put", "%s: recovered the writer lock from a writer that died",
                 name);
    }
    if (json) {
        printf("{\"seq\":%" PRIu64 ",\"time_ns\":%" PRId64 "}\n", info.seq,
               info.time_ns);
    }
    return CLI_OK;
}

static int run(int argc, char **argv)
{
    int lines = 0, json = 0, c;
    int64_t timeout = NERVE_FOREVER;
    cli_reset_getopt();
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (c) {
        case 'l': lines = 1; break;
        case 'j': json = 1; break;
        case 't':
            if (cli_seconds_to_ns("put", optarg, &timeout) != 0) {
                return CLI_USAGE;
            }
            break;
        case 'h': return cli_print_help("put");
        default: return cli_bad_option("put", argc, argv);
        }
    }
    if (optind >= argc) {
        return cli_usage("put", "missing NAME");
    }
    if (argc - optind > 2) {
        return cli_usage("put", "too many arguments (quote DATA)");
    }
    const char *name = argv[optind];
    if (cli_check_name("put", name) != 0) {
        return CLI_USAGE;
    }
    char *data;
    size_t len;
    int owned = 0;
    if (optind + 1 >= argc && isatty(STDIN_FILENO)) {
        /* Otherwise a user who forgot DATA sees a command that hangs. */
        cli_note("put",
                 "reading the message%s for %s from standard input; end it "
                 "with Ctrl-D (or give DATA after NAME)",
                 lines ? "s, one per line," : "", name);
    }
    if (optind + 1 < argc) {
        data = argv[optind + 1];
        len = strlen(data);
    } else {
        if (read_all(stdin, &data, &len) != 0) {
            return cli_fail("put", "standard input: %s", strerror(errno));
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
            status =
                put_one(ch, name, data + start, end - start, timeout, json);
            start = end + 1;
        }
    }
    nerve_chan_close(ch);
    if (owned) {
        free(data);
    }
    return status;
}

const struct cli_verb cli_verb_put = {"put", "publish a message", help, run};
