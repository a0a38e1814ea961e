/* Ach's C API on nerve channels (libach). See include/ach.h, docs/ach.md.
 *
 * Uses only nerve's public C API. One Ach handle (ach_channel_t) owns one
 * nerve handle, kept in a small heap block that the handle's `shm` member
 * points at (struct ach_header is opaque to programs). The Ach cursor is
 * the nerve handle's cursor, mirrored into chan->seq_num after each get.
 *
 * Written from Ach's documented behaviour; no Ach code is used. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <nerve/nerve.h>

#include "ach.h"
#include "ach/experimental.h"
#include "timeconv.h"

#define ACH_API __attribute__((visibility("default")))

#define HANDLE_MAGIC 0x6e616368u /* "nach" */
/* Message bytes are placed at 64-byte boundaries in a nerve ring. */
#define NERVE_ALIGN 64u
/* Retries of a read that writers overwrote while it copied. */
#define LAPPED_RETRIES 64
/* Metadata recording a channel's clock when it is not CLOCK_MONOTONIC. */
#define META_TYPE "ach"
#define META_CLOCK "clock="

struct ach_header {
    uint32_t magic;
    int writable;
    nerve_chan *ch;
    pthread_mutex_t put_lock; /* Ach allows puts on one handle from
                                 several threads; nerve does not */
    char name[ACH_CHAN_NAME_MAX + 1];
};

/* ---- errors ------------------------------------------------------------- */

static _Thread_local char g_errstr[256];

__attribute__((format(printf, 1, 2))) static void set_err(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(g_errstr, sizeof g_errstr, fmt, ap);
    va_end(ap);
}

static enum ach_status from_nerve(int r)
{
    switch (r) {
    case 0: return ACH_OK;
    case NERVE_ENOENT: return ACH_ENOENT;
    case NERVE_EEXIST:
    case NERVE_EMISMATCH: return ACH_EEXIST;
    case NERVE_EACCES:
    case NERVE_EPERM:
    case NERVE_EROFS: return ACH_EACCES;
    case NERVE_EINVAL:
    case NERVE_EBADF:
    case NERVE_EBUSY: return ACH_EINVAL;
    case NERVE_ENAMETOOLONG: return ACH_INVALID_NAME;
    case NERVE_ENOTCHAN:
    case NERVE_EVERSION:
    case NERVE_EABI:
    case NERVE_ETRUNC: return ACH_BAD_SHM_FILE;
    case NERVE_ECORRUPT: return ACH_CORRUPT;
    case NERVE_EMSGSIZE: return ACH_OVERFLOW;
    case NERVE_ETIMEDOUT: return ACH_TIMEOUT;
    case NERVE_ECANCELED: return ACH_CANCELED;
    case NERVE_EAGAIN: return ACH_STALE_FRAMES;
    case NERVE_ENOSYS: return ACH_ENOTSUP;
    default: return ACH_FAILED_SYSCALL;
    }
}

/* Map a nerve error and remember what failed for ach_errstr(). */
static enum ach_status fail(const char *what, const char *name, int r)
{
    set_err("%s(%s): %s", what, name ? name : "", nerve_strerror(r));
    return from_nerve(r);
}

ACH_API const char *ach_result_to_string(ach_status_t result)
{
    switch (result) {
    case ACH_OK: return "ACH_OK";
    case ACH_OVERFLOW: return "ACH_OVERFLOW";
    case ACH_INVALID_NAME: return "ACH_INVALID_NAME";
    case ACH_BAD_SHM_FILE: return "ACH_BAD_SHM_FILE";
    case ACH_FAILED_SYSCALL: return "ACH_FAILED_SYSCALL";
    case ACH_STALE_FRAMES: return "ACH_STALE_FRAMES";
    case ACH_MISSED_FRAME: return "ACH_MISSED_FRAME";
    case ACH_TIMEOUT: return "ACH_TIMEOUT";
    case ACH_EEXIST: return "ACH_EEXIST";
    case ACH_ENOENT: return "ACH_ENOENT";
    case ACH_CLOSED: return "ACH_CLOSED";
    case ACH_BUG: return "ACH_BUG";
    case ACH_EINVAL: return "ACH_EINVAL";
    case ACH_CORRUPT: return "ACH_CORRUPT";
    case ACH_BAD_HEADER: return "ACH_BAD_HEADER";
    case ACH_EACCES: return "ACH_EACCES";
    case ACH_CANCELED: return "ACH_CANCELED";
    case ACH_EFAULT: return "ACH_EFAULT";
    case ACH_EINTR: return "ACH_EINTR";
    case ACH_ENOTSUP: return "ACH_ENOTSUP";
    }
    return "UNKNOWN";
}

