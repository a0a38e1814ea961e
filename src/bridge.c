/* The bridge kernel (include/nerve/bridge.h; the contract is
 * docs/bridge-kernel.md): names, globs, the channel directory and the
 * import budget that every bridge engine calls. Setup-phase code: it
 * allocates and makes system calls, and nothing here touches a channel's
 * shared memory. */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "chan_internal.h"
#include "nerve/bridge.h"
#include "nerve/errors.h"
#include "platform.h"
#include "shm.h"

/* ---- names ---------------------------------------------------------------- */

/* The length of "ros2-dDOMAIN." at the start of `name` (with something
 * after it), else 0. */
static size_t domain_prefix(const char *name, uint32_t domain)
{
    char p[32];
    if (domain == 0)
        return 0;
    int n = snprintf(p, sizeof p, "ros2-d%" PRIu32 ".", domain);
    if (n <= 0 || strncmp(name, p, (size_t)n) != 0 || name[n] == '\0')
        return 0;
    return (size_t)n;
}

static int too_small(char *buf, size_t len, size_t need)
{
    if (len > 0)
        buf[0] = '\0';
    return nerve__detail(NERVE_EMSGSIZE, "a buffer of %zu bytes, %zu needed",
                         len, need);
}

int nerve_topic_of_channel(const char *name, uint32_t domain, char *buf,
                           size_t len)
{
    if (!name || !buf)
        return nerve__detail(NERVE_EINVAL, "channel name or buffer is NULL");
    int r = nerve_chan_name_check(name);
    if (r)
        return nerve__detail(r, "'%.*s' is not a channel name", NERVE_NAME_MAX,
                             name);
    name += domain_prefix(name, domain);
    size_t n = strlen(name);
    if (len < n + 2)
        return too_small(buf, len, n + 2);
    buf[0] = '/';
    for (size_t i = 0; i < n; i++)
        buf[i + 1] = name[i] == '.' ? '/' : name[i] == '-' ? '_' : name[i];
    buf[n + 1] = '\0';
    return 0;
}

int nerve_channel_of_topic(const char *topic, uint32_t domain, char *buf,
                           size_t len)
{
    char s[NERVE_NAME_MAX + 2];
    if (!topic || !buf)
        return nerve__detail(NERVE_EINVAL, "topic or buffer is NULL");
    const char *p = topic;
    while (*p == '/')
        p++;
    size_t n = strlen(p);
    while (n > 0 && p[n - 1] == '/')
        n--;
    if (n == 0)
        return nerve__detail(NERVE_EINVAL, "topic '%.*s' names no channel", 64,
                             topic);
    int k = domain ? snprintf(s, sizeof s, "ros2-d%" PRIu32 ".", domain) : 0;
    if ((size_t)k + n > NERVE_NAME_MAX)
        return nerve__detail(NERVE_ENAMETOOLONG,
                             "topic '%.*s...' gives a channel name over %d "
                             "bytes",
                             64, topic, NERVE_NAME_MAX);
    for (size_t i = 0; i < n; i++)
        s[(size_t)k + i] = p[i] == '/' ? '.' : p[i];
    s[(size_t)k + n] = '\0';
    if (nerve_chan_name_check(s) != 0)
        return nerve__detail(NERVE_EINVAL,
                             "topic '%s' gives '%s', not a channel name "
                             "([A-Za-z0-9_.-], not starting with '.')",
                             topic, s);
    if (len < (size_t)k + n + 1)
        return too_small(buf, len, (size_t)k + n + 1);
    memcpy(buf, s, (size_t)k + n + 1);
    return 0;
}

/* ---- globs ---------------------------------------------------------------- */

static int name_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
           (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '-';
}

/* The length of the set starting at p (just after '['), up to and with its
 * ']', or 0 if it is not a well-formed set. */
