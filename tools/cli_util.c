/* Helpers shared by the verbs (declared in tools/cli.h): errors, option
 * parsing, human-readable numbers, signals, the reading run of get and
 * cat, external verbs, and JSON output. */
#include "cli.h"

#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

int cli_err(const char *verb, const char *what, int rc)
{
    char esc[256];
    fprintf(stderr, "nerve %s: %s: %s: %s\n", verb,
            cli_text_buf(esc, sizeof esc, what), nerve_err_name(rc),
            nerve_err_detail(rc));
    return CLI_FAIL;
}

int cli_usage(const char *verb, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "nerve %s: ", verb);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\nTry 'nerve %s --help'.\n", verb);
    return CLI_USAGE;
}

int cli_print_help(const char *verb)
{
    for (size_t i = 0; i < cli_nverbs; i++) {
        if (strcmp(cli_verbs[i]->name, verb) == 0) {
            fputs(cli_verbs[i]->usage, stdout);
            return CLI_OK;
        }
    }
    return CLI_USAGE;
}

int cli_parse_u64(const char *s, uint64_t *out)
{
    char *end;
    /* A digit first: strtoull() would skip blanks and accept a sign. */
    if (s == NULL || !isdigit((unsigned char)*s)) {
        return -1;
    }
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno != 0 || *end != '\0') {
        return -1;
    }
    *out = v;
    return 0;
}

int cli_parse_size(const char *s, uint64_t *out)
{
    char *end;
    if (s == NULL || !isdigit((unsigned char)*s)) {
        return -1;
    }
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno != 0 || end == s) {
        return -1;
    }
    unsigned shift = 0;
    switch (*end) {
    case '\0': break;
    case 'k':
    case 'K':
        shift = 10;
        end++;
        break;
    case 'm':
    case 'M':
        shift = 20;
        end++;
        break;
    case 'g':
    case 'G':
        shift = 30;
        end++;
        break;
    default: return -1;
    }
    if (*end == 'i') { /* accept KiB-style "Ki", "Mi" */
        end++;
    }
    if (*end == 'B' || *end == 'b') {
        end++;
    }
    if (*end != '\0' || (shift && v > (UINT64_MAX >> shift))) {
        return -1;
    }
    *out = (uint64_t)v << shift;
    return 0;
}

int cli_parse_mode(const char *s, uint32_t *out)
{
    char *end;
    if (s == NULL || !isdigit((unsigned char)*s)) {
        return -1;
    }
    errno = 0;
    unsigned long v = strtoul(s, &end, 8);
    /* Permission bits only: the library refuses setuid/setgid/sticky. */
    if (errno != 0 || *end != '\0' || v > 0777) {
        return -1;
    }
    *out = (uint32_t)v;
    return 0;
}

int cli_parse_seconds(const char *s, double *out)
{
    char *end;
    if (s == NULL || *s == '\0') {
        return -1;
    }
    errno = 0;
    double v = strtod(s, &end);
    if (errno != 0 || end == s || !isfinite(v) || v < 0) {
        return -1;
    }
    if (*end == 's' && end[1] == '\0') {
        end++;
    } else if (strcmp(end, "ms") == 0) {
        v /= 1e3;
        end += 2;
    }
    if (*end != '\0') {
        return -1;
    }
    *out = v;
    return 0;
}

int cli_parse_time(const char *s, int64_t now_ns, int64_t *out)
{
    char *end;
    if (s == NULL || *s == '\0') {
        return -1;
    }
    if (*s != '-' && *s != '+') {
        /* Absolute: integer nanoseconds of CLOCK_MONOTONIC. */
        uint64_t v;
        if (cli_parse_u64(s, &v) != 0 || v > INT64_MAX) {
            return -1;
        }
        *out = (int64_t)v;
        return 0;
    }
    errno = 0;
    double v = strtod(s, &end);
    if (errno != 0 || end == s || !isfinite(v)) {
        return -1;
    }
    double scale;
    if (strcmp(end, "s") == 0) {
        scale = 1e9;
    } else if (strcmp(end, "ms") == 0) {
        scale = 1e6;
    } else if (strcmp(end, "us") == 0) {
        scale = 1e3;
    } else if (strcmp(end, "ns") == 0) {
        scale = 1;
    } else {
        return -1;
    }
    double t = (double)now_ns + v * scale;
    if (t < 0 || t > 9.2e18) {
        return -1;
    }
    *out = (int64_t)t;
    return 0;
}

