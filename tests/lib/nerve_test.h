/* Test helpers: typed asserts that print both values, a unique channel
 * namespace per test process, and a watchdog.
 *
 * Every test is one executable that exits 0 (pass), 1 (fail) or 77 (skip,
 * after printing why). Channel names made by nt_name() start with "nt-",
 * the prefix the shm_clean fixture looks for after the run. */
#ifndef NERVE_TEST_H
#define NERVE_TEST_H

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <nerve/nerve.h>

#ifdef __cplusplus
extern "C" {
#endif

#define NT_SKIP 77

/* Arm alarm(seconds) so a deadlock fails the test instead of hanging. */
void nt_watchdog(unsigned seconds);

/* A unique channel name "nt-<pid>-<n>-<tag>" in a static buffer rotation of
 * eight (so a test can hold several at once). */
const char *nt_name(const char *tag);

/* Create a channel with the given geometry (aborts the test on failure). */
void nt_create(const char *name, uint64_t slots, uint64_t data_size);

/* The first 4 KiB of channel name's file (its header), mapped shared and
 * writable, as a hostile or buggy process with write access could: for
 * tests that read or forge header words. Aborts the test on failure;
 * munmap(p, 4096) when done. */
void *nt_map_header(const char *name);

/* Fill buf with a deterministic pattern of (id, counter) and a checksum;
 * nt_payload_check verifies one. len >= 24. */
void nt_payload_fill(void *buf, size_t len, uint32_t id, uint64_t counter);
int nt_payload_check(const void *buf, size_t len, uint32_t *id,
                     uint64_t *counter);

#ifdef __cplusplus
}
#endif

/* Skip (exit 77) with a reason. */
#define NT_SKIP_BECAUSE(...)                                                   \
    do {                                                                       \
        printf("SKIP: ");                                                      \
        printf(__VA_ARGS__);                                                   \
        printf("\n");                                                          \
        exit(NT_SKIP);                                                         \
    } while (0)

#define NT_FAIL(...)                                                           \
    do {                                                                       \
        fprintf(stderr, "%s:%d: FAIL: ", __FILE__, __LINE__);                  \
        fprintf(stderr, __VA_ARGS__);                                          \
        fprintf(stderr, "\n");                                                 \
        exit(1);                                                               \
    } while (0)

#define NT_ASSERT(cond)                                                        \
    do {                                                                       \
        if (!(cond))                                                           \
            NT_FAIL("assertion failed: %s", #cond);                            \
    } while (0)

/* Compare two integers (any width up to 64 bits, signed). */
#define NT_EQ(a, b)                                                            \
    do {                                                                       \
        long long nt_a_ = (long long)(a), nt_b_ = (long long)(b);              \
        if (nt_a_ != nt_b_)                                                    \
            NT_FAIL("%s == %s: %lld != %lld", #a, #b, nt_a_, nt_b_);           \
    } while (0)

#define NT_CMP(a, op, b)                                                       \
    do {                                                                       \
        long long nt_a_ = (long long)(a), nt_b_ = (long long)(b);              \
        if (!(nt_a_ op nt_b_))                                                 \
            NT_FAIL("%s %s %s: %lld vs %lld", #a, #op, #b, nt_a_, nt_b_);      \
    } while (0)

/* A nerve call's status equals an expected code; prints names on mismatch. */
#define NT_RC(expr, want)                                                      \
    do {                                                                       \
        int nt_r_ = (expr), nt_w_ = (want);                                    \
        if (nt_r_ != nt_w_)                                                    \
            NT_FAIL("%s: got %s (%d: %s), want %s", #expr,                     \
                    nerve_err_name(nt_r_), nt_r_, nerve_strerror(nt_r_),       \
                    nerve_err_name(nt_w_));                                    \
    } while (0)

#define NT_OK(expr) NT_RC(expr, 0)

#endif
