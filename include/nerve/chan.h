/* Channels: named rings of messages in POSIX shared memory.
 *
 * A channel is one file, /dev/shm/nerve.NAME, holding a header, an index ring
 * of `slots` fixed-size entries and a data ring of `data_size` bytes
 * (docs/design/0001-shm-layout.md is its specification). Any number of
 * writers append messages; the oldest are overwritten when either ring is
 * full, and a put never waits for a reader. Any number of readers each keep
 * their own cursor in process memory: a reader maps the channel read-only,
 * takes no lock, copies (or views) a message and then checks that no writer
 * overwrote it meanwhile.
 *
 * A second small file, /dev/shm/nerve-bell.NAME, with the channel's owner,
 * group and mode, holds the waiting readers' wake lease, so that a put
 * makes no system call when no reader has waited in the last ~100 ms (a
 * killed reader's lease ends by itself), and at most one bounded wake-up
 * call otherwise. It is the only thing a reader ever writes, and it holds
 * no message data; only processes that may write the channel may write
 * it. A reader that may not write it waits by polling
 * every millisecond, unless the channel was created with
 * NERVE_C_WAKE_ALWAYS.
 *
 * /dev/shm is writable by every local user, so nothing found there is
 * trusted: every call opens files there without blocking and without
 * following symlinks, and anything but a regular file under a channel's
 * name (a FIFO, socket, device, directory or symlink) is NERVE_ENOTCHAN.
 * Both files are created unnamed and linked into place only when complete,
 * never replacing a file someone else put there. A bell that is not a
 * regular file of the channel's owner, group and mode with one link and
 * the bell's size and magic is never mapped: the channel then works
 * without it (waiting readers poll) and nerve_chan_check() says why.
 *
 * Each open handle holds one file descriptor (the channel file) for its
 * lifetime; the bell's descriptor is closed once it is mapped. Opening
 * more handles than RLIMIT_NOFILE allows fails with NERVE_EMFILE.
 *
 * Every call below that takes a handle and returns a status returns
 * NERVE_EBADF when the handle is NULL (nerve_chan_close() ignores NULL);
 * a handle that was closed must not be used at all.
 *
 * Times are CLOCK_MONOTONIC nanoseconds (nerve_clock_now_ns());
 * nerve_clock_to_realtime_ns() converts one to wall-clock time for display.
 * Timeouts are int64_t nanoseconds: relative, or an absolute
 * CLOCK_MONOTONIC time with NERVE_F_ABSTIME; NERVE_FOREVER waits without
 * bound and 0 does not wait at all. */
#ifndef NERVE_CHAN_H
#define NERVE_CHAN_H

#include <stddef.h>
#include <stdint.h>

#include "clock.h"
#include "common.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The version of the bytes in a channel file. Opening a file of another
 * layout version fails with NERVE_EVERSION. */
#define NERVE_LAYOUT_VERSION 2

/* Longest channel name, in bytes. Names use [A-Za-z0-9_.-], do not start
 * with '.', and are case-sensitive. */
#define NERVE_NAME_MAX 200
/* Longest type name and encoding recorded in the metadata, in bytes. */
#define NERVE_TYPE_MAX 255
#define NERVE_ENCODING_MAX 63
/* Largest schema text, in bytes. */
#define NERVE_SCHEMA_MAX (1u << 20)
/* Most channels one nerve_chan_wait_any() call waits on. */
#define NERVE_WAIT_MAX 64

/* Timeout that never expires. No subtraction of two times produces it, so
 * a computed `deadline - now` that came out negative means "already
 * passed" (one try, then NERVE_ETIMEDOUT), never "forever". */
#define NERVE_FOREVER INT64_MIN

/* An open channel; one per nerve_chan_open(). Opaque. */
typedef struct nerve_chan nerve_chan;

/* ---- flags ------------------------------------------------------------ */

/* nerve_chan_open(): */
#define NERVE_O_READ 0x0u  /* read-only: maps the channel read-only */
#define NERVE_O_WRITE 0x1u /* read and write: needs write permission */
#define NERVE_O_LAZY                                                           \
    0x2u /* do not pre-fault the mapping: the open builds no page tables
            for the data ring (a page is faulted in when first touched), so
            opening a large ring is cheap and reading few of its messages,
            or copying them out with nerve_chan_view_write(), touches few
            pages; not for real-time readers, whose first reads would fault */

/* nerve_chan_create(), in nerve_chan_opts.flags: */
#define NERVE_C_EXIST_OK 0x1u /* reuse an existing channel of equal geometry */
#define NERVE_C_WAKE_ALWAYS                                                    \
    0x2u /* wake waiting readers on every put (one
                                    futex system call per put), so that
                                    readers who may not write the channel
                                    (and its bell) wait without polling */
#define NERVE_C_REMOVE_UNUSED                                                  \
    0x4u /* mark the channel "remove when unused": nerve_chan_remove_unused()
            and nerve_chan_sweep_unused() may remove it once no handle of
            any process has it open (kill -9 included); made by rmw_nerve */

