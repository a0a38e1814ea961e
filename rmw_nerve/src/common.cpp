// What every file of rmw_nerve uses: the implementation identifier, the
// rmw error string, the clocks and sizes from the environment.

#include "rmw_nerve.hpp"

#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <mutex>
#include <set>
#include <string>

#include <nerve/size.h>

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

RMW_NERVE_HOT int64_t mono_ns()
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

uint64_t env_size(const char *name)
{
    const char *v = getenv(name);
    uint64_t n = 0;
    if (!v || !*v)
        return 0;
    if (int r = nerve_size_parse(v, &n)) {
        // Said once per variable: it is read again at every publish.
        static std::mutex mu;
        static std::set<std::string> said;
        std::lock_guard<std::mutex> lock(mu);
        if (said.insert(name).second)
            fprintf(stderr, "rmw_nerve: %s='%s' ignored: %s\n", name, v,
                    nerve_err_detail(r));
        return 0;
    }
    return n;
}

} // namespace rmw_nerve
