/* Channels: the ring protocol.
 *
 * DESIGN
 *
 * LAYOUT
 *   See shm.h (and docs/design/0001-shm-layout.md). The parts the protocol
 *   uses:
 *
 *     header:  head  tail  wpos  lock        bell file:  waiters
 *     index:   [slot 0][slot 1] ... [slot nslots-1]   slot = {seq off len time}
 *     data:    |....msg s-2....|..msg s-1..|...msg s...|   (mapped twice)
 *
 *   Message s (s >= 1) lives in slot (s - 1) % nslots and in data ring bytes
 *   [off, off + len) taken modulo data_size. Positions (off, wpos) are
 *   absolute byte counts that only grow; a message starts at a multiple of
 *   NERVE__MSG_ALIGN.
 *
 * OWNERSHIP
 *   Writers hold the robust writer lock for every store to the channel file
 *   ([W:lock] fields). Readers never store to the channel file: they map it
 *   read-only. The only shared words a reader stores to are bell.wake_until
 *   and bell.waiters, in the separate bell file. A reader's cursor lives in
 *   its handle.
 *
 *   The validity of every message is decided by one word, tail: message s
 *   is readable iff tail <= s <= head. A writer raises tail before it
 *   touches any byte or slot of the messages it is about to destroy, and
 *   raises head only after the new message is complete.
 *
 * PROTOCOL
 *   Writer, put of len bytes (holding the lock):
 *     W1  s = head + 1; p = wpos rounded up to NERVE__MSG_ALIGN.
 *     W2  Raise tail past every message the new one destroys: its slot is
 *         reused (seq <= s - nslots) or its bytes are overwritten
 *         (off < p + len - data_size). Store tail, then a release fence:
 *         SYNC(tail-inval) -- the raised tail is visible to any reader that
 *         sees any byte or slot field written after this point; pairs with
 *         the acquire fence of SYNC(read-validate).
 *     W3  Copy the payload to ring[p .. p + len).
 *     W4  Fill slot (s - 1) % nslots = {s, p, len, now}.
 *     D1  desc_seq = 0, release fence; D2 desc_{off,len,time_ns} =
 *         {p, len, now}; D3 desc_seq = s (release): SYNC(desc-seq), a
 *         seqlock on the head line whose version is the sequence number,
 *         so that a caught-up reader need not load the slot (layout 2).
 *     W5  wpos = p + len.
 *     W6  Store head = s (seq_cst, which includes release): SYNC(pub-seq)
 *         -- the commit. Before it no reader looks at message s; after it
 *         the payload and slot of W3-W4 are visible to a reader that
 *         loads head with acquire. Being seq_cst it is also the store half
 *         of SYNC(wake-check).
 *     W7  Unlock.
 *     W8  SYNC(wake-check): seq_cst load of bell.wake_until (ordered after
 *         W6's seq_cst store); if it is > the commit time (taken before
 *         W6), wake at most NERVE__WAKE_BATCH futex waiters on head's low
 *         word. Pairs with SYNC(wait-announce).
 *   Reader, one message (no lock, no store):
 *     R1  h = head (acquire, SYNC(pub-seq)); t = tail (acquire). Choose s
 *         in [t, h] by mode (NEXT: cursor + 1, or t if that is gone).
 *     R2  If s == h (a caught-up NEXT, NEWEST, or SEQ of h): v1 = desc_seq
 *         (acquire), desc_{off,len,time_ns}, acquire fence, v2 = desc_seq;
 *         v1 == v2 == s: the descriptor is message s's (SYNC(desc-seq)),
 *         go to R3 with it (the slot line is not touched). Otherwise (a
 *         writer is between D1 and D3, or the reader lags) read slot
 *         (s - 1) % nslots (relaxed loads).
 *     R3  SYNC(read-validate): acquire fence, reload tail. If tail > s a
 *         writer has begun to destroy s; what R2 read may be torn: retry
 *         from R1. Otherwise the slot fields are exactly what the writer of
 *         s stored (the fence pairs with SYNC(tail-inval)). Check them.
 *     R4  Copy ring[off .. off + len) to the caller (one memcpy; the double
 *         mapping makes it contiguous), then repeat R3: a tail that moved
 *         past s during the copy means the copy may be torn: retry.
 *   A zero-copy view is R1-R3; nerve_chan_view_check() is R3 again later.
 *   Waiting reader (bell.waiters += 1 around it; V5 reads it):
 *     V1  S = min(deadline, now + 100 ms slice); raise bell.wake_until to
 *         at least S + NERVE__LEASE_GRACE_NS (seq_cst CAS loop, then a
 *         seq_cst fence): SYNC(wait-announce), the lease.
 *     V2  h = head (seq_cst). If the wanted message is there, leave.
 *     V3  futex_waitv on {head's low word == (u32)h, cancel word == 0}
 *         until S (absolute); back to V1.
 *     V5  Leaving after a sleep (bell.waiters -= 1), if head moved and
 *         more than NERVE__WAKE_BATCH readers were inside the wait: wake
 *         at most NERVE__WAKE_BATCH more waiters, SYNC(wake-pass).
 *   No lost wake-up: V1 then V2 against W6 then W8 is Dekker's pattern
 *   with seq_cst on both sides, so either the reader's V2 sees the new head
 *   or the writer's W8 sees the lease; a lease the writer sees as ended
 *   (<= its commit time) belonged to a sleep that ended before the commit,
 *   after which the reader re-registers and re-checks; and a wake that
 *   comes before the reader sleeps finds head's word changed, so V3 returns
 *   at once. With more sleepers than one batch, the rest are woken by V5
 *   of the woken readers. The lease makes registration self-healing: a
 *   killed reader's lease ends by itself, so puts are silent again after
 *   one slice.
 *
 * LOCK ORDER
 *   One lock per channel; no nerve call holds two. A reservation holds the
 *   lock from nerve_chan_reserve() to commit/abort. The lock is a PI futex
 *   owned by a thread (src/platform/linux/mutex.c): only the reserving
 *   thread may commit, abort or close the handle (others get NERVE_EPERM /
 *   NERVE_EBUSY and the reservation stays usable); a thread that holds the
 *   lock and puts on another handle gets NERVE_EDEADLK. The TID in the word
 *   is resolved in the caller's PID namespace, so all writers of a channel
 *   share one (lock.pidns, claimed by the first writer; others get
 *   NERVE_EXDEV at open).
 *
 * CRASH RECOVERY
 *   Every writer step leaves a state that the next writer can continue
 *   from, so no "dirty" flag is needed:
 *     - killed before W2's store: nothing changed;
 *     - between D1 and D3: desc_seq is 0, or (after D3) head + 1: readers
 *       do not take it for head and read the slot; the next writer
 *       rewrites it from D1, and nerve check accepts 0, head and head + 1;
 *     - after W2, before W6: tail was raised early, so messages the dead
 *       writer meant to destroy are gone (readers count them as missed);
 *       the half-written payload and slot belong to s > head, which no
 *       reader looks at; a raised wpos only leaves a gap;
 *     - after W6: message s is complete and committed; only its unlock
 *       (W7, recovered as below) and wake-up (W8) may be missing: readers
 *       sleep in slices of at most NERVE__WAIT_SLICE_NS, so they see s
 *       within one slice;
 *     - the statistics counter may miss the dead writer's message.
 *   The kernel's robust list marks a dead owner's lock word OWNER_DIED; a
 *   word that names a thread that does not exist (its robust entry lost: a
 *   corrupted word, a mapping dropped while held) makes FUTEX_LOCK_PI answer
 *   ESRCH, and the locker takes it over. Both report "recovered" to the
 *   next locker, and `nerve check` shows the state (`--repair` resets a
 *   word whose owner cannot be alive); lock_writer() checks the invariants
 *   writers rely on
 *   (tail <= head + 1, head - tail < nslots, wpos not behind the newest
 *   message), repairs wpos if needed, marks the mutex consistent, and
 *   returns NERVE_ECORRUPT (releasing the lock) if the state cannot have
 *   come from a crash. It never returns holding an unvalidated lock.
 *   A dead reader leaves its lease, which ends by itself within one slice
 *   (costing puts until then one bounded wake call each, never a lost
 *   wake-up), and a stale bell.waiters count, which no put reads.
 *
 * BOUNDS
 *   Everything read from the file is checked before use: the header at
 *   open (geometry, offsets, sizes, overflow), and on every read the slot's
 *   len (<= data_size) and seq; ring addresses are taken modulo data_size
 *   and the double mapping covers off % data_size + len. Retry loops are
 *   bounded (NERVE_ELAPPED), so a hostile file can cause an error but
 *   never an out-of-bounds access or a hang.
 *
 * MODEL
 *   model/ checks this protocol (writers killed at any step, lock-free
 *   readers with validation, waits and wakes); its steps carry the same
 *   SYNC tags. See model/README.md.
 */
#include <dirent.h>
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
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "atomics.h"
#include "crashpoint.h"
#include "nerve/nerve.h"
#include "platform.h"
#include "shm.h"

#define SHM_DIR "/dev/shm/"
#define CHAN_PREFIX "nerve."
#define BELL_PREFIX "nerve-bell."
#define DEFAULT_SLOTS 1024u
#define DEFAULT_DATA (1u << 20)
#define DEFAULT_MODE 0644u
/* Largest geometry accepted; keeps every sum below 2^63. */
#define MAX_SLOTS (1ull << 32)
#define MAX_DATA (1ull << 40)
/* Untimed waits re-check the ring this often (see CRASH RECOVERY). */
#define NERVE__WAIT_SLICE_NS 100000000ll
/* Without a bell (or without futex_waitv for nerve_chan_wait_any) waits poll. */
#define NERVE__POLL_SLICE_NS 1000000ll
/* A read retries this many times when writers overwrite its message. */
#define READ_RETRIES 64
/* A put wakes at most this many sleepers; each woken reader passes the
 * wake on to as many more (SYNC(wake-pass)), so a put's wake-up cost is
 * bounded however many threads wait. */
#define NERVE__WAKE_BATCH 8
/* A waiting reader's lease (bell.wake_until) outlives its slice by this
 * much. */
#define NERVE__LEASE_GRACE_NS 1000000ll

