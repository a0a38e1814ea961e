/* Clocks: the time base of message times, timeouts and task releases.
 *
 * Every time nerve stores or takes is CLOCK_MONOTONIC nanoseconds in an
 * int64_t: it never jumps when the wall clock is set, and it is the same
 * clock in every process of the host, so a commit time written by one
 * process compares with now in another. Convert to wall-clock time only
 * for display. */
#ifndef NERVE_CLOCK_H
#define NERVE_CLOCK_H

#include <stdint.h>

#include "common.h"

#ifdef __cplusplus
extern "C" {
#endif

/* CLOCK_MONOTONIC now, in nanoseconds (the clock of message times).
 * Thread: any.  Blocking: no.  RT: safe (vDSO).  Signal: safe. */
NERVE_API int64_t nerve_clock_now_ns(void);

/* Convert a CLOCK_MONOTONIC time to CLOCK_REALTIME nanoseconds using the
 * clocks' current offset (exact unless the wall clock was stepped since).
 * Thread: any.  Blocking: no.  RT: safe.  Signal: safe. */
NERVE_API int64_t nerve_clock_to_realtime_ns(int64_t mono_ns);

#ifdef __cplusplus
}
#endif

#endif