static size_t set_len(const char *p)
{
    size_t i = p[0] == '!' ? 1 : 0;
    size_t first = i;
    for (; p[i] != '\0'; i++) {
        if (p[i] == ']' && i > first)
            return i + 1;
        if (!name_char(p[i]))
            return 0;
    }
    return 0;
}

int nerve_glob_check(const char *glob)
{
    if (!glob || !glob[0])
        return nerve__detail(NERVE_EINVAL, "the glob is %s",
                             glob ? "empty" : "NULL");
    size_t n = strnlen(glob, NERVE_GLOB_MAX + 1);
    if (n > NERVE_GLOB_MAX)
        return nerve__detail(NERVE_ENAMETOOLONG,
                             "glob '%.32s...' is over %d "
                             "bytes",
                             glob, NERVE_GLOB_MAX);
    for (size_t i = 0; i < n; i++) {
        if (glob[i] == '[') {
            size_t k = set_len(glob + i + 1);
            if (k == 0)
                return nerve__detail(NERVE_EINVAL,
                                     "glob '%s': '[' at %zu opens no set of "
                                     "name characters closed by ']'",
                                     glob, i);
            i += k;
        } else if (!name_char(glob[i]) && glob[i] != '*' && glob[i] != '?') {
            return nerve__detail(NERVE_EINVAL,
                                 "glob '%s': '%c' at %zu is neither a channel "
                                 "name character nor one of * ? [",
                                 glob, glob[i], i);
        }
    }
    return 0;
}

static int set_has(const char *p, size_t k, char c)
{
    int neg = p[0] == '!';
    int hit = 0;
    for (size_t i = neg ? 1 : 0; i + 1 < k; i++) {
        if (i + 2 < k - 1 && p[i + 1] == '-') {
            hit |= p[i] <= c && c <= p[i + 2];
            i += 2;
        } else {
            hit |= p[i] == c;
        }
    }
    return hit != neg;
}

/* Match a checked glob: iterative, with one backtrack point for the last
 * '*' (enough for globs, whose '*' match any run), so time is bounded by
 * strlen(glob) * strlen(name) and there is no recursion. */
static int glob_run(const char *g, const char *s)
{
    const char *star = NULL, *resume = NULL;
    while (*s) {
        if (*g == '*') {
            star = ++g;
            resume = s;
            continue;
        }
        if (*g == '[') {
            size_t k = set_len(g + 1);
            if (set_has(g + 1, k, *s)) {
                g += k + 1;
                s++;
                continue;
            }
        } else if (*g != '\0' && (*g == '?' || *g == *s)) {
            g++;
            s++;
            continue;
        }
        if (!star)
            return 0;
        g = star;
        s = ++resume;
    }
    while (*g == '*')
        g++;
    return *g == '\0';
}

int nerve_glob_match(const char *glob, const char *name)
{
    int r = nerve_glob_check(glob);
    if (r)
        return r;
    if (!name)
        return nerve__detail(NERVE_EINVAL, "channel name is NULL");
    return glob_run(glob, name);
}

/* ---- the channel directory ------------------------------------------------- */

/* A channel reported as present: its name, its file and its creation
 * time. A file replaced between two looks is a new channel, unless it
 * carries the same creation time: then it is the channel's larger
 * successor (GROWTH in src/chan_open.c), the same channel to a bridge,
 * whose readers follow it. Kept in an unsorted array searched linearly: a
 * bridge serves tens to hundreds of channels, and a listing happens only
 * when inotify says something changed (or every NERVE_DIR_SCAN_MS without
 * it). */
struct dir_ent {
    char name[NERVE_NAME_MAX + 1];
    dev_t dev;
    ino_t ino;
    int64_t created_ns; /* 0: unknown (not a channel, or unreadable) */
    int seen;           /* found by the listing in progress */
};

struct nerve_dir {
    int fd;      /* inotify or timerfd */
    int inotify; /* fd is an inotify instance */
    int dirty;   /* list again before the next event is taken */
    char **globs;
    size_t nglobs;
    struct dir_ent *ents; /* reported present */
    size_t nents, capents;
    struct nerve_dir_event *q; /* reported next, from qhead */
    size_t qhead, nq, capq;
};

