/* JSON output (declared in tools/cli.h): metadata strings and payloads as
 * text or base64. JSON string escaping and ISO 8601 times are report.c's. */
#include "cli.h"

#include <string.h>

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