struct nerve_chan {
    unsigned char *base;          /* the double mapping */
    struct nerve__shm_hdr *hdr;
    struct nerve__shm_slot *slots;
    unsigned char *ring;          /* data ring; 2 * data_size mapped */
    struct nerve__shm_bell *bell; /* NULL: no bell (fall back to polling) */
    uint64_t nslots, data_size, file_size;
    uint64_t cursor;              /* last seq NEXT/NEWEST returned */
    int fd;
    int writable;
    int wake_always;              /* NERVE__COMPAT_WAKE_ALWAYS, from open */
    nerve__a32 cancel;            /* private futex word; 1 = cancelled */
    /* Open reservation (writable handles): */
    int reserved;
    uint32_t res_tid;             /* the reserving thread (owns the lock) */
    uint64_t res_seq, res_pos, res_len;
    uint32_t res_recovered;
    /* Metadata copies and the name. */
    char *type, *encoding, *schema;
    uint64_t schema_len;
    char name[NERVE_NAME_MAX + 1];
};

/* ---- small helpers ------------------------------------------------------ */

int64_t nerve_clock_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int64_t nerve_clock_to_realtime_ns(int64_t mono_ns)
{
    struct timespec rt, mo;
    clock_gettime(CLOCK_REALTIME, &rt);
    clock_gettime(CLOCK_MONOTONIC, &mo);
    int64_t off = ((int64_t)rt.tv_sec - (int64_t)mo.tv_sec) * 1000000000 +
                  (rt.tv_nsec - mo.tv_nsec);
    return mono_ns + off;
}

static uint64_t round_up(uint64_t v, uint64_t a)
{
    return (v + a - 1) / a * a;
}

/* One mapping from errno values to codes for the whole library. */
static int errno_to_nerve(int e)
{
    return nerve__err_from_errno(e);
}

int nerve_chan_name_check(const char *name)
{
    if (!name || !name[0] || name[0] == '.')
        return NERVE_EINVAL;
    size_t n = 0;
    for (const char *p = name; *p; p++, n++) {
        char ch = *p;
        int ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
                 (ch >= '0' && ch <= '9') || ch == '_' || ch == '-' ||
                 ch == '.';
        if (!ok)
            return NERVE_EINVAL;
        if (n >= NERVE_NAME_MAX)
            return NERVE_ENAMETOOLONG;
    }
    return 0;
}

static void path_of(char *buf, size_t len, const char *prefix,
                    const char *name)
{
    snprintf(buf, len, SHM_DIR "%s%s", prefix, name);
}

/* ---- geometry ----------------------------------------------------------- */

struct geometry {
    uint64_t nslots, data_size, meta_len, index_off, data_off, file_size;
};

/* Compute (creation) or re-derive (open) the layout of a channel. Returns 0
 * or NERVE_EINVAL if it does not fit the limits. */
static int geometry_of(uint64_t nslots, uint64_t data_size, uint64_t meta_bytes,
                       uint64_t page, struct geometry *g)
{
    if (nslots < 1 || nslots > MAX_SLOTS || data_size < 1 ||
        data_size > MAX_DATA || meta_bytes > (1ull << 32) || page < 4096 ||
        (page & (page - 1)) != 0)
        return NERVE_EINVAL;
    g->nslots = nslots;
    g->data_size = round_up(data_size, page);
    g->meta_len = round_up(meta_bytes ? meta_bytes : 1, page);
    g->index_off = NERVE__HDR_REGION + g->meta_len;
    g->data_off = g->index_off + round_up(nslots * sizeof(struct nerve__shm_slot), page);
    g->file_size = g->data_off + g->data_size;
    return 0;
}

/* ---- creation ----------------------------------------------------------- */

/* Whether s[0..n) is well-formed UTF-8 (RFC 3629: no overlong forms, no
 * surrogates, nothing above U+10FFFF). The type and the encoding are text
 * for every binding and tool (Python str, JSON, MCAP), so they must be
 * UTF-8: rejected at create, NERVE_ECORRUPT at open. The schema is bytes. */
static int utf8_valid(const unsigned char *s, size_t n)
{
    size_t i = 0;
    while (i < n) {
        unsigned c = s[i];
        size_t k;
        unsigned lo = 0x80, hi = 0xbf;
        if (c < 0x80) {
            i++;
            continue;
        } else if (c >= 0xc2 && c <= 0xdf) {
            k = 1;
        } else if (c >= 0xe0 && c <= 0xef) {
            k = 2;
            if (c == 0xe0)
                lo = 0xa0; /* overlong */
            else if (c == 0xed)
                hi = 0x9f; /* surrogates */
        } else if (c >= 0xf0 && c <= 0xf4) {
            k = 3;
            if (c == 0xf0)
                lo = 0x90; /* overlong */
            else if (c == 0xf4)
                hi = 0x8f; /* above U+10FFFF */
        } else {
            return 0;
        }
        if (n - i <= k)
            return 0;
        if (s[i + 1] < lo || s[i + 1] > hi)
            return 0;
        for (size_t j = 2; j <= k; j++) {
            if (s[i + j] < 0x80 || s[i + j] > 0xbf)
                return 0;
        }
        i += k + 1;
    }
    return 1;
}

static int opts_read(const struct nerve_chan_opts *in,
                     struct nerve_chan_opts *o)
{
    struct nerve_chan_opts def = NERVE_CHAN_OPTS_INIT;
    *o = def;
    if (in) {
        if (in->size < sizeof(uint32_t))
            return NERVE_EINVAL;
        size_t known = sizeof *o;
        size_t n = in->size < known ? in->size : known;
        memcpy(o, in, n);
        /* A tail this library does not know must be zero (options grow by
         * appending fields; a caller built against a newer header may set
         * one we cannot honour). */
        for (size_t i = known; i < in->size; i++) {
            if (((const unsigned char *)in)[i] != 0)
                return NERVE_EINVAL;
        }
    }
    o->size = sizeof *o;
    if (o->flags & ~(NERVE_C_EXIST_OK | NERVE_C_WAKE_ALWAYS) ||
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
    if (o->type && (strlen(o->type) > NERVE_TYPE_MAX ||
                    !utf8_valid((const unsigned char *)o->type,
                                strlen(o->type))))
        return NERVE_EINVAL;
    if (o->encoding && (strlen(o->encoding) > NERVE_ENCODING_MAX ||
                        !utf8_valid((const unsigned char *)o->encoding,
                                    strlen(o->encoding))))
        return NERVE_EINVAL;
    if (o->schema_len > NERVE_SCHEMA_MAX || (o->schema_len && !o->schema))
        return NERVE_EINVAL;
    if (o->schema && memchr(o->schema, 0, o->schema_len))
        return NERVE_EINVAL;
    return 0;
}

/* Write the bell into the new unnamed file t (NERVE__BELL_SIZE bytes). */
static int make_bell(struct nerve__shm_tmp *t, uint32_t mode)
{
    int r = nerve__shm_tmp_create(SHM_DIR, NERVE__BELL_SIZE, t);
    if (r)
        return r;
    struct nerve__shm_bell *b = mmap(NULL, NERVE__BELL_SIZE,
                                     PROT_READ | PROT_WRITE, MAP_SHARED,
                                     t->fd, 0);
    if (b == MAP_FAILED) {
        r = errno_to_nerve(errno);
    } else {
        b->version = NERVE_LAYOUT_VERSION;
        b->magic = NERVE__BELL_MAGIC;
        munmap(b, NERVE__BELL_SIZE);
        /* The bell has the channel's mode (and owner and group): only
         * processes that may write the channel may write (and so
         * truncate) the bell, whose mapping every writer reads after each
         * put. bell_open() uses no other bell. Readers that may not write
         * it poll instead, unless the channel wakes on every put
         * (NERVE_C_WAKE_ALWAYS). See docs/design/0002-wakeup.md. */
        if (fchmod(t->fd, mode) != 0)
            r = errno_to_nerve(errno);
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
    struct geometry g;
    int r = geometry_of(o->slots, o->data_size, tlen + elen + o->schema_len + 3,
                        page, &g);
    if (r)
        return r;
    r = nerve__shm_tmp_create(SHM_DIR, g.file_size, t);
    if (r)
        return r;
    unsigned char *m = mmap(NULL, g.index_off, PROT_READ | PROT_WRITE,
                            MAP_SHARED, t->fd, 0);
    if (m == MAP_FAILED) {
        r = errno_to_nerve(errno);
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
        if (msync(m, g.index_off, MS_SYNC) != 0)
            r = errno_to_nerve(errno);
    } else {
        r = NERVE_ENOMEM;
    }
    munmap(m, g.index_off);
    if (r == 0 && fchmod(t->fd, o->mode) != 0)
        r = errno_to_nerve(errno);
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
    struct geometry g;
    r = geometry_of(o->slots, o->data_size, 1, nerve__page_size(), &g);
    if (r == 0 &&
        (c->nslots != g.nslots || c->data_size != g.data_size ||
         !same_str(o->type, c->type) || !same_str(o->encoding, c->encoding) ||
         (o->schema &&
          (o->schema_len != c->schema_len ||
           memcmp(o->schema, c->schema, o->schema_len) != 0))))
        r = NERVE_EMISMATCH;
    (void)nerve_chan_close(c);
    return r;
}

/* Give the channel `name`, which this process has just linked, its bell.
 * The bell is linked with no-replace semantics too: a file already at the
 * bell's name is a stale bell or one planted by someone else. It is
 * removed where this user may (its own, or any as root) and otherwise
 * left alone: bell_open() will not use a bell whose owner, group or mode
 * differ from the channel's, so the channel then works without one
 * (waiting readers poll) and nerve_chan_check() says so. */
static void link_bell(const char *name, struct nerve__shm_tmp *bell)
{
    char path[PATH_MAX];
    path_of(path, sizeof path, BELL_PREFIX, name);
    for (int attempt = 0; attempt < 3; attempt++) {
        int r = nerve__shm_tmp_link(bell, path);
        if (r != NERVE_EEXIST || unlink(path) != 0)
            break;
    }
}

int nerve_chan_create(const char *name, const struct nerve_chan_opts *opts)
{
    struct nerve_chan_opts o;
    int r = nerve_chan_name_check(name);
    if (r == 0)
        r = opts_read(opts, &o);
    if (r)
        return r;
    /* Temporaries of creators killed mid-create (only where files cannot
     * be made unnamed, or by older versions) are removed here. */
    nerve__shm_tmp_sweep(SHM_DIR);
    struct nerve__shm_tmp chan, bell;
    r = make_channel(&o, &chan);
    if (r)
        return r;
    r = make_bell(&bell, o.mode);
    if (r) {
        nerve__shm_tmp_discard(&chan);
        return r;
    }
    /* Linking the complete, unnamed file is the atomic, exclusive
     * creation: the channel appears fully initialised under its name, or
     * the name was taken (by anything: a channel, or a file planted
     * there) and nothing of ours is adopted or left behind. */
    NERVE_CRASHPOINT("create.filled");
    char path[PATH_MAX];
    path_of(path, sizeof path, CHAN_PREFIX, name);
    r = nerve__shm_tmp_link(&chan, path);
    nerve__shm_tmp_discard(&chan);
    if (r == 0) {
        /* Killed here: a complete channel without a bell; its waiting
         * readers poll, and nerve_chan_check() says so. */
        NERVE_CRASHPOINT("create.linked");
        link_bell(name, &bell);
    }
    nerve__shm_tmp_discard(&bell);
    if (r == NERVE_EEXIST && (o.flags & NERVE_C_EXIST_OK))
        r = check_compatible(name, &o);
    return r;
}

int nerve_chan_unlink(const char *name)
{
    int r = nerve_chan_name_check(name);
    if (r)
        return r;
    char path[PATH_MAX];
    struct stat st;
    path_of(path, sizeof path, CHAN_PREFIX, name);
    /* Only a regular file is a channel (or the remains of one): a
     * directory, FIFO, socket or symlink under the name is not removed. */
    if (lstat(path, &st) != 0)
        return errno_to_nerve(errno);
    if (!S_ISREG(st.st_mode))
        return NERVE_ENOTCHAN;
    if (unlink(path) != 0)
        return errno_to_nerve(errno);
    /* The bell after the channel: a failed unlink keeps both. A bell this
     * user may not remove (planted by another user) stays, harmlessly: no
     * channel of this user's will use it (see link_bell()). */
    path_of(path, sizeof path, BELL_PREFIX, name);
    (void)unlink(path);
    return 0;
}

/* chmod one file in /dev/shm through a descriptor: chmod(2) would follow a
 * symlink planted under the name to another of the caller's files. */
static int chmod_file(const char *path, uint32_t mode)
{
    struct stat st;
    int fd = nerve__shm_open(path, 0, &st);
    if (fd == NERVE_EACCES) {
        /* No read permission (mode 0200, say): O_PATH needs none. */
        fd = open(path, O_PATH | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
            return errno_to_nerve(errno);
        if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
            close(fd);
            return NERVE_ENOTCHAN;
        }
        char proc[64];
        snprintf(proc, sizeof proc, "/proc/self/fd/%d", fd);
        int r = chmod(proc, mode) == 0 ? 0 : errno_to_nerve(errno);
        close(fd);
        return r;
    }
    if (fd < 0)
        return fd;
    int r = fchmod(fd, mode) == 0 ? 0 : errno_to_nerve(errno);
    close(fd);
    return r;
}

int nerve_chan_chmod(const char *name, uint32_t mode)
{
    int r = nerve_chan_name_check(name);
    if (r)
        return r;
    if (mode & ~0777u)
        return NERVE_EINVAL;
    char path[PATH_MAX];
    path_of(path, sizeof path, CHAN_PREFIX, name);
    r = chmod_file(path, mode);
    if (r)
        return r;
    /* The bell keeps the channel's mode (see make_bell()). A missing or
     * foreign bell is not an error: the channel works without one. */
    path_of(path, sizeof path, BELL_PREFIX, name);
    r = chmod_file(path, mode);
    if (r && r != NERVE_ENOENT && r != NERVE_ENOTCHAN && r != NERVE_EACCES)
        return r;
    return 0;
}

/* ---- opening ------------------------------------------------------------ */

__attribute__((format(printf, 4, 5))) static int
say(char *msg, size_t len, int code, const char *fmt, ...)
{
    if (msg && len) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, len, fmt, ap);
        va_end(ap);
    }
    return code;
}