/* Which message a get or view takes (the low two bits of flags). */
#define NERVE_GET_NEXT                                                         \
    0x0u                      /* next unseen after the cursor (or the oldest
                                 still present if it was overwritten) */
#define NERVE_GET_NEWEST 0x1u /* newest message */
#define NERVE_GET_SEQ 0x2u    /* the message whose sequence number is `arg` */
#define NERVE_GET_AT                                                           \
    0x3u /* newest message committed at or before time
                                 `arg` (CLOCK_MONOTONIC ns) among those
                                 committed when the call began; never
                                 waits */
#define NERVE_GET_MASK 0x3u

/* Modifiers. */
#define NERVE_F_WAIT 0x10u    /* wait up to the timeout for a message */
#define NERVE_F_ABSTIME 0x20u /* timeout is an absolute CLOCK_MONOTONIC time */
#define NERVE_F_REPEAT                                                         \
    0x40u /* NEWEST: return the newest message even if
                                 this handle already returned it */

/* ---- options and results ---------------------------------------------- */

/* How these structs grow without breaking programs built against older
 * headers (docs/abi.md; the liburing and libuv patterns):
 *   - an input struct (nerve_chan_opts) begins with `size`, which the
 *     caller sets to sizeof the struct it knows; fields are only appended,
 *     the library reads `size` bytes and rejects a non-zero tail it does
 *     not know;
 *   - an output struct (the library fills it) ends with reserved words
 *     that the library sets to zero; a new field takes the place of
 *     reserved words, so the struct's size never changes within an ABI
 *     version (NERVE_ABI_VERSION) and an older program just ignores it.
 * tests/abi records every public struct's size at each ABI version. */

/* Options for nerve_chan_create(). Initialise with NERVE_CHAN_OPTS_INIT (or
 * set .size = sizeof(struct nerve_chan_opts) and zero the rest): a zero
 * field means its default. Fields are only ever appended; the library reads
 * `size` bytes of it and rejects a non-zero tail it does not know. */
struct nerve_chan_opts {
    uint32_t size;        /* sizeof(struct nerve_chan_opts) */
    uint32_t flags;       /* NERVE_C_* */
    uint64_t slots;       /* index ring entries; default 1024 */
    uint64_t data_size;   /* data ring bytes, rounded up to pages;
                               default 1 MiB; also the largest message */
    uint32_t mode;        /* permission bits; default 0644 */
    uint32_t reserved0;   /* must be 0 */
    const char *type;     /* type name, e.g. "sensor_msgs/msg/Imu"; NULL;
                               printable UTF-8: no C0, DEL or C1
                               control character */
    const char *encoding; /* "raw", "cdr", "ros1msg", "json", ...; NULL;
                               printable UTF-8, as type */
    const char *schema;   /* schema: any bytes but NUL (need not be
                               NUL-terminated) */
    uint64_t schema_len;  /* bytes of schema */
};

#define NERVE_CHAN_OPTS_INIT                                                   \
    {                                                                          \
        sizeof(struct nerve_chan_opts), 0, 0, 0, 0, 0, NULL, NULL, NULL, 0     \
    }

/* What a put did. */
struct nerve_put_info {
    uint64_t seq;       /* sequence number given to the message */
    int64_t time_ns;    /* its commit time, CLOCK_MONOTONIC ns */
    uint32_t recovered; /* 1 if the writer lock was recovered from a writer
                           that died holding it */
    uint32_t reserved0;
    uint64_t reserved[2]; /* zero; for fields added later (docs/abi.md) */
};

/* What a get or view delivered. */
struct nerve_get_info {
    uint64_t seq;         /* sequence number of the message */
    uint64_t missed;      /* NEXT/NEWEST: messages lost or skipped since
                             the cursor (see "missed" below) */
    int64_t time_ns;      /* commit time, CLOCK_MONOTONIC ns */
    uint64_t len;         /* message size; on NERVE_EMSGSIZE the size needed */
    uint64_t reserved[2]; /* zero; for fields added later (docs/abi.md) */
};

/* A zero-copy view of a message inside the ring. `data` stays mapped while
 * the channel is open but a writer may overwrite it at any time: after
 * using the bytes, call nerve_chan_view_check() and discard the result of
 * the use unless it returns 0. */
struct nerve_view {
    const void *data; /* first byte; contiguous even across the wrap */
    struct nerve_get_info info;
};

/* Channel facts for tools, read without any lock. Counters are exact for a
 * channel whose writers never died; a writer killed between its commit and
 * its statistics update leaves bytes_total short by that message. */
