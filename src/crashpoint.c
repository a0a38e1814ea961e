/* See crashpoint.h. Compiled into every build; active only with
 * NERVE_CRASHPOINTS, so the normal library carries no test hooks. */
#include "crashpoint.h"

#ifdef NERVE_CRASHPOINTS
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int loaded;
static const char *armed;
static long skip;

void nerve__crashpoint_arm(const char *name, long n)
{
    armed = name;
    skip = n;
    loaded = 1;
}

void nerve__crashpoint(const char *name)
{
    /* Read the environment once, unless a test armed a point directly. */
    if (!loaded) {
        armed = getenv("NERVE_CRASHPOINT");
        const char *s = getenv("NERVE_CRASHPOINT_SKIP");
        skip = s ? strtol(s, NULL, 10) : 0;
        loaded = 1;
    }
    if (armed && strcmp(armed, name) == 0 && skip-- <= 0)
        kill(getpid(), SIGKILL);
}
#else
/* ISO C forbids an empty translation unit. */
typedef int nerve__crashpoint_unused;
#endif