/* Validate a header read from a file of st_size bytes. Each failure has its
 * own code (a file that is not a channel, another version, another ABI, a
 * truncated file, inconsistent fields) and, into msg, the field and why. */
static int header_check(const struct nerve__shm_hdr *h, uint64_t st_size,
                        struct geometry *g, char *msg, size_t len)
{
    if (st_size < sizeof h->magic)
        return say(msg, len, NERVE_ENOTCHAN,
                   "not a nerve channel: file is %" PRIu64 " bytes",
                   st_size);
    if (h->magic != NERVE__MAGIC)
        return say(msg, len, NERVE_ENOTCHAN,
                   "not a nerve channel: magic 0x%016" PRIx64
                   " (a channel's is 0x%016llx)",
                   h->magic, NERVE__MAGIC);
    if (st_size < 16)
        return say(msg, len, NERVE_ETRUNC,
                   "file is %" PRIu64 " bytes, shorter than the header",
                   st_size);
    if (h->layout_version < NERVE_LAYOUT_VERSION)
        return say(msg, len, NERVE_EVERSION,
                   "layout_version %u, made by an older nerve; this library "
                   "reads %u: recreate the channel (nerve rm NAME, then "
                   "create it again) to use it with this version",
                   h->layout_version, NERVE_LAYOUT_VERSION);
    if (h->layout_version != NERVE_LAYOUT_VERSION)
        return say(msg, len, NERVE_EVERSION,
                   "layout_version %u, made by a newer nerve; this library "
                   "reads %u",
                   h->layout_version, NERVE_LAYOUT_VERSION);
    if (h->incompat_flags != 0)
        return say(msg, len, NERVE_EVERSION,
                   "incompat_flags 0x%" PRIx64 " holds unknown features",
                   h->incompat_flags);
    if (st_size < sizeof *h)
        return say(msg, len, NERVE_ETRUNC,
                   "file is %" PRIu64 " bytes, shorter than the %zu-byte "
                   "header",
                   st_size, sizeof *h);
    if (h->abi_endian != NERVE__ABI_ENDIAN)
        return say(msg, len, NERVE_EABI,
                   "abi_endian 0x%08x: made on a machine of other byte order",
                   h->abi_endian);
    if (h->abi_mutex_size != sizeof(pthread_mutex_t))
        return say(msg, len, NERVE_EABI,
                   "abi_mutex_size %u; this platform's mutex is %zu bytes",
                   h->abi_mutex_size, sizeof(pthread_mutex_t));
    if (h->page_size != nerve__page_size())
        return say(msg, len, NERVE_EABI,
                   "page_size %u; this kernel's page is %u bytes",
                   h->page_size, nerve__page_size());
    if (h->header_size != sizeof *h)
        return say(msg, len, NERVE_ECORRUPT,
                   "header_size %u, expected %zu", h->header_size, sizeof *h);
    if (h->type_len > NERVE_TYPE_MAX)
        return say(msg, len, NERVE_ECORRUPT, "type_len %u exceeds %d",
                   h->type_len, NERVE_TYPE_MAX);
    if (h->encoding_len > NERVE_ENCODING_MAX)
        return say(msg, len, NERVE_ECORRUPT, "encoding_len %u exceeds %d",
                   h->encoding_len, NERVE_ENCODING_MAX);
    if (h->schema_len > NERVE_SCHEMA_MAX)
        return say(msg, len, NERVE_ECORRUPT,
                   "schema_len %" PRIu64 " exceeds %u", h->schema_len,
                   NERVE_SCHEMA_MAX);
    if (h->nslots < 1 || h->nslots > MAX_SLOTS)
        return say(msg, len, NERVE_ECORRUPT,
                   "nslots %" PRIu64 " is outside [1, %llu]", h->nslots,
                   MAX_SLOTS);
    if (h->data_size < 1 || h->data_size > MAX_DATA)
        return say(msg, len, NERVE_ECORRUPT,
                   "data_size %" PRIu64 " is outside [1, %llu]", h->data_size,
                   MAX_DATA);
    uint64_t meta_bytes =
        (uint64_t)h->type_len + h->encoding_len + h->schema_len + 3;
    if (geometry_of(h->nslots, h->data_size, meta_bytes, h->page_size, g))
        return say(msg, len, NERVE_ECORRUPT, "geometry out of range");
    if (g->data_size != h->data_size)
        return say(msg, len, NERVE_ECORRUPT,
                   "data_size %" PRIu64 " is not a multiple of the page size "
                   "%u",
                   h->data_size, h->page_size);
#define FIELD_IS(field, want)                                                  \
    if (h->field != (want))                                                    \
        return say(msg, len, NERVE_ECORRUPT,                                   \
                   #field " %" PRIu64 ", expected %" PRIu64 " for this "       \
                   "geometry",                                                 \
                   (uint64_t)h->field, (uint64_t)(want));
    FIELD_IS(meta_off, NERVE__HDR_REGION)
    FIELD_IS(meta_len, g->meta_len)
    FIELD_IS(index_off, g->index_off)
    FIELD_IS(data_off, g->data_off)
    FIELD_IS(file_size, g->file_size)
#undef FIELD_IS
    if (st_size < g->file_size)
        return say(msg, len, NERVE_ETRUNC,
                   "file is %" PRIu64 " bytes, header says %" PRIu64,
                   st_size, g->file_size);
    if (st_size > g->file_size)
        return say(msg, len, NERVE_ECORRUPT,
                   "file is %" PRIu64 " bytes, header says %" PRIu64,
                   st_size, g->file_size);
    return 0;
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
        return say(msg, len, NERVE_ECORRUPT, "type holds a NUL byte");
    if (memchr(c->encoding, 0, el))
        return say(msg, len, NERVE_ECORRUPT, "encoding holds a NUL byte");
    if (memchr(c->schema, 0, sl))
        return say(msg, len, NERVE_ECORRUPT, "schema holds a NUL byte");
    if (!utf8_valid((const unsigned char *)c->type, tl))
        return say(msg, len, NERVE_ECORRUPT, "type is not valid UTF-8");
    if (!utf8_valid((const unsigned char *)c->encoding, el))
        return say(msg, len, NERVE_ECORRUPT, "encoding is not valid UTF-8");
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
static struct nerve__shm_bell *bell_map(const char *name,
                                        const struct stat *cst, int writable,
                                        char *msg, size_t len)
{
    char path[PATH_MAX];
    path_of(path, sizeof path, BELL_PREFIX, name);
    struct stat st;
    int fd = nerve__shm_open(path, writable, &st);
    if (fd == NERVE_ENOENT) {
        say(msg, len, 0, "no bell file");
        return NULL;
    }
    if (fd == NERVE_EACCES) {
        say(msg, len, 0, "no write permission on the bell");
        return NULL;
    }
    if (fd < 0) {
        say(msg, len, 0, "bell is %s",
            fd == NERVE_ENOTCHAN ? "not a regular file" : nerve_strerror(fd));
        return NULL;
    }
    struct nerve__shm_bell *b = NULL;
    if (st.st_uid != cst->st_uid || st.st_gid != cst->st_gid) {
        say(msg, len, 0,
            "bell is owned by uid %u gid %u, the channel by uid %u gid %u",
            (unsigned)st.st_uid, (unsigned)st.st_gid, (unsigned)cst->st_uid,
            (unsigned)cst->st_gid);
    } else if ((st.st_mode & 07777) != (cst->st_mode & 07777)) {
        say(msg, len, 0, "bell mode %04o differs from the channel's %04o",
            (unsigned)(st.st_mode & 07777), (unsigned)(cst->st_mode & 07777));
    } else if (st.st_nlink != 1) {
        say(msg, len, 0, "bell has %lu links (a bell has one)",
            (unsigned long)st.st_nlink);
    } else if ((uint64_t)st.st_size < NERVE__BELL_SIZE) {
        say(msg, len, 0, "bell is %" PRIu64 " bytes, expected %u",
            (uint64_t)st.st_size, NERVE__BELL_SIZE);
    } else {
        void *p = mmap(NULL, NERVE__BELL_SIZE,
                       PROT_READ | (writable ? PROT_WRITE : 0), MAP_SHARED,
                       fd, 0);
        if (p == MAP_FAILED) {
            say(msg, len, 0, "bell cannot be mapped: %s",
                nerve_strerror(errno_to_nerve(errno)));
        } else {
            b = p;
            if (b->magic != NERVE__BELL_MAGIC ||
                b->version != NERVE_LAYOUT_VERSION) {
                say(msg, len, 0, "bell has a wrong magic or version");
                munmap(p, NERVE__BELL_SIZE);
                b = NULL;
            }
        }
    }
    close(fd);
    return b;
}

/* Writers must share one PID namespace: the lock word holds a TID, which
 * the kernel resolves in the caller's namespace (a writer elsewhere would
 * boost, wait for or take over the wrong thread). The first writer to
 * open records its namespace; writers from any other are refused. Readers
 * take no lock and work from anywhere. Without /proc (id 0) there is
 * nothing to compare and the open proceeds. */
static int writer_ns_claim(nerve_chan *c)
{
    uint64_t mine = nerve__pidns_id();
    if (mine == 0)
        return 0;
    uint64_t cur = nerve__load_rlx(&c->hdr->lock.l.pidns);
    if (cur == 0 && nerve__cas_rlx(&c->hdr->lock.l.pidns, &cur, mine))
        return 0;
    return cur == mine ? 0 : NERVE_EXDEV;
}

/* nerve_chan_open(), with the reason for a failure written into msg. */
static int chan_open(const char *name, uint32_t flags, nerve_chan **out,
                     char *msg, size_t len)
{
    if (!out || (flags & ~NERVE_O_WRITE))
        return NERVE_EINVAL;
    *out = NULL;
    int r = nerve_chan_name_check(name);
    if (r)
        return r;
    char path[PATH_MAX];
    path_of(path, sizeof path, CHAN_PREFIX, name);
    int writable = (flags & NERVE_O_WRITE) != 0;
    /* Never blocks, never follows a symlink, and only a regular file is
     * opened (nerve__shm_open): /dev/shm is world-writable. */
    struct stat st;
    int fd = nerve__shm_open(path, writable, &st);
    if (fd < 0) {
        if (fd == NERVE_ENOTCHAN)
            say(msg, len, fd,
                "not a nerve channel: not a regular file (FIFO, socket, "
                "device, directory or symlink)");
        return fd;
    }
    struct nerve__shm_hdr h;
    struct geometry g;
    memset(&h, 0, sizeof h);
    /* Validate the header from a private copy before mapping anything. */
    ssize_t n = pread(fd, &h, sizeof h, 0);
    if (n < 0) {
        r = errno_to_nerve(errno);
        goto fail_fd;
    }
    /* Bytes past a short read stay zero; header_check judges st_size. */
    r = header_check(&h, (uint64_t)st.st_size, &g, msg, len);
    /* Creation reserves every page (posix_fallocate), so a channel file is
     * never sparse. A sparse one is foreign, and mapping it with
     * MAP_POPULATE would allocate its holes: up to data_size of /dev/shm
     * taken by a read-only open. */
    if (r == 0 && (uint64_t)st.st_blocks * 512 < (uint64_t)st.st_size)
        r = say(msg, len, NERVE_ECORRUPT,
                "file is sparse: %" PRIu64 " of its %" PRIu64
                " bytes are allocated (nerve_chan_create allocates all)",
                (uint64_t)st.st_blocks * 512, (uint64_t)st.st_size);
    if (r)
        goto fail_fd;
    nerve_chan *c = calloc(1, sizeof *c);
    if (!c) {
        r = NERVE_ENOMEM;
        goto fail_fd;
    }
    snprintf(c->name, sizeof c->name, "%s", name);
    c->fd = fd;
    c->writable = writable;
    c->wake_always = (h.compat_flags & NERVE__COMPAT_WAKE_ALWAYS) != 0;
    c->nslots = g.nslots;
    c->data_size = g.data_size;
    c->file_size = g.file_size;
    c->base = nerve__map_double(fd, g.file_size, g.data_off, g.data_size,
                                writable);
    if (!c->base) {
        r = errno_to_nerve(errno);
        free(c);
        goto fail_fd;
    }
    c->hdr = (struct nerve__shm_hdr *)c->base;
    c->slots = (struct nerve__shm_slot *)(c->base + g.index_off);
    c->ring = c->base + g.data_off;
    /* The mapping is the file the header came from, but a writer with
     * access could have rewritten it since: the geometry used from here on
     * is the validated copy in the handle, never re-read. */
    r = meta_load(c, &h, msg, len);
    if (r) {
        (void)nerve_chan_close(c);
        return r;
    }
    if (writable && (r = writer_ns_claim(c)) != 0) {
        (void)nerve_chan_close(c);
        return r;
    }
    c->bell = bell_map(name, &st, 1, NULL, 0);
    *out = c;
    return 0;
fail_fd:
    close(fd);
    return r;
}

int nerve_chan_open(const char *name, uint32_t flags, nerve_chan **out)
{
    return chan_open(name, flags, out, NULL, 0);
}


/* The handle's reservation was made by a thread of this process that no
 * longer exists (it ended holding the lock, which the kernel then released
 * through its robust list), or by the parent of this fork child (which
 * still holds it in the parent). Either way this process holds nothing. */
static int reservation_orphaned(const nerve_chan *c)
{
    return syscall(SYS_tgkill, getpid(), (pid_t)c->res_tid, 0) != 0 &&
           errno == ESRCH;
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
            if (!reservation_orphaned(c))
                return NERVE_EBUSY;
        } else {
            /* Discard the reservation: nothing was published. */
            (void)nerve__mutex_unlock(&c->hdr->lock.l);
        }
        c->reserved = 0;
    }
    if (c->bell)
        munmap(c->bell, NERVE__BELL_SIZE);
    nerve__unmap_double(c->base, c->file_size, c->data_size);
    if (c->fd >= 0)
        close(c->fd);
    free(c->type);
    free(c->encoding);
    free(c->schema);
    free(c);
    return 0;
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