struct nerve_stats {
    uint64_t slots;          /* index ring entries */
    uint64_t data_size;      /* data ring bytes (largest message) */
    uint64_t file_size;      /* bytes of the channel file */
    uint64_t head_seq;       /* newest sequence number (= messages published) */
    uint64_t tail_seq;       /* oldest sequence number still readable;
                                head_seq + 1 when none is */
    int64_t newest_time_ns;  /* commit time of head_seq; 0 when none */
    uint64_t bytes_total;    /* payload bytes published since creation */
    uint64_t waiters;        /* readers announced as waiting (a hint) */
    int64_t created_ns;      /* creation time, CLOCK_REALTIME ns */
    uint32_t layout_version; /* NERVE_LAYOUT_VERSION of the file */
    uint32_t mode;           /* permission bits of the file */
    uint32_t uid, gid;       /* owner of the file */
    uint32_t creator_version; /* NERVE_VERSION_NUMBER of the creator */
    /* The writer lock, as its word read without the lock (a snapshot): */
    uint32_t lock_owner_tid; /* thread id of the holder, as the writers' PID
                                namespace numbers it; 0: free (since 1.1) */
    uint32_t lock_flags;     /* NERVE_LOCK_* (since 1.1) */
    uint32_t create_flags;   /* NERVE_C_WAKE_ALWAYS, NERVE_C_REMOVE_UNUSED
                                as the channel was made (was reserved0) */
    uint32_t state_flags;    /* NERVE_STAT_* (since 1.2) */
    uint32_t reserved0;
    uint64_t reserved[6]; /* zero; for fields added later (docs/abi.md) */
};

/* nerve_stats.state_flags: */
#define NERVE_STAT_SUPERSEDED                                                  \
    0x1u /* a writer grew the channel: its name names a larger successor     \
            (nerve_chan_grow()); readers follow it when they have read all */

/* nerve_stats.lock_flags: */
#define NERVE_LOCK_OWNER_DIED                                                  \
    0x1u                        /* a holder died with it; the next writer
                                      recovers it (lock_owner_tid may be 0) */
#define NERVE_LOCK_WAITERS 0x2u /* writers are waiting for it */

/* Metadata recorded at creation. Strings are NUL-terminated copies owned by
 * the handle, valid until nerve_chan_close(); empty when not set. type and
 * encoding are always valid UTF-8 (a file holding anything else does not
 * open), but a file made without this library may hold control characters
 * in them: escape them before printing them to a terminal. The schema is
 * bytes. */
struct nerve_meta {
    const char *type;
    const char *encoding;
    const char *schema; /* NUL-terminated; schema_len bytes before the NUL */
    uint64_t schema_len;
    uint64_t reserved[4]; /* zero; for fields added later (docs/abi.md) */
};

/* ---- channel lifecycle (setup phase) ---------------------------------- */

/* Create channel `name` with `opts` (NULL: all defaults). The file appears
 * fully initialised or not at all, and a creator killed at any point
 * leaves no temporary file (killed between linking the bell and the
 * channel, an orphaned bell, which nerve_chan_check() reports and the next
 * create or unlink of the name removes). Returns 0, or NERVE_EINVAL (bad
 * name, options or metadata: a type or encoding that is not valid UTF-8 or
 * holds a control character (C0, DEL or C1), a NUL in the schema),
 * NERVE_ENAMETOOLONG, NERVE_EEXIST (the name is taken: by a channel, and
 * NERVE_C_EXIST_OK not given, or by any other file),
 * NERVE_EMISMATCH (exists with other slots, size or metadata),
 * NERVE_ENOTCHAN (NERVE_C_EXIST_OK, and the name holds no channel),
 * NERVE_ENOENT (NERVE_C_EXIST_OK, and the channel found was removed as
 * unused, nerve_chan_remove_unused(), each of 16 times it was made again),
 * NERVE_EACCES, NERVE_ENOSPC, NERVE_ENOMEM, NERVE_EMFILE, NERVE_ENFILE.
 * Thread: any.  Blocking: file system calls (and up to 200 ms while a bell
 * without a channel is at the name).  RT: not safe (allocates, system
 * calls).  Signal: not safe. */
NERVE_NODISCARD NERVE_API int
nerve_chan_create(const char *name, const struct nerve_chan_opts *opts);

/* Remove channel `name` (the channel file, then its bell). Handles already
 * open keep working until closed. Only a regular file is removed: a FIFO,
 * socket, directory or symlink under the name is NERVE_ENOTCHAN and stays.
 * A bell this user may not remove (another user's, in the sticky /dev/shm)
 * stays too, and is never used by a channel of this user. With no channel
 * under the name, a bell of this user's left alone (an orphan of a create
 * or unlink killed between its two steps) is removed once it has stayed
 * alone for 200 ms, and the answer is still NERVE_ENOENT. Returns 0, or
 * NERVE_ENOENT, NERVE_EINVAL, NERVE_ENAMETOOLONG, NERVE_EACCES,
 * NERVE_ENOTCHAN.
 * Thread: any.  Blocking: file system calls (and up to 200 ms while a
 * bell without a channel is there).  RT: not safe.  Signal: not safe. */
NERVE_NODISCARD NERVE_API int nerve_chan_unlink(const char *name);