static int grow(void **p, size_t *cap, size_t need, size_t each)
{
    if (need <= *cap)
        return 0;
    size_t n = *cap ? *cap * 2 : 16;
    while (n < need)
        n *= 2;
    void *q = realloc(*p, n * each);
    if (!q)
        return NERVE_ENOMEM;
    *p = q;
    *cap = n;
    return 0;
}

static int dir_wants(const nerve_dir *d, const char *name)
{
    if (d->nglobs == 0)
        return 1;
    for (size_t i = 0; i < d->nglobs; i++)
        if (glob_run(d->globs[i], name))
            return 1;
    return 0;
}

static int dir_push(nerve_dir *d, uint32_t kind, const char *name)
{
    if (d->qhead == d->nq)
        d->qhead = d->nq = 0;
    if (grow((void **)&d->q, &d->capq, d->nq + 1, sizeof *d->q))
        return NERVE_ENOMEM;
    struct nerve_dir_event *ev = &d->q[d->nq++];
    memset(ev, 0, sizeof *ev);
    ev->kind = kind;
    snprintf(ev->name, sizeof ev->name, "%s", name);
    return 0;
}

/* The creation time of channel `name`, 0 if it cannot be read. */
static int64_t created_of(const char *name)
{
    struct nerve_stats st;
    return nerve_chan_stat_name(name, &st) == 0 ? st.created_ns : 0;
}

/* A known channel's file is another one now: grown (same creation time)
 * or replaced (reported as removed, then created). */
static int dir_refile(nerve_dir *d, struct dir_ent *e, const struct stat *st)
{
    int64_t created = created_of(e->name);
    int grown = created != 0 && created == e->created_ns;
    e->dev = st->st_dev;
    e->ino = st->st_ino;
    e->created_ns = created;
    if (grown)
        return 0;
    if (dir_push(d, NERVE_DIR_REMOVED, e->name) ||
        dir_push(d, NERVE_DIR_CREATED, e->name))
        return NERVE_ENOMEM;
    return 0;
}

static int dir_list_one(const char *name, void *arg)
{
    nerve_dir *d = arg;
    char path[NERVE_PATH_MAX];
    struct stat st;
    if (!dir_wants(d, name) ||
        snprintf(path, sizeof path, "%s%s%s", NERVE__SHM_DIR,
                 NERVE__CHAN_PREFIX, name) >= (int)sizeof path ||
        lstat(path, &st) != 0)
        return 0; /* gone since the listing saw it: not there */
    for (size_t i = 0; i < d->nents; i++) {
        struct dir_ent *e = &d->ents[i];
        if (strcmp(e->name, name) != 0)
            continue;
        e->seen = 1;
        if (e->dev == st.st_dev && e->ino == st.st_ino)
            return 0;
        return dir_refile(d, e, &st);
    }
    if (grow((void **)&d->ents, &d->capents, d->nents + 1, sizeof *d->ents) ||
        dir_push(d, NERVE_DIR_CREATED, name))
        return NERVE_ENOMEM;
    struct dir_ent *e = &d->ents[d->nents++];
    snprintf(e->name, sizeof e->name, "%s", name);
    e->dev = st.st_dev;
    e->ino = st.st_ino;
    e->created_ns = created_of(name);
    e->seen = 1;
    return 0;
}

/* List the directory and queue what changed since the last listing. */
static int dir_rescan(nerve_dir *d)
{
    for (size_t i = 0; i < d->nents; i++)
        d->ents[i].seen = 0;
    int r = nerve_chan_list(dir_list_one, d);
    if (r)
        return r; /* the listing failed: nothing is taken as removed */
    for (size_t i = 0; i < d->nents;) {
        if (d->ents[i].seen) {
            i++;
            continue;
        }
        if (dir_push(d, NERVE_DIR_REMOVED, d->ents[i].name))
            return NERVE_ENOMEM;
        d->ents[i] = d->ents[--d->nents];
    }
    d->dirty = 0;
    return 0;
}

