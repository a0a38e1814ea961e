/* Channels: facts for tools -- names, metadata, statistics, the
 * consistency check and the list of channels. Read-only; the ring
 * protocol these read lock-free is in chan.c (R1-R3, SYNC(read-validate)). */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <unistd.h>

#include "atomics.h"
#include "chan_internal.h"
#include "nerve/nerve.h"
#include "platform.h"
#include "shm.h"

/* n bytes of the channel file from offset off to out's file position, by
 * the kernel. Returns 0, NERVE_ECORRUPT (the file ends first) or the
 * write's -errno as it is (-EFBIG stays "File too large": not folded into
 * a channel-creation code as nerve__err_from_errno() folds it). */
static int send_range(int out, int in, uint64_t off, uint64_t n)
{
    off_t at = (off_t)off;
    while (n > 0) {
        ssize_t k = sendfile(out, in, &at, n);
        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0)
            return -errno;
        if (k == 0)
            return NERVE_ECORRUPT;
        n -= (uint64_t)k;
    }
    return 0;
}

/* The view's bytes are ring bytes [at, at + len) with at < data_size (a
 * view's address is taken modulo data_size, BOUNDS in chan.c); the ring is
 * the last data_size bytes of the file, so a message across the wrap is
 * two ranges of the file. Validation afterwards as any view's (R3). */
int nerve_chan_view_write(const nerve_chan *c, const struct nerve_view *view,
                          int fd)
{
    if (!c)
        return NERVE_EBADF;
    if (!view || view->info.seq == 0 || !c->ring || !view->data)
        return NERVE_EINVAL;
    const unsigned char *p = view->data;
    if (p < c->ring || p >= c->ring + c->data_size ||
        view->info.len > c->data_size)
        return NERVE_EINVAL;
    const uint64_t ring_off = c->file_size - c->data_size;
    const uint64_t at = (uint64_t)(p - c->ring);
    const uint64_t len = view->info.len;
    const uint64_t first = len < c->data_size - at ? len : c->data_size - at;
    int r = send_range(fd, c->fd, ring_off + at, first);
    if (r == 0 && len > first)
        r = send_range(fd, c->fd, ring_off, len - first);
    if (r)
        return r;
    return nerve__still_valid(c, view->info.seq) ? 0 : NERVE_ESTALE;
}

const char *nerve_chan_name(const nerve_chan *c)
{
    return c->name;
}

int nerve_chan_meta(const nerve_chan *c, struct nerve_meta *m)
{
    if (!c)
        return NERVE_EBADF;
    if (!m)
        return NERVE_EINVAL;
    memset(m, 0, sizeof *m);
    m->type = c->type;
    m->encoding = c->encoding;
    m->schema = c->schema;
    m->schema_len = c->schema_len;
    return 0;
}

/* ---- facts for tools ---------------------------------------------------- */

/* The oldest sequence number still readable (head + 1 when none is) and
 * the newest, loaded lock-free from the mapped header: 0, NERVE_EAGAIN
 * when puts between the two loads made them disagree (look again), or
 * NERVE_ECORRUPT. No system call, so a reader may ask at every message. */
static int seq_range_once(const nerve_chan *c, uint64_t *tail, uint64_t *head)
{
    const struct nerve__shm_hdr *h = c->hdr;
    /* SYNC(pub-seq) acquire, as in locate(). */
    uint64_t hd = nerve__load_acq(&h->head);
    uint64_t stored = nerve__load_acq(&h->tail);
    uint64_t t = nerve__readable_from(hd, stored, c->nslots);
    if (t > hd + 1 || (stored == 0 && hd < c->nslots)) {
        /* Writers raise tail to at most head + 1; more is possible only if
         * puts happened between the loads. A tail of 0 (creation stores 1)
         * is corrupt unless the clamp makes it moot. */
        if (nerve__load_acq(&h->head) != hd)
            return NERVE_EAGAIN;
        return NERVE_ECORRUPT;
    }
    *head = hd;
    *tail = t;
    return 0;
}

