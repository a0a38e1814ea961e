/* Sizes for the nerve command (declared in tools/cli.h): the grammar is
 * the library's, nerve_size_parse() (include/nerve/size.h), which the
 * Python tools, the Rust bridge and rmw_nerve read through too. */
#include "cli.h"

int cli_parse_size(const char *s, uint64_t *out)
{
    return nerve_size_parse(s, out) == 0 ? 0 : -1;
}
