/* The port contract: what the channel protocol needs from the operating
 * system. Linux implements it in src/platform/linux/, one service a file:
 * futex.c (waits and wakes), mutex.c (the writer lock), claim.c (the
 * writers' PID namespace), thread.c (thread identity), fileops.c (the
 * system calls on files), shmfile.c (files in the shared-memory
 * directory) and mmap.c (mapping them). The
 * protocol code in chan.c calls the futex operations only through
 * nerve__futex, and the channel code makes every file operation (open,
 * stat, fallocate, link, unlink, chmod, mmap, directory reads) only
 * through nerve__file, so a test can replace either table with fakes that
 * record, delay or fail calls (tests/unit/internal_futex.c,
 * internal_fileops.c). */
#ifndef NERVE_PLATFORM_H
#define NERVE_PLATFORM_H

#include <dirent.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

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
    /* Wake at most n sleepers on `word` (highest priority first); returns
     * how many were woken. Async-signal-safe. */
    int (*wake)(const uint32_t *word, int shared, int n);
};

extern const struct nerve__futex_ops *nerve__futex;
extern const struct nerve__futex_ops nerve__futex_linux;

struct nerve__shm_lock;

/* Initialise the writer lock in place (free, no namespace). Returns 0. */
int nerve__mutex_init(struct nerve__shm_lock *l);

/* Lock with a timeout (relative ns, absolute CLOCK_MONOTONIC ns with
 * `abstime`, NERVE_FOREVER for none; a relative timeout <= 0 or a passed
 * absolute one tries once). Returns 0, 1 when the previous owner died
 * holding it or the word named a thread that does not exist (the caller
 * must validate the protected state), NERVE_ETIMEDOUT, NERVE_EDEADLK (the
 * calling thread holds it), NERVE_ENOSYS (no robust list or PI futexes) or
 * NERVE_ECORRUPT (the word contradicts the kernel's state). Never aborts. */
int nerve__mutex_lock(struct nerve__shm_lock *l, int64_t timeout_ns,
                      int abstime);
/* Unlock; only by the owning thread. Returns 0 or NERVE_ECORRUPT when the
 * word no longer names the caller. */
int nerve__mutex_unlock(struct nerve__shm_lock *l);

/* Lock states reported by nerve__mutex_state(). */
#define NERVE__LOCK_FREE 0
#define NERVE__LOCK_HELD 1
#define NERVE__LOCK_DEAD 2
/* Describe the lock word for nerve check (chan_ns: the channel's writer
 * namespace; fd: a descriptor of the channel file, -1 if none, through
 * which a word of another namespace is judged by the claim byte). Returns
 * a NERVE__LOCK_* state. */
int nerve__mutex_state(const struct nerve__shm_lock *l, uint64_t chan_ns,
                       int fd, char *msg, size_t len);
/* The lock word's owner (a thread id, 0 when free) and its NERVE_LOCK_*
 * flags, read once without the lock (nerve_chan_stat). */
uint32_t nerve__mutex_owner(const struct nerve__shm_lock *l, uint32_t *flags);
/* Reset a lock whose owner cannot be alive (any owner with `force`) to
 * "free, owner died". Returns 1 reset, 0 nothing to do, NERVE_EBUSY (the
 * owner is alive), NERVE_ELAPPED. */
int nerve__mutex_repair(struct nerve__shm_lock *l, int force);

/* Admit a writer handle (fd: its descriptor, open for reading and
 * writing, used for nothing else that locks) of PID namespace `ns` (0:
 * unknown) to the lock; see WRITERS' NAMESPACE in claim.c. Holds a shared
 * lock on the claim byte from here until fd is closed. When no other
 * writer handle is open, a non-zero lock word is stale and is reset to
 * "owner died". Returns 0 (admitted in the recorded namespace, or an
 * unclaimed one), 1 (taken over from another namespace with no writer
 * left), NERVE_EXDEV (a writer handle of another namespace is open, or
 * another opener stopped inside its open for over a second) or another
 * error. Blocking: up to a second, only behind another opener. */
