/* Clocks (include/nerve/clock.h): the one time base of the channel and
 * rt code. */
#include <stdint.h>
#include <time.h>

#include "nerve/clock.h"

int64_t nerve_clock_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int64_t nerve_clock_to_realtime_ns(int64_t mono_ns)
{
    struct timespec rt, mo;
    clock_gettime(CLOCK_REALTIME, &rt);
    clock_gettime(CLOCK_MONOTONIC, &mo);
    int64_t off = ((int64_t)rt.tv_sec - (int64_t)mo.tv_sec) * 1000000000 +
                  (rt.tv_nsec - mo.tv_nsec);
    return mono_ns + off;
}
