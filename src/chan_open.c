/* Channels: creating, opening (with header validation), closing,
 * removing and repairing channel files. The ring protocol that works on an
 * open channel is in chan.c; statistics, check and list in chan_info.c.
 * Every file operation in /dev/shm goes through src/platform.h. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "atomics.h"
#include "chan_internal.h"
#include "crashpoint.h"
#include "nerve/nerve.h"
#include "opts.h"
#include "platform.h"
#include "shm.h"
#include "utf8.h"

#define DEFAULT_SLOTS 1024u
#define DEFAULT_DATA (1u << 20)
#define DEFAULT_MODE 0644u
#define MAX_SLOTS (1ull << 32)
#define MAX_DATA (1ull << 40)

#define NAME_STR_(x) #x
#define NAME_STR(x) NAME_STR_(x)
/* The rule in every bad-character error; the length error states the limit
 * alone. NERVE_NAME_MAX is a plain number, so it spells itself here. */
#define NAME_RULE                                                              \
    "names use A-Z a-z 0-9 _ . -, do not start with '.' and have at "          \
    "most " NAME_STR(NERVE_NAME_MAX) " bytes"

/* A name with a '/' is most often a ROS topic (`nerve echo /camera/image`):
 * say which channel the topic maps to (docs/ros2.md "The mapping": strip
 * the leading '/', then '/' -> '.'), when that is a valid name. */
static int slash_error(const char *name)
{
    char mapped[NERVE_NAME_MAX + 1];
    const char *p = name;
    size_t n = 0;
    while (*p == '/')
        p++;
    for (; *p && n < NERVE_NAME_MAX; p++)
        mapped[n++] = *p == '/' ? '.' : *p;
    mapped[n] = 0;
    if (*p == 0 && n > 0 && mapped[0] != '.' &&
        strspn(mapped, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                       "0123456789_.-") == n)
        return nerve__detail(NERVE_EINVAL,
                             "'/' is not allowed in a channel name; the ROS "
                             "topic %s is the channel %s (" NAME_RULE ")",
                             name, mapped);
    return nerve__detail(
        NERVE_EINVAL, "'/' is not allowed in a channel name (" NAME_RULE ")");
}

int nerve_chan_name_check(const char *name)
{
    nerve__detail_clear();
    if (!name || !name[0])
        return nerve__detail(NERVE_EINVAL,
                             "empty channel name (" NAME_RULE ")");
    if (name[0] == '.')
        return nerve__detail(NERVE_EINVAL,
                             "a channel name may not start with '.' "
                             "(" NAME_RULE ")");
    size_t n = 0;
    for (const char *p = name; *p; p++, n++) {
        char ch = *p;
        int ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
                 (ch >= '0' && ch <= '9') || ch == '_' || ch == '-' ||
                 ch == '.';
        if (!ok) {
            unsigned char u = (unsigned char)ch;
            if (u == ' ')
                return nerve__detail(NERVE_EINVAL,
                                     "a space is not allowed in a channel "
                                     "name (" NAME_RULE ")");
            if (u == '/')
                return slash_error(name);
            if (u > ' ' && u < 127)
                return nerve__detail(NERVE_EINVAL,
                                     "'%c' is not allowed in a channel name "
                                     "(" NAME_RULE ")",
                                     ch);
            return nerve__detail(NERVE_EINVAL,
                                 "byte 0x%02x is not allowed in a channel "
                                 "name (" NAME_RULE ")",
                                 u);
        }
        if (n >= NERVE_NAME_MAX)
            return nerve__detail(NERVE_ENAMETOOLONG,
                                 "channel name longer than %d bytes",
                                 NERVE_NAME_MAX);
    }
    return 0;
}

void nerve__path_of(char *buf, size_t len, const char *prefix, const char *name)
{
    snprintf(buf, len, NERVE__SHM_DIR "%s%s", prefix, name);
}

int nerve_chan_path(const char *name, uint32_t flags, char *buf, size_t len)
{
    if (!buf || !len || (flags & ~NERVE_PATH_BELL))
        return NERVE_EINVAL;
    buf[0] = 0;
    if (name) {
        int r = nerve_chan_name_check(name);
        if (r)
            return r;
    }
    const char *prefix =
        (flags & NERVE_PATH_BELL) ? NERVE__BELL_PREFIX : NERVE__CHAN_PREFIX;
    int n = snprintf(buf, len, NERVE__SHM_DIR "%s%s", prefix, name ? name : "");
    if (n < 0 || (size_t)n >= len) {
        buf[0] = 0;
        return nerve__detail(NERVE_EMSGSIZE,
                             "the path needs %d bytes, the buffer holds %zu "
                             "(NERVE_PATH_MAX always suffices)",
                             n + 1, len);
    }
    return 0;
}

/* ---- geometry ----------------------------------------------------------- */

/* Compute (creation) or re-derive (open) the layout of a channel. Returns 0
 * or NERVE_EINVAL if it does not fit the limits. */
static int geometry_of(uint64_t nslots, uint64_t data_size, uint64_t meta_bytes,
                       uint64_t page, struct nerve__geometry *g)
{
    if (nslots < 1 || nslots > MAX_SLOTS || data_size < 1 ||
        data_size > MAX_DATA || meta_bytes > (1ull << 32) || page < 4096 ||
        (page & (page - 1)) != 0)
        return NERVE_EINVAL;
    g->nslots = nslots;
    g->data_size = NERVE__ROUND_UP(data_size, page);
    g->meta_len = NERVE__ROUND_UP(meta_bytes ? meta_bytes : 1, page);
    g->index_off = NERVE__HDR_REGION + g->meta_len;
    g->data_off =
        g->index_off +
        NERVE__ROUND_UP(nslots * sizeof(struct nerve__shm_slot), page);
    g->file_size = g->data_off + g->data_size;
    return 0;
}

/* ---- creation ----------------------------------------------------------- */

/* Whether s[0..n) is printable text: well-formed UTF-8 with no control
 * character (U+0000-U+001F, DEL U+007F, U+0080-U+009F). Types and
 * encodings are names that every tool prints; a control character in one
 * is an escape sequence waiting for the operator's terminal (issue 28,
 * item 3), so they are refused at create. A file planted with one still
 * opens (its bytes are the creator's business); the tools escape what
 * they print. */
static int meta_text_ok(const char *s)
{
    size_t n = strlen(s);
    const unsigned char *p = (const unsigned char *)s;
    if (!nerve__utf8_valid(p, n))
        return 0;
    for (size_t i = 0; i < n; i++) {
        if (p[i] < 0x20 || p[i] == 0x7f)
            return 0;
        /* U+0080-U+009F in UTF-8 is 0xc2 0x80-0x9f (in valid UTF-8 a
         * 0xc2 lead byte is always followed by a continuation byte). */
        if (p[i] == 0xc2 && p[i + 1] <= 0x9f)
            return 0;
    }
    return 1;
}

