/* The channel-file fuzz harness, shared by the libFuzzer target
 * (fuzz_main.c) and the corpus replay test (replay.c). */
#ifndef NERVE_FUZZ_CHAN_H
#define NERVE_FUZZ_CHAN_H

#include <stddef.h>
#include <stdint.h>

/* Write data[0..size) as the channel file /dev/shm/nerve.nt-fuzz-<pid>,
 * open it read-only and run every read-side call on it: open, get in every
 * mode, view and view_check, stat, nerve_chan_stat_name, nerve_chan_check; then
 * remove the file. Returns the result of nerve_chan_open (0 when the file
 * was accepted). Aborts on an impossible result (a get that returns
 * success with a length beyond the ring, a check message that is not a
 * string), so a sanitizer or the fuzzer sees it. */
int nerve_fuzz_one(const uint8_t *data, size_t size);

#endif