/* Remove channel `name` if it was made with NERVE_C_REMOVE_UNUSED and no
 * handle of any process has it open (each open handle holds a shared OFD
 * lock on a byte of the file; a killed process's go with it). The file
 * removed is the one found unused: if another file was renamed over the
 * name meanwhile, nothing is removed (NERVE_ENOENT). An opener that raced
 * the removal finds the file gone and opens the name afresh (NERVE_ENOENT
 * if nothing is there). Returns 0 (removed, with its bell), NERVE_EBUSY (a
 * handle is open), NERVE_EPERM (not made with NERVE_C_REMOVE_UNUSED),
 * NERVE_ENOENT, NERVE_ENOTCHAN (not a channel), NERVE_EACCES (removal needs
 * write permission), NERVE_EINVAL, NERVE_ENAMETOOLONG, NERVE_ENOSYS (no OFD
 * locks: Linux before 3.15).
 * Thread: any.  Blocking: file system calls.  RT: not safe.  Signal: not
 * safe. */
NERVE_NODISCARD NERVE_API int nerve_chan_remove_unused(const char *name);

/* nerve_chan_remove_unused() on every channel whose name starts with
 * `prefix` ("" for all): collects what killed processes left. Channels in
 * use, without the flag or not this user's to remove are skipped silently.
 * *removed (may be NULL) gets the number removed. Returns 0, NERVE_EINVAL
 * (prefix NULL), or the error of reading the directory.
 * Thread: any.  Blocking: file system calls.  RT: not safe.  Signal: not
 * safe. */
NERVE_NODISCARD NERVE_API int nerve_chan_sweep_unused(const char *prefix,
                                                      unsigned *removed);

/* Change the permission bits of channel `name` to `mode` (<= 0777), and
 * its bell's to the same bits (a bell is used only while its mode equals
 * the channel's). Neither file is reached through a symlink. Returns 0, or
 * NERVE_ENOENT, NERVE_EINVAL, NERVE_ENAMETOOLONG, NERVE_EACCES (not the
 * owner), NERVE_ENOTCHAN (not a regular file).
 * Thread: any.  Blocking: file system calls.  RT: not safe.  Signal: not
 * safe. */
NERVE_NODISCARD NERVE_API int nerve_chan_chmod(const char *name, uint32_t mode);

/* Open channel `name` for reading (NERVE_O_READ) or reading and writing
 * (NERVE_O_WRITE), either with NERVE_O_LAZY or not, and store the handle
 * in *out. Never blocks on what is in /dev/shm; the header is validated
 * before anything else is read. The handle holds one file descriptor
 * until closed. Returns 0, or
 * NERVE_ENOENT, NERVE_EINVAL, NERVE_ENAMETOOLONG, NERVE_EACCES,
 * NERVE_ENOTCHAN (not a nerve channel, or not a regular file),
 * NERVE_EVERSION (other layout version), NERVE_EABI (other platform),
 * NERVE_ETRUNC (file shorter than its header says), NERVE_ECORRUPT
 * (inconsistent header, a sparse file, or a type or encoding that is not
 * valid UTF-8), NERVE_ENOMEM, NERVE_EMFILE, NERVE_ENFILE, NERVE_EXDEV
 * (NERVE_O_WRITE while a writer handle from another PID namespace is
 * open: the writer lock's priority inheritance names threads by TID, so
 * the writers that have a channel open at once share a PID namespace;
 * readers may be anywhere. Once no writer of that namespace has it open,
 * the next writer open from any namespace takes the channel over, see
 * docs/containers.md); another system error as -errno (see errors.h).
 * Thread: any.  Blocking: file system calls; a writer open may wait up to
 * a second behind another writer's open of the channel.  RT: not safe.
 * Signal: not safe. */
NERVE_NODISCARD NERVE_API int nerve_chan_open(const char *name, uint32_t flags,
                                              nerve_chan **out);

/* Close a handle and unmap the channel. Returns 0 (NULL is ignored), or
 * NERVE_EBUSY: a reservation is open and the calling thread is not the
 * reserving one, which alone can release the writer lock; nothing was
 * closed, and the reserving thread can still commit or abort (then close
 * again). An open reservation of the calling thread is aborted.
 * Thread: no other call on this handle may run.  Blocking: no.  RT: not
 * safe (munmap).  Signal: not safe. */
NERVE_API int nerve_chan_close(nerve_chan *c);

