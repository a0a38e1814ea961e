/* The bridge kernel: what every nerve bridge (nerve ros2, nerve bridge,
 * nerve bridge --ros2, nerve ros1) does on the nerve side, once, so that
 * every engine and language calls the same code. The contract is
 * docs/bridge-kernel.md: which channels a bridge serves (globs), how it
 * notices them (the channel directory), how names map between channels
 * and ROS topics, what it may allocate on a peer's word (the import
 * budget), and how it avoids exporting what it imported (the own-sequence
 * guard, whose begin / commit / check are on the data path). */
#ifndef NERVE_BRIDGE_H
#define NERVE_BRIDGE_H

#include <stddef.h>
#include <stdint.h>

#include "chan.h"
#include "common.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- names: channels <-> ROS topics ------------------------------------ */

/* Longest topic nerve_topic_of_channel() writes, in bytes (without the
 * NUL): '/' and a channel name. */
#define NERVE_TOPIC_MAX (NERVE_NAME_MAX + 1)

/* The ROS topic of channel `name` (ROS 1, ROS 2 over DDS and rmw_zenoh
 * alike): '/' and the name with '.' as '/' and '-' as '_'; with `domain`
 * > 0 a leading "ros2-dDOMAIN." (rmw_nerve's channels of that domain) is
 * dropped first. Writes it NUL-terminated into buf[0..len). Returns 0, or
 * NERVE_EINVAL (name or buf NULL, not a channel name), NERVE_ENAMETOOLONG
 * (name too long), NERVE_EMSGSIZE (len too small; buf then holds "").
 * Thread: any.  Blocking: no.  RT: safe.  Signal: not safe (detail). */
NERVE_NODISCARD NERVE_API int nerve_topic_of_channel(const char *name,
                                                     uint32_t domain, char *buf,
                                                     size_t len);

/* The channel of ROS topic `topic`: leading and trailing '/' dropped,
 * '/' as '.'; with `domain` > 0, "ros2-dDOMAIN." in front (rmw_nerve's
 * channel of that topic in that domain). Writes it NUL-terminated into
 * buf[0..len). Returns 0, or NERVE_EINVAL (topic or buf NULL, the result
 * is not a channel name: empty, or a character channel names do not
 * allow), NERVE_ENAMETOOLONG (over NERVE_NAME_MAX), NERVE_EMSGSIZE (len
 * too small; buf then holds "").
 * Thread: any.  Blocking: no.  RT: safe.  Signal: not safe (detail). */
NERVE_NODISCARD NERVE_API int nerve_channel_of_topic(const char *topic,
                                                     uint32_t domain, char *buf,
                                                     size_t len);

/* ---- globs: which channels a bridge serves ----------------------------- */

/* Longest glob, in bytes. */
#define NERVE_GLOB_MAX 255

/* Check a glob of channel names: characters of channel names
 * ([A-Za-z0-9_.-]) and '*' (any run, '.' included), '?' (one character),
 * '[set]' / '[!set]' (one character of / not of the set; a-z ranges).
 * Returns 0, or NERVE_EINVAL (NULL, empty, another character, an unclosed
 * or empty '['), NERVE_ENAMETOOLONG (over NERVE_GLOB_MAX); the detail says
 * which. Thread: any.  Blocking: no.  RT: safe.  Signal: not safe. */
NERVE_NODISCARD NERVE_API int nerve_glob_check(const char *glob);

/* Whether channel name `name` matches `glob`: 1 or 0, or an error of
 * nerve_glob_check() (NERVE_EINVAL also for name NULL).
 * Thread: any.  Blocking: no.  RT: safe.  Signal: not safe. */
NERVE_NODISCARD NERVE_API int nerve_glob_match(const char *glob,
                                               const char *name);

/* ---- the channel directory and its changes ----------------------------- */

typedef struct nerve_dir nerve_dir;

/* nerve_dir_open() flags: */
#define NERVE_DIR_SCAN 0x1u /* look every NERVE_DIR_SCAN_MS, not inotify */
/* The period of the fallback scan, in milliseconds. */
#define NERVE_DIR_SCAN_MS 500

/* nerve_dir_event kinds: */
/* A channel is its name and its creation time: one removed and made again
 * is REMOVED then CREATED; one grown (nerve_chan_grow: a successor with
 * the same creation time, which readers follow) is no event. */
#define NERVE_DIR_CREATED 1 /* the channel appeared (or was there at open) */
#define NERVE_DIR_REMOVED 2 /* it went (or was made again under its name) */

struct nerve_dir_event {
    uint32_t kind;                 /* NERVE_DIR_CREATED or _REMOVED */
    uint32_t reserved;             /* zero */
    char name[NERVE_NAME_MAX + 1]; /* the channel's name */
};