ACH_API const char *ach_errstr(void)
{
    return g_errstr;
}

ACH_API void ach_print_version(const char *name)
{
    printf("%s (Ach API on nerve %d.%d.%d)\n", name ? name : "ach",
           NERVE_VERSION_MAJOR, NERVE_VERSION_MINOR, NERVE_VERSION_PATCH);
}

/* ---- names and handles ---------------------------------------------------- */

/* Ach's rule: shorter than ACH_CHAN_NAME_MAX, [A-Za-z0-9_.-], no leading
 * '.'; nerve accepts every such name. */
static enum ach_status name_ok(const char *name)
{
    if (name == NULL) {
        set_err("channel name is NULL");
        return ACH_EINVAL;
    }
    size_t n = strlen(name);
    if (n == 0 || n >= ACH_CHAN_NAME_MAX || name[0] == '.') {
        set_err("invalid channel name '%.80s'", name);
        return ACH_INVALID_NAME;
    }
    for (size_t i = 0; i < n; i++) {
        char c = name[i];
        int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                 (c >= '0' && c <= '9') || c == '_' || c == '-' || c == '.';
        if (!ok) {
            set_err("invalid character in channel name '%.80s'", name);
            return ACH_INVALID_NAME;
        }
    }
    if (nerve_chan_name_check(name) != 0) {
        set_err("invalid channel name '%.80s'", name);
        return ACH_INVALID_NAME;
    }
    return ACH_OK;
}

static struct ach_header *handle_of(const ach_channel_t *chan)
{
    if (chan == NULL || chan->shm == NULL || chan->shm->magic != HANDLE_MAGIC) {
        set_err("not an open channel handle");
        return NULL;
    }
    return chan->shm;
}

static int clock_ok(clockid_t clock)
{
    struct timespec ts;
    return clock_getres(clock, &ts) == 0;
}

/* The process umask, read without changing it (umask() is not thread
 * safe); 022 when /proc is not there. */
static mode_t current_umask(void)
{
    mode_t m = 022;
    FILE *f = fopen("/proc/self/status", "re");
    if (f == NULL)
        return m;
    char line[128];
    while (fgets(line, sizeof line, f)) {
        unsigned v;
        if (sscanf(line, "Umask: %o", &v) == 1) {
            m = (mode_t)v;
            break;
        }
    }
    fclose(f);
    return m;
}

/* ---- attributes ------------------------------------------------------------ */

ACH_API void ach_attr_init(ach_attr_t *attr)
{
    if (attr) {
        memset(attr, 0, sizeof *attr);
        attr->map = ACH_MAP_DEFAULT;
    }
}

ACH_API enum ach_status ach_attr_set_shm(ach_attr_t *attr,
                                         struct ach_header *shm)
{
    if (attr == NULL)
        return ACH_EINVAL;
    attr->map = ACH_MAP_ANON;
    attr->shm = shm;
    return ACH_OK;
}

ACH_API void ach_create_attr_init(ach_create_attr_t *attr)
{
    if (attr) {
        memset(attr, 0, sizeof *attr);
        attr->map = ACH_MAP_DEFAULT;
        attr->clock = ACH_DEFAULT_CLOCK;
    }
}

ACH_API enum ach_status ach_create_attr_set_clock(ach_create_attr_t *attr,
                                                  clockid_t clock)
{
    if (attr == NULL || !clock_ok(clock)) {
        set_err("invalid clock");
        return ACH_EINVAL;
    }
    attr->clock = clock;
    attr->set_clock = 1;
    return ACH_OK;
}