int nerve_chan_stat(const nerve_chan *c, struct nerve_stats *st)
{
    if (!c)
        return NERVE_EBADF;
    if (!st)
        return NERVE_EINVAL;
    memset(st, 0, sizeof *st);
    const struct nerve__shm_hdr *h = c->hdr;
    st->slots = c->nslots;
    st->data_size = c->data_size;
    st->file_size = c->file_size;
    st->layout_version = h->layout_version;
    st->creator_version = h->creator_version;
    st->created_ns = h->created_ns;
    st->lock_owner_tid = nerve__mutex_owner(&h->lock.l, &st->lock_flags);
    if (h->compat_flags & NERVE__COMPAT_WAKE_ALWAYS)
        st->create_flags |= NERVE_C_WAKE_ALWAYS;
    if (h->compat_flags & NERVE__COMPAT_REMOVE_UNUSED)
        st->create_flags |= NERVE_C_REMOVE_UNUSED;
    st->bytes_total = nerve__load_rlx(&h->bytes_total);
    if (nerve__load_acq(&h->superseded)) /* SYNC(supersede), as F1 */
        st->state_flags |= NERVE_STAT_SUPERSEDED;
    /* Readers counted while some lease is running; a count that killed
     * readers left raised reads 0 once their leases end. */
    st->waiters =
        c->bell && nerve__loadi_sc(&c->bell->wake_until) > nerve_clock_now_ns()
            ? nerve__load32_rlx(&c->bell->waiters)
            : 0;
    struct stat fs;
    if (nerve__file->fstat(c->fd, &fs) == 0) {
        st->mode = fs.st_mode & 07777;
        st->uid = fs.st_uid;
        st->gid = fs.st_gid;
    }
    for (int attempt = 0; attempt < NERVE__READ_RETRIES; attempt++) {
        uint64_t head, tail;
        int r = seq_range_once(c, &tail, &head);
        if (r == NERVE_EAGAIN)
            continue;
        if (r)
            return r;
        st->head_seq = head;
        st->tail_seq = tail;
        st->newest_time_ns = 0;
        if (head == 0 || tail > head)
            return 0;
        struct nerve__msg m;
        r = nerve__read_slot(c, head, &m);
        if (r == 0)
            st->newest_time_ns = m.time_ns;
        if (r != NERVE_EOVERWRITTEN)
            return r;
    }
    return 0;
}

int nerve_chan_seq_range(const nerve_chan *c, uint64_t *tail, uint64_t *head)
{
    if (!c)
        return NERVE_EBADF;
    if (!tail || !head)
        return NERVE_EINVAL;
    for (int attempt = 0; attempt < NERVE__READ_RETRIES; attempt++) {
        int r = seq_range_once(c, tail, head);
        if (r != NERVE_EAGAIN)
            return r;
    }
    return NERVE_ELAPPED;
}

int nerve_chan_stat_name(const char *name, struct nerve_stats *st)
{
    /* Validated as nerve_chan_open() validates (header, file size and
     * allocation, metadata), but only the header, metadata and index are
     * mapped: a tool polling this must not pay for mapping and populating
     * the data ring twice on every call. */
    nerve_chan *c;
    int r = nerve__chan_open(name, NERVE__O_HEADER, &c, NULL, 0);
    if (r)
        return r;
    r = nerve_chan_stat(c, st);
    (void)nerve_chan_close(c);
    return r;
}

/* The newest message's descriptor (SYNC(desc-seq)): desc_seq is 0 (a
 * writer is or died between D1 and D3), head, or head + 1 (between D3 and
 * W6); naming a readable head, it must describe what its slot does.
 * Returns 0, ECORRUPT (with msg), or EOVERWRITTEN (a writer moved). */
static int check_desc(const nerve_chan *c, uint64_t head, uint64_t tail,
                      char *msg, size_t len)
{
    const struct nerve__shm_hdr *h = c->hdr;
    uint64_t ds = nerve__load_acq(&h->desc_seq);
    int r = 0;
    if (ds != 0 && ds != head && ds != head + 1) {
        r = nerve__say(msg, len, NERVE_ECORRUPT,
                       "descriptor names message %" PRIu64
                       " but head is %" PRIu64
                       " (it must name 0, head or head + 1)",
                       ds, head);
    } else if (ds == head && head >= tail && head > 0) {
        struct nerve__msg d, sl;
        r = nerve__read_desc(c, head, &d);
        if (r == NERVE_EAGAIN)
            return NERVE_EOVERWRITTEN;
        if (r == NERVE_ECORRUPT)
            r = nerve__say(msg, len, r,
                           "descriptor of message %" PRIu64 " has len %" PRIu64
                           ", more than the ring's %" PRIu64,
                           head, d.len, c->data_size);
        if (r == 0)
            r = nerve__read_slot(c, head, &sl);
        if (r == 0 &&
            (d.off != sl.off || d.len != sl.len || d.time_ns != sl.time_ns))
            r = nerve__say(msg, len, NERVE_ECORRUPT,
                           "descriptor of message %" PRIu64 " (off %" PRIu64
                           ", len %" PRIu64 ", time %" PRId64
                           ") differs from its slot (off %" PRIu64
                           ", len %" PRIu64 ", time %" PRId64 ")",
                           head, d.off, d.len, d.time_ns, sl.off, sl.len,
                           sl.time_ns);
    }
    /* A verdict stands only if no writer moved meanwhile. */
    if (r && nerve__load_acq(&h->head) != head)
        return NERVE_EOVERWRITTEN;
    return r;
}