/* Watch /dev/shm for channels whose names match one of globs[0..n) (n 0:
 * every channel). Every channel present now is reported by the first
 * nerve_dir_next() calls as NERVE_DIR_CREATED. inotify on /dev/shm wakes
 * the watcher; where inotify is unavailable, or with NERVE_DIR_SCAN, a
 * timer every NERVE_DIR_SCAN_MS does: either way nerve_dir_fd() becomes
 * readable and the directory is listed again and compared with what was
 * reported. Returns 0 with *out set, or NERVE_EINVAL (out NULL, globs
 * NULL with n > 0, a bad glob: the detail names it, an unknown flag),
 * NERVE_ENOMEM, NERVE_EMFILE, NERVE_ENFILE, NERVE_EACCES / NERVE_ENOENT
 * (/dev/shm cannot be read).
 * Thread: any.  Blocking: file system calls.  RT: not safe (allocates).
 * Signal: not safe. */
NERVE_NODISCARD NERVE_API int nerve_dir_open(const char *const *globs, size_t n,
                                             uint32_t flags, nerve_dir **out);

/* The file descriptor to poll for reading (POLLIN / EPOLLIN): readable
 * when a change may be waiting; then call nerve_dir_next() until it
 * returns NERVE_EAGAIN. Owned by the watcher. Returns it (>= 0), or
 * NERVE_EINVAL (d NULL).
 * Thread: any.  Blocking: no.  RT: safe.  Signal: safe. */
NERVE_NODISCARD NERVE_API int nerve_dir_fd(const nerve_dir *d);

/* 1 if the watcher is woken by inotify, 0 if by the periodic scan, or
 * NERVE_EINVAL (d NULL).
 * Thread: any.  Blocking: no.  RT: safe.  Signal: safe. */
NERVE_NODISCARD NERVE_API int nerve_dir_inotify(const nerve_dir *d);

/* The next change, without waiting: 0 with *ev filled, NERVE_EAGAIN (none
 * now), NERVE_EINVAL (d or ev NULL), NERVE_ENOMEM, or a listing error
 * (NERVE_EACCES, NERVE_ENOENT: the watcher stays usable).
 * Thread: one caller per watcher.  Blocking: file system calls.  RT: not
 * safe.  Signal: not safe. */
NERVE_NODISCARD NERVE_API int nerve_dir_next(nerve_dir *d,
                                             struct nerve_dir_event *ev);

/* Stop watching and free the watcher (NULL: nothing). Returns 0.
 * Thread: no other call on d at the same time.  Blocking: no.  RT: not
 * safe.  Signal: not safe. */
NERVE_API int nerve_dir_close(nerve_dir *d);

/* ---- the import budget ------------------------------------------------- */

typedef struct nerve_budget nerve_budget;

/* nerve_budget_admit() flags: */
#define NERVE_BUDGET_UNCOUNTED 0x1u /* a refusal is not counted (a retry) */

struct nerve_budget_stats {
    uint64_t max_channel; /* the per-channel bound (--max-channel-size) */
    uint64_t max_total;   /* the bound on all files (--max-import-total) */
    uint64_t used;        /* file bytes charged now */
    uint64_t channels;    /* channels charged now */
    uint64_t refused;     /* admissions refused (counted ones) */
    uint64_t reserved[3];
};

/* A budget: neither the data ring nor the index of one channel may be
 * larger than max_channel, and the files of all channels admitted
 * (nerve_chan_file_size(): what they commit in /dev/shm) together not
 * larger than max_total. Returns 0 with *out set, or NERVE_EINVAL (out
 * NULL, a bound 0), NERVE_ENOMEM.
 * Thread: any.  Blocking: no.  RT: not safe (allocates).  Signal: not
 * safe. */
NERVE_NODISCARD NERVE_API int
nerve_budget_open(uint64_t max_channel, uint64_t max_total, nerve_budget **out);

/* Charge channel `name` of geometry and metadata `opts` (slots and
 * data_size must be set) before creating it; admitting a name again
 * replaces its charge (a channel grown). Returns 0 (charged; *need, if
 * not NULL, the file's bytes), or a refusal: NERVE_EMSGSIZE (over
 * max_channel), NERVE_ENOSPC (over max_total with what is charged
 * already), NERVE_EINVAL (options nerve_chan_create() refuses: "nerve
 * would not create it") — counted unless NERVE_BUDGET_UNCOUNTED, nothing
 * charged, the detail says why in one line — or, not counted,
 * NERVE_EINVAL (b, name or opts NULL, not a channel name, slots or
 * data_size 0, an unknown flag), NERVE_ENAMETOOLONG (name too long),
 * NERVE_ENOMEM.
 * Thread: any (a lock inside).  Blocking: no.  RT: not safe.  Signal: not
 * safe. */
NERVE_NODISCARD NERVE_API int
nerve_budget_admit(nerve_budget *b, const char *name,
                   const struct nerve_chan_opts *opts, uint32_t flags,
                   uint64_t *need);

/* Take back the charge of channel `name` (gone, or not made). Returns 0,
 * NERVE_ENOENT (not charged: nothing to undo, so the status may be
 * ignored, as after a failed create), NERVE_EINVAL (b or name NULL).
 * Thread: any (a lock inside).  Blocking: no.  RT: not safe.  Signal: not
 * safe. */
NERVE_API int nerve_budget_release(nerve_budget *b, const char *name);

