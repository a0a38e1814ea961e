/* nerve_version(): the version of the library that is running. */
#include <nerve/version.h>

#include <stddef.h>

int nerve_version(const char **text)
{
    if (text)
        *text = NERVE_VERSION_STRING;
    return NERVE_VERSION_NUMBER;
}