/* ---- writing ------------------------------------------------------------ */

static struct nerve__shm_slot *slot_of(const nerve_chan *c, uint64_t seq)
{
    return &c->slots[(seq - 1) % c->nslots];
}

/* The write position a recovering writer continues from. The newest
 * readable message ends at or before wpos (W5 precedes W6); a wpos behind
 * it cannot come from a crash, only from a foreign write, and is repaired.
 * When nothing is readable any position is safe. */
static uint64_t wpos_repaired(const nerve_chan *c, uint64_t head,
                              uint64_t tail)
{
    uint64_t wpos = nerve__load_rlx(&c->hdr->wpos);
    if (head == 0 || tail > head)
        return wpos;
    const struct nerve__shm_slot *sl = slot_of(c, head);
    uint64_t end = nerve__load_rlx(&sl->off) + nerve__load_rlx(&sl->len);
    return wpos < end ? end : wpos;
}

/* Take the writer lock, recovering it from a dead owner (CRASH RECOVERY).
 * On success the caller holds the lock and the writer-side invariants
 * hold. */
static int lock_writer(nerve_chan *c, int64_t timeout_ns, uint32_t flags,
                       uint32_t *recovered)
{
    struct nerve__shm_hdr *h = c->hdr;
    int r = nerve__mutex_lock(&h->lock.l, timeout_ns,
                              (flags & NERVE_F_ABSTIME) != 0);
    *recovered = 0;
    if (r < 0)
        return r;
    /* Holding the lock, this writer is the only one storing to head, tail
     * and wpos, so relaxed loads see the last values (the mutex orders
     * them). */
    uint64_t head = nerve__load_rlx(&h->head);
    uint64_t tail = nerve__load_rlx(&h->tail);
    /* With nslots == 1 a writer that died after W4 has already reused the
     * head's slot; it had raised tail past head first, so the slot is only
     * checked while head is readable. */
    int sane = tail >= 1 && tail <= head + 1 && head - tail + 1 <= c->nslots &&
               head < (UINT64_MAX >> 2) &&
               (tail > head || nerve__load_rlx(&slot_of(c, head)->seq) == head);
    if (r == 1) {
        /* The previous owner died (or the word named a thread that does
         * not exist): state is whatever its last completed step left,
         * which the invariants above accept. */
        *recovered = 1;
    }
    /* Checked on every lock, not only after a death: a wpos moved behind
     * the newest message (a foreign write) would otherwise let this put
     * overwrite readable messages without raising tail first. */
    if (sane) {
        uint64_t w = wpos_repaired(c, head, tail);
        if (w != nerve__load_rlx(&h->wpos))
            nerve__store_rlx(&h->wpos, w);
    }
    if (!sane) {
        (void)nerve__mutex_unlock(&h->lock.l);
        return NERVE_ECORRUPT;
    }
    return 0;
}