/* Growth: a channel's sizes are fixed at creation, so a channel grows by
 * being superseded. nerve_chan_grow() makes a successor under the same name
 * with at least `data_size` data ring bytes and `slots` index slots (the
 * current ones where larger), holding every message still present with its
 * sequence number and commit time, the same metadata, mode and bell; it
 * renames the successor over the name and marks the old channel superseded,
 * waking its waiters. *c then is a writable handle on the successor. If
 * another writer grew the channel first, *c follows that one instead (grow
 * again if it is still too small). Puts and reservations on a superseded
 * channel return NERVE_ESUPERSEDED; so do NEXT and NEWEST gets, waiting or
 * not, once the reader has read every message of it. Then
 * nerve_chan_follow() reopens the name, with the same access, and keeps
 * the cursor: the next NEXT get returns the next message, or the oldest
 * present with the number missed, as always (if the name now names a
 * channel that does not continue the sequence, a new one made after a
 * removal, the cursor starts at its oldest message). nerve_chan_follow()
 * returns 0 with *c unchanged while the name still names c's file.
 * nerve_chan_renamed() answers 1 when the name names another file, 0 when
 * it names c's, NERVE_ENOENT when it names none, for readers that want to notice a successor
 * whose grower died before marking the old channel (the next writer of the
 * old channel marks it; a reader of a channel nobody writes any more can
 * ask, say once a second while idle). Returns 0 or an error (grow:
 * NERVE_EROFS, NERVE_EBUSY with a reservation open, NERVE_EPERM when the
 * name may not be replaced by this user, NERVE_ENOSPC, the open errors;
 * on an error *c is unchanged and still usable). See GROWTH in
 * src/chan_open.c.
 * Thread: no other call on this handle may run.  Blocking: file system
 * calls; grow copies the ring under the writer lock.  RT: not safe.
 * Signal: not safe. */
NERVE_NODISCARD NERVE_API int
nerve_chan_grow(nerve_chan **c, uint64_t data_size, uint64_t slots);
NERVE_NODISCARD NERVE_API int nerve_chan_follow(nerve_chan **c);
NERVE_API int nerve_chan_renamed(const nerve_chan *c);

/* The handle's channel name (without the file prefix).
 * Thread: any.  Blocking: no.  RT: safe.  Signal: safe. */
NERVE_API const char *nerve_chan_name(const nerve_chan *c);

/* Metadata recorded at creation, copied at open. Returns 0.
 * Thread: any.  Blocking: no.  RT: safe.  Signal: safe. */
NERVE_NODISCARD NERVE_API int nerve_chan_meta(const nerve_chan *c,
                                              struct nerve_meta *meta);

/* ---- writing ---------------------------------------------------------- */

/* Append a copy of buf[0..len) as one message. `timeout_ns` bounds the wait
 * for the writer lock (NERVE_FOREVER, 0 to try once, relative or with
 * NERVE_F_ABSTIME absolute); readers never make a put wait. Returns 0 and
 * fills *info (may be NULL), or NERVE_EROFS (read-only handle),
 * NERVE_EMSGSIZE (len > data_size), NERVE_ETIMEDOUT (lock not acquired; a
 * timeout already passed tries once), NERVE_EBUSY (this handle holds a
 * reservation), NERVE_EPERM (another thread holds this handle's
 * reservation), NERVE_EDEADLK (the calling thread holds a reservation on
 * another handle of the channel), NERVE_ECORRUPT (ring state, or a lock
 * word the kernel rejects: nerve check --repair), NERVE_ENOSYS (no robust
 * PI futexes), NERVE_EINVAL. A lock word naming a thread that does not
 * exist is taken over as from a dead owner (info->recovered).
 * Thread: one caller per handle; many handles and processes may put at
 * once.  Blocking: only on the writer lock (a contended lock: a caller
 * that is not real-time spins, then yields, up to 20 us before it sleeps; a
 * SCHED_FIFO/RR/DEADLINE caller sleeps at once, lending its priority to
 * the holder).  RT: safe (no allocation; one memcpy; futex only when the
 * lock is contended, and one wake of at most 8 sleepers, after unlocking,
 * while a reader's wake lease runs or with NERVE_C_WAKE_ALWAYS).
 * Signal: not safe. */
NERVE_NODISCARD NERVE_API int nerve_chan_put(nerve_chan *c, const void *buf,
                                             size_t len, int64_t timeout_ns,
                                             struct nerve_put_info *info,
                                             uint32_t flags);

/* Reserve `len` bytes in the ring for a message that the caller fills in
 * place, and store their address in *ptr (contiguous even across the wrap,
 * 64-byte aligned). The writer lock is held until nerve_chan_commit() or
 * nerve_chan_abort(); messages the reservation overlaps are already gone.
 * A reservation that is never committed (abort, close, or the process dies)
 * publishes nothing. Errors as nerve_chan_put().
 * Thread: one caller per handle.  Blocking: only on the writer lock.
 * RT: safe.  Signal: not safe. */
NERVE_NODISCARD NERVE_API int nerve_chan_reserve(nerve_chan *c, size_t len,
                                                 int64_t timeout_ns, void **ptr,
                                                 uint32_t flags);

/* Publish the first `len` bytes (at most the reserved length) of the open
 * reservation and release the writer lock. Returns 0 and fills *info (may be
 * NULL), or NERVE_EINVAL (no reservation, or len too large; the reservation
 * stays open), NERVE_EPERM (called from another thread than the reserving
 * one, which owns the lock; the reservation stays open).
 * Thread: the reserving caller.  Blocking: no.  RT: safe (futex wake only
 * when a reader waits).  Signal: not safe. */
NERVE_NODISCARD NERVE_API int nerve_chan_commit(nerve_chan *c, size_t len,
                                                struct nerve_put_info *info);

