/* Ach compatibility (nerve): status codes, masks and get options.
 *
 * Part of nerve's drop-in for the Ach C API (include/ach.h, docs/ach.md).
 * Written from Ach's documented interface: the names, numeric values and
 * meanings below are Ach's, so that programs written for Ach compile
 * unchanged. Nothing here is nerve's own API; new code should use
 * <nerve/nerve.h>. */
#ifndef ACH_GENERIC_H
#define ACH_GENERIC_H

#include <stddef.h>
#include <time.h>

#ifdef __cplusplus
extern "C" {
#endif

#ifdef __GNUC__
#define ACH_WARN_UNUSED __attribute__((warn_unused_result))
#else
#define ACH_WARN_UNUSED
#endif

/* What an Ach call did. Values are Ach's (0..19). */
typedef enum ach_status {
    ACH_OK = 0,             /* success */
    ACH_OVERFLOW = 1,       /* buffer too small for the frame, or frame too
                               large for the channel */
    ACH_INVALID_NAME = 2,   /* bad channel name */
    ACH_BAD_SHM_FILE = 3,   /* the file is not a usable channel */
    ACH_FAILED_SYSCALL = 4, /* a system call failed */
    ACH_EAGAIN = 5,         /* nothing new (alias ACH_STALE_FRAMES) */
    ACH_MISSED_FRAME = 6,   /* frames were skipped to get this one */
    ACH_TIMEOUT = 7,        /* the wait timed out */
    ACH_EEXIST = 8,         /* channel already exists */
    ACH_ENOENT = 9,         /* no such channel */
    ACH_CLOSED = 10,        /* unused (kept for the numbering) */
    ACH_BUG = 11,           /* internal error */
    ACH_EINVAL = 12,        /* invalid argument */
    ACH_CORRUPT = 13,       /* channel memory is inconsistent */
    ACH_BAD_HEADER = 14,    /* invalid header */
    ACH_EACCES = 15,        /* permission denied */
    ACH_CANCELED = 16,      /* a wait was cancelled by ach_cancel() */
    ACH_EFAULT = 17,        /* bad address */
    ACH_EINTR = 18,         /* interrupted (internal; never returned) */
    ACH_ENOTSUP = 19        /* not supported */
} ach_status_t;

#define ACH_STALE_FRAMES ACH_EAGAIN
#define ACH_LOCKED ACH_EAGAIN

/* One bit per status, for matching a status against a set. */
#define ACH_STATUS_MASK(r) (1 << (r))
/* Older spelling of the same macro. */
#define ACH_MASK_FROM_STATUS(r) ACH_STATUS_MASK(r)

enum ach_mask {
    ACH_MASK_OK = ACH_STATUS_MASK(ACH_OK),
    ACH_MASK_OVERFLOW = ACH_STATUS_MASK(ACH_OVERFLOW),
    ACH_MASK_INVALID_NAME = ACH_STATUS_MASK(ACH_INVALID_NAME),
    ACH_MASK_BAD_SHM_FILE = ACH_STATUS_MASK(ACH_BAD_SHM_FILE),
    ACH_MASK_FAILED_SYSCALL = ACH_STATUS_MASK(ACH_FAILED_SYSCALL),
    ACH_MASK_EAGAIN = ACH_STATUS_MASK(ACH_EAGAIN),
    ACH_MASK_MISSED_FRAME = ACH_STATUS_MASK(ACH_MISSED_FRAME),
    ACH_MASK_TIMEOUT = ACH_STATUS_MASK(ACH_TIMEOUT),
    ACH_MASK_EEXIST = ACH_STATUS_MASK(ACH_EEXIST),
    ACH_MASK_ENOENT = ACH_STATUS_MASK(ACH_ENOENT),
    ACH_MASK_CLOSED = ACH_STATUS_MASK(ACH_CLOSED),
    ACH_MASK_BUG = ACH_STATUS_MASK(ACH_BUG),
    ACH_MASK_EINVAL = ACH_STATUS_MASK(ACH_EINVAL),
    ACH_MASK_CORRUPT = ACH_STATUS_MASK(ACH_CORRUPT),
    ACH_MASK_BAD_HEADER = ACH_STATUS_MASK(ACH_BAD_HEADER),
    ACH_MASK_EACCES = ACH_STATUS_MASK(ACH_EACCES),
    ACH_MASK_CANCELED = ACH_STATUS_MASK(ACH_CANCELED),
    ACH_MASK_EFAULT = ACH_STATUS_MASK(ACH_EFAULT),
    ACH_MASK_EINTR = ACH_STATUS_MASK(ACH_EINTR),
    ACH_MASK_ENOTSUP = ACH_STATUS_MASK(ACH_ENOTSUP),
    ACH_MASK_NONE = 0,
    ACH_MASK_ALL = (int)0xffffffffu
};

#define ACH_MASK_STALE_FRAMES ACH_MASK_EAGAIN
#define ACH_MASK_LOCKED ACH_MASK_EAGAIN

typedef enum ach_mask ach_mask_t;

/* The mask bit of `status`. (Inline, as in Ach.) */
static inline int ach_status_mask(enum ach_status status)
{
    return ACH_STATUS_MASK(status);
}

/* 1 if `status` is one of the statuses whose bits are set in `mask`. */
static inline int ach_status_match(enum ach_status status, int mask)
{
    return (ACH_STATUS_MASK(status) & mask) ? 1 : 0;
}

/* Options of ach_get(). The zero-valued names spell out the defaults:
 * next unseen frame (FIRST), no waiting (NONBLOCK), absolute timeout on
 * the channel's clock (ABSTIME). */
typedef enum {
    ACH_O_NONBLOCK = 0x00,
    ACH_O_FIRST = 0x00,
    ACH_O_ABSTIME = 0x00,
    ACH_O_WAIT = 0x01,   /* wait for an unseen frame (or the timeout) */
    ACH_O_LAST = 0x02,   /* take the newest frame, skipping older ones */
    ACH_O_COPY = 0x04,   /* copy the newest frame even if already seen */
    ACH_O_RELTIME = 0x08 /* the timeout is relative to now */
} ach_get_opts_t;

/* Longest channel name: names are shorter than this. */
#define ACH_CHAN_NAME_MAX 64ul

/* Transfer callbacks of ach_xget() / ach_xput(). */
typedef enum ach_status ach_get_fun(void *cx, void **obj_dst,
                                    const void *chan_src, size_t frame_size);
typedef enum ach_status ach_put_fun(void *cx, void *chan_dst,
                                    const void *obj_src);

/* Kernel-module get options (kept for the size of ach_channel_t; unused
 * on nerve). `reltime` has struct timespec's layout, spelled out so that
 * the header also compiles in strict ISO C99. */
typedef struct achk_opt {
    int options;
    struct {
        time_t tv_sec;
        long tv_nsec;
    } reltime;
} achk_opt_t;

#ifdef __cplusplus
}
#endif

#endif
