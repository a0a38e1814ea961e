/* Helpers shared by the verbs: errors, parsing and JSON output. */
#include "cli.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int cli_err(const char *verb, const char *what, int rc)
{
    fprintf(stderr, "nerve %s: %s: %s: %s\n", verb, what, nerve_err_name(rc),
            nerve_strerror(rc));
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
        if (strcmp(cli_verbs[i].name, verb) == 0) {
            fputs(cli_verbs[i].usage, stdout);
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
    case '\0':
        break;
    case 'k': case 'K': shift = 10; end++; break;
    case 'm': case 'M': shift = 20; end++; break;
    case 'g': case 'G': shift = 30; end++; break;
    default:
        return -1;
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

/* One byte of a JSON string, escaped as needed. With `latin1`, bytes
 * >= 0x80 are written as \u00XX (the byte read as Latin-1). */
static void json_byte(FILE *f, unsigned char c, int latin1)
{
    switch (c) {
    case '"': fputs("\\\"", f); break;
    case '\\': fputs("\\\\", f); break;
    case '\n': fputs("\\n", f); break;
    case '\r': fputs("\\r", f); break;
    case '\t': fputs("\\t", f); break;
    case '\b': fputs("\\b", f); break;
    case '\f': fputs("\\f", f); break;
    default:
        if (c < 0x20 || c == 0x7f || (latin1 && c >= 0x80)) {
            fprintf(f, "\\u%04x", c);
        } else {
            fputc(c, f);
        }
    }
}

void json_str(FILE *f, const char *s, size_t len)
{
    fputc('"', f);
    for (size_t i = 0; i < len; i++) {
        json_byte(f, (unsigned char)s[i], 0);
    }
    fputc('"', f);
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

void iso8601(char *out, size_t len, int64_t ns)
{
    time_t sec = (time_t)(ns / 1000000000);
    long frac = (long)(ns % 1000000000);
    if (frac < 0) {
        frac += 1000000000;
        sec--;
    }
    struct tm tm;
    gmtime_r(&sec, &tm);
    char date[40];
    strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(out, len, "%s.%09ldZ", date, frac);
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
