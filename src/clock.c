/* Clocks (include/nerve/clock.h): the one time base of the channel and
 * rt code. */
#include <stdint.h>
#include <time.h>

#include "nerve/clock.h"
#include "timeconv.h"

int64_t nerve_clock_now_ns(void)
{
    return nerve__mono_now();
}

int64_t nerve_clock_to_realtime_ns(int64_t mono_ns)
{
    struct timespec rt, mo;
    clock_gettime(CLOCK_REALTIME, &rt);
    clock_gettime(CLOCK_MONOTONIC, &mo);
    int64_t rt_ns = 0, mo_ns = 0;
    (void)nerve__ns_from_timespec(&rt, &rt_ns);
    (void)nerve__ns_from_timespec(&mo, &mo_ns);
    /* Saturated: a time near either end of int64 stays at that end. */
    return nerve__ns_add_sat(mono_ns, rt_ns - mo_ns);
}
