/* The port contract: what the channel protocol needs from the operating
 * system. Linux implements it in src/platform/linux/. The protocol code in
 * chan.c calls the futex operations only through nerve__futex_ops, so a
 * test can replace them with fakes that record or delay wake-ups. */
#ifndef NERVE_PLATFORM_H
#define NERVE_PLATFORM_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

/* One word to wait on: *word must equal `expect` for the wait to sleep.
 * `shared` words live in a shared mapping (possibly read-only); private
 * ones in process memory. */
struct nerve__wait_word {
    const uint32_t *word;
    uint32_t expect;
    int shared;
};

struct nerve__futex_ops {
    /* Sleep until one of words[0..n) is woken or no longer equals its
     * expected value, or until the absolute CLOCK_MONOTONIC deadline
     * (deadline_ns < 0: none). Returns 0 (woken, changed or spurious),
     * NERVE_ETIMEDOUT, NERVE_EINTR, or NERVE_ENOSYS (no multi-word wait on
     * this kernel; callers then use wait1). Lost-wakeup freedom: the kernel
     * compares each word with its expected value under the futex bucket
     * lock, after queueing, so a wake issued after the word changed is
     * never missed. */
    int (*waitv)(const struct nerve__wait_word *words, unsigned n,
                 int64_t deadline_ns);
    /* The same for one word (FUTEX_WAIT_BITSET, absolute monotonic). */
    int (*wait1)(const struct nerve__wait_word *word, int64_t deadline_ns);
    /* Wake every sleeper on `word`. Async-signal-safe. */
    void (*wake_all)(const uint32_t *word, int shared);
};

extern const struct nerve__futex_ops *nerve__futex;
extern const struct nerve__futex_ops nerve__futex_linux;

/* Initialise a robust, process-shared, priority-inheritance mutex in place.
 * Returns 0 or a negative nerve error. */
int nerve__mutex_init(pthread_mutex_t *m);

/* Lock with a timeout (relative ns, absolute CLOCK_MONOTONIC ns with
 * `abstime`, or negative for none; 0 tries once). Returns 0,
 * 1 when the previous owner died holding it (the caller must validate the
 * protected state and then call nerve__mutex_consistent), NERVE_ETIMEDOUT,
 * NERVE_EBUSY (the calling thread already holds it) or NERVE_ECORRUPT
 * (the mutex is not recoverable). */
int nerve__mutex_lock(pthread_mutex_t *m, int64_t timeout_ns, int abstime);
void nerve__mutex_consistent(pthread_mutex_t *m);
void nerve__mutex_unlock(pthread_mutex_t *m);

/* Map `file_size` bytes of fd at a fresh address and the `data_size` bytes
 * at file offset `data_off` again directly after them, read-only or
 * read-write. Returns the base or NULL (errno set). */
void *nerve__map_double(int fd, uint64_t file_size, uint64_t data_off,
                        uint64_t data_size, int writable);
void nerve__unmap_double(void *base, uint64_t file_size, uint64_t data_size);

/* The running kernel's page size. */
uint32_t nerve__page_size(void);

#endif
