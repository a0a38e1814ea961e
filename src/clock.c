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

/* CLOCK_REALTIME minus CLOCK_MONOTONIC now. The realtime read is
 * bracketed by two monotonic reads and taken as at their middle; a thread
 * preempted inside the bracket (for seconds, on a loaded host) would skew
 * the offset by as much, so of up to OFFSET_TRIES brackets the narrowest
 * is kept, and one narrower than OFFSET_NARROW_NS ends the search. */
#define OFFSET_TRIES 4
#define OFFSET_NARROW_NS 20000
static int64_t realtime_offset_ns(void)
{
    int64_t best = 0, best_width = INT64_MAX;
    for (int i = 0; i < OFFSET_TRIES && best_width > OFFSET_NARROW_NS; i++) {
        struct timespec before, rt, after;
        clock_gettime(CLOCK_MONOTONIC, &before);
        clock_gettime(CLOCK_REALTIME, &rt);
        clock_gettime(CLOCK_MONOTONIC, &after);
        int64_t b_ns = 0, rt_ns = 0, a_ns = 0;
        (void)nerve__ns_from_timespec(&before, &b_ns);
        (void)nerve__ns_from_timespec(&rt, &rt_ns);
        (void)nerve__ns_from_timespec(&after, &a_ns);
        int64_t width = a_ns - b_ns;
        if (width < best_width) {
            best_width = width;
            best = rt_ns - (b_ns + width / 2);
        }
    }
    return best;
}

int64_t nerve_clock_to_realtime_ns(int64_t mono_ns)
{
    /* Saturated: a time near either end of int64 stays at that end. */
    return nerve__ns_add_sat(mono_ns, realtime_offset_ns());
}
