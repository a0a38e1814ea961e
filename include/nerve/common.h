/* Attributes shared by every public nerve header. */
#ifndef NERVE_COMMON_H
#define NERVE_COMMON_H

#if defined(NERVE_STATIC_DEFINE) || !defined(__GNUC__)
#define NERVE_API
#else
/* Exported symbols; the library is built with -fvisibility=hidden. */
#define NERVE_API __attribute__((visibility("default")))
#endif

/* A status that the caller must look at. Declarations put it first
 * (NERVE_NODISCARD NERVE_API int ...), where C++17's [[nodiscard]] must
 * stand; C callers get GCC's and Clang's warn_unused_result. */
#if defined(__cplusplus) && __cplusplus >= 201703L
#define NERVE_NODISCARD [[nodiscard]]
#elif defined(__GNUC__)
#define NERVE_NODISCARD __attribute__((warn_unused_result))
#else
#define NERVE_NODISCARD
#endif

#endif