ACH_API enum ach_status ach_create_attr_set_map(ach_create_attr_t *attr,
                                                enum ach_map map)
{
    if (attr == NULL || (unsigned)map > ACH_MAP_KERNEL)
        return ACH_EINVAL;
    attr->map = map;
    return ACH_OK;
}

ACH_API enum ach_status ach_create_attr_set_truncate(ach_create_attr_t *attr,
                                                     int truncate)
{
    if (attr == NULL)
        return ACH_EINVAL;
    attr->truncate = truncate ? 1u : 0u;
    return ACH_OK;
}

ACH_API enum ach_status ach_create_attr_get_shm(ach_create_attr_t *attr,
                                                struct ach_header **shm)
{
    if (attr == NULL || shm == NULL)
        return ACH_EINVAL;
    *shm = attr->shm;
    return ACH_OK;
}

ACH_API void ach_cancel_attr_init(ach_cancel_attr_t *attr)
{
    if (attr)
        memset(attr, 0, sizeof *attr);
}

/* ---- lifecycle ---------------------------------------------------------------- */

ACH_API enum ach_status ach_create(const char *channel_name, size_t frame_cnt,
                                   size_t frame_size, ach_create_attr_t *attr)
{
    enum ach_status s = name_ok(channel_name);
    if (s != ACH_OK)
        return s;
    enum ach_map map = attr ? attr->map : ACH_MAP_DEFAULT;
    if (map == ACH_MAP_ANON) {
        set_err("ach_create(%s): ACH_MAP_ANON is not supported on nerve "
                "(channels are always named files)",
                channel_name);
        return ACH_ENOTSUP;
    }
    if ((unsigned)map > ACH_MAP_KERNEL) {
        set_err("ach_create(%s): unknown map %d", channel_name, (int)map);
        return ACH_EINVAL;
    }
    clockid_t clock = ACH_DEFAULT_CLOCK;
    if (attr && attr->set_clock) {
        if (!clock_ok(attr->clock)) {
            set_err("ach_create(%s): invalid clock", channel_name);
            return ACH_EINVAL;
        }
        clock = attr->clock;
    }
    if (frame_cnt == 0)
        frame_cnt = ACH_DEFAULT_FRAME_COUNT;
    if (frame_size == 0)
        frame_size = ACH_DEFAULT_FRAME_SIZE;
    /* frame_cnt frames of frame_size bytes must all fit at once, each
     * starting on a NERVE_ALIGN boundary, and so must one frame of
     * frame_cnt * frame_size bytes (Ach's largest). */
    uint64_t per =
        ((uint64_t)frame_size + NERVE_ALIGN - 1) / NERVE_ALIGN * NERVE_ALIGN;
    if (frame_size > (1ull << 40) || frame_cnt > (1ull << 32) ||
        per * frame_cnt > (1ull << 40)) {
        set_err("ach_create(%s): %zu frames of %zu bytes is too large",
                channel_name, frame_cnt, frame_size);
        return ACH_EINVAL;
    }
    char meta[32];
    struct nerve_chan_opts o = NERVE_CHAN_OPTS_INIT;
    o.slots = frame_cnt;
    o.data_size = per * frame_cnt + NERVE_ALIGN;
    o.mode = 0666u & ~(uint32_t)current_umask();
    if (clock != CLOCK_MONOTONIC) {
        snprintf(meta, sizeof meta, META_CLOCK "%d\n", (int)clock);
        o.type = META_TYPE;
        o.encoding = "raw";
        o.schema = meta;
        o.schema_len = strlen(meta);
    }
    if (attr && attr->truncate) {
        int u = nerve_chan_unlink(channel_name);
        if (u != 0 && u != NERVE_ENOENT)
            return fail("ach_create: unlink", channel_name, u);
    }
    int r = nerve_chan_create(channel_name, &o);
    if (r != 0)
        return fail("ach_create", channel_name, r);
    return ACH_OK;
}

/* The clock recorded by ach_create() (CLOCK_MONOTONIC when none was, e.g.
 * for a channel nerve itself created). */
