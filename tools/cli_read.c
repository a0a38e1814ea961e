/* Reading (declared in tools/cli.h): the reading run of get and cat, its
 * signals and output formats, and reading a whole stream. */
#include "cli.h"

#include <inttypes.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* ---- signals ------------------------------------------------------------ */

/* The handle whose wait the SIGINT/SIGTERM handler cancels. */
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

void cli_catch_signals(nerve_chan *c)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    g_wait_chan = c;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
}

void cli_release_signals(void)
{
    g_wait_chan = NULL;
}

int cli_interrupted(void)
{
    return g_interrupted != 0;
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

static void print_message(enum cli_fmt fmt, const void *buf,
                          const struct nerve_get_info *info)
{
    static int stdout_tty = -1;
    if (stdout_tty < 0) {
        stdout_tty = isatty(STDOUT_FILENO);
    }
    switch (fmt) {
    case CLI_FMT_RAW: fwrite(buf, 1, info->len, stdout); break;
    case CLI_FMT_TEXT:
        /* To a terminal, a payload is text for a human: control characters
         * and bytes that are not UTF-8 escaped (newlines and tabs kept),
         * so that no writer can send escape sequences to the operator's
         * terminal. To a pipe or a file, the bytes as they are (and
         * --format raw gives them anywhere). */
        if (stdout_tty) {
            cli_text(stdout, buf, info->len, CLI_TEXT_KEEP_LINES);
        } else {
            fwrite(buf, 1, info->len, stdout);
        }
        fputc('\n', stdout);
        break;
    case CLI_FMT_HEX: {
        char iso[64];
        iso8601(iso, sizeof iso, nerve_clock_to_realtime_ns(info->time_ns));
        printf("seq %" PRIu64 "  size %" PRIu64 "  missed %" PRIu64
               "  time %s\n",
               info->seq, info->len, info->missed, iso);
        print_hex(stdout, buf, info->len);
        break;
    }
    case CLI_FMT_JSON: {
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

/* A reader often starts before its writer: with NERVE_F_WAIT and a
 * timeout, wait up to *timeout for channel NAME to be created (checking
 * every 10 ms; Ctrl-C ends the wait), then open it. *timeout becomes what
 * is left of it. Returns as nerve_chan_open(), or NERVE_ECANCELED. */
static int open_when_created(const struct cli_read *r, nerve_chan **ch,
                             int64_t *timeout)
{
    int64_t start = nerve_clock_now_ns();
    cli_note(r->verb,
             "%s: no such channel yet; waiting up to %.3g s for it to be "
             "created",
             r->name, (double)*timeout / 1e9);
    cli_catch_signals(NULL);
    int rc = NERVE_ENOENT;
    while (rc == NERVE_ENOENT) {
        int64_t left = *timeout - (nerve_clock_now_ns() - start);
        if (g_interrupted) {
            rc = NERVE_ECANCELED;
            break;
        }
        if (left <= 0) {
            rc = NERVE_ETIMEDOUT;
            break;
        }
        struct timespec nap = {0, left < 10000000 ? (long)left : 10000000};
        nanosleep(&nap, NULL);
        rc = nerve_chan_open(r->name, NERVE_O_READ, ch);
    }
    cli_release_signals();
    int64_t left = *timeout - (nerve_clock_now_ns() - start);
    *timeout = left > 0 ? left : 0;
    return rc;
}

/* Open the channel of run r for reading, waiting for it to be created
 * where r asks to (*timeout: what is left of r's for the first get;
 * *start: where the cursor starts). Returns -1 with *ch open, or the
 * verb's exit code (the failure reported). */
static int open_for_run(const struct cli_read *r, nerve_chan **ch,
                        int64_t *timeout, enum cli_start *start)
{
    int rc = nerve_chan_open(r->name, NERVE_O_READ, ch);
    if (rc == NERVE_ENOENT && (r->flags & NERVE_F_WAIT) &&
        *timeout != NERVE_FOREVER && *timeout > 0) {
        rc = open_when_created(r, ch, timeout);
        if (rc == NERVE_ECANCELED && r->interrupt_ends) {
            return CLI_OK;
        }
        if (rc == NERVE_ETIMEDOUT) {
            return cli_fail(r->verb,
                            "%s: ETIMEDOUT: no channel of that name was "
                            "created within %.3g s ('nerve ls' lists "
                            "channels)",
                            r->name, (double)r->timeout / 1e9);
        }
        /* Everything in a channel created while we waited is new. */
        if (*start == CLI_START_AFTER_NEWEST) {
            *start = CLI_START_OLDEST;
        }
    } else if (rc == NERVE_ENOENT && (r->flags & NERVE_F_WAIT)) {
        return cli_fail(r->verb,
                        "%s: ENOENT: no such channel (give --timeout SEC to "
                        "wait for it to be created; 'nerve ls' lists "
                        "channels)",
                        r->name);
    }
    return rc == 0 ? -1 : cli_err(r->verb, r->name, rc);
}

/* Place the cursor of ch at `start` (st: the channel's statistics).
 * "missed" counts what this reader could have had and lost: the history
 * before the starting point is not loss. */
static void place_cursor(nerve_chan *ch, const struct nerve_stats *st,
                         enum cli_start start)
{
    switch (start) {
    case CLI_START_HERE: break;
    case CLI_START_OLDEST:
        if (st->tail_seq > 1) {
            nerve_chan_seek(ch, st->tail_seq - 1);
        }
        break;
    case CLI_START_NEWEST:
        if (st->head_seq > 1) {
            nerve_chan_seek(ch, st->head_seq - 1);
        }
        break;
    case CLI_START_AFTER_NEWEST:
        /* Follow from now: the next NEXT returns head_seq + 1. */
        nerve_chan_seek(ch, st->head_seq);
        break;
    }
}

/* The gets of run r on ch into *buf (*cap bytes, grown as needed), the
 * first with `first_timeout`. Returns the exit code. */
static int get_loop(const struct cli_read *r, nerve_chan *ch, char **buf,
                    size_t *cap, int64_t first_timeout)
{
    cli_catch_signals(ch);
    int status = CLI_OK;
    for (uint64_t n = 0; r->count == 0 || n < r->count; n++) {
        struct nerve_get_info info;
        int rc = get_grow(ch, buf, cap, r->arg,
                          n == 0 ? first_timeout : r->timeout, &info, r->flags);
        if (rc == 0) {
            print_message(r->fmt, *buf, &info);
            continue;
        }
        if (rc == NERVE_ECANCELED && r->interrupt_ends && g_interrupted) {
            break; /* Ctrl-C is the normal end of a follow */
        }
        status = r->explain != NULL ? r->explain(r, ch, rc) : -1;
        if (status < 0) {
            status = cli_err(r->verb, r->name, rc);
        }
        break;
    }
    cli_release_signals();
    return status;
}

int cli_read_run(const struct cli_read *r)
{
    if (cli_check_name(r->verb, r->name) != 0) {
        return CLI_USAGE;
    }
    nerve_chan *ch;
    int64_t timeout = r->timeout;
    enum cli_start start = r->start;
    int status = open_for_run(r, &ch, &timeout, &start);
    if (status >= 0) {
        return status;
    }
    struct nerve_stats st;
    int rc = nerve_chan_stat(ch, &st);
    size_t cap = rc == 0 && st.data_size ? st.data_size : 4096;
    char *buf = rc == 0 ? malloc(cap) : NULL;
    if (rc == 0 && buf == NULL) {
        rc = NERVE_ENOMEM;
    }
    if (rc != 0) {
        nerve_chan_close(ch);
        return cli_err(r->verb, r->name, rc);
    }
    place_cursor(ch, &st, start);
    status = get_loop(r, ch, &buf, &cap, timeout);
    nerve_chan_close(ch);
    free(buf);
    return status;
}

int read_all(FILE *f, char **buf, size_t *len)
{
    size_t cap = 4096, n = 0;
    char *b = malloc(cap);
    if (b == NULL) {
        return -1;
    }
    for (;;) {
        if (n == cap) {
            char *nb = realloc(b, cap * 2);
            if (nb == NULL) {
                free(b);
                return -1;
            }
            b = nb;
            cap *= 2;
        }
        size_t r = fread(b + n, 1, cap - n, f);
        n += r;
        if (r == 0) {
            if (ferror(f)) {
                free(b);
                return -1;
            }
            break;
        }
    }
    *buf = b;
    *len = n;
    return 0;
}
