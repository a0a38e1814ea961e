/* Error codes.
 *
 * Every nerve call that can fail returns an int: 0 (or a count, where the
 * contract says so) on success, otherwise one of the negative codes below.
 * errno never carries a nerve error. A code equals -errno where an errno
 * means the same thing (NERVE_EAGAIN == -EAGAIN); the codes that have no
 * errno take the reserved range from -1000 down.
 *
 * A system call failing with an errno that nerve gives no meaning of its own
 * is reported as that errno, negated (e.g. -EIO): never folded into
 * NERVE_EINVAL or another code, so the cause stays retrievable as -code.
 * nerve_strerror() and nerve_err_name() describe such a code with the C
 * library's text and name for the errno ("input/output error", "EIO").
 *
 * The X-macro NERVE_ERRNO_MAP is the single table of codes: it produces the
 * enum below and the name/message tables behind nerve_err_name() and
 * nerve_strerror(), so the three can never disagree. */
#ifndef NERVE_ERRORS_H
#define NERVE_ERRORS_H

#include <errno.h>

#include "common.h"

#ifdef __cplusplus
extern "C" {
#endif

/* XX(NAME, value, message) */
#define NERVE_ERRNO_MAP(XX)                                                    \
    XX(EPERM, -EPERM, "operation not permitted")                               \
    XX(ENOENT, -ENOENT, "no such channel")                                     \
    XX(EINTR, -EINTR, "interrupted by a signal")                               \
    XX(EBADF, -EBADF, "bad handle")                                            \
    XX(EAGAIN, -EAGAIN, "no new message")                                      \
    XX(ENOMEM, -ENOMEM, "out of memory")                                       \
    XX(EACCES, -EACCES, "permission denied")                                   \
    XX(EBUSY, -EBUSY, "handle busy (a reservation is open)")                   \
    XX(EEXIST, -EEXIST, "channel already exists")                              \
    XX(EINVAL, -EINVAL, "invalid argument")                                    \
    XX(ENOSPC, -ENOSPC, "no space left to create the channel")                 \
    XX(EROFS, -EROFS, "channel opened read-only")                              \
    XX(ENAMETOOLONG, -ENAMETOOLONG, "channel name too long")                   \
    XX(ENOSYS, -ENOSYS, "not supported by this kernel")                        \
    XX(EMSGSIZE, -EMSGSIZE, "message does not fit the buffer or the ring")     \
    XX(ETIMEDOUT, -ETIMEDOUT, "timed out")                                     \
    XX(ESTALE, -ESTALE, "view was overwritten by a writer")                    \
    XX(ECANCELED, -ECANCELED, "wait cancelled")                                \
    XX(EMFILE, -EMFILE, "too many open files in this process")                 \
    XX(ENFILE, -ENFILE, "too many open files in the system")                   \
    XX(EDEADLK, -EDEADLK,                                                      \
       "this thread already holds the channel's writer lock")                  \
    XX(EXDEV, -EXDEV,                                                          \
       "a writer of another PID namespace has the channel open")               \
    XX(ECORRUPT, -1000, "channel file is corrupt")                             \
    XX(EVERSION, -1001, "channel file has an unsupported layout version")      \
    XX(ENOTCHAN, -1002, "file is not a nerve channel")                         \
    XX(ETRUNC, -1003, "channel file is truncated")                             \
    XX(EMISMATCH, -1004, "channel exists with a different geometry or type")   \
    XX(EOVERWRITTEN, -1005, "message was overwritten")                         \
    XX(ELAPPED, -1006, "writers overwrote the message on every attempt")       \
    XX(EABI, -1007, "channel was made by an incompatible platform or ABI")     \
    XX(EDECODE, -1008, "message does not decode as the expected type")         \
    XX(ESUPERSEDED, -1009,                                                     \
       "channel was superseded by a larger one (follow it by name)")

enum nerve_error {
    NERVE_OK = 0,
#define NERVE__ERR_ENUM(name, value, msg) NERVE_##name = (value),
    NERVE_ERRNO_MAP(NERVE__ERR_ENUM)
#undef NERVE__ERR_ENUM
};

/* A one-line English message for an error code: the table's, the C
 * library's description for another -errno, "unknown error" otherwise
 * (including positive values).
 * Thread: any.  Blocking: no.  RT: safe.  Signal: safe. */
NERVE_API const char *nerve_strerror(int err);

/* The code's name without the prefix, e.g. "ECORRUPT" ("OK" for 0; the
 * errno's name, e.g. "EIO", for another -errno; "UNKNOWN" otherwise).
 * Thread: any.  Blocking: no.  RT: safe.  Signal: safe. */
NERVE_API const char *nerve_err_name(int err);

/* The detail of code err, as the library produced it once for every
 * binding and tool to show: what was wrong, what would have been accepted
 * and what to do (e.g. for NERVE_EMSGSIZE from a put: "a message of 5000
 * bytes does not fit: the channel's data ring is 4096 bytes (the largest
 * message)"). It names the library's own calls, never a tool's flags: a
 * tool adds its own hint (the nerve command does). It is the text recorded by the last
 * call of this thread that failed with err and had more to say (naming a
 * channel name's rules, the file's mode and owner, both types of a
 * mismatch, the sizes of a message that does not fit); for any other code,
 * or when none was recorded, nerve_strerror(err). Valid until this thread's
 * next nerve call. Calls that record one: nerve_chan_name_check (and every
 * call taking a name), nerve_chan_open, nerve_chan_create, put, reserve and
 * get (NERVE_EMSGSIZE), nerve_size_parse.
 * Thread: per thread.  Blocking: no.  RT: safe.  Signal: not safe. */
NERVE_API const char *nerve_err_detail(int err);

#ifdef __cplusplus
}
#endif

#endif
