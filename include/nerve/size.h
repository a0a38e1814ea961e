/* Sizes: the one grammar of byte counts that every nerve tool reads.
 *
 * The nerve command's verbs, the Python tools, the Rust bridge and
 * rmw_nerve's environment variables all read a byte count through
 * nerve_size_parse(), so "64K" means the same bytes everywhere and a value
 * one of them refuses is refused by all. */
#ifndef NERVE_SIZE_H
#define NERVE_SIZE_H

#include <stdint.h>

#include "common.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Parse the byte count `text`:
 *
 *   SIZE = DIGITS [UNIT ["i"]] ["B"]     UNIT = K | M | G | T
 *
 * letters in either case, units powers of 1024 ("64K", "64KiB", "64kb"
 * and "65536" are all 65536). No blanks, sign or fraction; an "i" needs a
 * unit. Returns 0 with *out set, or NERVE_EINVAL (text or out NULL, text
 * not in the grammar, or a value past 2^64 - 1: refused, never wrapped;
 * nerve_err_detail() says which). *out is unchanged on error.
 * Thread: any.  Blocking: no.  RT: safe (no allocation).  Signal: not safe
 * (the error detail is per-thread storage). */
NERVE_NODISCARD NERVE_API int nerve_size_parse(const char *text, uint64_t *out);

#ifdef __cplusplus
}
#endif

#endif