/* W1-W2: choose the position of message head + 1 of `len` bytes and
 * invalidate what it destroys. Returns the position. */
static uint64_t begin_message(nerve_chan *c, uint64_t len, uint64_t *seq)
{
    struct nerve__shm_hdr *h = c->hdr;
    uint64_t head = nerve__load_rlx(&h->head);
    uint64_t tail = nerve__load_rlx(&h->tail);
    uint64_t s = head + 1;
    /* wpos is only ever used modulo data_size, so even a foreign value
     * cannot take a write out of bounds. */
    uint64_t p = round_up(nerve__load_rlx(&h->wpos), NERVE__MSG_ALIGN);
    uint64_t t = tail;
    /* Slot reuse: s takes the slot of s - nslots. */
    if (s > c->nslots && t <= s - c->nslots)
        t = s - c->nslots + 1;
    /* Byte reuse: a message survives iff it starts at or after
     * p + len - data_size. Bounded by nslots iterations. */
    if (p + len > c->data_size) {
        uint64_t keep_from = p + len - c->data_size;
        while (t <= head && nerve__load_rlx(&slot_of(c, t)->off) < keep_from)
            t++;
    }
    if (t != tail)
        nerve__store_rlx(&h->tail, t);
    /* SYNC(tail-inval) release: the tail as raised by this or an earlier
     * writer is visible to every reader that observes a byte or slot field
     * stored after this fence; pairs with the acquire fence in
     * still_valid(). Issued even when this put raised nothing: the bytes it
     * overwrites may belong to messages an earlier writer invalidated, and
     * the C11 model needs this writer's own fence before its stores.
     * (Free on x86.) */
    nerve__fence_rel();
    NERVE_CRASHPOINT("put.after-tail");
    *seq = s;
    return p;
}

/* A put's own commit time (see nerve_chan_put_at()). */
#define NERVE__TIME_NOW INT64_MIN

/* The commit time of message `seq`: now, or the caller's time `at` clamped
 * into [commit time of message seq - 1 if still readable, now], so that
 * times never decrease along the ring (NERVE_GET_AT's binary search and
 * nerve_chan_check() rely on it) and never run ahead of CLOCK_MONOTONIC
 * (a later plain put takes now). Called holding the writer lock, before
 * W4 stores to the slot (with nslots == 1 it is the same slot, but then
 * begin_message() raised tail past seq - 1). */
static int64_t commit_time(const nerve_chan *c, uint64_t seq, int64_t at)
{
    int64_t now = nerve_clock_now_ns();
    if (at == NERVE__TIME_NOW || at > now)
        return now;
    if (seq > 1 && nerve__load_rlx(&c->hdr->tail) <= seq - 1) {
        int64_t prev = nerve__loadi_rlx(&slot_of(c, seq - 1)->time_ns);
        if (at < prev)
            return prev;
    }
    return at;
}

/* W4-W8: describe and commit message `seq`, unlock, then wake. */
static void finish_message(nerve_chan *c, uint64_t seq, uint64_t pos,
                           uint64_t len, struct nerve_put_info *info,
                           uint32_t recovered, int64_t at)
{
    struct nerve__shm_hdr *h = c->hdr;
    struct nerve__shm_slot *sl = slot_of(c, seq);
    int64_t now = commit_time(c, seq, at);
    nerve__store_rlx(&sl->seq, seq);
    nerve__store_rlx(&sl->off, pos);
    nerve__store_rlx(&sl->len, len);
    nerve__storei_rlx(&sl->time_ns, now);
    NERVE_CRASHPOINT("put.after-slot");
    /* D1-D3 SYNC(desc-seq): the same description on the head line, for
     * caught-up readers (read_desc()). D1: desc_seq = 0, then a release
     * fence, so a reader that sees any D2 store sees D1 (or later) when
     * it reloads desc_seq after its acquire fence. (Free on x86.) */
    nerve__store_rlx(&h->desc_seq, 0);
    nerve__fence_rel();
    NERVE_CRASHPOINT("put.after-desc-clear");
    /* D2 */
    nerve__store_rlx(&h->desc_off, pos);
    nerve__store_rlx(&h->desc_len, len);
    nerve__storei_rlx(&h->desc_time_ns, now);
    NERVE_CRASHPOINT("put.after-desc-fields");
    /* D3: release, so a reader whose acquire load sees s sees D2. */
    nerve__store_rel(&h->desc_seq, seq);
    NERVE_CRASHPOINT("put.after-desc-seq");
    nerve__store_rlx(&h->wpos, pos + len);
    NERVE_CRASHPOINT("put.after-wpos");
    /* SYNC(pub-seq) release: the commit. Payload (W3) and slot (W4) become
     * visible to readers that load head with acquire in locate(). The
     * store is seq_cst, which also makes it the store half of
     * SYNC(wake-check) (one locked instruction on x86, xchg, in place of a
     * release store here plus a fence after the unlock). */
    nerve__store_sc(&h->head, seq);
    NERVE_CRASHPOINT("put.after-commit");
    /* [stat], written only under the lock: a plain add, not a locked RMW. */
    nerve__store_rlx(&h->bytes_total, nerve__load_rlx(&h->bytes_total) + len);
    /* W7: unlock before waking, so no wake-up work is done while other
     * writers wait for the lock. */
    (void)nerve__mutex_unlock(&h->lock.l);
    NERVE_CRASHPOINT("put.after-unlock");
    /* W8 SYNC(wake-check) seq_cst: the seq_cst head store of W6 comes
     * before this seq_cst lease load in the single total order, so with
     * SYNC(wait-announce) in wait_change() (seq_cst lease RMW, then a
     * seq_cst load of head) either the reader sees the new head or this
     * load sees its lease (Dekker). A lease that ended at or before `now`
     * (taken before the commit) belongs to a reader whose sleep ended
     * before the commit: it re-checks head itself. So a dead reader's
     * lease costs nothing once it ends. */
    if (c->wake_always || !c->bell ||
        nerve__loadi_sc(&c->bell->wake_until) > now)
        (void)nerve__futex->wake((const uint32_t *)&h->head, 1,
                                 NERVE__WAKE_BATCH);
    NERVE_CRASHPOINT("put.after-wake");
    if (info) {
        info->seq = seq;
        info->time_ns = now;
        info->recovered = recovered;
        info->reserved0 = 0;
        info->reserved[0] = info->reserved[1] = 0;
    }
}

static int write_check(nerve_chan *c, size_t len, uint32_t flags)
{
    if (!c)
        return NERVE_EBADF;
    if (!c->writable)
        return NERVE_EROFS;
    if (flags & ~NERVE_F_ABSTIME)
        return NERVE_EINVAL;
    if (c->reserved && c->res_tid != nerve__tid() && reservation_orphaned(c))
        c->reserved = 0;
    if (c->reserved)
        return c->res_tid == nerve__tid() ? NERVE_EBUSY : NERVE_EPERM;
    if ((uint64_t)len > c->data_size)
        return NERVE_EMSGSIZE;
    return 0;
}

/* nerve_chan_put() and nerve_chan_put_at(): `at` is the caller's commit
 * time or NERVE__TIME_NOW. */
static int put_msg(nerve_chan *c, const void *buf, size_t len, int64_t at,
                   int64_t timeout_ns, struct nerve_put_info *info,
                   uint32_t flags)
{
    int r = write_check(c, len, flags);
    if (r)
        return r;
    if (len && !buf)
        return NERVE_EINVAL;
    uint32_t recovered;
    r = lock_writer(c, timeout_ns, flags, &recovered);
    if (r)
        return r;
    NERVE_CRASHPOINT("put.locked");
    uint64_t seq, pos = begin_message(c, len, &seq);
    unsigned char *dst = c->ring + pos % c->data_size;
    if (len > 1) {
        /* Two halves so a crash point can fall in the middle of a copy. */
        nerve__racy_write(dst, buf, len / 2);
        NERVE_CRASHPOINT("put.mid-payload");
        nerve__racy_write(dst + len / 2, (const unsigned char *)buf + len / 2,
                          len - len / 2);
    } else if (len) {
        nerve__racy_write(dst, buf, len);
    }
    NERVE_CRASHPOINT("put.after-payload");
    finish_message(c, seq, pos, len, info, recovered, at);
    return 0;
}

int nerve_chan_reserve(nerve_chan *c, size_t len, int64_t timeout_ns,
                       void **ptr, uint32_t flags)
{
    int r = write_check(c, len, flags);
    if (r)
        return r;
    if (!ptr)
        return NERVE_EINVAL;
    r = lock_writer(c, timeout_ns, flags, &c->res_recovered);
    if (r)
        return r;
    NERVE_CRASHPOINT("reserve.locked");
    c->res_pos = begin_message(c, len, &c->res_seq);
    c->res_len = len;
    c->res_tid = nerve__tid();
    c->reserved = 1;
    *ptr = c->ring + c->res_pos % c->data_size;
    return 0;
}

/* nerve_chan_commit() and nerve_chan_commit_at(). */
static int commit_msg(nerve_chan *c, size_t len, int64_t at,
                      struct nerve_put_info *info)
{
    if (!c)
        return NERVE_EBADF;
    if (!c->reserved || (uint64_t)len > c->res_len)
        return NERVE_EINVAL;
    /* The PI lock belongs to the reserving thread: nobody else can
     * release it. */
    if (c->res_tid != nerve__tid())
        return NERVE_EPERM;
    c->reserved = 0;
    NERVE_CRASHPOINT("commit.before-commit");
    finish_message(c, c->res_seq, c->res_pos, len, info, c->res_recovered,
                   at);
    return 0;
}

int nerve_chan_commit(nerve_chan *c, size_t len, struct nerve_put_info *info)
{
    return commit_msg(c, len, NERVE__TIME_NOW, info);
}

int nerve_chan_abort(nerve_chan *c)
{
    if (!c)
        return NERVE_EBADF;
    if (!c->reserved)
        return NERVE_EINVAL;
    if (c->res_tid != nerve__tid())
        return NERVE_EPERM;
    c->reserved = 0;
    /* Nothing was published: head is unchanged. Messages the reservation
     * invalidated stay invalid, as if they had been overwritten. */
    (void)nerve__mutex_unlock(&c->hdr->lock.l);
    return 0;
}