static int opts_read(const struct nerve_chan_opts *in,
                     struct nerve_chan_opts *o)
{
    struct nerve_chan_opts def = NERVE_CHAN_OPTS_INIT;
    *o = def;
    /* A tail this library does not know must be zero (options grow by
     * appending fields; a caller built against a newer header may set one
     * we cannot honour): the library's one options reader (opts.c). */
    if (in) {
        int r = nerve__opts_read(o, sizeof *o, in, in->size);
        if (r)
            return r;
    }
    o->size = sizeof *o;
    if (o->flags &
            ~(NERVE_C_EXIST_OK | NERVE_C_WAKE_ALWAYS | NERVE_C_REMOVE_UNUSED) ||
        o->reserved0 != 0)
        return NERVE_EINVAL;
    if (!o->slots)
        o->slots = DEFAULT_SLOTS;
    if (!o->data_size)
        o->data_size = DEFAULT_DATA;
    if (!o->mode)
        o->mode = DEFAULT_MODE;
    if (o->mode & ~0777u)
        return NERVE_EINVAL;
    if (o->type && (strlen(o->type) > NERVE_TYPE_MAX || !meta_text_ok(o->type)))
        return NERVE_EINVAL;
    if (o->encoding && (strlen(o->encoding) > NERVE_ENCODING_MAX ||
                        !meta_text_ok(o->encoding)))
        return NERVE_EINVAL;
    if (o->schema_len > NERVE_SCHEMA_MAX || (o->schema_len && !o->schema))
        return NERVE_EINVAL;
    if (o->schema && memchr(o->schema, 0, o->schema_len))
        return NERVE_EINVAL;
    return 0;
}

/* The metadata bytes of a channel made with (checked) options o: type,
 * encoding and schema, each followed by a NUL. */
static uint64_t meta_bytes_of(const struct nerve_chan_opts *o)
{
    uint64_t tlen = o->type ? strlen(o->type) : 0;
    uint64_t elen = o->encoding ? strlen(o->encoding) : 0;
    return tlen + elen + o->schema_len + 3;
}

int nerve_chan_file_size(const struct nerve_chan_opts *opts, uint64_t *size)
{
    struct nerve_chan_opts o;
    struct nerve__geometry g;
    nerve__detail_clear(); /* no stale detail behind a bare EINVAL */
    if (!size)
        return NERVE_EINVAL;
    int r = opts_read(opts, &o);
    if (r)
        return r;
    if (geometry_of(o.slots, o.data_size, meta_bytes_of(&o), nerve__page_size(),
                    &g))
        return nerve__detail(NERVE_EINVAL,
                             "%" PRIu64 " slots and a %" PRIu64
                             "-byte data ring: slots must be 1 to %llu, the "
                             "data ring 1 to %llu bytes",
                             o.slots, o.data_size, MAX_SLOTS, MAX_DATA);
    *size = g.file_size;
    return 0;
}

/* Write the bell into the new unnamed file t (NERVE__BELL_SIZE bytes). */
static int make_bell(struct nerve__shm_tmp *t, uint32_t mode)
{
    int r = nerve__shm_tmp_create(NERVE__SHM_DIR, NERVE__BELL_SIZE, t);
    if (r)
        return r;
    struct nerve__shm_bell *b = nerve__shm_map(t->fd, NERVE__BELL_SIZE, 1);
    if (!b) {
        r = nerve__err_from_errno(errno);
    } else {
        b->version = NERVE_LAYOUT_VERSION;
        b->magic = NERVE__BELL_MAGIC;
        nerve__shm_unmap(b, NERVE__BELL_SIZE);
        /* The bell has the channel's mode (and owner and group): only
         * processes that may write the channel may write (and so
         * truncate) the bell, whose mapping every writer reads after each
         * put. nerve__bell_map() uses no other bell. Readers that may not write
         * it poll instead, unless the channel wakes on every put
         * (NERVE_C_WAKE_ALWAYS). See docs/design/0002-wakeup.md. */
        if (nerve__file->fchmod(t->fd, mode) != 0)
            r = nerve__err_from_errno(errno);
    }
    if (r)
        nerve__shm_tmp_discard(t);
    return r;
}

/* Write a complete channel into the new unnamed file t. */
static int make_channel(const struct nerve_chan_opts *o,
                        struct nerve__shm_tmp *t)
{
    uint64_t tlen = o->type ? strlen(o->type) : 0;
    uint64_t elen = o->encoding ? strlen(o->encoding) : 0;
    uint64_t page = nerve__page_size();
    struct nerve__geometry g;
    int r = geometry_of(o->slots, o->data_size, meta_bytes_of(o), page, &g);
    if (r)
        return r;
    r = nerve__shm_tmp_create(NERVE__SHM_DIR, g.file_size, t);
    if (r)
        return r;
    unsigned char *m = nerve__shm_map(t->fd, g.index_off, 1);
    if (!m) {
        r = nerve__err_from_errno(errno);
        goto out;
    }
    struct nerve__shm_hdr *h = (struct nerve__shm_hdr *)m;
    h->layout_version = NERVE_LAYOUT_VERSION;
    h->header_size = sizeof *h;
    h->abi_endian = NERVE__ABI_ENDIAN;
    h->abi_mutex_size = sizeof(pthread_mutex_t);
    h->creator_version = NERVE_VERSION_NUMBER;
    h->page_size = (uint32_t)page;
    h->nslots = g.nslots;
    h->data_size = g.data_size;
    h->meta_off = NERVE__HDR_REGION;
    h->meta_len = g.meta_len;
    h->index_off = g.index_off;
    h->data_off = g.data_off;
    h->file_size = g.file_size;
    h->type_len = (uint32_t)tlen;
    h->encoding_len = (uint32_t)elen;
    h->schema_len = o->schema_len;
    struct timespec rt;
    clock_gettime(CLOCK_REALTIME, &rt);
    h->created_ns = (int64_t)rt.tv_sec * 1000000000 + rt.tv_nsec;
    if (o->flags & NERVE_C_WAKE_ALWAYS)
        h->compat_flags |= NERVE__COMPAT_WAKE_ALWAYS;
    if (o->flags & NERVE_C_REMOVE_UNUSED)
        h->compat_flags |= NERVE__COMPAT_REMOVE_UNUSED;
    /* Fresh file: no message; tail = 1 > head = 0 means empty. */
    nerve__store_rlx(&h->head, 0);
    nerve__store_rlx(&h->tail, 1);
    nerve__store_rlx(&h->wpos, 0);
    unsigned char *meta = m + NERVE__HDR_REGION;
    if (tlen)
        memcpy(meta, o->type, tlen);
    if (elen)
        memcpy(meta + tlen + 1, o->encoding, elen);
    if (o->schema_len)
        memcpy(meta + tlen + elen + 2, o->schema, o->schema_len);
    r = nerve__mutex_init(&h->lock.l);
    if (r == 0) {
        /* The magic last: the file becomes a channel only when complete.
         * (It is also invisible under its final name until linked.) */
        h->magic = NERVE__MAGIC;
        if (nerve__file->msync(m, g.index_off, MS_SYNC) != 0)
            r = nerve__err_from_errno(errno);
    } else {
        r = NERVE_ENOMEM;
    }
    nerve__shm_unmap(m, g.index_off);
    if (r == 0 && nerve__file->fchmod(t->fd, o->mode) != 0)
        r = nerve__err_from_errno(errno);
out:
    if (r)
        nerve__shm_tmp_discard(t);
    return r;
}

static int same_str(const char *want, const char *have)
{
    return !want || strcmp(want, have) == 0;
}

/* NERVE_C_EXIST_OK: the existing channel must have the geometry and the
 * metadata the caller asked for. */