/* How many passes nerve_chan_check makes before giving up with
 * NERVE_ELAPPED. A pass is thrown away when a writer moved the head during
 * it (its verdict may rest on bytes being overwritten); this many lapped
 * passes in a row mean writers that never pause, where no verdict is
 * possible, and the bound keeps the check from spinning for as long as
 * they run. */
#define CHECK_TRIES 1000

/* One pass of nerve_chan_check over [tail, head]. Returns 0, ECORRUPT (with
 * msg), or EOVERWRITTEN when a writer moved the ring during the pass. */
static int check_pass(const nerve_chan *c, char *msg, size_t len)
{
    const struct nerve__shm_hdr *h = c->hdr;
    /* SYNC(pub-seq) acquire, as in locate(). */
    uint64_t head = nerve__load_acq(&h->head);
    uint64_t tail = nerve__load_acq(&h->tail);
    uint64_t wpos = nerve__load_rlx(&h->wpos);
    if (tail == 0)
        return nerve__say(msg, len, NERVE_ECORRUPT, "tail is 0 (must be >= 1)");
    if (tail > head + 1) {
        /* Writers raise tail to at most head + 1 before committing; more
         * is only possible if puts happened between the two loads. */
        if (nerve__load_acq(&h->head) != head)
            return NERVE_EOVERWRITTEN;
        return nerve__say(msg, len, NERVE_ECORRUPT,
                          "tail %" PRIu64 " is beyond head %" PRIu64 " + 1",
                          tail, head);
    }
    if (head - tail + 1 > c->nslots) {
        if (nerve__load_acq(&h->tail) != tail)
            return NERVE_EOVERWRITTEN;
        return nerve__say(msg, len, NERVE_ECORRUPT,
                          "%" PRIu64 " messages readable but only %" PRIu64
                          " slots",
                          head - tail + 1, c->nslots);
    }
    struct nerve__msg prev = {0, 0, 0, 0};
    for (uint64_t s = tail; s <= head; s++) {
        struct nerve__msg m;
        int r = nerve__read_slot(c, s, &m);
        if (r == NERVE_EOVERWRITTEN)
            return r;
        if (r)
            return nerve__say(
                msg, len, r,
                "slot %" PRIu64 " holds seq %" PRIu64 " / len %" PRIu64
                ", expected seq %" PRIu64 " with len <= %" PRIu64,
                (s - 1) % c->nslots,
                nerve__load_rlx(&NERVE__SLOT_OF(c, s)->seq),
                nerve__load_rlx(&NERVE__SLOT_OF(c, s)->len), s, c->data_size);
        if (s > tail && m.off < prev.off + prev.len)
            return nerve__say(msg, len, NERVE_ECORRUPT,
                              "message %" PRIu64 " at %" PRIu64
                              " overlaps message %" PRIu64,
                              s, m.off, prev.seq);
        if (s > tail && m.time_ns < prev.time_ns)
            return nerve__say(msg, len, NERVE_ECORRUPT,
                              "message %" PRIu64
                              " is older than message %" PRIu64,
                              s, prev.seq);
        if (m.off % NERVE__MSG_ALIGN)
            return nerve__say(msg, len, NERVE_ECORRUPT,
                              "message %" PRIu64 " is not aligned", s);
        prev = m;
    }
    if (head >= tail) {
        struct nerve__msg first;
        if (nerve__read_slot(c, tail, &first) != 0 ||
            !nerve__still_valid(c, tail))
            return NERVE_EOVERWRITTEN;
        if (nerve__load_acq(&h->head) != head)
            return NERVE_EOVERWRITTEN;
        if (prev.off + prev.len - first.off > c->data_size)
            return nerve__say(msg, len, NERVE_ECORRUPT,
                              "readable messages span %" PRIu64
                              " bytes, more than the ring's %" PRIu64,
                              prev.off + prev.len - first.off, c->data_size);
        if (wpos < prev.off + prev.len)
            return nerve__say(msg, len, NERVE_ECORRUPT,
                              "write position %" PRIu64
                              " is behind the newest message's end %" PRIu64,
                              wpos, prev.off + prev.len);
    }
    return check_desc(c, head, tail, msg, len);
}

