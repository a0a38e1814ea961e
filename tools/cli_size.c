/* The one size grammar of the nerve command (declared in tools/cli.h):
 * every verb and tool that takes a byte count reads it here, as the
 * Python tools read it (nerve_tools._limits.parse_size).
 *
 *   SIZE = DIGITS [UNIT ["i"]] ["B"]     UNIT = K | M | G | T
 *
 * every letter in either case; units are powers of 1024 ("64K", "64KiB" and "64kb" are
 * all 65536). No blanks, no sign, no fraction; a value past 2^64 - 1 is
 * refused, never wrapped. */
#include "cli.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>

/* The power of 1024 of unit letter c (as a shift), or -1. */
static int unit_shift(char c)
{
    switch (c) {
    case 'k':
    case 'K': return 10;
    case 'm':
    case 'M': return 20;
    case 'g':
    case 'G': return 30;
    case 't':
    case 'T': return 40;
    default: return -1;
    }
}

int cli_parse_size(const char *s, uint64_t *out)
{
    char *end;
    /* A digit first: strtoull() would skip blanks and accept a sign. */
    if (s == NULL || !isdigit((unsigned char)*s)) {
        return -1;
    }
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno != 0) {
        return -1;
    }
    int shift = unit_shift(*end);
    if (shift > 0) {
        end++;
        if (*end == 'i' || *end == 'I') { /* "KiB", "Mi", "KIB" */
            end++;
        }
    } else {
        shift = 0;
    }
    if (*end == 'B' || *end == 'b') {
        end++;
    }
    if (*end != '\0' || v > (UINT64_MAX >> shift)) {
        return -1;
    }
    *out = (uint64_t)v << shift;
    return 0;
}