static int check_compatible(const char *name, const struct nerve_chan_opts *o)
{
    nerve_chan *c;
    int r = nerve_chan_open(name, NERVE_O_READ, &c);
    if (r)
        return r;
    struct nerve__geometry g;
    r = geometry_of(o->slots, o->data_size, 1, nerve__page_size(), &g);
    if (r == 0 &&
        (c->nslots != g.nslots || c->data_size != g.data_size ||
         !same_str(o->type, c->type) || !same_str(o->encoding, c->encoding) ||
         (o->schema && (o->schema_len != c->schema_len ||
                        memcmp(o->schema, c->schema, o->schema_len) != 0))))
        r = nerve__detail(
            NERVE_EMISMATCH,
            "the channel exists with type '%s', %" PRIu64
            " slots and a %" PRIu64
            "-byte data ring; asked for type '%s', %" PRIu64
            " slots and %" PRIu64
            " bytes (use the same, or another name, or remove the channel)",
            c->type ? c->type : "", c->nslots, c->data_size,
            o->type ? o->type : "", g.nslots, g.data_size);
    (void)nerve_chan_close(c);
    return r;
}

/* ---- the bell and the channel's name: create and unlink ---------------
 *
 * A channel is two names, nerve.NAME and its bell nerve-bell.NAME, and the
 * file system has no operation on two names at once. INVARIANT
 * (bell-before-channel): a creator links the bell before the channel, and
 * an unlink removes the bell only after it has removed the channel:
 *
 *   create  C1  link nerve-bell.NAME, never replacing
 *           C2  link nerve.NAME, never replacing
 *           C3  if C2 failed: unlink the bell C1 linked
 *   unlink  U1  unlink nerve.NAME
 *           U2  if U1 removed it: unlink nerve-bell.NAME
 *
 * So whenever a channel is visible its bell is too, and once every create
 * and unlink of a name has returned, the bell exists if and only if the
 * channel does. A bell with no channel (a "lone" bell) exists only inside
 * one of those sequences (between C1 and C2 or C3, between U1 and U2), or
 * after a process was killed there (an orphan). A creator or an unlink that
 * meets a lone bell of this user therefore waits, bounded (BELL_GRACE_NS),
 * for the sequence in flight to finish, and only then takes the bell as an
 * orphan and removes it; nerve_chan_check() reports an orphan.
 *
 * The order before issue 28 (channel, then bell) left a bell behind
 * whenever an unlink ran between a creator's two links: U1 removed the new
 * channel, U2 found no bell yet, then the creator linked its bell (1 in 3
 * runs of a 3 s create/unlink/open storm). A lone bell met after the grace
 * is removed even if it belonged to a process stalled longer than that in
 * its sequence: the cost is a channel without a bell (its waiting readers
 * poll; check says so), never a file left behind.
 *
 * MODEL: model/names.pml checks these steps, with the grace ending at any
 * moment or never: no bell is left without its channel once every create
 * and unlink has returned, and (no process stalled past the grace) a
 * visible channel always has its creator's bell; the order before issue 28
 * is its broken variant. */

/* How long a lone bell of this user may be in flight before it is taken
 * for an orphan: far longer than two file system calls, and than a
 * preemption between them on a loaded machine. */
#define BELL_GRACE_NS 200000000ll
/* How long a create keeps trying to link its bell while other creates and
 * unlinks of the same name keep taking and freeing it. */
#define BELL_CLAIM_NS 1000000000ll

/* What is at the bell's name when the channel's name is free. */
enum lone_bell {
    BELL_NONE,    /* nothing (or the channel's name is taken) */
    BELL_OURS,    /* a regular file this user may remove: a lone bell */
    BELL_FOREIGN, /* a regular file of another user (root: none is) */
    BELL_SPECIAL  /* not a regular file: not a bell */
};

static enum lone_bell lone_bell_at(const char *cpath, const char *bpath)
{
    struct stat bst, cst;
    if (nerve__file->lstat(bpath, &bst) != 0)
        return BELL_NONE;
    if (nerve__file->lstat(cpath, &cst) == 0)
        return BELL_NONE;
    if (!S_ISREG(bst.st_mode))
        return BELL_SPECIAL;
    uid_t me = geteuid();
    return me == 0 || bst.st_uid == me ? BELL_OURS : BELL_FOREIGN;
}

/* Wait while a lone bell of this user is at bpath with no channel at
 * cpath, for at most BELL_GRACE_NS. Returns what is there at the end: a
 * BELL_OURS still there is an orphan. */
static enum lone_bell lone_bell_settle(const char *cpath, const char *bpath)
{
    int64_t end = nerve_clock_now_ns() + BELL_GRACE_NS;
    long nap = 20000; /* ns, doubling to 5 ms */
    enum lone_bell b;
    while ((b = lone_bell_at(cpath, bpath)) == BELL_OURS &&
           nerve_clock_now_ns() < end) {
        struct timespec ts = {0, nap};
        nanosleep(&ts, NULL);
        if (nap < 5000000)
            nap *= 2;
    }
    return b;
}

/* C1: link the new bell at bpath before the channel is linked at cpath.
 * Returns 1 if linked, 0 if the channel is to be made without a bell
 * (another user's file is there and this user may not remove it, or the
 * name stayed contended past BELL_CLAIM_NS; the channel then works without
 * a bell, see nerve__bell_map()), or NERVE_EEXIST if the channel's name is
 * taken (C2 would fail; nothing is touched). A lone bell that is resolved
 * meanwhile (its create or unlink finished) costs a retry, not one of the
 * three removals: it means another process made progress. */
static int claim_bell(const char *cpath, const char *bpath,
                      struct nerve__shm_tmp *bell)
{
    int64_t end = nerve_clock_now_ns() + BELL_CLAIM_NS;
    int removals = 0;
    for (;;) {
        int r = nerve__shm_tmp_link(bell, bpath);
        if (r == 0)
            return 1;
        if (r != NERVE_EEXIST)
            return 0;
        struct stat cst;
        if (nerve__file->lstat(cpath, &cst) == 0)
            return NERVE_EEXIST;
        /* A lone bell of this user is in flight (another create between
         * C1 and C2, an unlink between U1 and U2) or an orphan: wait for
         * the one in flight. Anything else at the bell's name is stale or
         * planted: removed where this user may (its own, or any as root). */
        enum lone_bell b = lone_bell_settle(cpath, bpath);
        if (b == BELL_NONE) {
            if (nerve_clock_now_ns() >= end)
                return 0;
            continue; /* gone, or the channel appeared: look again */
        }
        if (removals++ == 3 ||
            (nerve__file->unlink(bpath) != 0 && errno != ENOENT))
            return 0;
    }
}

/* C3: remove the bell this creator linked at bpath, if it is still there
 * (its channel was not linked). */
static void release_bell(const char *bpath, struct nerve__shm_tmp *bell)
{
    struct stat mine, there;
    if (nerve__file->fstat(bell->fd, &mine) == 0 &&
        nerve__file->lstat(bpath, &there) == 0 && mine.st_dev == there.st_dev &&
        mine.st_ino == there.st_ino)
        (void)nerve__file->unlink(bpath);
}

static int chan_create_once(const char *name,
                            const struct nerve_chan_opts *opts);

