/* Ach compatibility (nerve): Ach's public C API on nerve channels.
 *
 * Programs written for Ach (golems.org) build unchanged against this
 * header and run on nerve: link with -lach (pkg-config ach). An Ach channel
 * NAME is the nerve channel NAME (/dev/shm/nerve.NAME), so Ach programs and
 * nerve programs (C, C++, Python, the nerve command) share channels in both
 * directions. docs/ach.md maps every call onto nerve's API and lists what
 * nerve changes on purpose (readers never block writers, no permanent
 * ACH_CORRUPT after a writer dies, readers need only read permission).
 *
 * Written from Ach's documented interface: names, values, member names and
 * sizes are Ach's (ach_channel_t is 128 bytes on LP64). The members of
 * ach_channel_t are Ach's; programs should not rely on them, and on nerve
 * `shm` points at the library's per-handle state, not at a channel header.
 *
 * Thread safety follows Ach's: one thread per handle at a time for
 * ach_get()/ach_put(); ach_cancel() from any thread or a signal handler. */
#ifndef ACH_H
#define ACH_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#ifdef __cplusplus
#define ACH_RESTRICT
#elif defined(__STDC_VERSION__) && __STDC_VERSION__ >= 199901L
#define ACH_RESTRICT restrict
#else
#define ACH_RESTRICT
#endif

#if defined(__GNUC__)
#define ACH_DEPRECATED __attribute__((__deprecated__))
#else
#define ACH_DEPRECATED
#endif

/* The clock of ach_get() timeouts unless ach_create_attr_set_clock() chose
 * another. (Strict ISO C hides CLOCK_MONOTONIC; its Linux value is 1.) */
#ifdef CLOCK_MONOTONIC
#define ACH_DEFAULT_CLOCK CLOCK_MONOTONIC
#else
#define ACH_DEFAULT_CLOCK ((clockid_t)1)
#endif

/* Geometry used by ach_create() for a frame count or size of 0. */
#define ACH_DEFAULT_FRAME_COUNT 16
#define ACH_DEFAULT_FRAME_SIZE 512

#include "ach/generic.h"

