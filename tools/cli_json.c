/* JSON output (declared in tools/cli.h): strings, payloads as text or
 * base64, ISO 8601 times. */
#include "cli.h"

#include <time.h>
#include <string.h>

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