int nerve_chan_create(const char *name, const struct nerve_chan_opts *opts)
{
    /* With NERVE_C_EXIST_OK, the channel found may be removed as unused
     * (chan_life.c) before it is compared: create again. A name removed
     * this often in a row is answered NERVE_ENOENT. */
    int r = NERVE_ENOENT;
    for (int i = 0; i < 16 && r == NERVE_ENOENT; i++)
        r = chan_create_once(name, opts);
    return r;
}

static int chan_create_once(const char *name,
                            const struct nerve_chan_opts *opts)
{
    struct nerve_chan_opts o;
    int r = nerve_chan_name_check(name);
    if (r == 0)
        r = opts_read(opts, &o);
    if (r)
        return r;
    /* Temporaries of creators killed mid-create (only where files cannot
     * be made unnamed, or by older versions) are removed here. */
    nerve__shm_tmp_sweep(NERVE__SHM_DIR);
    struct nerve__shm_tmp chan, bell;
    r = make_channel(&o, &chan);
    if (r)
        return r;
    r = make_bell(&bell, o.mode);
    if (r) {
        nerve__shm_tmp_discard(&chan);
        return r;
    }
    NERVE_CRASHPOINT("create.filled");
    char cpath[PATH_MAX], bpath[PATH_MAX];
    nerve__path_of(cpath, sizeof cpath, NERVE__CHAN_PREFIX, name);
    nerve__path_of(bpath, sizeof bpath, NERVE__BELL_PREFIX, name);
    /* C1, the bell first (bell-before-channel, above). */
    int have_bell = claim_bell(cpath, bpath, &bell);
    if (have_bell == NERVE_EEXIST) {
        r = NERVE_EEXIST;
    } else {
        /* Killed here: a lone bell (an orphan), which check reports and
         * the next create or unlink of the name removes. */
        NERVE_CRASHPOINT("create.bell-linked");
        /* C2: linking the complete, unnamed file is the atomic, exclusive
         * creation: the channel appears fully initialised under its name,
         * or the name was taken (by anything: a channel, or a file planted
         * there) and nothing of ours is adopted or left behind. */
        r = nerve__shm_tmp_link(&chan, cpath);
        if (r != 0 && have_bell == 1)
            release_bell(bpath, &bell); /* C3 */
    }
    nerve__shm_tmp_discard(&chan);
    nerve__shm_tmp_discard(&bell);
    if (r == NERVE_EEXIST && (o.flags & NERVE_C_EXIST_OK))
        r = check_compatible(name, &o);
    else if (r == NERVE_EEXIST)
        nerve__detail(r, "a channel of this name exists (open it; or reuse it "
                         "only if alike with NERVE_C_EXIST_OK, exist_ok; or "
                         "remove it)");
    return r;
}

int nerve_chan_unlink(const char *name)
{
    int r = nerve_chan_name_check(name);
    if (r)
        return r;
    char cpath[PATH_MAX], bpath[PATH_MAX];
    nerve__path_of(cpath, sizeof cpath, NERVE__CHAN_PREFIX, name);
    nerve__path_of(bpath, sizeof bpath, NERVE__BELL_PREFIX, name);
    /* U1. Only a regular file is a channel (or the remains of one): a
     * directory, FIFO, socket or symlink under the name is not removed. */
    r = nerve__shm_unlink(cpath);
    if (r == NERVE_ENOENT) {
        /* No channel: a lone bell of this user that stays alone over the
         * grace is an orphan (its creator or unlinker was killed between
         * its two steps) and is removed; one in flight is left to the
         * create or unlink that owns it. The answer stays NERVE_ENOENT. */
        if (lone_bell_settle(cpath, bpath) == BELL_OURS)
            (void)nerve__file->unlink(bpath);
        return r;
    }
    if (r)
        return r;
    /* Killed here: an orphaned bell (see nerve_chan_create). */
    NERVE_CRASHPOINT("unlink.channel-removed");
    /* U2: the bell after the channel, so a failed U1 keeps both. A bell
     * this user may not remove (planted by another user) stays, harmlessly:
     * no channel of this user's uses it (nerve__bell_map()). */
    (void)nerve__file->unlink(bpath);
    return 0;
}

int nerve_chan_chmod(const char *name, uint32_t mode)
{
    int r = nerve_chan_name_check(name);
    if (r)
        return r;
    if (mode & ~0777u)
        return NERVE_EINVAL;
    char path[PATH_MAX];
    nerve__path_of(path, sizeof path, NERVE__CHAN_PREFIX, name);
    r = nerve__shm_chmod(path, mode);
    if (r)
        return r;
    /* The bell keeps the channel's mode (see make_bell()). A missing or
     * foreign bell is not an error: the channel works without one. */
    nerve__path_of(path, sizeof path, NERVE__BELL_PREFIX, name);
    r = nerve__shm_chmod(path, mode);
    if (r && r != NERVE_ENOENT && r != NERVE_ENOTCHAN && r != NERVE_EACCES)
        return r;
    return 0;
}

/* ---- opening ------------------------------------------------------------ */

int nerve__say(char *msg, size_t len, int code, const char *fmt, ...)
{
    if (msg && len) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, len, fmt, ap);
        va_end(ap);
    }
    return code;
}

/* The checks of nerve__header_check(), in order; each may read only the
 * fields that the steps before it found present and meaningful, and
 * returns 0 or the failure with its reason in msg. */

/* Is it a channel? The magic, read only from a file long enough to hold
 * it, then enough of the file for the version fields. */
static int hdr_identity(const struct nerve__shm_hdr *h, uint64_t st_size,
                        char *msg, size_t len)
{
    if (st_size < sizeof h->magic)
        return nerve__say(msg, len, NERVE_ENOTCHAN,
                          "not a nerve channel: file is %" PRIu64 " bytes",
                          st_size);
    if (h->magic != NERVE__MAGIC)
        return nerve__say(msg, len, NERVE_ENOTCHAN,
                          "not a nerve channel: magic 0x%016" PRIx64
                          " (a channel's is 0x%016llx)",
                          h->magic, NERVE__MAGIC);
    if (st_size < 16)
        return nerve__say(msg, len, NERVE_ETRUNC,
                          "file is %" PRIu64 " bytes, shorter than the header",
                          st_size);
    return 0;
}

/* Is it this layout? Nothing past the version fields means anything
 * before they match (docs/design/0001-shm-layout.md). */
static int hdr_version(const struct nerve__shm_hdr *h, char *msg, size_t len)
{
    if (h->layout_version < NERVE_LAYOUT_VERSION)
        return nerve__say(
            msg, len, NERVE_EVERSION,
            "layout_version %u, made by an older nerve; this library "
            "reads %u: recreate the channel (remove it, then "
            "create it again) to use it with this version",
            h->layout_version, NERVE_LAYOUT_VERSION);
    if (h->layout_version != NERVE_LAYOUT_VERSION)
        return nerve__say(
            msg, len, NERVE_EVERSION,
            "layout_version %u, made by a newer nerve; this library "
            "reads %u",
            h->layout_version, NERVE_LAYOUT_VERSION);
    if (h->incompat_flags != 0)
        return nerve__say(msg, len, NERVE_EVERSION,
                          "incompat_flags 0x%" PRIx64 " holds unknown features",
                          h->incompat_flags);
    return 0;
}

/* Was it made for this machine? The whole header is present, and its
 * ABI tag matches this platform's byte order, mutex and page size. */
