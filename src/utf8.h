/* UTF-8 as RFC 3629 defines it: no overlong forms, no surrogates, nothing
 * above U+10FFFF. The one decoder of the library (a channel's type and
 * encoding are text for every binding and tool: Python str, JSON, MCAP) and
 * of the `nerve` command (which prints and escapes payloads and metadata).
 *
 * Private: header-only, as src/timeconv.h is for libach, so that the
 * command, which links only the library's public ABI, compiles the same
 * code. No allocation, no system call; async-signal-safe. */
#ifndef NERVE_UTF8_H
#define NERVE_UTF8_H

#include <stddef.h>
#include <stdint.h>

/* Length (1-4) of the well-formed UTF-8 sequence at p[0..len), len >= 1,
 * with its code point in *cp; 0 if none starts there. */
static inline size_t nerve__utf8_seq(const unsigned char *p, size_t len,
                                     uint32_t *cp)
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
    if (len - 1 < n)
        return 0;
    for (size_t k = 1; k <= n; k++) {
        if ((p[k] & 0xc0) != 0x80)
            return 0;
        v = (v << 6) | (p[k] & 0x3f);
    }
    /* Overlong (the shortest form is the only one), surrogate, or past the
     * last code point. */
    if ((n == 1 && v < 0x80) || (n == 2 && v < 0x800) ||
        (n == 3 && v < 0x10000) || v > 0x10ffff || (v >= 0xd800 && v <= 0xdfff))
        return 0;
    *cp = v;
    return n + 1;
}

/* Whether buf[0..len) is well-formed UTF-8 (an empty string is). */
static inline int nerve__utf8_valid(const void *buf, size_t len)
{
    const unsigned char *p = buf;
    size_t i = 0;
    while (i < len) {
        uint32_t cp;
        size_t n = nerve__utf8_seq(p + i, len - i, &cp);
        if (n == 0)
            return 0;
        i += n;
    }
    return 1;
}

#endif