/* Length of the valid UTF-8 sequence at p[0..len), or 0 if none starts
 * there (RFC 3629, as utf8_valid()); *cp gets its code point. */
static size_t utf8_seq(const unsigned char *p, size_t len, uint32_t *cp)
{
    unsigned char c = p[0];
    size_t n;
    uint32_t v;
    if (c < 0x80) {
        *cp = c;
        return 1;
    } else if ((c & 0xe0) == 0xc0) {
        n = 1;
        v = c & 0x1f;
    } else if ((c & 0xf0) == 0xe0) {
        n = 2;
        v = c & 0x0f;
    } else if ((c & 0xf8) == 0xf0) {
        n = 3;
        v = c & 0x07;
    } else {
        return 0;
    }
    if (len - 1 < n) {
        return 0;
    }
    for (size_t k = 1; k <= n; k++) {
        if ((p[k] & 0xc0) != 0x80) {
            return 0;
        }
        v = (v << 6) | (p[k] & 0x3f);
    }
    if ((n == 1 && v < 0x80) || (n == 2 && v < 0x800) ||
        (n == 3 && v < 0x10000) || v > 0x10ffff ||
        (v >= 0xd800 && v <= 0xdfff)) {
        return 0;
    }
    *cp = v;
    return n + 1;
}

/* The escape of one code point (or, with cp > 0x10ffff, of the invalid
 * byte cp & 0xff) into out (at least 7 bytes); returns its length, 0 if
 * it is written as it is. */
static size_t text_escape(uint32_t cp, unsigned flags, char *out)
{
    if (cp > 0x10ffff) {
        return (size_t)snprintf(out, 7, "\\x%02x", (unsigned)(cp & 0xff));
    }
    switch (cp) {
    case '\\': memcpy(out, "\\\\", 2); return 2;
    case '\n':
    case '\t':
        if (flags & CLI_TEXT_KEEP_LINES) {
            return 0;
        }
        memcpy(out, cp == '\n' ? "\\n" : "\\t", 2);
        return 2;
    case '\r': memcpy(out, "\\r", 2); return 2;
    case '\b': memcpy(out, "\\b", 2); return 2;
    case '\f': memcpy(out, "\\f", 2); return 2;
    default: break;
    }
    if (cp < 0x20 || (cp >= 0x7f && cp <= 0x9f)) {
        return (size_t)snprintf(out, 7, "\\u%04x", (unsigned)cp);
    }
    return 0;
}

/* Walk s: emit(arg, bytes, n) for each run written as it is and for each
 * escape. Stops early when emit returns non-zero. */
static void text_walk(const void *s, size_t len, unsigned flags,
                      int (*emit)(void *arg, const char *p, size_t n),
                      void *arg)
{
    const unsigned char *p = s;
    size_t i = 0, run = 0;
    while (i < len) {
        uint32_t cp;
        size_t n = utf8_seq(p + i, len - i, &cp);
        if (n == 0) {
            cp = 0x110000u | p[i]; /* an invalid byte */
            n = 1;
        }
        char esc[8];
        size_t e = text_escape(cp, flags, esc);
        if (e == 0) {
            i += n;
            continue;
        }
        if (i > run && emit(arg, (const char *)p + run, i - run)) {
            return;
        }
        if (emit(arg, esc, e)) {
            return;
        }
        i += n;
        run = i;
    }
    if (len > run) {
        (void)emit(arg, (const char *)p + run, len - run);
    }
}

static int emit_file(void *arg, const char *p, size_t n)
{
    return fwrite(p, 1, n, (FILE *)arg) != n;
}

void cli_text(FILE *f, const void *s, size_t len, unsigned flags)
{
    text_walk(s, len, flags, emit_file, f);
}

void cli_ctext(FILE *f, const char *s)
{
    if (s != NULL) {
        cli_text(f, s, strlen(s), 0);
    }
}

struct text_buf {
    char *buf;
    size_t cap, n;
    int cut;
};

static int emit_buf(void *arg, const char *p, size_t n)
{
    struct text_buf *t = arg;
    /* Room for the NUL and, if cut, "...": a run is copied whole or not at
     * all when it is an escape, byte by byte when it is text (only whole
     * UTF-8 sequences: a cut never splits one). */
    size_t room = t->cap - 1 - t->n;
    if (n <= room) {
        memcpy(t->buf + t->n, p, n);
        t->n += n;
        return 0;
    }
    t->cut = 1;
    return 1;
}