static int hdr_abi(const struct nerve__shm_hdr *h, uint64_t st_size, char *msg,
                   size_t len)
{
    if (st_size < sizeof *h)
        return nerve__say(msg, len, NERVE_ETRUNC,
                          "file is %" PRIu64
                          " bytes, shorter than the %zu-byte "
                          "header",
                          st_size, sizeof *h);
    if (h->abi_endian != NERVE__ABI_ENDIAN)
        return nerve__say(
            msg, len, NERVE_EABI,
            "abi_endian 0x%08x: made on a machine of other byte order",
            h->abi_endian);
    if (h->abi_mutex_size != sizeof(pthread_mutex_t))
        return nerve__say(
            msg, len, NERVE_EABI,
            "abi_mutex_size %u; this platform's mutex is %zu bytes",
            h->abi_mutex_size, sizeof(pthread_mutex_t));
    if (h->page_size != nerve__page_size())
        return nerve__say(msg, len, NERVE_EABI,
                          "page_size %u; this kernel's page is %u bytes",
                          h->page_size, nerve__page_size());
    return 0;
}

/* Are the sizes within the library's limits? Afterwards every size field
 * is small enough that the geometry's arithmetic cannot overflow. */
static int hdr_limits(const struct nerve__shm_hdr *h, char *msg, size_t len)
{
    if (h->header_size != sizeof *h)
        return nerve__say(msg, len, NERVE_ECORRUPT,
                          "header_size %u, expected %zu", h->header_size,
                          sizeof *h);
    if (h->type_len > NERVE_TYPE_MAX)
        return nerve__say(msg, len, NERVE_ECORRUPT, "type_len %u exceeds %d",
                          h->type_len, NERVE_TYPE_MAX);
    if (h->encoding_len > NERVE_ENCODING_MAX)
        return nerve__say(msg, len, NERVE_ECORRUPT,
                          "encoding_len %u exceeds %d", h->encoding_len,
                          NERVE_ENCODING_MAX);
    if (h->schema_len > NERVE_SCHEMA_MAX)
        return nerve__say(msg, len, NERVE_ECORRUPT,
                          "schema_len %" PRIu64 " exceeds %u", h->schema_len,
                          NERVE_SCHEMA_MAX);
    if (h->nslots < 1 || h->nslots > MAX_SLOTS)
        return nerve__say(msg, len, NERVE_ECORRUPT,
                          "nslots %" PRIu64 " is outside [1, %llu]", h->nslots,
                          MAX_SLOTS);
    if (h->data_size < 1 || h->data_size > MAX_DATA)
        return nerve__say(msg, len, NERVE_ECORRUPT,
                          "data_size %" PRIu64 " is outside [1, %llu]",
                          h->data_size, MAX_DATA);
    return 0;
}

/* Does the layout follow from the sizes? Every offset the header stores
 * is the one geometry_of() derives (into *g), and the file is exactly
 * file_size bytes, so nothing the handle maps lies outside the file. */
static int hdr_geometry(const struct nerve__shm_hdr *h, uint64_t st_size,
                        struct nerve__geometry *g, char *msg, size_t len)
{
    uint64_t meta_bytes =
        (uint64_t)h->type_len + h->encoding_len + h->schema_len + 3;
    if (geometry_of(h->nslots, h->data_size, meta_bytes, h->page_size, g))
        return nerve__say(msg, len, NERVE_ECORRUPT, "geometry out of range");
    if (g->data_size != h->data_size)
        return nerve__say(msg, len, NERVE_ECORRUPT,
                          "data_size %" PRIu64
                          " is not a multiple of the page size "
                          "%u",
                          h->data_size, h->page_size);
#define FIELD_IS(field, want)                                                  \
    if (h->field != (want))                                                    \
        return nerve__say(msg, len, NERVE_ECORRUPT,                            \
                          #field " %" PRIu64 ", expected %" PRIu64             \
                                 " for this "                                  \
                                 "geometry",                                   \
                          (uint64_t)h->field, (uint64_t)(want));
    FIELD_IS(meta_off, NERVE__HDR_REGION)
    FIELD_IS(meta_len, g->meta_len)
    FIELD_IS(index_off, g->index_off)
    FIELD_IS(data_off, g->data_off)
    FIELD_IS(file_size, g->file_size)
#undef FIELD_IS
    if (st_size < g->file_size)
        return nerve__say(msg, len, NERVE_ETRUNC,
                          "file is %" PRIu64 " bytes, header says %" PRIu64,
                          st_size, g->file_size);
    if (st_size > g->file_size)
        return nerve__say(msg, len, NERVE_ECORRUPT,
                          "file is %" PRIu64 " bytes, header says %" PRIu64,
                          st_size, g->file_size);
    return 0;
}

/* Validate a header read from a file of st_size bytes. Each failure has its
 * own code (a file that is not a channel, another version, another ABI, a
 * truncated file, inconsistent fields) and, into msg, the field and why. */
int nerve__header_check(const struct nerve__shm_hdr *h, uint64_t st_size,
                        struct nerve__geometry *g, char *msg, size_t len)
{
    int r = hdr_identity(h, st_size, msg, len);
    if (r == 0)
        r = hdr_version(h, msg, len);
    if (r == 0)
        r = hdr_abi(h, st_size, msg, len);
    if (r == 0)
        r = hdr_limits(h, msg, len);
    if (r == 0)
        r = hdr_geometry(h, st_size, g, msg, len);
    return r;
}

static char *dup_bytes(const unsigned char *p, uint64_t n)
{
    char *s = malloc(n + 1);
    if (s) {
        memcpy(s, p, n);
        s[n] = 0;
    }
    return s;
}

/* Copy the metadata out of the file. The copies are what is validated:
 * no NUL inside any field, type and encoding well-formed UTF-8. */
static int meta_load(nerve_chan *c, const struct nerve__shm_hdr *h, char *msg,
                     size_t len)
{
    /* The lengths come from the validated private copy `h`, never from the
     * mapping: a process rewriting them during the open must not move the
     * reads out of the metadata region. The bytes themselves may still
     * change under us, so only the private copies are checked and used. */
    const unsigned char *m = c->base + NERVE__HDR_REGION;
    uint64_t tl = h->type_len, el = h->encoding_len, sl = h->schema_len;
    c->type = dup_bytes(m, tl);
    c->encoding = dup_bytes(m + tl + 1, el);
    c->schema = dup_bytes(m + tl + el + 2, sl);
    c->schema_len = sl;
    if (!c->type || !c->encoding || !c->schema)
        return NERVE_ENOMEM;
    if (memchr(c->type, 0, tl))
        return nerve__say(msg, len, NERVE_ECORRUPT, "type holds a NUL byte");
    if (memchr(c->encoding, 0, el))
        return nerve__say(msg, len, NERVE_ECORRUPT,
                          "encoding holds a NUL byte");
    if (memchr(c->schema, 0, sl))
        return nerve__say(msg, len, NERVE_ECORRUPT, "schema holds a NUL byte");
    /* The type and the encoding are text for every binding and tool
     * (src/utf8.h): rejected at create, NERVE_ECORRUPT here. The schema is
     * bytes. */
    if (!nerve__utf8_valid(c->type, tl))
        return nerve__say(msg, len, NERVE_ECORRUPT, "type is not valid UTF-8");
    if (!nerve__utf8_valid(c->encoding, el))
        return nerve__say(msg, len, NERVE_ECORRUPT,
                          "encoding is not valid UTF-8");
    return 0;
}

