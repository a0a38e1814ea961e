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
#include <unistd.h>

namespace example {

/// With --help or -h in argv: print `text` (the program's usage) and
/// exit 0.
inline void help(int argc, char **argv, const char *text)
{
    for (int i = 1; i < argc; i++) {
        if (std::strcmp(argv[i], "--help") == 0 ||
            std::strcmp(argv[i], "-h") == 0) {
            std::fputs(text, stdout);
            std::exit(0);
        }
    }
}

/// The default channel name for `what`: "example-UID-what", so that the
/// examples do not take a global name such as "imu" that another program
/// (or user) may own.
inline std::string default_name(const char *what)
{
    return "example-" + std::to_string(static_cast<unsigned>(getuid())) + "-" +
           what;
}

/// Create channel `name` for T with `o` unless it exists. *created says
/// whether this call made it: an example removes only the channels it
/// created, never one that a user or another program made under the same
/// name before it started. Two examples starting together agree: the
/// create fails with NERVE_EEXIST for all but one.
template <class T>
nerve::Result<void> create_if_missing(const std::string &name,
                                      const nerve::ChannelOptions &o,
                                      bool *created)
{
    nerve::ChannelOptions fresh = o;
    fresh.exist_ok = false;
    auto made = nerve::Publisher<T>::create(name, fresh);
    *created = static_cast<bool>(made);
    if (made || made.code() == NERVE_EEXIST) {
        return {};
    }
    return nerve::fail(made.code());
}

/// Open channel `name` for writing T, creating it first if it is missing
/// (create_if_missing() says whether this call made it).
template <class T>
nerve::Result<nerve::Publisher<T>>
open_or_create(const std::string &name, const nerve::ChannelOptions &o,
               bool *created)
{
    auto made = create_if_missing<T>(name, o, created);
    if (!made) {
        return nerve::fail(made.code());
    }
    return nerve::Publisher<T>::open(name);
}

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