static clockid_t clock_of(nerve_chan *ch)
{
    struct nerve_meta m;
    if (nerve_chan_meta(ch, &m) != 0 || strcmp(m.type, META_TYPE) != 0 ||
        strncmp(m.schema, META_CLOCK, strlen(META_CLOCK)) != 0)
        return CLOCK_MONOTONIC;
    int v = atoi(m.schema + strlen(META_CLOCK));
    return clock_ok((clockid_t)v) ? (clockid_t)v : CLOCK_MONOTONIC;
}

ACH_API enum ach_status ach_open(ach_channel_t *chan, const char *channel_name,
                                 ach_attr_t *attr)
{
    if (chan == NULL) {
        set_err("ach_open: channel handle is NULL");
        return ACH_EINVAL;
    }
    enum ach_status s = name_ok(channel_name);
    if (s != ACH_OK)
        return s;
    if (attr && attr->map == ACH_MAP_ANON) {
        set_err("ach_open(%s): ACH_MAP_ANON is not supported on nerve",
                channel_name);
        return ACH_ENOTSUP;
    }
    nerve_chan *ch = NULL;
    int writable = 1;
    int r = nerve_chan_open(channel_name, NERVE_O_WRITE, &ch);
    if (r == NERVE_EACCES) {
        /* nerve readers need only read permission. */
        writable = 0;
        r = nerve_chan_open(channel_name, NERVE_O_READ, &ch);
    }
    if (r != 0)
        return fail("ach_open", channel_name, r);
    struct ach_header *h = calloc(1, sizeof *h);
    if (h == NULL) {
        nerve_chan_close(ch);
        set_err("ach_open(%s): out of memory", channel_name);
        return ACH_FAILED_SYSCALL;
    }
    pthread_mutexattr_t ma;
    pthread_mutexattr_init(&ma);
    pthread_mutexattr_setprotocol(&ma, PTHREAD_PRIO_INHERIT);
    if (pthread_mutex_init(&h->put_lock, &ma) != 0) {
        pthread_mutexattr_destroy(&ma);
        nerve_chan_close(ch);
        free(h);
        set_err("ach_open(%s): pthread_mutex_init failed", channel_name);
        return ACH_FAILED_SYSCALL;
    }
    pthread_mutexattr_destroy(&ma);
    h->magic = HANDLE_MAGIC;
    h->writable = writable;
    h->ch = ch;
    snprintf(h->name, sizeof h->name, "%s", channel_name);

    struct nerve_stats st;
    memset(chan, 0, sizeof *chan);
    chan->shm = h;
    chan->len = nerve_chan_stat(ch, &st) == 0 ? (size_t)st.file_size : 0;
    /* A descriptor of the channel file, for ach_channel_fd(). */
    char path[NERVE_PATH_MAX];
    chan->fd = nerve_chan_path(channel_name, 0, path, sizeof path) == 0
                   ? open(path, O_RDONLY | O_CLOEXEC)
                   : -1;
    /* Ach's reader starts before the first frame ever put (seq_num 0):
     * frames skipped by its first get are ACH_MISSED_FRAME, as in Ach,
     * even those put before it opened (nerve's own handles do not count
     * the history present at open). */
    nerve_chan_seek(ch, 0);
    chan->seq_num = nerve_chan_cursor(ch);
    chan->next_index = 0;
    chan->map = ACH_MAP_USER;
    chan->clock = clock_of(ch);
    chan->cancel = 0;
    chan->vtab = NULL;
    return ACH_OK;
}

ACH_API enum ach_status ach_close(ach_channel_t *chan)
{
    struct ach_header *h = handle_of(chan);
    if (h == NULL)
        return ACH_EINVAL;
    h->magic = 0;
    nerve_chan_close(h->ch);
    pthread_mutex_destroy(&h->put_lock);
    free(h);
    if (chan->fd >= 0)
        close(chan->fd);
    chan->shm = NULL;
    chan->fd = -1;
    chan->len = 0;
    return ACH_OK;
}

ACH_API enum ach_status ach_unlink(const char *name)
{
    enum ach_status s = name_ok(name);
    if (s != ACH_OK)
        return s;
    int r = nerve_chan_unlink(name);
    return r ? fail("ach_unlink", name, r) : ACH_OK;
}