/* Open the bell of channel `name`, whose file is described by *cst, and
 * verify it is one this channel's creator made: a regular file with the
 * channel's owner, group and mode and one link, large enough, with the
 * bell's magic and version. Anyone may create files in /dev/shm, so a bell
 * that fails any of these was planted (or is left from a changed channel)
 * and is not used: mapping a file someone else owns would let them
 * truncate it under every writer (SIGBUS) or hold `waiters` at will.
 * Returns the bell mapped (read-write if `writable`), or NULL with the
 * reason in msg (when given). */
struct nerve__shm_bell *nerve__bell_map(const char *name,
                                        const struct stat *cst, int writable,
                                        char *msg, size_t len)
{
    char path[PATH_MAX];
    nerve__path_of(path, sizeof path, NERVE__BELL_PREFIX, name);
    struct stat st;
    int fd = nerve__shm_open(path, writable, &st);
    if (fd == NERVE_ENOENT) {
        nerve__say(msg, len, 0, "no bell file");
        return NULL;
    }
    if (fd == NERVE_EACCES) {
        nerve__say(msg, len, 0, "no write permission on the bell");
        return NULL;
    }
    if (fd < 0) {
        nerve__say(msg, len, 0, "bell is %s",
                   fd == NERVE_ENOTCHAN ? "not a regular file"
                                        : nerve_strerror(fd));
        return NULL;
    }
    struct nerve__shm_bell *b = NULL;
    if (st.st_uid != cst->st_uid || st.st_gid != cst->st_gid) {
        nerve__say(
            msg, len, 0,
            "bell is owned by uid %u gid %u, the channel by uid %u gid %u",
            (unsigned)st.st_uid, (unsigned)st.st_gid, (unsigned)cst->st_uid,
            (unsigned)cst->st_gid);
    } else if ((st.st_mode & 07777) != (cst->st_mode & 07777)) {
        nerve__say(
            msg, len, 0, "bell mode %04o differs from the channel's %04o",
            (unsigned)(st.st_mode & 07777), (unsigned)(cst->st_mode & 07777));
    } else if (st.st_nlink != 1) {
        nerve__say(msg, len, 0, "bell has %lu links (a bell has one)",
                   (unsigned long)st.st_nlink);
    } else if ((uint64_t)st.st_size < NERVE__BELL_SIZE) {
        nerve__say(msg, len, 0, "bell is %" PRIu64 " bytes, expected %u",
                   (uint64_t)st.st_size, NERVE__BELL_SIZE);
    } else {
        void *p = nerve__shm_map(fd, NERVE__BELL_SIZE, writable);
        if (!p) {
            nerve__say(msg, len, 0, "bell cannot be mapped: %s",
                       nerve_strerror(nerve__err_from_errno(errno)));
        } else {
            b = p;
            if (b->magic != NERVE__BELL_MAGIC ||
                b->version != NERVE_LAYOUT_VERSION) {
                nerve__say(msg, len, 0, "bell has a wrong magic or version");
                nerve__shm_unmap(p, NERVE__BELL_SIZE);
                b = NULL;
            }
        }
    }
    nerve__file->close(fd);
    return b;
}

/* Writers must share one PID namespace: the lock word holds a TID, which
 * the kernel resolves in the caller's namespace (a writer elsewhere would
 * boost, wait for or take over the wrong thread). The claim admits writers
 * of the namespace recorded in the header, and hands the channel to a new
 * namespace once no writer handle of the recorded one is open (claim.c,
 * WRITERS' NAMESPACE); a writer from another namespace meanwhile gets
 * NERVE_EXDEV. Readers take no lock and work from anywhere. */
static int writer_ns_claim(nerve_chan *c)
{
    int r = nerve__mutex_claim(&c->hdr->lock.l, c->fd, nerve__pidns_id());
    return r < 0 ? r : 0;
}

/* A new handle's reading position (chan.h, "missed"): the cursor just
 * before the oldest message present, so NEXT starts there with missed 0,
 * and the origin at the newest, so NEWEST does not count the history
 * present at open as missed. Head and tail are read as locate() reads
 * them (acquire; nerve__readable_from()); a message committed
 * meanwhile only moves the start later. */
static void reader_start(nerve_chan *c)
{
    /* SYNC(pub-seq) acquire, as in locate(). */
    uint64_t head = nerve__load_acq(&c->hdr->head);
    uint64_t tail =
        nerve__readable_from(head, nerve__load_acq(&c->hdr->tail), c->nslots);
    c->cursor = tail <= head ? tail - 1 : head;
    c->origin = head;
}

/* Open nerve.NAME for nerve__chan_open(): never blocks, never follows a
 * symlink, and only a regular file is opened (nerve__shm_open): /dev/shm
 * is world-writable. Returns the descriptor (*st filled) or an error. */
static int chan_file_open(const char *name, int writable, struct stat *st,
                          char *msg, size_t len)
{
    char path[PATH_MAX];
    nerve__path_of(path, sizeof path, NERVE__CHAN_PREFIX, name);
    int fd = nerve__shm_open(path, writable, st);
    if (fd == NERVE_ENOTCHAN)
        nerve__say(msg, len, fd,
                   "not a nerve channel: not a regular file (FIFO, socket, "
                   "device, directory or symlink)");
    return fd;
}

/* Read the header of fd into *h, a private copy, and validate it before
 * anything is mapped (*g: the geometry it implies). Returns 0 or the
 * failure with its reason in msg. */
static int header_load(int fd, const struct stat *st, struct nerve__shm_hdr *h,
                       struct nerve__geometry *g, char *msg, size_t len)
{
    memset(h, 0, sizeof *h);
    ssize_t n = nerve__file->pread(fd, h, sizeof *h, 0);
    if (n < 0)
        return nerve__err_from_errno(errno);
    /* Bytes past a short read stay zero; header_check judges st_size. */
    int r = nerve__header_check(h, (uint64_t)st->st_size, g, msg, len);
    /* Creation reserves every page (posix_fallocate), so a channel file is
     * never sparse. A sparse one is foreign, and mapping it with
     * MAP_POPULATE would allocate its holes: up to data_size of /dev/shm
     * taken by a read-only open. */
    if (r == 0 && (uint64_t)st->st_blocks * 512 < (uint64_t)st->st_size)
        r = nerve__say(msg, len, NERVE_ECORRUPT,
                       "file is sparse: %" PRIu64 " of its %" PRIu64
                       " bytes are allocated (nerve_chan_create allocates all)",
                       (uint64_t)st->st_blocks * 512, (uint64_t)st->st_size);
    return r;
}

/* A handle on fd, whose header *h was validated into *g: the geometry
 * used from here on is that copy, never re-read from the mapping (a writer
 * with access could have rewritten the file since). Maps the data ring
 * twice, or with NERVE__O_HEADER only the header, metadata and index.
 * Returns 0 (*out set; it owns fd) or an error (fd still the caller's). */
