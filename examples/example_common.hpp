// Small helpers shared by the examples: option parsing, a stop flag set
// by SIGINT / SIGTERM, and absolute-time periodic sleeping.
#ifndef NERVE_EXAMPLES_COMMON_HPP
#define NERVE_EXAMPLES_COMMON_HPP

#include <nerve/nerve.hpp>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <time.h>

namespace example {

/// The value after `--key` in argv, or `def`.
inline std::string opt(int argc, char **argv, const char *key,
                       const std::string &def)
{
    for (int i = 1; i + 1 < argc; i++) {
        if (std::strcmp(argv[i], key) == 0) {
            return argv[i + 1];
        }
    }
    return def;
}

/// Whether the flag `--key` is present.
inline bool flag(int argc, char **argv, const char *key)
{
    for (int i = 1; i < argc; i++) {
        if (std::strcmp(argv[i], key) == 0) {
            return true;
        }
    }
    return false;
}

inline double opt_num(int argc, char **argv, const char *key, double def)
{
    std::string v = opt(argc, argv, key, "");
    if (v.empty()) {
        return def;
    }
    char *end = nullptr;
    double d = std::strtod(v.c_str(), &end);
    if (end == v.c_str() || *end != '\0') {
        std::fprintf(stderr, "bad number for %s: %s\n", key, v.c_str());
        std::exit(2);
    }
    return d;
}

/// Sleep until the absolute CLOCK_MONOTONIC time `t_ns` (nerve's clock),
/// so that a periodic loop does not drift (the ALMA time-service paper's
/// absolute-time sleep).
inline void sleep_until(int64_t t_ns)
{
    struct timespec ts;
    ts.tv_sec = static_cast<time_t>(t_ns / 1000000000);
    ts.tv_nsec = static_cast<long>(t_ns % 1000000000);
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr) ==
           EINTR) {
    }
}

} // namespace example

#endif