const char *cli_text_buf(char *buf, size_t cap, const char *s)
{
    if (cap == 0) {
        return buf;
    }
    struct text_buf t = {buf, cap > 4 ? cap - 3 : cap, 0, 0};
    if (s != NULL) {
        /* Escape each code point on its own so that a cut falls between
         * two of them. */
        const unsigned char *p = (const unsigned char *)s;
        size_t len = strlen(s), i = 0;
        while (i < len && !t.cut) {
            uint32_t cp;
            size_t n = utf8_seq(p + i, len - i, &cp);
            n = n ? n : 1;
            text_walk(p + i, n, 0, emit_buf, &t);
            i += n;
        }
    }
    if (t.cut && cap > 4) {
        memcpy(buf + t.n, "...", 3);
        t.n += 3;
    }
    buf[t.n] = '\0';
    return buf;
}

/* A C string as a JSON string. Metadata strings are bytes the library does
 * not check; one that is not UTF-8 is written with each byte >= 0x80 as
 * \u00XX (read as Latin-1), so the output is always valid JSON. */
void json_cstr(FILE *f, const char *s)
{
    size_t n = s ? strlen(s) : 0;
    int latin1 = n > 0 && !utf8_valid(s, n);
    fputc('"', f);
    for (size_t i = 0; i < n; i++) {
        json_byte(f, (unsigned char)s[i], latin1);
    }
    fputc('"', f);
}

/* RFC 3629: rejects overlong forms, surrogates and code points past
 * U+10FFFF, so that "text" payloads are always valid JSON strings. */
int utf8_valid(const void *buf, size_t len)
{
    const unsigned char *p = buf;
    size_t i = 0;
    while (i < len) {
        unsigned char c = p[i];
        size_t n;
        uint32_t cp;
        if (c < 0x80) {
            i++;
            continue;
        } else if ((c & 0xe0) == 0xc0) {
            n = 1;
            cp = c & 0x1f;
        } else if ((c & 0xf0) == 0xe0) {
            n = 2;
            cp = c & 0x0f;
        } else if ((c & 0xf8) == 0xf0) {
            n = 3;
            cp = c & 0x07;
        } else {
            return 0;
        }
        if (len - i - 1 < n) {
            return 0;
        }
        for (size_t k = 1; k <= n; k++) {
            if ((p[i + k] & 0xc0) != 0x80) {
                return 0;
            }
            cp = (cp << 6) | (p[i + k] & 0x3f);
        }
        if ((n == 1 && cp < 0x80) || (n == 2 && cp < 0x800) ||
            (n == 3 && cp < 0x10000) || cp > 0x10ffff ||
            (cp >= 0xd800 && cp <= 0xdfff)) {
            return 0;
        }
        i += n + 1;
    }
    return 1;
}

void base64_write(FILE *f, const void *buf, size_t len)
{
    static const char tab[] =
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    const unsigned char *p = buf;
    size_t i = 0;
    for (; i + 3 <= len; i += 3) {
        uint32_t v = (uint32_t)p[i] << 16 | (uint32_t)p[i + 1] << 8 | p[i + 2];
        fputc(tab[v >> 18], f);
        fputc(tab[(v >> 12) & 63], f);
        fputc(tab[(v >> 6) & 63], f);
        fputc(tab[v & 63], f);
    }
    if (len - i == 1) {
        uint32_t v = (uint32_t)p[i] << 16;
        fputc(tab[v >> 18], f);
        fputc(tab[(v >> 12) & 63], f);
        fputs("==", f);
    } else if (len - i == 2) {
        uint32_t v = (uint32_t)p[i] << 16 | (uint32_t)p[i + 1] << 8;
        fputc(tab[v >> 18], f);
        fputc(tab[(v >> 12) & 63], f);
        fputc(tab[(v >> 6) & 63], f);
        fputc('=', f);
    }
}