static int handle_map(const char *name, int fd, uint32_t flags,
                      const struct nerve__shm_hdr *h,
                      const struct nerve__geometry *g, nerve_chan **out)
{
    nerve_chan *c = calloc(1, sizeof *c);
    if (!c)
        return NERVE_ENOMEM;
    snprintf(c->name, sizeof c->name, "%s", name);
    c->fd = fd;
    c->writable = (flags & NERVE_O_WRITE) != 0;
    c->lazy = (flags & NERVE_O_LAZY) != 0;
    c->wake_always = (h->compat_flags & NERVE__COMPAT_WAKE_ALWAYS) != 0;
    c->nslots = g->nslots;
    c->data_size = g->data_size;
    c->file_size = g->file_size;
    if (flags & NERVE__O_HEADER) {
        /* For statistics: the header, metadata and index pages only, not
         * populated (a stat touches two or three pages), never the data
         * ring. */
        c->map_len = g->data_off;
        c->base = nerve__shm_map(fd, g->data_off, 0);
    } else {
        c->base = nerve__map_double(fd, g->file_size, g->data_off, g->data_size,
                                    c->writable, !(flags & NERVE_O_LAZY));
    }
    if (!c->base) {
        int r = nerve__err_from_errno(errno);
        free(c);
        return r;
    }
    c->hdr = (struct nerve__shm_hdr *)c->base;
    c->slots = (struct nerve__shm_slot *)(c->base + g->index_off);
    c->ring = c->map_len ? NULL : c->base + g->data_off;
    *out = c;
    return 0;
}

/* nerve_chan_open(), with the reason for a failure written into msg. */
int nerve__chan_open(const char *name, uint32_t flags, nerve_chan **out,
                     char *msg, size_t len)
{
    if (!out || (flags & ~(NERVE_O_WRITE | NERVE_O_LAZY | NERVE__O_HEADER)) ||
        (flags & NERVE_O_WRITE && flags & NERVE__O_HEADER))
        return NERVE_EINVAL;
    *out = NULL;
    int r = nerve_chan_name_check(name);
    if (r)
        return r;
    int writable = (flags & NERVE_O_WRITE) != 0;
    struct stat st;
    int fd = nerve__use_open(name, writable, &st, chan_file_open, msg, len);
    if (fd < 0)
        return fd;
    struct nerve__shm_hdr h;
    struct nerve__geometry g;
    nerve_chan *c = NULL;
    r = header_load(fd, &st, &h, &g, msg, len);
    if (r == 0)
        r = handle_map(name, fd, flags, &h, &g, &c);
    if (r) {
        nerve__file->close(fd);
        return r;
    }
    r = meta_load(c, &h, msg, len);
    if (r == 0 && writable)
        r = writer_ns_claim(c);
    if (r) {
        (void)nerve_chan_close(c);
        return r;
    }
    c->bell = nerve__bell_map(name, &st, 1, NULL, 0);
    c->ino = (uint64_t)st.st_ino;
    c->dev = (uint64_t)st.st_dev;
    if (!c->map_len)
        reader_start(c);
    *out = c;
    return 0;
}

int nerve_chan_open(const char *name, uint32_t flags, nerve_chan **out)
{
    if (flags & NERVE__O_HEADER)
        return NERVE_EINVAL; /* internal */
    int r = nerve_chan_name_check(name);
    if (r)
        return r;
    size_t len;
    char *msg = nerve__detail_buf(&len);
    r = nerve__chan_open(name, flags, out, msg, len);
    if (r == 0) {
        nerve__detail_clear();
        return 0;
    }
    nerve__detail_adopt(r);
    if (r == NERVE_ENOENT)
        return nerve__detail(r, "no such channel");
    if (r == NERVE_EACCES) {
        char path[PATH_MAX];
        struct stat st;
        nerve__path_of(path, sizeof path, NERVE__CHAN_PREFIX, name);
        if (stat(path, &st) == 0)
            return nerve__detail(
                r,
                "no permission to open it for %s: mode %04o, owner uid %u "
                "gid %u (readers need read permission, writers read and "
                "write)",
                (flags & NERVE_O_WRITE) ? "writing" : "reading",
                (unsigned)(st.st_mode & 07777), (unsigned)st.st_uid,
                (unsigned)st.st_gid);
    }
    return r;
}

int nerve_chan_close(nerve_chan *c)
{
    if (!c)
        return 0;
    if (c->reserved) {
        /* Only the reserving thread owns the (PI) writer lock and can
         * release it; closing from another thread would unmap a lock that
         * stays held. Refuse: the handle stays open and the reserving
         * thread can still commit or abort. */
        if (c->res_tid != nerve__tid()) {
            if (!nerve__reservation_orphaned(c))
                return NERVE_EBUSY;
        } else {
            /* Discard the reservation: nothing was published. */
            (void)nerve__mutex_unlock(&c->hdr->lock.l);
        }
        c->reserved = 0;
    }
    if (c->bell)
        nerve__shm_unmap(c->bell, NERVE__BELL_SIZE);
    if (c->map_len)
        nerve__shm_unmap(c->base, c->map_len);
    else
        nerve__unmap_double(c->base, c->file_size, c->data_size);
    if (c->fd >= 0)
        nerve__file->close(c->fd);
    free(c->type);
    free(c->encoding);
    free(c->schema);
    free(c);
    return 0;
}

/* ---- growth ----------------------------------------------------------------
 *
 * GROWTH
 *   Sizes are fixed at creation (DESIGN.md), so a channel grows by being
 *   superseded: a writer that needs room makes a larger successor and puts
 *   it under the name. Steps (G: the grower, on a writable handle c; F: a
 *   reader):
 *     G1  Make the successor, unnamed: c's metadata, mode and owner, at
 *         least the sizes asked for and c's; its header says empty.
 *     G2  Take c's writer lock. A writer that grew c first marked it (G5):
 *         then this grower follows instead (NERVE_ESUPERSEDED inside).
 *     G3  Copy every message still readable in c into the successor with
 *         its sequence number and commit time; its head is c's head, so the
 *         sequence continues and readers keep their cursors.
 *     G4  Rename the successor over the name (atomic on tmpfs): from here
 *         an opener of the name gets the successor. The bell stays, as a
 *         bell belongs to the name (its owner and mode are the channel's),
 *         not to the file.
 *     G5  superseded = 1 in c (release, SYNC(supersede)), after c's last
 *         commit; wake every waiter of c; unlock.
 *     F1  A reader whose get finds nothing new loads superseded (acquire)
 *         and, if set, looks again: still nothing means it has read all of
 *         c (no commit follows G5), and the get says NERVE_ESUPERSEDED.
 *     F2  nerve_chan_follow(): open the name, keep the cursor (a successor:
 *         the same created_ns; a channel made anew starts at its oldest).
 *   Crash recovery: killed before G4, nothing is visible (an unnamed file
 *   vanishes; a named temporary is swept). Killed between G4 and G5, the
 *   dead grower held c's lock, so the next writer of c recovers it, finds
 *   that the name names another file and performs G5 itself (lock_writer()
 *   in chan.c). Until a writer of c comes, c's readers see no new message,
 *   which is true of c: new messages go to the successor, which
 *   nerve_chan_renamed() tells an idle reader about. Two growers: G2
 *   serializes them on c's lock; the second finds c superseded and follows
 *   (and grows the successor if it is still too small). A name removed and
 *   made anew during G3 is not replaced: the check just before G4 sees it
 *   (what remains is the window between that check and the rename).
 *   MODEL: model/grow.pml checks G1-G5 and F1-F2 with a grower killed at
 *   every step, two growers, and a writer and a reader of c meanwhile.
 */

