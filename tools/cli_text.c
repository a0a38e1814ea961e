/* Text for a human (declared in tools/cli.h): the one escaping of names,
 * command lines and payloads printed to a terminal, and the UTF-8 checks
 * it rests on. */
#include "cli.h"

#include <stdint.h>
#include <string.h>

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
