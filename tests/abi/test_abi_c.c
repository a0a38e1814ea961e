/* Public headers under -std=c11 -pedantic -Werror; sizes of the public
 * structures that cross the library boundary (growing them is allowed only
 * by appending, and this test then changes in the same commit). */
#include <nerve/nerve.h>

#include <stddef.h>
#include <stdio.h>

_Static_assert(sizeof(struct nerve_chan_opts) == 64, "opts size");
_Static_assert(offsetof(struct nerve_chan_opts, size) == 0, "opts.size first");
_Static_assert(sizeof(struct nerve_put_info) == 24, "put_info");
_Static_assert(sizeof(struct nerve_get_info) == 32, "get_info");
_Static_assert(sizeof(struct nerve_view) == 40, "view");
_Static_assert(sizeof(struct nerve_stats) == 96, "stats");
_Static_assert(NERVE_GET_MASK == 3, "get modes");

int main(void)
{
    struct nerve_chan_opts o = NERVE_CHAN_OPTS_INIT;
    if (o.size != sizeof o) {
        printf("FAIL: NERVE_CHAN_OPTS_INIT size %u\n", o.size);
        return 1;
    }
    if (nerve_err_name(NERVE_EVERSION)[0] != 'E') {
        printf("FAIL: error names\n");
        return 1;
    }
    printf("ok\n");
    return 0;
}