int nerve__mutex_claim(struct nerve__shm_lock *l, int fd, uint64_t ns);
/* Whether an open file description other than fd's holds the claim byte,
 * that is, whether a writer handle is open anywhere, in any namespace: 1
 * yes, 0 no, -1 cannot tell (fd < 0, or no OFD locks). */
int nerve__claim_held(int fd);

/* ---- thread identity (thread.c) ---- */

/* initial-exec: one %fs-relative load instead of a __tls_get_addr call
 * (the default model in a shared object) on every lock and unlock; the
 * library's thread variables take a few bytes of the static TLS that glibc
 * keeps for libraries loaded later (dlopen, e.g. the Python module). */
#define NERVE__TLS __thread __attribute__((tls_model("initial-exec")))
/* The calling thread's TID once looked up, else 0 (fork-safe: a fork
 * child starts with 0). Only nerve__tid() reads it. */
extern NERVE__TLS uint32_t nerve__tid_cache;
/* Look the TID up (one system call) and cache it. */
uint32_t nerve__tid_lookup(void);
/* The calling thread's TID: the put path makes no system call for it (the
 * cache is inline here so that the lock's fast path pays one load). */
static inline uint32_t nerve__tid(void)
{
    uint32_t t = nerve__tid_cache;
    return t ? t : nerve__tid_lookup();
}
/* This process's PID namespace id (nsfs inode), 0 if unknown (no /proc). */
uint64_t nerve__pidns_id(void);

/* Map `file_size` bytes of fd at a fresh address and the `data_size` bytes
 * at file offset `data_off` again directly after them, read-only or
 * read-write, page tables built now (populate) or at first touch. Returns
 * the base or NULL (errno set). */
void *nerve__map_double(int fd, uint64_t file_size, uint64_t data_off,
                        uint64_t data_size, int writable, int populate);
void nerve__unmap_double(void *base, uint64_t file_size, uint64_t data_size);

/* ---- the system calls on files (fileops.c) ---- */

struct stat;

/* One entry per system call, each with that call's contract (-1, NULL or
 * MAP_FAILED with errno set on failure; fallocate as posix_fallocate but
 * setting errno). Channel code calls them only through nerve__file, which
 * a test may point at its own table (single-threaded, before any channel
 * is opened, and back to &nerve__file_linux before it ends). */
struct nerve__file_ops {
    int (*open)(const char *path, int flags, unsigned mode);
    int (*close)(int fd);
    int (*fstat)(int fd, struct stat *st);
    int (*lstat)(const char *path, struct stat *st);
    int (*fstatat)(int dfd, const char *name, struct stat *st, int flags);
    ssize_t (*pread)(int fd, void *buf, size_t n, off_t off);
    int (*fallocate)(int fd, off_t off, off_t len);
    int (*link)(const char *from, const char *to);
    int (*linkat)(int fromfd, const char *from, int tofd, const char *to,
                  int flags);
    int (*unlink)(const char *path);
    int (*unlinkat)(int dfd, const char *name, int flags);
    int (*rename)(const char *from, const char *to);
    int (*fchmod)(int fd, unsigned mode);
    int (*chmod)(const char *path, unsigned mode);
    int (*access)(const char *path, int mode);
    void *(*mmap)(void *addr, size_t len, int prot, int flags, int fd,
                  off_t off);
    int (*munmap)(void *addr, size_t len);
    int (*msync)(void *addr, size_t len, int flags);
    DIR *(*opendir)(const char *path);
    struct dirent *(*readdir)(DIR *d);
    int (*closedir)(DIR *d);
};

extern const struct nerve__file_ops *nerve__file;
extern const struct nerve__file_ops nerve__file_linux;

/* ---- files in the shared-memory directory (shmfile.c) ---- */