ACH_API enum ach_status ach_chmod(ach_channel_t *chan, mode_t mode)
{
    struct ach_header *h = handle_of(chan);
    if (h == NULL)
        return ACH_EINVAL;
    if (mode & ~(mode_t)0777) {
        set_err("ach_chmod(%s): mode %o has bits outside 0777", h->name,
                (unsigned)mode);
        return ACH_EINVAL;
    }
    int r = nerve_chan_chmod(h->name, (uint32_t)mode);
    return r ? fail("ach_chmod", h->name, r) : ACH_OK;
}

ACH_API enum ach_status ach_channel_fd(const struct ach_channel *channel,
                                       int *file_descriptor)
{
    if (handle_of(channel) == NULL || file_descriptor == NULL)
        return ACH_EINVAL;
    if (channel->fd < 0) {
        set_err("channel file descriptor is not available");
        return ACH_FAILED_SYSCALL;
    }
    *file_descriptor = channel->fd;
    return ACH_OK;
}

ACH_API enum ach_status ach_channel_map(const struct ach_channel *channel,
                                        enum ach_map *map)
{
    if (handle_of(channel) == NULL || map == NULL)
        return ACH_EINVAL;
    *map = channel->map;
    return ACH_OK;
}

ACH_API enum ach_status ach_channel_clock(const struct ach_channel *channel,
                                          clockid_t *clock)
{
    if (handle_of(channel) == NULL || clock == NULL)
        return ACH_EINVAL;
    *clock = channel->clock;
    return ACH_OK;
}

ACH_API enum ach_status ach_flush(ach_channel_t *chan)
{
    struct ach_header *h = handle_of(chan);
    if (h == NULL)
        return ACH_EINVAL;
    struct nerve_stats st;
    int r = nerve_chan_stat(h->ch, &st);
    if (r != 0)
        return fail("ach_flush", h->name, r);
    nerve_chan_seek(h->ch, st.head_seq);
    chan->seq_num = st.head_seq;
    return ACH_OK;
}

ACH_API enum ach_status ach_cancel(ach_channel_t *chan,
                                   const ach_cancel_attr_t *attr)
{
    (void)attr; /* both kinds are one atomic store and one futex wake */
    if (chan == NULL || chan->shm == NULL || chan->shm->magic != HANDLE_MAGIC)
        return ACH_EINVAL; /* no set_err: this may run in a signal handler */
    chan->cancel = 1;
    nerve_chan_cancel(chan->shm->ch);
    return ACH_OK;
}

/* ---- writing ------------------------------------------------------------------ */

ACH_API enum ach_status ach_put(ach_channel_t *chan, const void *buf,
                                size_t len)
{
    struct ach_header *h = handle_of(chan);
    if (h == NULL)
        return ACH_EINVAL;
    if (len == 0 || buf == NULL) {
        set_err("ach_put(%s): empty frame", h->name);
        return ACH_EINVAL;
    }
    pthread_mutex_lock(&h->put_lock);
    int r = nerve_chan_put(h->ch, buf, len, NERVE_FOREVER, NULL, 0);
    pthread_mutex_unlock(&h->put_lock);
    return r ? fail("ach_put", h->name, r) : ACH_OK;
}

/* cppcheck-suppress funcArgOrderDifferent ; false positive: cppcheck
 * reads the parameter names of the ach_put_fun/ach_get_fun typedefs as
 * this function's. */
ACH_API enum ach_status ach_xput(ach_channel_t *chan, ach_put_fun transfer,
                                 void *cx, const void *obj, size_t len)
{
    struct ach_header *h = handle_of(chan);
    if (h == NULL)
        return ACH_EINVAL;
    if (len == 0 || transfer == NULL) {
        set_err("ach_xput(%s): empty frame or no transfer function", h->name);
        return ACH_EINVAL;
    }
    void *dst = NULL;
    pthread_mutex_lock(&h->put_lock);
    int r = nerve_chan_reserve(h->ch, len, NERVE_FOREVER, &dst, 0);
    if (r != 0) {
        pthread_mutex_unlock(&h->put_lock);
        return fail("ach_xput", h->name, r);
    }
    enum ach_status s = transfer(cx, dst, obj);
    if (s == ACH_OK) {
        r = nerve_chan_commit(h->ch, len, NULL);
    } else {
        r = nerve_chan_abort(h->ch);
    }
    pthread_mutex_unlock(&h->put_lock);
    if (r != 0)
        return fail("ach_xput", h->name, r);
    return s;
}