/* The verdict on a consistent channel: "ok", or "ok" with why its bell is
 * not used, which only makes waiting readers poll (see nerve__bell_map()). */
/* The verdict of a consistent channel: the writer lock's state `lock`, and
 * why the bell is not used if it is not. */
static void check_bell(const nerve_chan *c, const char *lock, char *msg,
                       size_t len)
{
    char why[200] = "";
    struct stat st;
    /* Verified read-only: the checker need not be a writer. */
    if (nerve__file->fstat(c->fd, &st) == 0) {
        struct nerve__shm_bell *b =
            nerve__bell_map(c->name, &st, 0, why, sizeof why);
        if (b)
            nerve__shm_unmap(b, NERVE__BELL_SIZE);
    }
    if (why[0])
        nerve__say(
            msg, len, 0,
            "ok; writer lock: %s; bell not used (%s): waiting readers poll",
            lock, why);
    else
        nerve__say(msg, len, 0, "ok; writer lock: %s", lock);
}

int nerve_chan_check(const char *name, char *msg, size_t len)
{
    nerve_chan *c;
    if (msg && len)
        msg[0] = 0;
    int r = nerve__chan_open(name, NERVE_O_READ, &c, msg, len);
    if (r == NERVE_ENOENT) {
        /* No channel: is its bell left? (an orphan, see bell-before-channel
         * in chan_open.c, or a create or unlink between its two steps) */
        char bpath[PATH_MAX];
        struct stat bst;
        nerve__path_of(bpath, sizeof bpath, NERVE__BELL_PREFIX, name);
        if (nerve__file->lstat(bpath, &bst) == 0 && S_ISREG(bst.st_mode))
            return nerve__say(msg, len, r,
                              "no channel, but an orphaned bell %s is left "
                              "(uid %u; nerve_chan_unlink removes it)",
                              bpath, (unsigned)bst.st_uid);
    }
    if (r) {
        if (!msg || !len || !msg[0])
            nerve__say(msg, len, r, "%s", nerve_strerror(r));
        return r;
    }
    for (int attempt = 0; attempt < CHECK_TRIES; attempt++) {
        r = check_pass(c, msg, len);
        if (r != NERVE_EOVERWRITTEN)
            break;
    }
    if (r == NERVE_EOVERWRITTEN) {
        r = nerve__say(msg, len, NERVE_ELAPPED,
                       "writers changed the ring during every check attempt");
    } else if (r == 0) {
        char st[160];
        (void)nerve__mutex_state(&c->hdr->lock.l,
                                 nerve__load_rlx(&c->hdr->lock.l.pidns), c->fd,
                                 st, sizeof st);
        check_bell(c, st, msg, len);
    }
    (void)nerve_chan_close(c);
    return r;
}

struct list_arg {
    int (*fn)(const char *name, void *arg);
    void *arg;
};

/* One entry of NERVE__SHM_DIR named NERVE__CHAN_PREFIX...: a channel if the rest is a
 * valid channel name. */
static int list_one(const char *entry, void *arg)
{
    const struct list_arg *la = arg;
    const char *name = entry + strlen(NERVE__CHAN_PREFIX);
    if (nerve_chan_name_check(name) != 0)
        return 0;
    return la->fn(name, la->arg);
}

int nerve_chan_list(int (*fn)(const char *name, void *arg), void *arg)
{
    if (!fn)
        return NERVE_EINVAL;
    struct list_arg la = {fn, arg};
    return nerve__shm_each(NERVE__SHM_DIR, NERVE__CHAN_PREFIX, list_one, &la);
}
