/* Ach compatibility (nerve): Ach's experimental event loop.
 * See include/ach.h and docs/ach.md. */
#ifndef ACH_EXPERIMENTAL_H
#define ACH_EXPERIMENTAL_H

#include "../ach.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One channel of ach_evhandle(): `handler` is called when the channel has
 * frames this handle has not seen; it returns ACH_OK (it read frames) or
 * ACH_STALE_FRAMES (it read none); any other status ends the loop. */
struct ach_evhandler {
    struct ach_channel *channel;
    void *context;
    enum ach_status (*handler)(void *context, struct ach_channel *channel);
};

/* Call periodic_handler when `period` passes without input. */
#define ACH_EV_O_PERIODIC_TIMEOUT 0x01
/* Call periodic_handler after handlers ran on input. */
#define ACH_EV_O_PERIODIC_INPUT 0x02

/* Wait on handlers[0..n) (at most 64) and dispatch until a handler or the
 * periodic handler returns a status other than ACH_OK / ACH_STALE_FRAMES,
 * which is returned. `period` (relative; NULL: none) bounds each wait. */
enum ach_status ACH_WARN_UNUSED ach_evhandle(
    struct ach_evhandler *handlers, size_t n, const struct timespec *period,
    enum ach_status (*periodic_handler)(void *context), void *periodic_context,
    int options);

#ifdef __cplusplus
}
#endif

#endif
