/* Text for a human (declared in tools/cli.h): the one escaping of names,
 * command lines and payloads printed to a terminal, and the UTF-8 checks
 * it rests on. */
#include "cli.h"

#include <stdint.h>
#include <string.h>

#include "utf8.h" /* src/: the one UTF-8 decoder */

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
        size_t n = nerve__utf8_seq(p + i, len - i, &cp);
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
            size_t n = nerve__utf8_seq(p + i, len - i, &cp);
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

/* RFC 3629 (src/utf8.h, the library's own check): rejects overlong
 * forms, surrogates and code points past U+10FFFF, so that "text" payloads
 * are always valid JSON strings. */
int utf8_valid(const void *buf, size_t len)
{
    return nerve__utf8_valid(buf, len);
}