void json_payload(FILE *f, const char *text_key, const char *b64_key,
                  const void *buf, size_t len)
{
    if (utf8_valid(buf, len)) {
        fprintf(f, ",\"%s\":", text_key);
        json_str(f, buf, len);
    } else {
        fprintf(f, ",\"%s\":\"", b64_key);
        base64_write(f, buf, len);
        fputc('"', f);
    }
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

/* ---- options ------------------------------------------------------------ */

void cli_reset_getopt(void)
{
    optind = 1;
    opterr = 0;
}

int cli_bad_option(const char *verb, int argc, char **argv)
{
    const char *opt = optind - 1 < argc ? argv[optind - 1] : "?";
    char esc[256];
    return cli_usage(verb, "unknown option or missing value: '%s'",
                     cli_text_buf(esc, sizeof esc, opt));
}

int cli_help_only(const char *verb, int argc, char **argv)
{
    static const struct option opts[] = {
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int c;
    cli_reset_getopt();
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        if (c == 'h') {
            return cli_print_help(verb);
        }
        return cli_bad_option(verb, argc, argv);
    }
    return -1;
}

int cli_check_name(const char *verb, const char *name)
{
    int rc = nerve_chan_name_check(name);
    if (rc != 0) {
        char esc[4 * NERVE_NAME_MAX + 64];
        fprintf(stderr, "nerve %s: '%s': %s: %s\n", verb,
                cli_text_buf(esc, sizeof esc, name), nerve_err_name(rc),
                nerve_err_detail(rc));
        return CLI_USAGE;
    }
    return 0;
}

int cli_seconds_to_ns(const char *verb, const char *s, int64_t *ns)
{
    double sec;
    if (cli_parse_seconds(s, &sec) != 0 || sec > 9e9) {
        return cli_usage(verb, "bad time '%s' (seconds, e.g. 1.5)", s);
    }
    *ns = (int64_t)(sec * 1e9);
    return 0;
}

/* ---- human-readable numbers ------------------------------------------- */

void cli_human_bytes(char *out, size_t len, uint64_t v)
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

void cli_mem_str(char *out, size_t len, uint64_t v)
{
    char h[32];
    cli_human_bytes(h, sizeof h, v);
    size_t n = strlen(h);
    if (n > 0 && h[n - 1] >= 'A' && h[n - 1] <= 'Z') {
        snprintf(out, len, "%.*s %ciB", (int)(n - 1), h, h[n - 1]);
    } else {
        snprintf(out, len, "%s bytes", h);
    }
}

void cli_human_age(char *out, size_t len, int64_t ns)
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

uint64_t cli_present(const struct nerve_stats *st)
{
    return st->head_seq >= st->tail_seq ? st->head_seq - st->tail_seq + 1 : 0;
}

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

/* ---- the reading run of get and cat ---------------------------------- */

int cli_parse_format(const char *verb, const char *s, enum cli_fmt *f)
{
    if (strcmp(s, "raw") == 0) {
        *f = CLI_FMT_RAW;
    } else if (strcmp(s, "hex") == 0) {
        *f = CLI_FMT_HEX;
    } else if (strcmp(s, "text") == 0) {
        *f = CLI_FMT_TEXT;
    } else if (strcmp(s, "json") == 0) {
        *f = CLI_FMT_JSON;
    } else {
        char esc[64];
        return cli_usage(verb, "unknown format '%s' (raw, hex, text, json)",
                         cli_text_buf(esc, sizeof esc, s));
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
    fprintf(stderr,
            "nerve %s: %s: no such channel yet; waiting up to %.3g s for it "
            "to be created\n",
            r->verb, r->name, (double)*timeout / 1e9);
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

int cli_read_run(const struct cli_read *r)
{
    if (cli_check_name(r->verb, r->name) != 0) {
        return CLI_USAGE;
    }
    nerve_chan *ch;
    struct nerve_stats st;
    int64_t timeout = r->timeout;
    enum cli_start start = r->start;
    int rc = nerve_chan_open(r->name, NERVE_O_READ, &ch);
    if (rc == NERVE_ENOENT && (r->flags & NERVE_F_WAIT) &&
        timeout != NERVE_FOREVER && timeout > 0) {
        rc = open_when_created(r, &ch, &timeout);
        if (rc == NERVE_ECANCELED && r->interrupt_ends) {
            return CLI_OK;
        }
        if (rc == NERVE_ETIMEDOUT) {
            fprintf(stderr,
                    "nerve %s: %s: ETIMEDOUT: no channel of that name was "
                    "created within %.3g s ('nerve ls' lists channels)\n",
                    r->verb, r->name, (double)r->timeout / 1e9);
            return CLI_FAIL;
        }
        /* Everything in a channel created while we waited is new. */
        if (start == CLI_START_AFTER_NEWEST) {
            start = CLI_START_OLDEST;
        }
    } else if (rc == NERVE_ENOENT && (r->flags & NERVE_F_WAIT)) {
        fprintf(stderr,
                "nerve %s: %s: ENOENT: no such channel (give --timeout SEC "
                "to wait for it to be created; 'nerve ls' lists channels)\n",
                r->verb, r->name);
        return CLI_FAIL;
    }
    if (rc == 0) {
        rc = nerve_chan_stat(ch, &st);
        if (rc != 0) {
            nerve_chan_close(ch);
        }
    }
    if (rc != 0) {
        return cli_err(r->verb, r->name, rc);
    }
    size_t cap = st.data_size ? st.data_size : 4096;
    char *buf = malloc(cap);
    if (buf == NULL) {
        nerve_chan_close(ch);
        return cli_err(r->verb, r->name, NERVE_ENOMEM);
    }
    /* "missed" counts what this reader could have had and lost: the
     * history before the starting point is not loss. */
    switch (start) {
    case CLI_START_HERE: break;
    case CLI_START_OLDEST:
        if (st.tail_seq > 1) {
            nerve_chan_seek(ch, st.tail_seq - 1);
        }
        break;
    case CLI_START_NEWEST:
        if (st.head_seq > 1) {
            nerve_chan_seek(ch, st.head_seq - 1);
        }
        break;
    case CLI_START_AFTER_NEWEST:
        /* Follow from now: the next NEXT returns head_seq + 1. */
        nerve_chan_seek(ch, st.head_seq);
        break;
    }
    cli_catch_signals(ch);
    int status = CLI_OK;
    for (uint64_t n = 0; r->count == 0 || n < r->count; n++) {
        struct nerve_get_info info;
        rc = get_grow(ch, &buf, &cap, r->arg, n == 0 ? timeout : r->timeout,
                      &info, r->flags);
        if (rc == 0) {
            print_message(r->fmt, buf, &info);
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
    nerve_chan_close(ch);
    free(buf);
    return status;
}

/* ---- external verbs ----------------------------------------------------- */

void cli_self_dir(char *out, size_t len)
{
    char buf[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
    out[0] = '\0';
    if (n <= 0) {
        return;
    }
    buf[n] = '\0';
    char *slash = strrchr(buf, '/');
    if (slash == NULL) {
        return;
    }
    *slash = '\0';
    snprintf(out, len, "%s", buf[0] ? buf : "/");
}

int cli_is_exec(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode) &&
           access(path, X_OK) == 0;
}

int cli_find_external(const char *verb, char *out, size_t len)
{
    char dir[PATH_MAX];
    cli_self_dir(dir, sizeof dir);
    if (dir[0]) {
        int w = snprintf(out, len, "%s/nerve-%s", dir, verb);
        if (w > 0 && (size_t)w < len && cli_is_exec(out)) {
            return 0;
        }
    }
    const char *path = getenv("PATH");
    while (path && *path) {
        const char *colon = strchr(path, ':');
        size_t n = colon ? (size_t)(colon - path) : strlen(path);
        int w = n == 0
                    ? snprintf(out, len, "./nerve-%s", verb)
                    : snprintf(out, len, "%.*s/nerve-%s", (int)n, path, verb);
        if (w > 0 && (size_t)w < len && cli_is_exec(out)) {
            return 0;
        }
        path = colon ? colon + 1 : NULL;
    }
    return -1;
}

int cli_exec_external(const char *tool, const char *sub, int argc, char **argv)
{
    char path[PATH_MAX], name[80];
    if (cli_find_external(tool, path, sizeof path) != 0) {
        fprintf(stderr,
                "nerve %s: needs nerve-%s (pip install ./python "
                "./python-tools), found neither beside nerve nor on the "
                "PATH\n",
                argv[0], tool);
        return CLI_FAIL;
    }
    char **args = calloc((size_t)argc + 2, sizeof *args);
    if (args == NULL) {
        fprintf(stderr, "nerve %s: out of memory\n", argv[0]);
        return CLI_FAIL;
    }
    snprintf(name, sizeof name, "nerve-%s", tool);
    args[0] = name;
    args[1] = (char *)sub;
    for (int i = 1; i < argc; i++) {
        args[i + 1] = argv[i];
    }
    execv(path, args);
    fprintf(stderr, "nerve %s: cannot run %s: %s\n", argv[0], path,
            strerror(errno));
    free(args);
    return CLI_FAIL;
}