/* The bounds and counters of b into *st. Returns 0, or NERVE_EINVAL (b or
 * st NULL). Thread: any (a lock inside).  Blocking: no.  RT: not safe.
 * Signal: not safe. */
NERVE_NODISCARD NERVE_API int nerve_budget_stat(nerve_budget *b,
                                                struct nerve_budget_stats *st);

/* Free the budget (NULL: nothing). Returns 0.
 * Thread: no other call on b at the same time.  Blocking: no.  RT: not
 * safe.  Signal: not safe. */
NERVE_API int nerve_budget_close(nerve_budget *b);

/* ---- the own-sequence guard -------------------------------------------- */

/* A bridge never exports a message it imported itself, and never drops one
 * another writer put. A guard belongs to one channel and remembers the
 * sequence numbers this process committed into it, each in slot
 * seq % NERVE_OWN_N (so the last NERVE_OWN_N numbers of the channel). The
 * importer brackets each put: nerve_own_begin() before the reservation,
 * nerve_own_commit() with the committed sequence number after it, or
 * nerve_own_abort() if the put failed; the exporter asks nerve_own_check()
 * about every message it views. A channel made again under the same name
 * starts its numbers again: nerve_own_reset(). */
typedef struct nerve_own nerve_own;

#define NERVE_OWN_N 4096u /* own sequence numbers remembered per channel */
/* The longest nerve_own_check() waits for a put of this process that is
 * between its commit and its nerve_own_commit() (a stalled importer). */
#define NERVE_OWN_WAIT_NS 100000000LL

struct nerve_own_stats {
    uint64_t committed; /* nerve_own_commit() calls */
    uint64_t waited;    /* checks that waited for a put in flight */
    uint64_t late;      /* checks answered at the bound (NERVE_ETIMEDOUT) */
    uint64_t reserved[5];
};

/* A guard with nothing recorded. Returns 0 with *out set, or NERVE_EINVAL
 * (out NULL), NERVE_ENOMEM.
 * Thread: any.  Blocking: no.  RT: not safe (allocates).  Signal: not
 * safe. */
NERVE_NODISCARD NERVE_API int nerve_own_open(nerve_own **out);

/* Before a put into the guard's channel: marks a put of this process in
 * flight and sets *token for its nerve_own_commit() / nerve_own_abort().
 * Returns 0, or NERVE_EINVAL (o or token NULL).
 * Thread: any (lock-free).  Blocking: no.  RT: safe.  Signal: not safe. */
NERVE_NODISCARD NERVE_API int nerve_own_begin(nerve_own *o, uint32_t *token);

/* After the put of `token` committed sequence number `seq`: records it
 * and ends the put. Returns 0, or NERVE_EINVAL (o NULL, a token
 * nerve_own_begin() did not give).
 * Thread: any (lock-free).  Blocking: no.  RT: safe.  Signal: not safe. */
NERVE_API int nerve_own_commit(nerve_own *o, uint32_t token, uint64_t seq);

/* After the put of `token` failed (nothing committed): ends it. Returns 0,
 * or NERVE_EINVAL (o NULL, a token nerve_own_begin() did not give).
 * Thread: any (lock-free).  Blocking: no.  RT: safe.  Signal: not safe. */
NERVE_API int nerve_own_abort(nerve_own *o, uint32_t token);

/* Whether the message of sequence number `seq`, which the caller has
 * viewed in the guard's channel, was put by this process through the
 * guard: 1 (ours: do not export it), 0 (not ours), NERVE_ETIMEDOUT (a put
 * of this process stayed between its commit and nerve_own_commit() for
 * NERVE_OWN_WAIT_NS: answered as not ours, so an echo is possible, and
 * counted in `late`), or NERVE_EINVAL (o NULL). A number whose slot a
 * later own number took (NERVE_OWN_N or more behind it) is not ours.
 * Thread: any (a lock inside when a put is in flight).  Blocking: at most
 * NERVE_OWN_WAIT_NS.  RT: not safe.  Signal: not safe. */
NERVE_NODISCARD NERVE_API int nerve_own_check(nerve_own *o, uint64_t seq);

/* The guard's counters into *st. Returns 0, or NERVE_EINVAL (o or st
 * NULL). Thread: any.  Blocking: no.  RT: safe.  Signal: not safe. */
NERVE_NODISCARD NERVE_API int nerve_own_stat(const nerve_own *o,
                                             struct nerve_own_stats *st);

/* Forget every number recorded, for a channel made again under the same
 * name (its numbers start again). Puts in flight stay in flight. Returns
 * 0, or NERVE_EINVAL (o NULL).
 * Thread: any; a check at the same time may take a number of the old
 * channel as not ours.  Blocking: no.  RT: safe.  Signal: not safe. */
NERVE_API int nerve_own_reset(nerve_own *o);

/* Free the guard (NULL: nothing). Returns 0.
 * Thread: no other call on o at the same time.  Blocking: no.  RT: not
 * safe.  Signal: not safe. */
NERVE_API int nerve_own_close(nerve_own *o);

#ifdef __cplusplus
}
#endif

#endif