/* Whether one inotify record may concern a watched channel. */
static int dir_event_matters(const nerve_dir *d, const struct inotify_event *e)
{
    size_t pl = strlen(NERVE__CHAN_PREFIX);
    if (e->mask & (IN_Q_OVERFLOW | IN_DELETE_SELF | IN_MOVE_SELF))
        return 1;
    return e->len > 0 && strncmp(e->name, NERVE__CHAN_PREFIX, pl) == 0 &&
           dir_wants(d, e->name + pl);
}

/* Read what woke the descriptor; mark the watcher dirty if it may matter. */
static void dir_drain(nerve_dir *d)
{
    if (!d->inotify) {
        uint64_t ticks;
        if (read(d->fd, &ticks, sizeof ticks) == (ssize_t)sizeof ticks)
            d->dirty = 1;
        return;
    }
    char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
    ssize_t n;
    while ((n = read(d->fd, buf, sizeof buf)) > 0) {
        for (char *p = buf; p < buf + n;) {
            const struct inotify_event *e = (const struct inotify_event *)p;
            if (dir_event_matters(d, e))
                d->dirty = 1;
            p += sizeof *e + e->len;
        }
    }
}

static int dir_wake_fd(nerve_dir *d, uint32_t flags)
{
    if (!(flags & NERVE_DIR_SCAN)) {
        int fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
        if (fd >= 0 && inotify_add_watch(fd, NERVE__SHM_DIR,
                                         IN_CREATE | IN_DELETE | IN_MOVED_FROM |
                                             IN_MOVED_TO | IN_DELETE_SELF |
                                             IN_MOVE_SELF) >= 0) {
            d->fd = fd;
            d->inotify = 1;
            return 0;
        }
        if (fd >= 0)
            close(fd); /* fall back to the timer (docs/bridge-kernel.md §2) */
    }
    int fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    if (fd < 0)
        return nerve__err_from_errno(errno);
    struct itimerspec it = {{0, NERVE_DIR_SCAN_MS * 1000000L},
                            {0, NERVE_DIR_SCAN_MS * 1000000L}};
    if (timerfd_settime(fd, 0, &it, NULL) != 0) {
        int r = nerve__err_from_errno(errno);
        close(fd);
        return r;
    }
    d->fd = fd;
    return 0;
}

int nerve_dir_open(const char *const *globs, size_t n, uint32_t flags,
                   nerve_dir **out)
{
    if (!out || (n > 0 && !globs) || (flags & ~NERVE_DIR_SCAN))
        return nerve__detail(NERVE_EINVAL, "%s",
                             !out                      ? "result is NULL"
                             : flags & ~NERVE_DIR_SCAN ? "unknown flag"
                                                       : "globs is NULL");
    for (size_t i = 0; i < n; i++) {
        int r = nerve_glob_check(globs[i]);
        if (r)
            return r;
    }
    nerve_dir *d = calloc(1, sizeof *d);
    if (!d || (n > 0 && !(d->globs = calloc(n, sizeof *d->globs)))) {
        free(d);
        return NERVE_ENOMEM;
    }
    d->fd = -1;
    d->nglobs = n;
    int r = 0;
    for (size_t i = 0; i < n && !r; i++)
        if (!(d->globs[i] = strdup(globs[i])))
            r = NERVE_ENOMEM;
    if (!r)
        r = dir_wake_fd(d, flags); /* before the listing: nothing is missed */
    if (!r)
        r = dir_rescan(d);
    if (r) {
        (void)nerve_dir_close(d);
        return r;
    }
    *out = d;
    return 0;
}

int nerve_dir_fd(const nerve_dir *d)
{
    return d ? d->fd : NERVE_EINVAL;
}

int nerve_dir_inotify(const nerve_dir *d)
{
    return d ? d->inotify : NERVE_EINVAL;
}