/* ---- reading ------------------------------------------------------------------ */

/* Read chan->cancel after nerve_chan_cancel_clear(): a seq_cst
 * read-modify-write orders the read after the clear's store (a locked
 * instruction on x86, an acquire-release one on ARM64), so a cancel racing
 * with the clear is seen either here or by nerve's wait. (An RMW rather
 * than a fence: TSan does not model fences.) */
static int cancel_requested(ach_channel_t *chan)
{
    return __atomic_fetch_or((int *)&chan->cancel, 0, __ATOMIC_SEQ_CST) != 0;
}

/* The wait's deadline as an absolute CLOCK_MONOTONIC time into *d, or
 * *forever set. A deadline already past, whatever its magnitude, is
 * returned as 0: nerve then checks once and reports the timeout. Every
 * step saturates (src/timeconv.h), so no tv_sec can overflow into "no
 * bound" or into another time. Returns ACH_OK, or ACH_EINVAL for a tv_nsec
 * outside [0, 1e9). */
static enum ach_status deadline_of(const ach_channel_t *chan,
                                   const struct timespec *t, int options,
                                   int64_t *d, int *forever)
{
    *forever = 0;
    *d = 0;
    if (t == NULL) {
        *forever = 1;
        return ACH_OK;
    }
    int64_t t_ns;
    if (nerve__ns_from_timespec(t, &t_ns) != 0) {
        set_err("ach_get: timeout tv_nsec %ld is outside [0, 999999999]",
                (long)t->tv_nsec);
        return ACH_EINVAL;
    }
    int64_t now_mono = nerve_clock_now_ns();
    int64_t dl;
    if (options & ACH_O_RELTIME) {
        dl = nerve__ns_add_sat(now_mono, t_ns > 0 ? t_ns : 0);
    } else if (chan->clock == CLOCK_MONOTONIC) {
        dl = t_ns;
    } else {
        struct timespec now;
        clock_gettime(chan->clock, &now);
        int64_t now_ns = 0;
        (void)nerve__ns_from_timespec(&now, &now_ns);
        dl = nerve__ns_add_sat(now_mono, nerve__ns_sub_sat(t_ns, now_ns));
    }
    /* A bound beyond ~146 years from the clock's origin is no bound. */
    if (dl > INT64_MAX / 2) {
        *forever = 1;
        return ACH_OK;
    }
    *d = dl < 0 ? 0 : dl;
    return ACH_OK;
}

/* Take the frame an Ach get asks for, into buf (copy) or as a view
 * (buf == NULL && vw != NULL). Returns ACH_OK / ACH_MISSED_FRAME with *gi
 * filled, or another status. */
