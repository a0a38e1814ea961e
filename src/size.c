/* The one size grammar (include/nerve/size.h). Written by hand rather than
 * with strtoull(), which skips blanks, takes a sign and reads the locale:
 * the grammar must not depend on any of them. */
#include <stdint.h>

#include "nerve/errors.h"
#include "nerve/size.h"
#include "platform.h"

/* The power of 1024 of unit letter c, as a shift, or -1. */
static int unit_shift(char c)
{
    switch (c | 0x20) { /* ASCII lower case; non-letters stay unmatched */
    case 'k': return 10;
    case 'm': return 20;
    case 'g': return 30;
    case 't': return 40;
    default: return -1;
    }
}

static int not_a_size(void)
{
    return nerve__detail(NERVE_EINVAL,
                         "not a size: digits with an optional K, M, G or T "
                         "suffix (powers of 1024; KiB and MB read the same), "
                         "e.g. 4096, 64K, 8M");
}

int nerve_size_parse(const char *text, uint64_t *out)
{
    if (!text || !out)
        return nerve__detail(NERVE_EINVAL, "size text or result is NULL");
    const char *p = text;
    uint64_t v = 0;
    int overflow = 0;
    if (*p < '0' || *p > '9')
        return not_a_size();
    for (; *p >= '0' && *p <= '9'; p++) {
        uint64_t d = (uint64_t)(*p - '0');
        if (v > (UINT64_MAX - d) / 10)
            overflow = 1; /* keep scanning: a malformed tail says so */
        else
            v = v * 10 + d;
    }
    int shift = unit_shift(*p);
    if (shift > 0) {
        p++;
        if (*p == 'i' || *p == 'I') /* "KiB", "Mi", "KIB" */
            p++;
    } else {
        shift = 0;
    }
    if (*p == 'B' || *p == 'b')
        p++;
    if (*p != '\0')
        return not_a_size();
    if (overflow || v > (UINT64_MAX >> shift))
        return nerve__detail(NERVE_EINVAL, "size past 2^64 - 1 bytes");
    *out = v << shift;
    return 0;
}