#ifdef __cplusplus
extern "C" {
#endif

struct timespec; /* complete in <time.h> under POSIX; declared for ISO C */

/* Where a channel lives. On nerve: DEFAULT, USER and KERNEL are all the
 * shared-memory channel /dev/shm/nerve.NAME (nerve needs no kernel module
 * for what Ach's module gave: readers that take no lock and a channel that
 * survives killed writers); ANON is refused with ACH_ENOTSUP (a nerve
 * channel is always a named file). */
enum ach_map {
    ACH_MAP_DEFAULT = 0,
    ACH_MAP_ANON = 1,
    ACH_MAP_USER = 2,
    ACH_MAP_KERNEL = 3
};

/* Opaque: on nerve, the library's per-handle state. */
struct ach_header;

/* Options of ach_open(). */
struct ach_attr {
    union {
        struct {
            union {
                int map_anon ACH_DEPRECATED;
                enum ach_map map;
            };
            struct ach_header *shm;
        };
        uint64_t reserved_size[8];
    };
};
typedef struct ach_attr ach_attr_t;

/* Options of ach_create(). */
struct ach_create_attr {
    union {
        struct {
            union {
                int map_anon;
                enum ach_map map;
            };
            struct ach_header *shm;
            clockid_t clock;
            unsigned int truncate : 1;  /* replace an existing channel */
            unsigned int set_clock : 1; /* use `clock` for timeouts */
        };
        uint64_t reserved[16];
    };
};
typedef struct ach_create_attr ach_create_attr_t;

struct ach_channel_vtab;

/* A handle on a channel, filled by ach_open(). 128 bytes. */
typedef struct ach_channel {
    union {
        struct {
            struct ach_header *shm; /* nerve: the library's handle state */
            size_t len;             /* bytes of the channel file */
            int fd;                 /* descriptor of the channel file */
            union {
                uint64_t seq_num; /* last sequence number read */
                achk_opt_t k_opts;
            };
            size_t next_index;
            enum ach_map map;
            clockid_t clock;              /* clock of ach_get() timeouts */
            volatile sig_atomic_t cancel; /* set by ach_cancel() */
            const struct ach_channel_vtab *vtab;
        };
        uint64_t reserved[16];
    };
} ach_channel_t;

/* Options of ach_cancel(). */
typedef struct ach_cancel_attr {
    union {
        struct {
            int async_unsafe; /* 1: not called from a signal handler */
        };
        int64_t reserved[8];
    };
} ach_cancel_attr_t;

/* ---- attributes ------------------------------------------------------- */

void ach_attr_init(ach_attr_t *attr);
enum ach_status ach_attr_set_shm(ach_attr_t *attr, struct ach_header *shm);

void ach_create_attr_init(ach_create_attr_t *attr);
enum ach_status ach_create_attr_set_clock(ach_create_attr_t *attr,
                                          clockid_t clock);
enum ach_status ach_create_attr_set_map(ach_create_attr_t *attr,
                                        enum ach_map map);
enum ach_status ach_create_attr_set_truncate(ach_create_attr_t *attr,
                                             int truncate);
enum ach_status ach_create_attr_get_shm(ach_create_attr_t *attr,
                                        struct ach_header **shm);

void ach_cancel_attr_init(ach_cancel_attr_t *attr);

/* ---- channels --------------------------------------------------------- */

/* Create channel `channel_name` holding `frame_cnt` frames of nominal size
 * `frame_size` (0: the defaults above); any frame up to frame_cnt *
 * frame_size bytes fits. attr may be NULL. ACH_EEXIST if it exists (unless
 * truncate). */
enum ach_status ach_create(const char *channel_name, size_t frame_cnt,
                           size_t frame_size, ach_create_attr_t *attr);

/* Open a handle on a channel (read and write where permitted, else read
 * only). attr may be NULL. */
enum ach_status ach_open(ach_channel_t *chan, const char *channel_name,
                         ach_attr_t *attr);

/* Copy a frame into buf (size bytes) and store its length in *frame_size.
 * Options: ACH_O_WAIT, ACH_O_LAST, ACH_O_COPY, ACH_O_RELTIME. Returns
 * ACH_OK, ACH_MISSED_FRAME (frames were skipped), ACH_STALE_FRAMES
 * (nothing new), ACH_OVERFLOW (buf too small: *frame_size is the size
 * needed and the frame is not consumed), ACH_TIMEOUT, ACH_CANCELED,
 * ACH_CORRUPT, ACH_EINVAL. `abstime` is on the channel's clock
 * (ach_channel_clock()), relative with ACH_O_RELTIME, NULL for no bound. */
enum ach_status ach_get(ach_channel_t *chan, void *buf, size_t size,
                        size_t *frame_size,
                        const struct timespec *ACH_RESTRICT abstime,
                        int options);

/* Append buf[0..len) as one frame (len > 0). ACH_OVERFLOW if it is larger
 * than the channel's data ring; ACH_EACCES on a read-only handle. */
enum ach_status ach_put(ach_channel_t *chan, const void *buf, size_t len);

/* As ach_get()/ach_put(), with a caller-supplied transfer function. */
enum ach_status ach_xget(ach_channel_t *chan, ach_get_fun transfer, void *cx,
                         void **pobj, size_t *frame_size,
                         const struct timespec *ACH_RESTRICT abstime,
                         int options);
enum ach_status ach_xput(ach_channel_t *chan, ach_put_fun transfer, void *cx,
                         const void *obj, size_t len);

/* Skip every frame now in the channel: the next get sees only newer ones. */
enum ach_status ach_flush(ach_channel_t *chan);

/* Close the handle. */
enum ach_status ach_close(ach_channel_t *chan);

/* Wake a waiting ach_get() on this handle with ACH_CANCELED; it stays
 * cancelled until chan->cancel is cleared. Safe in a signal handler. attr
 * may be NULL. */
enum ach_status ach_cancel(ach_channel_t *chan, const ach_cancel_attr_t *attr);

/* Change the channel's permission bits. */
enum ach_status ach_chmod(ach_channel_t *chan, mode_t mode);

/* Remove channel `name`; open handles keep working. */
enum ach_status ach_unlink(const char *name);

enum ach_status ach_channel_fd(const struct ach_channel *channel,
                               int *file_descriptor);
enum ach_status ach_channel_map(const struct ach_channel *channel,
                                enum ach_map *map);
enum ach_status ach_channel_clock(const struct ach_channel *channel,
                                  clockid_t *clock);

/* ---- messages --------------------------------------------------------- */

/* The status's name, e.g. "ACH_OK" (5 is "ACH_STALE_FRAMES"). */
const char *ach_result_to_string(ach_status_t result);

/* A line about the calling thread's last failure (an empty string if
 * none). */
const char *ach_errstr(void);

/* Print the channel's facts to stderr; `shm` is a handle's `shm`. */
void ach_dump(struct ach_header *shm);

/* Print the library's name and version to stdout (Ach's tools call it). */
void ach_print_version(const char *name);

#ifdef __cplusplus
}
#endif

#endif
