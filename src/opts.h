/* Reading a caller's versioned options struct (CONTRIBUTING.md §6): one reader for
 * every `size`-prefixed options struct of the library. */
#ifndef NERVE_OPTS_H
#define NERVE_OPTS_H

#include <stddef.h>

/* Copy min(size, known) bytes of the caller's struct at `src` (whose first
 * field is its uint32_t size) over `dst`, which holds the defaults: a caller
 * built against an older header (shorter struct) keeps the defaults of the
 * fields it does not know, one built against a newer header (longer struct)
 * must leave the fields this library does not know zero. Returns 0, or
 * NERVE_EINVAL (size smaller than the size field, or a non-zero unknown
 * tail; *dst is then unspecified).
 * Thread: any.  Blocking: no.  RT: safe.  Signal: safe. */
int nerve__opts_read(void *dst, size_t known, const void *src, size_t size);

#endif