static enum ach_status take(ach_channel_t *chan, struct ach_header *h,
                            void *buf, size_t size, struct nerve_view *vw,
                            struct nerve_get_info *gi, const struct timespec *t,
                            int options)
{
    const int o_wait = options & ACH_O_WAIT;
    const int o_copy = options & ACH_O_COPY;
    const uint32_t which =
        (options & ACH_O_LAST) ? NERVE_GET_NEWEST : NERVE_GET_NEXT;
    int forever = 0;
    int64_t deadline = 0;
    if (o_wait) {
        enum ach_status ds = deadline_of(chan, t, options, &deadline, &forever);
        if (ds != ACH_OK)
            return ds;
    }
    int again = 0; /* returned a frame this handle had already seen */
    int r = 0;
    for (int tries = 0;; tries++) {
        uint32_t flags = which;
        again = 0;
#define NERVE_READ(fl, to)                                                     \
    (vw ? nerve_chan_view(h->ch, 0, (to), vw, (fl))                            \
        : nerve_chan_get(h->ch, buf, size, 0, (to), gi, (fl)))
        r = NERVE_READ(flags, 0);
        if (r == NERVE_EAGAIN && o_copy) {
            /* COPY: the newest frame again, even if already seen. */
            r = NERVE_READ(NERVE_GET_NEWEST | NERVE_F_REPEAT, 0);
            again = 1;
        }
        if (r == NERVE_EAGAIN && o_wait) {
            again = 0;
            /* Clear nerve's sticky cancel, then look at Ach's flag: a
             * cancel after the clear is seen by the wait, one before it
             * by this check. */
            nerve_chan_cancel_clear(h->ch);
            if (cancel_requested(chan))
                return ACH_CANCELED;
            if (forever)
                r = NERVE_READ(flags | NERVE_F_WAIT, NERVE_FOREVER);
            else
                r = NERVE_READ(flags | NERVE_F_WAIT | NERVE_F_ABSTIME,
                               deadline);
            if (r == NERVE_EAGAIN)
                r = NERVE_ETIMEDOUT;
        }
#undef NERVE_READ
        if (r == NERVE_ELAPPED && tries < LAPPED_RETRIES)
            continue;
        break;
    }
    if (vw && r == 0)
        *gi = vw->info;
    chan->seq_num = nerve_chan_cursor(h->ch);
    switch (r) {
    case 0: return (gi->missed > 0 && !again) ? ACH_MISSED_FRAME : ACH_OK;
    case NERVE_EAGAIN: return ACH_STALE_FRAMES;
    case NERVE_EMSGSIZE: return ACH_OVERFLOW;
    case NERVE_ETIMEDOUT: return ACH_TIMEOUT;
    case NERVE_ECANCELED: return ACH_CANCELED;
    default: return fail("ach_get", h->name, r);
    }
}

ACH_API enum ach_status ach_get(ach_channel_t *chan, void *buf, size_t size,
                                size_t *frame_size,
                                const struct timespec *ACH_RESTRICT abstime,
                                int options)
{
    struct ach_header *h = handle_of(chan);
    if (h == NULL)
        return ACH_EINVAL;
    if (buf == NULL && size > 0) {
        set_err("ach_get(%s): NULL buffer", h->name);
        return ACH_EINVAL;
    }
    struct nerve_get_info gi = {0};
    enum ach_status s = take(chan, h, buf, size, NULL, &gi, abstime, options);
    if (frame_size &&
        (s == ACH_OK || s == ACH_MISSED_FRAME || s == ACH_OVERFLOW))
        *frame_size = (size_t)gi.len;
    return s;
}

/* cppcheck-suppress funcArgOrderDifferent ; false positive: cppcheck
 * reads the parameter names of the ach_put_fun/ach_get_fun typedefs as
 * this function's. */
ACH_API enum ach_status ach_xget(ach_channel_t *chan, ach_get_fun transfer,
                                 void *cx, void **pobj, size_t *frame_size,
                                 const struct timespec *ACH_RESTRICT abstime,
                                 int options)
{
    struct ach_header *h = handle_of(chan);
    if (h == NULL)
        return ACH_EINVAL;
    if (transfer == NULL) {
        set_err("ach_xget(%s): no transfer function", h->name);
        return ACH_EINVAL;
    }
    for (int tries = 0;; tries++) {
        uint64_t before = nerve_chan_cursor(h->ch);
        struct nerve_view vw;
        struct nerve_get_info gi = {0};
        enum ach_status s = take(chan, h, NULL, 0, &vw, &gi, abstime, options);
        if (s != ACH_OK && s != ACH_MISSED_FRAME)
            return s;
        enum ach_status t = transfer(cx, pobj, vw.data, (size_t)gi.len);
        if (nerve_chan_view_check(h->ch, &vw) == 0) {
            if (frame_size)
                *frame_size = (size_t)gi.len;
            if (t != ACH_OK) {
                /* A failed transfer consumes nothing, like ACH_OVERFLOW. */
                nerve_chan_seek(h->ch, before);
                chan->seq_num = before;
                return t;
            }
            return s;
        }
        /* Overwritten while transferred: take the frame again (the
         * transfer runs again on the newer bytes). */
        nerve_chan_seek(h->ch, before);
        if (tries >= LAPPED_RETRIES)
            return fail("ach_xget", h->name, NERVE_ELAPPED);
    }
}

