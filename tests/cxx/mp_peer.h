/* The C side of the mixed C / C++ multi-process test (test_cxx_mp.cpp):
 * a writer and a reader written against the C API only, so that the test
 * checks that C and C++ processes agree on one channel's bytes. */
#ifndef NERVE_TESTS_CXX_MP_PEER_H
#define NERVE_TESTS_CXX_MP_PEER_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Bytes of one sample: nt_payload_fill(id, counter) pattern. */
#define MP_SAMPLE_LEN 40
/* The type name the C++ side records for its Sample type. */
#define MP_SAMPLE_TYPE "nerve_test/Sample40"

/* Put `count` samples with writer id `id` and counters 0..count-1 on
 * channel `name` (opened for writing). Returns 0, or 1 after printing why. */
int mp_c_writer(const char *name, uint32_t id, uint64_t count);

/* Read channel `name` with NERVE_GET_NEXT (waiting up to 10 s for each)
 * until `count` samples of each writer id 1..nwriters arrived; check that
 * every payload is intact, that no message was missed and that each
 * writer's counters arrive in order. Returns 0, or 1 after printing why. */
int mp_c_reader(const char *name, uint32_t nwriters, uint64_t count);

#ifdef __cplusplus
}
#endif

#endif