int nerve_chan_put(nerve_chan *c, const void *buf, size_t len,
                   int64_t timeout_ns, struct nerve_put_info *info,
                   uint32_t flags)
{
    return put_msg(c, buf, len, NERVE__TIME_NOW, timeout_ns, info, flags);
}

int nerve_chan_put_at(nerve_chan *c, const void *buf, size_t len,
                      int64_t time_ns, int64_t timeout_ns,
                      struct nerve_put_info *info, uint32_t flags)
{
    if (time_ns < 0)
        time_ns = 0; /* CLOCK_MONOTONIC times are never negative */
    return put_msg(c, buf, len, time_ns, timeout_ns, info, flags);
}

int nerve_chan_commit_at(nerve_chan *c, size_t len, int64_t time_ns,
                         struct nerve_put_info *info)
{
    return commit_msg(c, len, time_ns < 0 ? 0 : time_ns, info);
}

int nerve_chan_ring(const nerve_chan *c, void **base, uint64_t *len)
{
    if (!c)
        return NERVE_EBADF;
    if (!base || !len)
        return NERVE_EINVAL;
    *base = c->ring;
    *len = 2 * c->data_size;
    return 0;
}

/* ---- reading ------------------------------------------------------------ */

/* SYNC(read-validate) acquire: if any slot field or ring byte read before
 * this point was stored by a writer after its SYNC(tail-inval) fence, the
 * tail loaded here is at least that writer's raised tail. Returns whether
 * message seq was intact for everything read before the call. */
static int still_valid(const nerve_chan *c, uint64_t seq)
{
    nerve__fence_acq();
    return nerve__load_rlx(&c->hdr->tail) <= seq;
}

/* One message's slot, read lock-free and checked. */
struct msg {
    uint64_t seq, off, len;
    int64_t time_ns;
};

/* R2-R3: read slot `seq` and validate it. Returns 0 (m filled, consistent),
 * NERVE_EOVERWRITTEN (a writer destroyed it: the caller retries or
 * reports), or NERVE_ECORRUPT (validated yet inconsistent). */
static int read_slot(const nerve_chan *c, uint64_t seq, struct msg *m)
{
    const struct nerve__shm_slot *sl = slot_of(c, seq);
    /* Relaxed: validated by still_valid() below. */
    uint64_t sseq = nerve__load_rlx(&sl->seq);
    m->off = nerve__load_rlx(&sl->off);
    m->len = nerve__load_rlx(&sl->len);
    m->time_ns = nerve__loadi_rlx(&sl->time_ns);
    m->seq = seq;
    if (!still_valid(c, seq))
        return NERVE_EOVERWRITTEN;
    if (sseq != seq || m->len > c->data_size)
        return NERVE_ECORRUPT;
    return 0;
}

/* R2 from the descriptor on the head line, for a reader that wants the
 * newest message `seq` (== head as locate() loaded it): SYNC(desc-seq), the
 * seqlock read. v1 = desc_seq (acquire), the fields, acquire fence (which
 * is also SYNC(read-validate)), v2 = desc_seq, then tail. Returns 0 (m
 * filled and validated, as read_slot()), NERVE_EOVERWRITTEN (tail moved
 * past seq), or NERVE_EAGAIN: the descriptor is not seq's (a writer is
 * between D1 and D3, or has moved on): the caller reads the slot. */
static inline __attribute__((always_inline)) int
read_desc(const nerve_chan *c, uint64_t seq, struct msg *m)
{
    const struct nerve__shm_hdr *h = c->hdr;
    uint64_t v1 = nerve__load_acq(&h->desc_seq);
    if (v1 != seq)
        return NERVE_EAGAIN;
    m->off = nerve__load_rlx(&h->desc_off);
    m->len = nerve__load_rlx(&h->desc_len);
    m->time_ns = nerve__loadi_rlx(&h->desc_time_ns);
    m->seq = seq;
    nerve__fence_acq();
    if (nerve__load_rlx(&h->desc_seq) != seq)
        return NERVE_EAGAIN;
    /* SYNC(read-validate): tail after the same acquire fence. */
    if (nerve__load_rlx(&h->tail) > seq)
        return NERVE_EOVERWRITTEN;
    if (m->len > c->data_size)
        return NERVE_ECORRUPT;
    return 0;
}

static const unsigned char *msg_ptr(const nerve_chan *c, const struct msg *m)
{
    /* In bounds: off % data_size < data_size and len <= data_size, and the
     * ring is mapped over 2 * data_size bytes. */
    return c->ring + m->off % c->data_size;
}

/* R1 for one mode: pick the sequence number to read. Returns 0 (with *seq,
 * *missed), NERVE_EAGAIN (nothing to read; *head_seen is the head the
 * decision was based on, for waiting), NERVE_EOVERWRITTEN, or
 * NERVE_EINVAL. */
static int locate(const nerve_chan *c, uint32_t mode, int64_t arg,
                  unsigned retries, uint64_t *seq, uint64_t *missed,
                  uint64_t *head_seen)
{
    const struct nerve__shm_hdr *h = c->hdr;
    /* SYNC(pub-seq) acquire: message head's slot and payload are visible;
     * pairs with the release store in finish_message(). */
    uint64_t head = nerve__load_acq(&h->head);
    /* Acquire: a tail loaded after head is at least the tail any writer
     * had published when it committed head. */
    uint64_t tail = nerve__load_acq(&h->tail);
    *head_seen = head;
    /* Messages older than head - nslots + 1 cannot be present. A tail below
     * that bound is a foreign write (or a very old load); either way the
     * bound is what is readable. */
    if (head >= c->nslots && tail < head - c->nslots + 1)
        tail = head - c->nslots + 1;
    if (tail == 0)
        tail = 1;
    uint64_t cur = c->cursor;
    *missed = 0;
    switch (mode) {
    case NERVE_GET_NEXT: {
        uint64_t want = cur + 1;
        if (want > head)
            return NERVE_EAGAIN;
        if (want < tail)
            want = tail;
        if (want > head)
            return NERVE_EAGAIN; /* every message is being overwritten */
        if (retries && want < head) {
            /* The previous attempt's message was overwritten while it was
             * read: a writer is lapping this reader, and the oldest message
             * is the next to go. Aim closer to head on every retry (halving
             * the distance) rather than chase the tail. */
            uint64_t ahead = head - ((head - want) >> (retries < 63 ? retries : 63));
            if (ahead > want)
                want = ahead;
        }
        *seq = want;
        *missed = want - cur - 1;
        return 0;
    }
    case NERVE_GET_NEWEST:
        if (head == 0 || head < tail)
            return NERVE_EAGAIN;
        *seq = head;
        *missed = head > cur ? head - cur - 1 : 0;
        return 0;
    case NERVE_GET_SEQ:
        if (arg <= 0)
            return NERVE_EINVAL;
        if ((uint64_t)arg > head)
            return NERVE_EAGAIN;
        if ((uint64_t)arg < tail)
            return NERVE_EOVERWRITTEN;
        *seq = (uint64_t)arg;
        return 0;
    default:
        return NERVE_EINVAL;
    }
}

/* NERVE_GET_AT: the newest message committed at or before `t`, by binary
 * search over the readable range (O(log n) slot reads, each validated).
 * Commit times never decrease with the sequence number: writers take them
 * under the lock from CLOCK_MONOTONIC. */
static int locate_at(const nerve_chan *c, int64_t t, uint64_t *seq)
{
    const struct nerve__shm_hdr *h = c->hdr;
    for (int attempt = 0; attempt < READ_RETRIES; attempt++) {
        /* SYNC(pub-seq) acquire, as in locate(). */
        uint64_t head = nerve__load_acq(&h->head);
        uint64_t lo = nerve__load_acq(&h->tail);
        if (head >= c->nslots && lo < head - c->nslots + 1)
            lo = head - c->nslots + 1;
        if (lo == 0)
            lo = 1;
        if (head == 0 || lo > head)
            return NERVE_EAGAIN;
        uint64_t hi = head;
        struct msg m;
        int r = read_slot(c, lo, &m);
        if (r == NERVE_EOVERWRITTEN)
            continue;
        if (r)
            return r;
        if (m.time_ns > t)
            return lo > 1 ? NERVE_EOVERWRITTEN : NERVE_EAGAIN;
        /* Invariant: time(lo) <= t; the answer is in [lo, hi]. */
        while (lo < hi && r == 0) {
            uint64_t mid = lo + (hi - lo + 1) / 2;
            r = read_slot(c, mid, &m);
            if (r == 0) {
                if (m.time_ns <= t)
                    lo = mid;
                else
                    hi = mid - 1;
            }
        }
        if (r == NERVE_EOVERWRITTEN)
            continue;
        if (r)
            return r;
        *seq = lo;
        return 0;
    }
    return NERVE_ELAPPED;
}

/* The absolute deadline of a timeout: -1 for none (NERVE_FOREVER), 0 for
 * one that has already passed (any relative timeout <= 0, any absolute
 * time <= 0), so a late caller gets one try and NERVE_ETIMEDOUT. */
static int wait_deadline(int64_t timeout_ns, uint32_t flags, int64_t *dl)
{
    int64_t now;
    if (timeout_ns == NERVE_FOREVER) {
        *dl = -1;
    } else if (timeout_ns <= 0) {
        *dl = 0;
    } else if (flags & NERVE_F_ABSTIME) {
        *dl = timeout_ns;
    } else if (timeout_ns > INT64_MAX - (now = nerve_clock_now_ns())) {
        *dl = -1; /* beyond the clock's range: no deadline */
    } else {
        *dl = now + timeout_ns;
    }
    return 0;
}

/* Sleep until one of chans[0..n) has a head other than seen[i], the
 * deadline passes, or a handle is cancelled. V1-V5 of PROTOCOL. Returns 0
 * (something changed, or a slice ended: the caller re-checks),
 * NERVE_ETIMEDOUT or NERVE_ECANCELED. */