/* Drop the open reservation without publishing and release the writer
 * lock. Returns 0, or NERVE_EINVAL when there is no reservation,
 * NERVE_EPERM from another thread than the reserving one (it stays open).
 * Thread: the reserving caller.  Blocking: no.  RT: safe.  Signal: not
 * safe. */
NERVE_NODISCARD NERVE_API int nerve_chan_abort(nerve_chan *c);

/* As nerve_chan_put() and nerve_chan_commit(), but the message's commit
 * time is the caller's `time_ns` (CLOCK_MONOTONIC ns), e.g. the origin
 * time of a message mirrored from another host, clamped so that times in
 * the ring stay ordered: a time after now becomes now, and a time before
 * the previous message's (still readable) commit time becomes that time; a
 * negative time counts as 0. info->time_ns is the time recorded; compare
 * it with time_ns to see whether it was clamped. Errors as
 * nerve_chan_put() and nerve_chan_commit().
 * Thread: as nerve_chan_put() / nerve_chan_commit().  Blocking: put_at
 * only on the writer lock; commit_at no.  RT: safe.  Signal: not safe. */
NERVE_NODISCARD NERVE_API int nerve_chan_put_at(nerve_chan *c, const void *buf,
                                                size_t len, int64_t time_ns,
                                                int64_t timeout_ns,
                                                struct nerve_put_info *info,
                                                uint32_t flags);
NERVE_NODISCARD NERVE_API int nerve_chan_commit_at(nerve_chan *c, size_t len,
                                                   int64_t time_ns,
                                                   struct nerve_put_info *info);

/* The data ring's mapping: *len bytes (twice data_size: the ring is mapped
 * twice back to back) from *base, inside which every reservation and every
 * view lies. For registering the ring once with a DMA engine -- e.g.
 * cudaHostRegister(), an RDMA memory region -- so that a device copies
 * straight into reservations (one copy, no staging buffer). The mapping is
 * read-only for a read-only handle. Returns 0, or NERVE_EINVAL.
 * Thread: any.  Blocking: no.  RT: safe.  Signal: safe. */
NERVE_NODISCARD NERVE_API int nerve_chan_ring(const nerve_chan *c, void **base,
                                              uint64_t *len);

/* ---- reading ---------------------------------------------------------- */

/* Copy a message into buf[0..len). Which message: flags & NERVE_GET_MASK
 * (NEXT, NEWEST, SEQ with `arg` the sequence number, AT with `arg` the
 * time); `arg` is ignored for NEXT and NEWEST. With NERVE_F_WAIT, wait up to
 * `timeout_ns` for one to arrive (not for AT). NEXT and NEWEST move the
 * handle's cursor to the message returned; SEQ and AT do not.
 * Returns 0 and fills *info (may be NULL), or
 *   NERVE_EAGAIN        nothing new (NEXT/NEWEST), or SEQ not yet published,
 *                       or nothing at or before the time (AT);
 *   NERVE_ETIMEDOUT     waited the whole timeout;
 *   NERVE_ECANCELED     nerve_chan_cancel() was called;
 *   NERVE_EMSGSIZE      len too small: info->len is the size needed and the
 *                       cursor does not move;
 *   NERVE_EOVERWRITTEN  SEQ is older than the oldest message still present,
 *                       or AT asks for a time before it (the answer was
 *                       overwritten);
 *   NERVE_ELAPPED       writers overwrote the message on every attempt;
 *   NERVE_ECORRUPT, NERVE_EINVAL.
 * Thread: one caller per handle.  Blocking: only with NERVE_F_WAIT.
 * RT: safe (no allocation, one memcpy; futex wait only).  Signal: not safe. */
NERVE_NODISCARD NERVE_API int
nerve_chan_get(nerve_chan *c, void *buf, size_t len, int64_t arg,
               int64_t timeout_ns, struct nerve_get_info *info, uint32_t flags);

/* As nerve_chan_get() but without copying: fills *view with the message's
 * address in the ring and its info. Validate with nerve_chan_view_check()
 * after use. Returns as nerve_chan_get() (never NERVE_EMSGSIZE).
 * Thread: one caller per handle.  Blocking: only with NERVE_F_WAIT.
 * RT: safe.  Signal: not safe. */
NERVE_NODISCARD NERVE_API int nerve_chan_view(nerve_chan *c, int64_t arg,
                                              int64_t timeout_ns,
                                              struct nerve_view *view,
                                              uint32_t flags);

/* Whether the bytes of `view` are still the message it named: 0 if no
 * writer has begun to overwrite them, NERVE_ESTALE if one has (whatever was
 * read through the view must be discarded).
 * Thread: any.  Blocking: no.  RT: safe.  Signal: safe. */
NERVE_NODISCARD NERVE_API int
nerve_chan_view_check(const nerve_chan *c, const struct nerve_view *view);

