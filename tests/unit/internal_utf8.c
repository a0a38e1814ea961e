/* The one UTF-8 decoder of the library and the command (src/utf8.h),
 * against RFC 3629: every scalar value decodes to itself in its shortest
 * form, every 2-byte string and every 3-byte string with a 3-byte lead is
 * judged as the RFC's table of well-formed sequences says, and overlong
 * forms, surrogates, values past U+10FFFF, stray continuation bytes and
 * truncated sequences are refused. */
#include "nerve_test.h"

#include <stdint.h>

#include "utf8.h"

/* The shortest encoding of cp into b; its length. */
static size_t encode(uint32_t cp, unsigned char *b)
{
    if (cp < 0x80) {
        b[0] = (unsigned char)cp;
        return 1;
    }
    if (cp < 0x800) {
        b[0] = (unsigned char)(0xc0 | cp >> 6);
        b[1] = (unsigned char)(0x80 | (cp & 0x3f));
        return 2;
    }
    if (cp < 0x10000) {
        b[0] = (unsigned char)(0xe0 | cp >> 12);
        b[1] = (unsigned char)(0x80 | (cp >> 6 & 0x3f));
        b[2] = (unsigned char)(0x80 | (cp & 0x3f));
        return 3;
    }
    b[0] = (unsigned char)(0xf0 | cp >> 18);
    b[1] = (unsigned char)(0x80 | (cp >> 12 & 0x3f));
    b[2] = (unsigned char)(0x80 | (cp >> 6 & 0x3f));
    b[3] = (unsigned char)(0x80 | (cp & 0x3f));
    return 4;
}

static int in(unsigned v, unsigned lo, unsigned hi)
{
    return v >= lo && v <= hi;
}

/* RFC 3629 section 4, UTF8-3: the second byte's range for a lead byte
 * e0-ef. */
static int rfc_3byte(unsigned a, unsigned b, unsigned c)
{
    unsigned lo = 0x80, hi = 0xbf;
    if (a == 0xe0)
        lo = 0xa0;
    else if (a == 0xed)
        hi = 0x9f;
    return in(b, lo, hi) && in(c, 0x80, 0xbf);
}

int main(void)
{
    unsigned char b[8];
    uint32_t cp;
    for (uint32_t v = 0; v <= 0x10ffff; v++) {
        size_t n = encode(v, b);
        int surrogate = in(v, 0xd800, 0xdfff);
        NT_EQ(nerve__utf8_valid(b, n), !surrogate);
        if (surrogate)
            continue;
        NT_EQ(nerve__utf8_seq(b, n, &cp), n);
        NT_EQ(cp, v);
        /* Truncated: no sequence starts there. */
        for (size_t k = 1; k < n; k++)
            NT_EQ(nerve__utf8_seq(b, k, &cp), 0);
    }
    for (unsigned a = 0; a < 256; a++) {
        for (unsigned c = 0; c < 256; c++) {
            b[0] = (unsigned char)a;
            b[1] = (unsigned char)c;
            int want = (a < 0x80 && c < 0x80) ||
                       (in(a, 0xc2, 0xdf) && in(c, 0x80, 0xbf));
            NT_EQ(nerve__utf8_valid(b, 2), want);
            if (!in(a, 0xe0, 0xef))
                continue;
            for (unsigned d = 0; d < 256; d++) {
                b[2] = (unsigned char)d;
                NT_EQ(nerve__utf8_valid(b, 3), rfc_3byte(a, c, d));
            }
        }
    }
    static const char *const bad[] = {"\xc0\x80",
                                      "\xc1\xbf",
                                      "\xe0\x9f\xbf",
                                      "\xf0\x8f\xbf\xbf",
                                      "\xed\xa0\x80",
                                      "\xed\xbf\xbf",
                                      "\xf4\x90\x80\x80",
                                      "\xf5\x80\x80\x80",
                                      "\xf7\xbf\xbf\xbf",
                                      "\xf8\x88\x80\x80",
                                      "\xfe",
                                      "\xff",
                                      "\x80",
                                      "\xbf",
                                      "caf\xe9",
                                      "ok\xe2\x82"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        NT_EQ(nerve__utf8_valid(bad[i], strlen(bad[i])), 0);
    NT_EQ(nerve__utf8_valid("", 0), 1);
    NT_EQ(nerve__utf8_valid("caf\xc3\xa9/\xf0\x9f\x98\x80", 10), 1);
    printf("ok\n");
    return 0;
}