static int wait_change(nerve_chan *const *chans, const uint64_t *seen,
                       size_t n, int64_t deadline)
{
    struct nerve__wait_word w[2 * NERVE_WAIT_MAX];
    int polling = 0, slept = 0;
    for (size_t i = 0; i < n; i++) {
        if (chans[i]->bell)
            nerve__add32_sc(&chans[i]->bell->waiters, 1); /* [stat] */
        else
            polling = 1;
    }
    int r = 0;
    for (;;) {
        int64_t now = nerve_clock_now_ns();
        int64_t slice = now + (polling ? NERVE__POLL_SLICE_NS
                                       : NERVE__WAIT_SLICE_NS);
        if (deadline >= 0 && deadline < slice)
            slice = deadline;
        /* V1 SYNC(wait-announce) seq_cst: the lease says "a reader may
         * sleep until `slice`". A writer whose commit this reader does not
         * see below sees the lease in its SYNC(wake-check) and wakes. The
         * lease ends by itself, so a killed reader costs writers nothing
         * after NERVE__WAIT_SLICE_NS + NERVE__LEASE_GRACE_NS. */
        for (size_t i = 0; i < n; i++) {
            if (chans[i]->bell)
                nerve__maxi_sc(&chans[i]->bell->wake_until,
                               slice + NERVE__LEASE_GRACE_NS);
        }
        nerve__fence_sc();
        int changed = 0;
        for (size_t i = 0; i < n; i++) {
            const nerve_chan *c = chans[i];
            if (nerve__load32_acq(&c->cancel)) {
                r = NERVE_ECANCELED;
                goto out;
            }
            /* V2 */
            uint64_t hv = nerve__load_sc(&c->hdr->head);
            if (hv != seen[i])
                changed = 1;
            w[2 * i].word = (const uint32_t *)&c->hdr->head;
            w[2 * i].expect = (uint32_t)hv;
            w[2 * i].shared = 1;
            w[2 * i + 1].word = (const uint32_t *)&c->cancel;
            w[2 * i + 1].expect = 0;
            w[2 * i + 1].shared = 0;
        }
        if (changed)
            goto out;
        if (deadline >= 0 && now >= deadline) {
            r = NERVE_ETIMEDOUT;
            goto out;
        }
        /* V3: sleep until the slice ends, never past the lease. */
        int wr = nerve__futex->waitv(w, (unsigned)(2 * n), slice);
        if (wr == NERVE_ENOSYS) {
            /* No futex_waitv: sleep on the first channel only, in polling
             * slices, so the others and the cancel words are checked at
             * least every NERVE__POLL_SLICE_NS. If no futex wait works at
             * all, sleep the slice: a poll, never a spin. */
            polling = 1;
            int64_t ps = now + NERVE__POLL_SLICE_NS;
            if (ps > slice)
                ps = slice;
            if (nerve__futex->wait1(&w[0], ps) == NERVE_ENOSYS) {
                struct timespec ts = {(time_t)(ps / 1000000000),
                                      (long)(ps % 1000000000)};
                (void)clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts,
                                      NULL);
            } else {
                slept = 1;
            }
        } else {
            slept = 1;
        }
        /* Woken, timed out, interrupted or spurious: re-check above. */
    }
out:
    for (size_t i = 0; i < n; i++) {
        nerve_chan *c = chans[i];
        uint32_t inside = 0;
        if (c->bell)
            inside = nerve__sub32_sc(&c->bell->waiters, 1);
        /* V5 SYNC(wake-pass): a put wakes at most NERVE__WAKE_BATCH
         * sleepers; a reader that slept and sees a new message passes the
         * wake on to as many more, so every sleeper is reached in
         * O(log n) rounds while each put's cost stays bounded. (A reader
         * killed before this step delays the others by one slice at most.)
         * Only when more than one batch of readers was inside the wait,
         * counting this one (`inside`, before its decrement): if a wake
         * of B = NERVE__WAKE_BATCH left R >= 1 sleepers, the first of the
         * B woken readers to get here counts at least B + R > B and passes
         * it on; with at most B inside, the wake reached every sleeper and
         * the woken would only make B more empty wake calls. A count left
         * raised by a killed reader costs a needless wake, never a lost
         * one. Readers that cannot count (no bell) always pass on, and so
         * does every reader of a channel that wakes always (whose
         * bell-less readers are not counted). */
        if (slept && (inside > NERVE__WAKE_BATCH || !c->bell || c->wake_always) &&
            nerve__load_rlx(&c->hdr->head) != seen[i])
            (void)nerve__futex->wake((const uint32_t *)&c->hdr->head, 1,
                                     NERVE__WAKE_BATCH);
    }
    return r;
}

static int read_flags_check(const nerve_chan *c, uint32_t flags)
{
    if (!c)
        return NERVE_EBADF;
    if (flags & ~(NERVE_GET_MASK | NERVE_F_WAIT | NERVE_F_ABSTIME |
                  NERVE_F_REPEAT))
        return NERVE_EINVAL;
    if ((flags & NERVE_GET_MASK) == NERVE_GET_AT && (flags & NERVE_F_WAIT))
        return NERVE_EINVAL;
    return 0;
}

/* The common read path of get and view: find, validate, and (buf != NULL)
 * copy one message, waiting if asked. */
static int read_msg(nerve_chan *c, void *buf, size_t len, int view,
                    int64_t arg, int64_t timeout_ns, struct nerve_get_info *info,
                    struct msg *out, uint32_t flags)
{
    int r = read_flags_check(c, flags);
    if (r)
        return r;
    uint32_t mode = flags & NERVE_GET_MASK;
    int64_t deadline = -1;
    if (flags & NERVE_F_WAIT)
        wait_deadline(timeout_ns, flags, &deadline);
    int retries = 0;
    for (;;) {
        uint64_t seq = 0, missed = 0, head_seen = 0;
        if (mode == NERVE_GET_AT) {
            r = locate_at(c, arg, &seq);
        } else {
            r = locate(c, mode, arg, (unsigned)retries, &seq, &missed,
                       &head_seen);
            if (r == 0 && mode == NERVE_GET_NEWEST && seq <= c->cursor &&
                !(flags & NERVE_F_REPEAT))
                r = NERVE_EAGAIN;
        }
        if (r == NERVE_EAGAIN && (flags & NERVE_F_WAIT)) {
            r = wait_change(&c, &head_seen, 1, deadline);
            if (r)
                return r;
            continue;
        }
        if (r)
            return r;
        struct msg m;
        /* R2: a caught-up NEXT or a NEWEST reader takes the newest
         * message's descriptor from the head line; otherwise, or when a
         * writer is rewriting it, the slot. */
        r = NERVE_EAGAIN;
        if (seq == head_seen)
            r = read_desc(c, seq, &m);
        if (r == NERVE_EAGAIN)
            r = read_slot(c, seq, &m);
        if (r == 0 && !view) {
            if (m.len > len) {
                if (info) {
                    info->seq = seq;
                    info->missed = missed;
                    info->time_ns = m.time_ns;
                    info->len = m.len;
                    info->reserved[0] = info->reserved[1] = 0;
                }
                return NERVE_EMSGSIZE;
            }
            /* R4: one copy, then validate again. */
            nerve__racy_copy(buf, msg_ptr(c, &m), m.len);
            if (!still_valid(c, seq))
                r = NERVE_EOVERWRITTEN;
        }
        if (r == NERVE_EOVERWRITTEN) {
            if (mode == NERVE_GET_SEQ)
                return r;
            if (++retries >= READ_RETRIES)
                return NERVE_ELAPPED;
            continue;
        }
        if (r)
            return r;
        if (mode == NERVE_GET_NEXT || mode == NERVE_GET_NEWEST)
            c->cursor = seq;
        if (info) {
            info->seq = seq;
            info->missed = missed;
            info->time_ns = m.time_ns;
            info->len = m.len;
            info->reserved[0] = info->reserved[1] = 0;
        }
        if (out)
            *out = m;
        return 0;
    }
}

int nerve_chan_get(nerve_chan *c, void *buf, size_t len, int64_t arg,
                   int64_t timeout_ns, struct nerve_get_info *info,
                   uint32_t flags)
{
    if (!c)
        return NERVE_EBADF;
    if (len && !buf)
        return NERVE_EINVAL;
    return read_msg(c, buf, len, 0, arg, timeout_ns, info, NULL, flags);
}

int nerve_chan_view(nerve_chan *c, int64_t arg, int64_t timeout_ns,
                    struct nerve_view *view, uint32_t flags)
{
    if (!c)
        return NERVE_EBADF;
    if (!view)
        return NERVE_EINVAL;
    struct msg m;
    int r = read_msg(c, NULL, 0, 1, arg, timeout_ns, &view->info, &m, flags);
    if (r == 0)
        view->data = msg_ptr(c, &m);
    return r;
}

int nerve_chan_view_check(const nerve_chan *c, const struct nerve_view *view)
{
    if (!c)
        return NERVE_EBADF;
    if (!view || view->info.seq == 0)
        return NERVE_EINVAL;
    return still_valid(c, view->info.seq) ? 0 : NERVE_ESTALE;
}

uint64_t nerve_chan_cursor(const nerve_chan *c)
{
    return c->cursor;
}

void nerve_chan_seek(nerve_chan *c, uint64_t seq)
{
    c->cursor = seq;
}

void nerve_chan_cancel(nerve_chan *c)
{
    /* Release: pairs with the acquire load in wait_change(). */
    nerve__store32_rel(&c->cancel, 1);
    nerve__futex->wake_all((const uint32_t *)&c->cancel, 0);
}

void nerve_chan_cancel_clear(nerve_chan *c)
{
    nerve__store32_rel(&c->cancel, 0);
}

int nerve_chan_wait_any(nerve_chan *const *chans, size_t n, int64_t timeout_ns,
                   uint64_t *ready, uint32_t flags)
{
    if (!chans || n == 0 || n > NERVE_WAIT_MAX || (flags & ~NERVE_F_ABSTIME))
        return NERVE_EINVAL;
    for (size_t i = 0; i < n; i++) {
        if (!chans[i])
            return NERVE_EBADF;
    }
    int64_t deadline;
    wait_deadline(timeout_ns, flags, &deadline);
    uint64_t seen[NERVE_WAIT_MAX];
    for (;;) {
        uint64_t mask = 0;
        int count = 0;
        for (size_t i = 0; i < n; i++) {
            /* SYNC(pub-seq) acquire, as in locate(). */
            seen[i] = nerve__load_acq(&chans[i]->hdr->head);
            if (seen[i] > chans[i]->cursor) {
                mask |= 1ull << i;
                count++;
            }
        }
        if (count || (deadline >= 0 && nerve_clock_now_ns() >= deadline)) {
            if (ready)
                *ready = mask;
            return count ? count : NERVE_ETIMEDOUT;
        }
        int r = wait_change(chans, seen, n, deadline);
        if (r)
            return r;
    }
}