/* Write the bytes of `view` to file descriptor fd at its file position,
 * copied by the kernel from the channel's file (sendfile: no copy in user
 * space, no page of the mapping touched, so a handle opened NERVE_O_LAZY
 * stays unfaulted), then validate as nerve_chan_view_check(). Returns 0 if
 * the bytes written are the message's; NERVE_ESTALE if a writer began to
 * overwrite it meanwhile (fd's position has advanced by the message's
 * length, but the bytes are not the message: the caller discards them);
 * NERVE_EINVAL for a view not of this handle; NERVE_ECORRUPT if the
 * channel file ends before the message; a write error as -errno
 * (-ENOSPC), with an unknown part written.
 * Thread: one caller per handle.  Blocking: as a write to fd.
 * RT: not safe (a system call per message).  Signal: not safe. */
NERVE_NODISCARD NERVE_API int
nerve_chan_view_write(const nerve_chan *c, const struct nerve_view *view,
                      int fd);

/* "missed" (nerve_get_info.missed), the one meaning that the C++, Python
 * and Rust bindings and the nerve command all report: the messages this
 * reader could have had and did not get. For NEXT, those after its cursor
 * that were overwritten before it read them; for NEWEST, also those it
 * skipped to take the newest. The history a handle finds when it opens is
 * not loss: a new handle's cursor is just before the oldest message
 * present (the first NEXT returns it with missed 0), and its first NEWEST
 * counts only messages committed after the open (3 messages, then open,
 * then NEWEST: message 3, missed 0; 3 more, then NEWEST: message 6,
 * missed 2).
 *
 * The handle's cursor: the sequence number of the last message NEXT or
 * NEWEST returned; before the first, the one before the oldest message
 * present at open (0 for an empty channel). nerve_chan_seek() sets it, so
 * the next NEXT returns message seq + 1 and the next NEWEST counts the
 * messages after seq that it skips as missed.
 * Thread: one caller per handle.  Blocking: no.  RT: safe.  Signal: safe. */
NERVE_API uint64_t nerve_chan_cursor(const nerve_chan *c);
NERVE_API void nerve_chan_seek(nerve_chan *c, uint64_t seq);

/* Wake every wait on this handle (nerve_chan_get/view with NERVE_F_WAIT,
 * nerve_chan_wait_any) with NERVE_ECANCELED, now and in future, until
 * nerve_chan_cancel_clear(). For clean shutdown from another thread or a
 * signal handler.
 * Thread: any.  Blocking: no.  RT: safe.  Signal: safe (one atomic store and
 * one futex wake). */
NERVE_API void nerve_chan_cancel(nerve_chan *c);
NERVE_API void nerve_chan_cancel_clear(nerve_chan *c);

/* Wait until at least one of chans[0..n) (n <= NERVE_WAIT_MAX) has a
 * message after its cursor, and set bit i of *ready for each one that has.
 * Reads nothing and moves no cursor. Returns the number of ready channels
 * (> 0), or NERVE_ETIMEDOUT, NERVE_ECANCELED (any of the handles was
 * cancelled), NERVE_EINVAL. Uses the kernel's multi-futex wait
 * (futex_waitv, Linux 5.16); older kernels fall back to 1 ms polling.
 * Thread: one caller per handle.  Blocking: yes.  RT: safe.  Signal: not
 * safe. */
NERVE_NODISCARD NERVE_API int nerve_chan_wait_any(nerve_chan *const *chans,
                                                  size_t n, int64_t timeout_ns,
                                                  uint64_t *ready,
                                                  uint32_t flags);

/* ---- facts for tools -------------------------------------------------- */

/* Fill *st from the handle without any lock. Returns 0 or NERVE_ECORRUPT.
 * Thread: any.  Blocking: no.  RT: safe.  Signal: not safe. */
NERVE_NODISCARD NERVE_API int nerve_chan_stat(const nerve_chan *c,
                                              struct nerve_stats *st);

/* The sequence numbers of the oldest message still readable (*tail;
 * *head + 1 when none is) and of the newest (*head; 0 before the first
 * put), as nerve_chan_stat() reports them, but loaded from the mapped
 * header alone: no system call (nerve_chan_stat() asks the file's owner
 * and mode with fstat) and no look at the newest message. For a reader
 * that measures its backlog at every message, e.g. to keep at most N
 * pending (a ROS 2 keep-last depth); since 1.3. Returns 0, NERVE_ELAPPED
 * (writers moved the ring between the loads on every attempt),
 * NERVE_ECORRUPT, NERVE_EBADF or NERVE_EINVAL (an output pointer NULL).
 * Thread: any.  Blocking: no.  RT: safe (two atomic loads; no system
 * call).  Signal: safe. */
NERVE_NODISCARD NERVE_API int
nerve_chan_seq_range(const nerve_chan *c, uint64_t *tail, uint64_t *head);

/* Open `name` read-only, fill *st, close. Errors as nerve_chan_open().
 * Validates what an open does but maps only the header, metadata and
 * index (never the data ring), so it is cheap to poll.
 * Thread: any.  Blocking: file system calls.  RT: not safe.  Signal: not
 * safe. */