int nerve_chan_renamed(const nerve_chan *c)
{
    if (!c)
        return NERVE_EBADF;
    char path[PATH_MAX];
    nerve__path_of(path, sizeof path, NERVE__CHAN_PREFIX, c->name);
    struct stat st;
    if (nerve__file->lstat(path, &st) != 0)
        return nerve__err_from_errno(errno);
    return (uint64_t)st.st_ino != c->ino || (uint64_t)st.st_dev != c->dev;
}

int nerve_chan_follow(nerve_chan **cp)
{
    if (!cp || !*cp)
        return NERVE_EBADF;
    nerve_chan *c = *cp;
    if (c->reserved)
        return NERVE_EBUSY;
    nerve_chan *n;
    int r = nerve_chan_open(
        c->name,
        (c->writable ? NERVE_O_WRITE : 0) | (c->lazy ? NERVE_O_LAZY : 0), &n);
    if (r)
        return r;
    if (n->ino == c->ino && n->dev == c->dev) {
        (void)nerve_chan_close(n);
        return 0;
    }
    /* F2: a successor continues c's sequence (G3) and keeps its identity
     * (created_ns, [const]), so the cursor stays. A channel made anew under
     * the name (the successor of a grower that died was removed as unused
     * and the name made again) starts where a new handle starts, at its
     * oldest message, whatever its head: its sequence numbers are not c's. */
    if (n->hdr->created_ns == c->hdr->created_ns &&
        nerve__load_acq(&n->hdr->head) >= c->cursor) {
        n->cursor = c->cursor;
        n->origin = c->origin;
    }
    (void)nerve_chan_close(c);
    *cp = n;
    return 0;
}

/* G1: the options of a successor of c with at least the sizes asked for. */
static int grow_opts(const nerve_chan *c, uint64_t data_size, uint64_t slots,
                     struct nerve_chan_opts *out, struct stat *st)
{
    if (nerve__file->fstat(c->fd, st) != 0)
        return nerve__err_from_errno(errno);
    struct nerve_chan_opts o = NERVE_CHAN_OPTS_INIT;
    o.slots = slots > c->nslots ? slots : c->nslots;
    o.data_size = data_size > c->data_size ? data_size : c->data_size;
    o.mode = (uint32_t)(st->st_mode & 0777);
    o.type = c->type && *c->type ? c->type : NULL;
    o.encoding = c->encoding && *c->encoding ? c->encoding : NULL;
    o.schema = c->schema_len ? c->schema : NULL;
    o.schema_len = c->schema_len;
    o.flags = c->wake_always ? NERVE_C_WAKE_ALWAYS : 0;
    if (c->hdr->compat_flags & NERVE__COMPAT_REMOVE_UNUSED)
        o.flags |= NERVE_C_REMOVE_UNUSED; /* LIFETIME goes along */
    return opts_read(&o, out);
}

/* G2-G5 with the successor t (geometry g) made. */
static int grow_swap(nerve_chan *c, struct nerve__shm_tmp *t,
                     const struct nerve__geometry *g)
{
    unsigned char *m = nerve__shm_map(t->fd, g->file_size, 1);
    if (!m)
        return nerve__err_from_errno(errno);
    int r = nerve__lock_for_growth(c, 1000000000ll); /* G2 */
    if (r == 0) {
        NERVE_CRASHPOINT("grow.locked");
        nerve__grow_copy(c, (struct nerve__shm_hdr *)m, /* G3 */
                         (struct nerve__shm_slot *)(m + g->index_off),
                         g->nslots, m + g->data_off);
        NERVE_CRASHPOINT("grow.copied");
        char path[PATH_MAX];
        nerve__path_of(path, sizeof path, NERVE__CHAN_PREFIX, c->name);
        r = nerve_chan_renamed(c);
        if (r == 0)
            r = nerve__shm_tmp_replace(t, path); /* G4 */
        else if (r > 0)
            r = nerve__detail(NERVE_ENOENT, "the channel's name was given to "
                                            "another channel while it grew");
        if (r == 0) {
            NERVE_CRASHPOINT("grow.renamed");
            nerve__supersede(c); /* G5 */
            NERVE_CRASHPOINT("grow.marked");
        }
        nerve__unlock_writer(c);
    }
    nerve__shm_unmap(m, g->file_size);
    return r;
}

int nerve_chan_grow(nerve_chan **cp, uint64_t data_size, uint64_t slots)
{
    if (!cp || !*cp)
        return NERVE_EBADF;
    nerve_chan *c = *cp;
    if (!c->writable)
        return NERVE_EROFS;
    if (c->reserved || c->map_len)
        return c->reserved ? NERVE_EBUSY : NERVE_EINVAL;
    struct nerve_chan_opts o;
    struct stat st;
    int r = grow_opts(c, data_size, slots, &o, &st);
    if (r)
        return r;
    struct nerve__geometry g;
    r = geometry_of(o.slots, o.data_size, meta_bytes_of(&o), nerve__page_size(),
                    &g);
    if (r)
        return r;
    nerve__shm_tmp_sweep(NERVE__SHM_DIR);
    struct nerve__shm_tmp t;
    r = make_channel(&o, &t); /* G1 */
    if (r)
        return r;
    /* Root growing another user's channel keeps it that user's (and its
     * bell's owner the channel's). */
    if (geteuid() == 0 && st.st_uid != 0 && fchown(t.fd, st.st_uid, st.st_gid))
        r = nerve__err_from_errno(errno);
    /* Used from before it has a name until the follow below opened it, so
     * that no sweep (LIFETIME) takes a successor nobody holds yet. */
    if (r == 0)
        r = nerve__use_hold(t.fd);
    if (r == 0)
        r = grow_swap(c, &t, &g);
    if (r == NERVE_EPERM)
        nerve__detail(r,
                      "only the channel's owner (uid %u) or root may "
                      "replace it with a larger one",
                      (unsigned)st.st_uid);
    if (r == 0 || r == NERVE_ESUPERSEDED)
        r = nerve_chan_follow(cp);
    nerve__shm_tmp_discard(&t); /* after the follow: t held the use lock */
    return r;
}

int nerve_chan_repair(const char *name, uint32_t flags, char *msg, size_t len)
{
    if (flags & ~NERVE_REPAIR_FORCE)
        return nerve__say(msg, len, NERVE_EINVAL, "unknown flags");
    nerve_chan *c;
    int r = nerve_chan_open(name, NERVE_O_WRITE, &c);
    if (r)
        return nerve__say(msg, len, r, "%s", nerve_strerror(r));
    char st[160];
    (void)nerve__mutex_state(&c->hdr->lock.l,
                             nerve__load_rlx(&c->hdr->lock.l.pidns), c->fd, st,
                             sizeof st);
    r = nerve__mutex_repair(&c->hdr->lock.l, (flags & NERVE_REPAIR_FORCE) != 0);
    if (r == 1)
        nerve__say(msg, len, 1,
                   "writer lock was %s; reset (the next writer "
                   "recovers it)",
                   st);
    else if (r == 0)
        nerve__say(msg, len, 0, "writer lock is %s; nothing to reset", st);
    else if (r == NERVE_EBUSY)
        nerve__say(msg, len, r,
                   "writer lock is %s; not reset (force it only "
                   "if no writer is inside a put)",
                   st);
    else
        nerve__say(msg, len, r, "writer lock is %s: %s", st, nerve_strerror(r));
    (void)nerve_chan_close(c);
    return r;
}