/* ---- facts for tools ---------------------------------------------------- */

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
    st->bytes_total = nerve__load_rlx(&h->bytes_total);
    /* Readers counted while some lease is running; a count that killed
     * readers left raised reads 0 once their leases end. */
    st->waiters = c->bell && nerve__loadi_sc(&c->bell->wake_until) > nerve_clock_now_ns()
                      ? nerve__load32_rlx(&c->bell->waiters)
                      : 0;
    struct stat fs;
    if (fstat(c->fd, &fs) == 0) {
        st->mode = fs.st_mode & 07777;
        st->uid = fs.st_uid;
        st->gid = fs.st_gid;
    }
    for (int attempt = 0; attempt < READ_RETRIES; attempt++) {
        /* SYNC(pub-seq) acquire, as in locate(). */
        uint64_t head = nerve__load_acq(&h->head);
        uint64_t tail = nerve__load_acq(&h->tail);
        if (head >= c->nslots && tail < head - c->nslots + 1)
            tail = head - c->nslots + 1;
        if (tail == 0 || tail > head + 1) {
            /* Writers raise tail to at most head + 1; more is possible only
             * if puts happened between the loads. */
            if (nerve__load_acq(&h->head) != head)
                continue;
            return NERVE_ECORRUPT;
        }
        st->head_seq = head;
        st->tail_seq = tail;
        st->newest_time_ns = 0;
        if (head == 0 || tail > head)
            return 0;
        struct msg m;
        int r = read_slot(c, head, &m);
        if (r == 0)
            st->newest_time_ns = m.time_ns;
        if (r != NERVE_EOVERWRITTEN)
            return r;
    }
    return 0;
}

int nerve_chan_stat_name(const char *name, struct nerve_stats *st)
{
    nerve_chan *c;
    int r = nerve_chan_open(name, NERVE_O_READ, &c);
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
        r = say(msg, len, NERVE_ECORRUPT,
                "descriptor names message %" PRIu64 " but head is %" PRIu64
                " (it must name 0, head or head + 1)",
                ds, head);
    } else if (ds == head && head >= tail && head > 0) {
        struct msg d, sl;
        r = read_desc(c, head, &d);
        if (r == NERVE_EAGAIN)
            return NERVE_EOVERWRITTEN;
        if (r == NERVE_ECORRUPT)
            r = say(msg, len, r,
                    "descriptor of message %" PRIu64 " has len %" PRIu64
                    ", more than the ring's %" PRIu64,
                    head, d.len, c->data_size);
        if (r == 0)
            r = read_slot(c, head, &sl);
        if (r == 0 && (d.off != sl.off || d.len != sl.len ||
                       d.time_ns != sl.time_ns))
            r = say(msg, len, NERVE_ECORRUPT,
                    "descriptor of message %" PRIu64 " (off %" PRIu64
                    ", len %" PRIu64 ", time %" PRId64
                    ") differs from its slot (off %" PRIu64 ", len %" PRIu64
                    ", time %" PRId64 ")",
                    head, d.off, d.len, d.time_ns, sl.off, sl.len,
                    sl.time_ns);
    }
    /* A verdict stands only if no writer moved meanwhile. */
    if (r && nerve__load_acq(&h->head) != head)
        return NERVE_EOVERWRITTEN;
    return r;
}

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
        return say(msg, len, NERVE_ECORRUPT, "tail is 0 (must be >= 1)");
    if (tail > head + 1) {
        /* Writers raise tail to at most head + 1 before committing; more
         * is only possible if puts happened between the two loads. */
        if (nerve__load_acq(&h->head) != head)
            return NERVE_EOVERWRITTEN;
        return say(msg, len, NERVE_ECORRUPT,
                   "tail %" PRIu64 " is beyond head %" PRIu64 " + 1", tail,
                   head);
    }
    if (head - tail + 1 > c->nslots) {
        if (nerve__load_acq(&h->tail) != tail)
            return NERVE_EOVERWRITTEN;
        return say(msg, len, NERVE_ECORRUPT,
                   "%" PRIu64 " messages readable but only %" PRIu64 " slots",
                   head - tail + 1, c->nslots);
    }
    struct msg prev = {0, 0, 0, 0};
    for (uint64_t s = tail; s <= head; s++) {
        struct msg m;
        int r = read_slot(c, s, &m);
        if (r == NERVE_EOVERWRITTEN)
            return r;
        if (r)
            return say(msg, len, r,
                       "slot %" PRIu64 " holds seq %" PRIu64
                       " / len %" PRIu64 ", expected seq %" PRIu64
                       " with len <= %" PRIu64,
                       (s - 1) % c->nslots,
                       nerve__load_rlx(&slot_of(c, s)->seq),
                       nerve__load_rlx(&slot_of(c, s)->len), s, c->data_size);
        if (s > tail && m.off < prev.off + prev.len)
            return say(msg, len, NERVE_ECORRUPT,
                       "message %" PRIu64 " at %" PRIu64
                       " overlaps message %" PRIu64,
                       s, m.off, prev.seq);
        if (s > tail && m.time_ns < prev.time_ns)
            return say(msg, len, NERVE_ECORRUPT,
                       "message %" PRIu64 " is older than message %" PRIu64, s,
                       prev.seq);
        if (m.off % NERVE__MSG_ALIGN)
            return say(msg, len, NERVE_ECORRUPT,
                       "message %" PRIu64 " is not aligned", s);
        prev = m;
    }
    if (head >= tail) {
        struct msg first;
        if (read_slot(c, tail, &first) != 0 || !still_valid(c, tail))
            return NERVE_EOVERWRITTEN;
        if (nerve__load_acq(&h->head) != head)
            return NERVE_EOVERWRITTEN;
        if (prev.off + prev.len - first.off > c->data_size)
            return say(msg, len, NERVE_ECORRUPT,
                       "readable messages span %" PRIu64
                       " bytes, more than the ring's %" PRIu64,
                       prev.off + prev.len - first.off, c->data_size);
        if (wpos < prev.off + prev.len)
            return say(msg, len, NERVE_ECORRUPT,
                       "write position %" PRIu64
                       " is behind the newest message's end %" PRIu64,
                       wpos, prev.off + prev.len);
    }
    return check_desc(c, head, tail, msg, len);
}

/* The verdict on a consistent channel: "ok", or "ok" with why its bell is
 * not used, which only makes waiting readers poll (see bell_map()). */
/* The verdict of a consistent channel: the writer lock's state `lock`, and
 * why the bell is not used if it is not. */
static void check_bell(const nerve_chan *c, const char *lock, char *msg,
                       size_t len)
{
    char why[200] = "";
    struct stat st;
    /* Verified read-only: the checker need not be a writer. */
    if (fstat(c->fd, &st) == 0) {
        struct nerve__shm_bell *b =
            bell_map(c->name, &st, 0, why, sizeof why);
        if (b)
            munmap(b, NERVE__BELL_SIZE);
    }
    if (why[0])
        say(msg, len, 0,
            "ok; writer lock: %s; bell not used (%s): waiting readers poll",
            lock, why);
    else
        say(msg, len, 0, "ok; writer lock: %s", lock);
}

int nerve_chan_check(const char *name, char *msg, size_t len)
{
    nerve_chan *c;
    if (msg && len)
        msg[0] = 0;
    int r = chan_open(name, NERVE_O_READ, &c, msg, len);
    if (r) {
        if (!msg || !len || !msg[0])
            say(msg, len, r, "%s", nerve_strerror(r));
        return r;
    }
    for (int attempt = 0; attempt < 1000; attempt++) {
        r = check_pass(c, msg, len);
        if (r != NERVE_EOVERWRITTEN)
            break;
    }
    if (r == NERVE_EOVERWRITTEN) {
        r = say(msg, len, NERVE_ELAPPED,
                "writers changed the ring during every check attempt");
    } else if (r == 0) {
        char st[160];
        (void)nerve__mutex_state(&c->hdr->lock.l,
                                 nerve__load_rlx(&c->hdr->lock.l.pidns), st,
                                 sizeof st);
        check_bell(c, st, msg, len);
    }
    (void)nerve_chan_close(c);
    return r;
}

int nerve_chan_repair(const char *name, uint32_t flags, char *msg, size_t len)
{
    if (flags & ~NERVE_REPAIR_FORCE)
        return say(msg, len, NERVE_EINVAL, "unknown flags");
    nerve_chan *c;
    int r = nerve_chan_open(name, NERVE_O_WRITE, &c);
    if (r)
        return say(msg, len, r, "%s", nerve_strerror(r));
    char st[160];
    (void)nerve__mutex_state(&c->hdr->lock.l,
                             nerve__load_rlx(&c->hdr->lock.l.pidns), st,
                             sizeof st);
    r = nerve__mutex_repair(&c->hdr->lock.l, (flags & NERVE_REPAIR_FORCE) != 0);
    if (r == 1)
        say(msg, len, 1, "writer lock was %s; reset (the next writer "
                         "recovers it)", st);
    else if (r == 0)
        say(msg, len, 0, "writer lock is %s; nothing to reset", st);
    else if (r == NERVE_EBUSY)
        say(msg, len, r, "writer lock is %s; not reset (use --force only "
                         "if no writer is inside a put)", st);
    else
        say(msg, len, r, "writer lock is %s: %s", st, nerve_strerror(r));
    (void)nerve_chan_close(c);
    return r;
}

int nerve_chan_list(int (*fn)(const char *name, void *arg), void *arg)
{
    if (!fn)
        return NERVE_EINVAL;
    DIR *d = opendir(SHM_DIR);
    if (!d)
        return errno_to_nerve(errno);
    int r = 0;
    struct dirent *e;
    size_t plen = strlen(CHAN_PREFIX);
    while (r == 0 && (e = readdir(d)) != NULL) {
        if (strncmp(e->d_name, CHAN_PREFIX, plen) != 0)
            continue;
        const char *name = e->d_name + plen;
        if (nerve_chan_name_check(name) != 0)
            continue;
        r = fn(name, arg);
    }
    closedir(d);
    return r;
}