/* The nerve error code for an errno value (src/errors.c): the errno's own
 * code where nerve has one, NERVE_ENOTCHAN where the name holds something
 * that is not a regular file, NERVE_EMFILE/ENFILE for descriptor limits,
 * and -e for any other errno (never a silent NERVE_EINVAL). */
int nerve__err_from_errno(int e);

/* The detail behind nerve_err_detail() (src/errors.c), per thread:
 * nerve__detail() records code's detail and returns code; _clear() forgets
 * it (setup calls start with it); _buf() clears and hands out the buffer
 * for a callee that writes a message (nerve__say), and _adopt(code) makes
 * what it wrote, if anything, code's detail. */
__attribute__((format(printf, 2, 3))) int nerve__detail(int code,
                                                        const char *fmt, ...);
void nerve__detail_clear(void);
char *nerve__detail_buf(size_t *len);
void nerve__detail_adopt(int code);

/* Open the existing regular file `path` read-only or read-write without
 * blocking and without following a symlink, and fstat it into *st.
 * Returns the descriptor, NERVE_ENOTCHAN if anything but a regular file
 * is there (FIFO, socket, device, directory, symlink), or another negative
 * nerve error. */
int nerve__shm_open(const char *path, int writable, struct stat *st);

/* A file being created: unnamed (O_TMPFILE, path "") where the kernel and
 * /proc allow, else a named `.nerve-tmp-PID-RANDOM` file in the same
 * directory. */
struct nerve__shm_tmp {
    int fd;
    char path[4096];
};

/* Make a new file of `size` bytes, all pages reserved, mode 0600, in `dir`
 * (ending in '/'). Returns 0 or a negative nerve error. */
int nerve__shm_tmp_create(const char *dir, uint64_t size,
                          struct nerve__shm_tmp *t);
/* Give the file the name `path`, never replacing an existing file there
 * (NERVE_EEXIST). The descriptor stays open. */
int nerve__shm_tmp_link(struct nerve__shm_tmp *t, const char *path);
/* Give the file the name `path`, atomically replacing what is there (a
 * channel's growth: GROWTH in chan_open.c): linked first under a named
 * temporary `.nerve-tmp-grow-PID-RANDOM` (removed by
 * nerve__shm_tmp_sweep() if the caller dies before the rename), then
 * renamed over `path`. The descriptor stays open. */
int nerve__shm_tmp_replace(struct nerve__shm_tmp *t, const char *path);
/* Close the descriptor and remove the temporary name, if any. */
void nerve__shm_tmp_discard(struct nerve__shm_tmp *t);
/* Remove the regular file `path` (NERVE_ENOTCHAN if anything else is
 * there: a directory, FIFO, socket or symlink is left alone). */
int nerve__shm_unlink(const char *path);
/* chmod the regular file `path` through a descriptor, never following a
 * symlink planted under the name (O_PATH where the caller may not read
 * the file). */
int nerve__shm_chmod(const char *path, uint32_t mode);
/* Map `len` bytes of fd from offset 0, shared, read-only or read-write.
 * Returns the address or NULL (errno set). */
void *nerve__shm_map(int fd, uint64_t len, int writable);
void nerve__shm_unmap(void *p, uint64_t len);
/* Call fn(entry name, arg) for each entry of `dir` whose name starts with
 * `prefix`, until fn returns non-zero (which is returned). Returns 0, that
 * value, or a negative nerve error if the directory cannot be read. */
int nerve__shm_each(const char *dir, const char *prefix,
                    int (*fn)(const char *name, void *arg), void *arg);
/* Remove this user's named temporaries in `dir` whose creator died. */
void nerve__shm_tmp_sweep(const char *dir);
/* Test builds (NERVE_CRASHPOINTS): non-zero makes nerve__shm_tmp_create
 * use a named temporary, as on a system without O_TMPFILE or /proc. */
extern int nerve__shm_force_named_tmp;

/* The running kernel's page size. */
uint32_t nerve__page_size(void);

#endif
