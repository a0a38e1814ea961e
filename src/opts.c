/* Reading a caller's versioned options struct (src/opts.h). */
#include <stdint.h>
#include <string.h>

#include "nerve/errors.h"

#include "opts.h"

int nerve__opts_read(void *dst, size_t known, const void *src, size_t size)
{
    if (size < sizeof(uint32_t))
        return NERVE_EINVAL;
    const unsigned char *s = src;
    for (size_t i = known; i < size; i++) {
        if (s[i] != 0)
            return NERVE_EINVAL;
    }
    memcpy(dst, src, size < known ? size : known);
    return 0;
}