int nerve_dir_next(nerve_dir *d, struct nerve_dir_event *ev)
{
    if (!d || !ev)
        return NERVE_EINVAL;
    if (d->qhead == d->nq) {
        dir_drain(d);
        if (d->dirty) {
            int r = dir_rescan(d);
            if (r)
                return r;
        }
    }
    if (d->qhead == d->nq)
        return NERVE_EAGAIN;
    *ev = d->q[d->qhead++];
    return 0;
}

int nerve_dir_close(nerve_dir *d)
{
    if (!d)
        return 0;
    if (d->fd >= 0)
        close(d->fd);
    for (size_t i = 0; i < d->nglobs; i++)
        free(d->globs[i]);
    free(d->globs);
    free(d->ents);
    free(d->q);
    free(d);
    return 0;
}

/* ---- the import budget ------------------------------------------------------ */

struct budget_ent {
    char name[NERVE_NAME_MAX + 1];
    uint64_t bytes;
};

struct nerve_budget {
    pthread_mutex_t lock; /* guards everything below */
    uint64_t max_channel, max_total, refused;
    struct budget_ent *ents;
    size_t n, cap;
};

/* A byte count for people: 67108864 -> "64 MiB", 1536 -> "1.5 KiB". */
static const char *fmt_size(uint64_t n, char *buf, size_t len)
{
    static const char *const unit[] = {"TiB", "GiB", "MiB", "KiB"};
    for (int i = 0; i < 4; i++) {
        unsigned shift = 40u - 10u * (unsigned)i;
        if (n >= (UINT64_C(1) << shift)) {
            if (n % (UINT64_C(1) << shift) == 0)
                snprintf(buf, len, "%" PRIu64 " %s", n >> shift, unit[i]);
            else
                snprintf(buf, len, "%.1f %s",
                         (double)n / (double)(UINT64_C(1) << shift), unit[i]);
            return buf;
        }
    }
    snprintf(buf, len, "%" PRIu64 " bytes", n);
    return buf;
}

int nerve_budget_open(uint64_t max_channel, uint64_t max_total,
                      nerve_budget **out)
{
    if (!out || max_channel == 0 || max_total == 0)
        return nerve__detail(NERVE_EINVAL, "%s",
                             out ? "a budget's bounds must be positive"
                                 : "result is NULL");
    nerve_budget *b = calloc(1, sizeof *b);
    if (!b)
        return NERVE_ENOMEM;
    pthread_mutex_init(&b->lock, NULL);
    b->max_channel = max_channel;
    b->max_total = max_total;
    *out = b;
    return 0;
}

/* Why a channel of this geometry is over max_channel (NERVE_EMSGSIZE), or
 * 0. */
static int over_channel(const nerve_budget *b, uint64_t slots, uint64_t data)
{
    char a[32], m[32];
    const uint64_t entry = sizeof(struct nerve__shm_slot);
    if (data > b->max_channel)
        return nerve__detail(NERVE_EMSGSIZE,
                             "its data ring of %s is over --max-channel-size "
                             "(%s)",
                             fmt_size(data, a, sizeof a),
                             fmt_size(b->max_channel, m, sizeof m));
    if (slots > b->max_channel / entry)
        return nerve__detail(
            NERVE_EMSGSIZE,
            "its index of %" PRIu64 " slots (%s) is over "
            "--max-channel-size (%s)",
            slots,
            fmt_size(slots > UINT64_MAX / entry ? UINT64_MAX : slots * entry, a,
                     sizeof a),
            fmt_size(b->max_channel, m, sizeof m));
    return 0;
}

/* Charge `need` bytes to `name` under b->lock, within max_total: 0 or why
 * not. */