NERVE_NODISCARD NERVE_API int nerve_chan_stat_name(const char *name,
                                                   struct nerve_stats *st);

/* Verify every invariant of the channel file that can be checked without
 * the writer lock: header, geometry, every index entry still readable (its
 * sequence number, bounds, order and times), and the writer lock's state
 * (free / held by thread T, alive / owner dead / in another PID
 * namespace). On a problem returns NERVE_ECORRUPT (or the open error) and
 * writes an explanation naming the field and why into msg[0..len) (may be
 * NULL). Returns 0 when consistent, with "ok; writer lock: STATE" in msg,
 * followed by "; bell not used (why): waiting readers poll" when the bell
 * is missing or is not the channel creator's; a lock whose owner is dead
 * is consistent (the next writer recovers it). NERVE_ENOENT with "no
 * channel, but an orphaned bell PATH is left" when only the bell is there.
 * Thread: any.  Blocking: file system calls.  RT: not safe.  Signal: not
 * safe. */
NERVE_NODISCARD NERVE_API int nerve_chan_check(const char *name, char *msg,
                                               size_t len);

/* nerve_chan_repair() flags: */
#define NERVE_REPAIR_FORCE 0x1u /* reset the lock even if its owner lives */

/* Reset the writer lock of channel `name` when the thread it names cannot
 * be alive (or, with NERVE_REPAIR_FORCE, whatever it names: only when you
 * know no writer is inside a put), marking it "owner died" so that the next
 * writer recovers it and validates the ring first. Opens the channel for
 * writing: only writers may repair. Returns 1 (reset), 0 (nothing to
 * reset), NERVE_EBUSY (the owner is alive), or an open error; writes what
 * it found and did into msg[0..len) (may be NULL).
 * Thread: any.  Blocking: file system calls.  RT: not safe.  Signal: not
 * safe. */
NERVE_NODISCARD NERVE_API int
nerve_chan_repair(const char *name, uint32_t flags, char *msg, size_t len);

/* Call fn(name, arg) for every name in /dev/shm that a channel could have
 * (nerve.NAME with a valid NAME), in no particular order, without opening
 * anything: an entry that is not a channel (a FIFO, a directory, a
 * corrupt file) is listed too, and opening it gives its error. Stop early
 * and return fn's value if it returns non-zero. Returns 0, or
 * NERVE_EACCES / NERVE_ENOENT if /dev/shm cannot be read.
 * Thread: any.  Blocking: file system calls.  RT: not safe.  Signal: not
 * safe. */
NERVE_NODISCARD NERVE_API int
nerve_chan_list(int (*fn)(const char *name, void *arg), void *arg);

/* Check a channel name: 0, NERVE_EINVAL or NERVE_ENAMETOOLONG.
 * Thread: any.  Blocking: no.  RT: safe.  Signal: safe. */
NERVE_NODISCARD NERVE_API int nerve_chan_name_check(const char *name);

/* ---- where a channel lives (since 1.1) -------------------------------- */

/* nerve_chan_path() flags: */
#define NERVE_PATH_BELL 0x1u /* the channel's bell instead of its file */
/* A buffer of this many bytes holds every path nerve_chan_path() writes. */
#define NERVE_PATH_MAX (64 + NERVE_NAME_MAX)

/* Write the path of channel `name`'s file (/dev/shm/nerve.NAME), or with
 * NERVE_PATH_BELL of its bell (/dev/shm/nerve-bell.NAME), into
 * buf[0..len), NUL-terminated. With `name` NULL, the prefix every such
 * path begins with (the path is the prefix followed by the name), for
 * tools that look for channels in /proc/PID/maps or a directory listing.
 * Nothing is opened: the channel need not exist. Returns 0, or
 * NERVE_EINVAL (bad name, buf NULL, unknown flag), NERVE_ENAMETOOLONG
 * (name too long), NERVE_EMSGSIZE (len too small; buf then holds "").
 * Thread: any.  Blocking: no.  RT: safe.  Signal: not safe. */
NERVE_NODISCARD NERVE_API int nerve_chan_path(const char *name, uint32_t flags,
                                              char *buf, size_t len);

/* The size in bytes of the file nerve_chan_create(name, opts) would make
 * (opts NULL: all defaults): the header, the metadata, the index and the
 * data ring, each rounded up to the page size (docs/design/0001-shm-
 * layout.md). This is the memory the channel commits in /dev/shm when it
 * is created, so a tool can compare it with the free space first.
 * Returns 0 with *size set, or NERVE_EINVAL (size NULL, or options
 * nerve_chan_create() refuses: slots or data size out of range, bad
 * metadata, unknown flags).
 * Thread: any.  Blocking: no.  RT: not safe (page size query).  Signal: not
 * safe. */
NERVE_NODISCARD NERVE_API int
nerve_chan_file_size(const struct nerve_chan_opts *opts, uint64_t *size);

#ifdef __cplusplus
}
#endif

#endif
