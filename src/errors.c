/* Names and messages of error codes, generated from NERVE_ERRNO_MAP, and
 * the one mapping from errno values to codes. */
#include "nerve/errors.h"

#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "platform.h"

/* The detail of this thread's last failure that had one (nerve_err_detail;
 * recorded by nerve__detail). [local] to the thread. */
static _Thread_local struct {
    int code;
    char text[384];
} last;

int nerve__detail(int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last.text, sizeof last.text, fmt, ap);
    va_end(ap);
    last.code = code;
    return code;
}

void nerve__detail_clear(void)
{
    last.code = 0;
}

char *nerve__detail_buf(size_t *len)
{
    last.code = 0;
    last.text[0] = '\0';
    *len = sizeof last.text;
    return last.text;
}

void nerve__detail_adopt(int code)
{
    last.code = last.text[0] ? code : 0;
}

const char *nerve_err_detail(int err)
{
    if (err != 0 && err == last.code && last.text[0])
        return last.text;
    return nerve_strerror(err);
}

struct err_entry {
    int code;
    const char *name;
    const char *msg;
};

static const struct err_entry table[] = {
#define NERVE__ERR_ROW(name, value, msg) {(value), #name, (msg)},
    NERVE_ERRNO_MAP(NERVE__ERR_ROW)
#undef NERVE__ERR_ROW
};

static const struct err_entry *find(int err)
{
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++) {
        if (table[i].code == err)
            return &table[i];
    }
    return NULL;
}

/* An errno value outside the table, as a code: -e. Errno values run from
 * 1 to 4095 on Linux; the reserved nerve range starts at -1000 but holds
 * only the table's codes, which find() answers first. */
static int is_errno_code(int err)
{
    return err < 0 && err > -4096;
}

const char *nerve_strerror(int err)
{
    if (err == 0)
        return "success";
    const struct err_entry *e = find(err);
    if (e)
        return e->msg;
    /* strerrordesc_np returns a constant string (no locale, no buffer): as
     * safe as the table itself. */
    const char *d = is_errno_code(err) ? strerrordesc_np(-err) : NULL;
    return d ? d : "unknown error";
}

const char *nerve_err_name(int err)
{
    if (err == 0)
        return "OK";
    const struct err_entry *e = find(err);
    if (e)
        return e->name;
    const char *n = is_errno_code(err) ? strerrorname_np(-err) : NULL;
    return n ? n : "UNKNOWN";
}

int nerve__err_from_errno(int e)
{
    switch (e) {
    case 0: return NERVE_EINVAL; /* a caller bug: no errno to report */
    case EPERM:
    case EACCES:
    case EROFS: return NERVE_EACCES;
    case ENOSPC:
    case EFBIG:
    case EDQUOT: return NERVE_ENOSPC;
    case ENOMEM:
    case EAGAIN: /* mmap: the locked-memory limit */ return NERVE_ENOMEM;
    case ELOOP:  /* O_NOFOLLOW met a symlink */
    case EISDIR: /* a directory opened for writing */
    case ENXIO:  /* a socket, or a FIFO opened for writing */
    case ENODEV: /* a device without a driver */
    case EOPNOTSUPP: return NERVE_ENOTCHAN;
    default:
        /* The errno's own code where the table has it (ENOENT, EEXIST,
         * EMFILE, ENAMETOOLONG, EINTR, ...); any other errno as -e. A few
         * errno values name a nerve meaning that a file system call cannot
         * have (EBUSY, ETIMEDOUT, ESTALE, ...); they pass through too. */
        return -e;
    }
}
