// What every file of rmw_nerve uses: the implementation identifier, the
// rmw error string and the clocks.

#include "rmw_nerve.hpp"

#include <cstdarg>
#include <cstdio>
#include <ctime>

namespace rmw_nerve {

const char *const kIdentifier = "rmw_nerve_cpp";

rmw_ret_t fail(rmw_ret_t ret, const char *fmt, ...)
{
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    rmw_reset_error();
    RMW_SET_ERROR_MSG(buf);
    return ret;
}

int64_t mono_ns()
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return int64_t(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

int64_t real_ns()
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return int64_t(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

} // namespace rmw_nerve