static int admit_locked(nerve_budget *b, const char *name, uint64_t need)
{
    char a[32], u[32], m[32];
    uint64_t used = 0;
    size_t at = b->n;
    for (size_t i = 0; i < b->n; i++) {
        if (strcmp(b->ents[i].name, name) == 0)
            at = i; /* its old charge is replaced, not added to */
        else
            used += b->ents[i].bytes;
    }
    int r = 0;
    if (used > b->max_total || need > b->max_total - used)
        r = nerve__detail(NERVE_ENOSPC,
                          "its %s with the %s already imported is over "
                          "--max-import-total (%s)",
                          fmt_size(need, a, sizeof a),
                          fmt_size(used, u, sizeof u),
                          fmt_size(b->max_total, m, sizeof m));
    if (r)
        return r;
    if (at == b->n) {
        if (grow((void **)&b->ents, &b->cap, b->n + 1, sizeof *b->ents))
            return NERVE_ENOMEM;
        snprintf(b->ents[b->n++].name, sizeof b->ents->name, "%s", name);
    }
    b->ents[at].bytes = need;
    return 0;
}

int nerve_budget_admit(nerve_budget *b, const char *name,
                       const struct nerve_chan_opts *opts, uint32_t flags,
                       uint64_t *need)
{
    if (!b || !name || !opts || (flags & ~NERVE_BUDGET_UNCOUNTED))
        return nerve__detail(NERVE_EINVAL, "%s",
                             flags & ~NERVE_BUDGET_UNCOUNTED
                                 ? "unknown flag"
                                 : "budget, name or options is NULL");
    int r = nerve_chan_name_check(name);
    if (r)
        return nerve__detail(r, "'%.*s' is not a channel name", NERVE_NAME_MAX,
                             name);
    if (opts->size < offsetof(struct nerve_chan_opts, mode) || !opts->slots ||
        !opts->data_size)
        return nerve__detail(NERVE_EINVAL, "the budget needs the channel's "
                                           "slots and data size");
    uint64_t bytes = 0;
    r = over_channel(b, opts->slots, opts->data_size);
    if (!r && (r = nerve_chan_file_size(opts, &bytes)) != 0) {
        char why[200]; /* the detail is rewritten in the same buffer */
        snprintf(why, sizeof why, "%s", nerve_err_detail(r));
        r = nerve__detail(r, "nerve would not create it: %s", why);
    }
    if (!r) {
        pthread_mutex_lock(&b->lock);
        r = admit_locked(b, name, bytes);
        if (r && r != NERVE_ENOMEM && !(flags & NERVE_BUDGET_UNCOUNTED))
            b->refused++;
        pthread_mutex_unlock(&b->lock);
    } else if (!(flags & NERVE_BUDGET_UNCOUNTED)) {
        pthread_mutex_lock(&b->lock);
        b->refused++;
        pthread_mutex_unlock(&b->lock);
    }
    if (!r && need)
        *need = bytes;
    return r;
}

int nerve_budget_release(nerve_budget *b, const char *name)
{
    if (!b || !name)
        return NERVE_EINVAL;
    int r = NERVE_ENOENT;
    pthread_mutex_lock(&b->lock);
    for (size_t i = 0; i < b->n; i++) {
        if (strcmp(b->ents[i].name, name) == 0) {
            b->ents[i] = b->ents[--b->n];
            r = 0;
            break;
        }
    }
    pthread_mutex_unlock(&b->lock);
    return r;
}

int nerve_budget_stat(nerve_budget *b, struct nerve_budget_stats *st)
{
    if (!b || !st)
        return NERVE_EINVAL;
    memset(st, 0, sizeof *st);
    pthread_mutex_lock(&b->lock);
    st->max_channel = b->max_channel;
    st->max_total = b->max_total;
    st->refused = b->refused;
    st->channels = b->n;
    for (size_t i = 0; i < b->n; i++)
        st->used += b->ents[i].bytes;
    pthread_mutex_unlock(&b->lock);
    return 0;
}

int nerve_budget_close(nerve_budget *b)
{
    if (!b)
        return 0;
    pthread_mutex_destroy(&b->lock);
    free(b->ents);
    free(b);
    return 0;
}