/* ---- tools ---------------------------------------------------------------------- */

ACH_API void ach_dump(struct ach_header *shm)
{
    if (shm == NULL || shm->magic != HANDLE_MAGIC) {
        fprintf(stderr, "ach_dump: not an open channel handle\n");
        return;
    }
    struct nerve_stats st;
    int r = nerve_chan_stat(shm->ch, &st);
    if (r != 0) {
        fprintf(stderr, "ach_dump(%s): %s\n", shm->name, nerve_strerror(r));
        return;
    }
    char path[NERVE_PATH_MAX];
    if (nerve_chan_path(shm->name, 0, path, sizeof path) != 0)
        path[0] = 0;
    fprintf(stderr,
            "channel:    %s (nerve channel %s)\n"
            "frames:     %" PRIu64 " index entries\n"
            "data size:  %" PRIu64 " bytes\n"
            "file size:  %" PRIu64 " bytes\n"
            "last seq:   %" PRIu64 "\n"
            "oldest seq: %" PRIu64 "\n"
            "cursor:     %" PRIu64 "\n"
            "mode:       %04o (uid %u, gid %u)\n"
            "writable:   %s\n",
            shm->name, path, st.slots, st.data_size, st.file_size, st.head_seq,
            st.tail_seq, nerve_chan_cursor(shm->ch), st.mode, st.uid, st.gid,
            shm->writable ? "yes" : "no");
}

/* ---- event loop (ach/experimental.h) ------------------------------------------- */

ACH_API enum ach_status
ach_evhandle(struct ach_evhandler *handlers, size_t n,
             const struct timespec *period,
             enum ach_status (*periodic_handler)(void *context),
             void *periodic_context, int options)
{
    if (handlers == NULL || n == 0 || n > NERVE_WAIT_MAX) {
        set_err("ach_evhandle: 1 to %d handlers", NERVE_WAIT_MAX);
        return ACH_EINVAL;
    }
    nerve_chan *chans[NERVE_WAIT_MAX];
    for (size_t i = 0; i < n; i++) {
        struct ach_header *h = handle_of(handlers[i].channel);
        if (h == NULL || handlers[i].handler == NULL)
            return ACH_EINVAL;
        chans[i] = h->ch;
    }
    int64_t rel = NERVE_FOREVER;
    if (period) {
        if (nerve__ns_from_timespec(period, &rel) != 0) {
            set_err("ach_evhandle: period tv_nsec %ld is outside "
                    "[0, 999999999]",
                    (long)period->tv_nsec);
            return ACH_EINVAL;
        }
        if (rel < 0)
            rel = 0; /* saturated far past too: poll once per round */
    }
    for (;;) {
        for (size_t i = 0; i < n; i++) {
            nerve_chan_cancel_clear(chans[i]);
        }
        for (size_t i = 0; i < n; i++) {
            if (cancel_requested(handlers[i].channel))
                return ACH_CANCELED;
        }
        uint64_t ready = 0;
        int r = nerve_chan_wait_any(chans, n, rel, &ready, 0);
        if (r == NERVE_ETIMEDOUT) {
            if ((options & ACH_EV_O_PERIODIC_TIMEOUT) && periodic_handler) {
                enum ach_status s = periodic_handler(periodic_context);
                if (s != ACH_OK && s != ACH_STALE_FRAMES)
                    return s;
            }
            continue;
        }
        if (r == NERVE_ECANCELED)
            return ACH_CANCELED;
        if (r < 0)
            return fail("ach_evhandle", "", r);
        for (size_t i = 0; i < n; i++) {
            if (!(ready & (UINT64_C(1) << i)))
                continue;
            enum ach_status s =
                handlers[i].handler(handlers[i].context, handlers[i].channel);
            if (s != ACH_OK && s != ACH_STALE_FRAMES)
                return s;
        }
        if ((options & ACH_EV_O_PERIODIC_INPUT) && periodic_handler) {
            enum ach_status s = periodic_handler(periodic_context);
            if (s != ACH_OK && s != ACH_STALE_FRAMES)
                return s;
        }
    }
}
