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
 *         until S (absolute).
 *     V4  After the sleep, look without a lease: cancel word, then head
 *         (acquire). If the wanted message is there, leave; otherwise
 *         back to V1. (A woken reader thus returns without re-announcing;
 *         only a look that may end in a sleep needs V1 before it.)
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
 *   is resolved in the caller's PID namespace, so the writers that have a
 *   channel open at once share one (lock.pidns; a writer of another gets
 *   NERVE_EXDEV at open, and takes the channel over once none is open:
 *   WRITERS' NAMESPACE in src/platform/linux/claim.c, model/claim.pml).
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
 *
 * FILES
 *   This file is the protocol only: the steps above (put, reserve/commit/
 *   abort, get/view/view_check, wait/wake, the descriptor). Creating,
 *   opening (header validation), closing and repairing a channel are in
 *   chan_open.c; statistics, check and list in chan_info.c; the clock in
 *   clock.c; file operations behind platform.h.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "atomics.h"
#include "chan_internal.h"
#include "crashpoint.h"
#include "nerve/nerve.h"
#include "platform.h"
#include "shm.h"
#include "timeconv.h"

/* Untimed waits re-check the ring this often (see CRASH RECOVERY). */
#define NERVE__WAIT_SLICE_NS 100000000ll
/* Without a bell (or without futex_waitv for nerve_chan_wait_any) waits poll. */
#define NERVE__POLL_SLICE_NS 1000000ll
/* A put wakes at most this many sleepers; each woken reader passes the
 * wake on to as many more (SYNC(wake-pass)), so a put's wake-up cost is
 * bounded however many threads wait. */
#define NERVE__WAKE_BATCH 8
/* A waiting reader's lease (bell.wake_until) outlives its slice by this
 * much. */
#define NERVE__LEASE_GRACE_NS 1000000ll

static uint64_t round_up(uint64_t v, uint64_t a)
{
    return NERVE__ROUND_UP(v, a);
}

/* The handle's reservation was made by a thread of this process that no
 * longer exists (it ended holding the lock, which the kernel then released
 * through its robust list), or by the parent of this fork child (which
 * still holds it in the parent). Either way this process holds nothing. */
int nerve__reservation_orphaned(const nerve_chan *c)
{
    return syscall(SYS_tgkill, getpid(), (pid_t)c->res_tid, 0) != 0 &&
           errno == ESRCH;
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
static uint64_t wpos_repaired(const nerve_chan *c, uint64_t head, uint64_t tail)
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
    /* GROWTH: no commit after G5. A grower that died between G4 and G5
     * held this lock, so its death is reported here (r == 1): finish its
     * G5 when the name now names another file. */
    if (!nerve__load_rlx(&h->superseded) && r == 1 &&
        nerve_chan_renamed(c) == 1)
        nerve__supersede(c); /* G5, for the dead grower */
    if (nerve__load_rlx(&h->superseded)) {
        (void)nerve__mutex_unlock(&h->lock.l);
        return NERVE_ESUPERSEDED;
    }
    return 0;
}

/* ---- growth (GROWTH in chan_open.c) ------------------------------------ */

int nerve__lock_for_growth(nerve_chan *c, int64_t timeout_ns)
{
    uint32_t recovered;
    return lock_writer(c, timeout_ns, 0, &recovered);
}

void nerve__unlock_writer(nerve_chan *c)
{
    (void)nerve__mutex_unlock(&c->hdr->lock.l);
}

/* G3, holding c's lock: every message still readable in c, with its
 * sequence number and commit time, into the successor (header nh, index
 * nsl of nslots entries, data ring nring), which nobody else can see yet.
 * The successor's ring is at least as large as c's, and the messages are
 * laid out from position 0 as closely as alignment allows, so they take
 * no more room than they took in c: all fit, none wraps. */
void nerve__grow_copy(const nerve_chan *c, struct nerve__shm_hdr *nh,
                      struct nerve__shm_slot *nsl, uint64_t nslots,
                      unsigned char *nring)
{
    const struct nerve__shm_hdr *h = c->hdr;
    uint64_t head = nerve__load_rlx(&h->head);
    uint64_t from =
        nerve__readable_from(head, nerve__load_rlx(&h->tail), c->nslots);
    uint64_t pos = 0;
    for (uint64_t s = from; s <= head; s++) {
        const struct nerve__shm_slot *sl = slot_of(c, s);
        uint64_t off = nerve__load_rlx(&sl->off);
        uint64_t len = nerve__load_rlx(&sl->len);
        int64_t t = nerve__loadi_rlx(&sl->time_ns);
        memcpy(nring + pos, c->ring + off % c->data_size, len);
        struct nerve__shm_slot *d = &nsl[(s - 1) % nslots];
        nerve__store_rlx(&d->seq, s);
        nerve__store_rlx(&d->off, pos);
        nerve__store_rlx(&d->len, len);
        nerve__storei_rlx(&d->time_ns, t);
        nerve__store_rlx(&nh->desc_off, pos);
        nerve__store_rlx(&nh->desc_len, len);
        nerve__storei_rlx(&nh->desc_time_ns, t);
        nerve__store_rlx(&nh->desc_seq, s);
        pos = round_up(pos + len, NERVE__MSG_ALIGN);
    }
    /* The channel's identity for tools (nerve_stats.created_ns) stays: a
     * successor is the same channel, grown. */
    nh->created_ns = h->created_ns;
    /* The sequence continues: the successor's next message is head + 1. */
    nerve__store_rlx(&nh->head, head);
    nerve__store_rlx(&nh->tail, from <= head ? from : head + 1);
    nerve__store_rlx(&nh->wpos, pos);
    nerve__store_rlx(&nh->bytes_total, nerve__load_rlx(&h->bytes_total));
}

/* G5, holding c's lock: mark c superseded (release: SYNC(supersede), after
 * every commit to c, so a reader that sees the mark sees c's final head),
 * then wake every reader waiting on c: its head's word does not change,
 * so a reader about to sleep may miss this wake and sleep its slice (V1:
 * at most NERVE__WAIT_SLICE_NS) before V2 sees the mark. */
void nerve__supersede(nerve_chan *c)
{
    nerve__store_rel(&c->hdr->superseded, 1); /* G5 */
    nerve__futex->wake_all((const uint32_t *)&c->hdr->head, 1);
}

/* W1-W2: choose the position of message head + 1 of `len` bytes and
 * invalidate what it destroys. Returns the position. */
static uint64_t begin_message(nerve_chan *c, uint64_t len, uint64_t *seq)
{
    struct nerve__shm_hdr *h = c->hdr;
    uint64_t head = nerve__load_rlx(&h->head);
    uint64_t tail = nerve__load_rlx(&h->tail);
    uint64_t s = head + 1; /* W1 */
    /* wpos is only ever used modulo data_size, so even a foreign value
     * cannot take a write out of bounds. */
    uint64_t p = round_up(nerve__load_rlx(&h->wpos), /* W1 */
                          NERVE__MSG_ALIGN);
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
        nerve__store_rlx(&h->tail, t); /* W2 */
    /* SYNC(tail-inval) release: the tail as raised by this or an earlier
     * writer is visible to every reader that observes a byte or slot field
     * stored after this fence; pairs with the acquire fence in
     * nerve__still_valid(). Issued even when this put raised nothing: the bytes it
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
    nerve__store_rlx(&sl->seq, seq);      /* W4 */
    nerve__store_rlx(&sl->off, pos);      /* W4 */
    nerve__store_rlx(&sl->len, len);      /* W4 */
    nerve__storei_rlx(&sl->time_ns, now); /* W4 */
    NERVE_CRASHPOINT("put.after-slot");
    /* D1-D3 SYNC(desc-seq): the same description on the head line, for
     * caught-up readers (read_desc()). D1: desc_seq = 0, then a release
     * fence, so a reader that sees any D2 store sees D1 (or later) when
     * it reloads desc_seq after its acquire fence. (Free on x86.) */
    nerve__store_rlx(&h->desc_seq, 0); /* D1 */
    nerve__fence_rel();
    NERVE_CRASHPOINT("put.after-desc-clear");
    nerve__store_rlx(&h->desc_off, pos);      /* D2 */
    nerve__store_rlx(&h->desc_len, len);      /* D2 */
    nerve__storei_rlx(&h->desc_time_ns, now); /* D2 */
    NERVE_CRASHPOINT("put.after-desc-fields");
    /* D3: release, so a reader whose acquire load sees s sees D2. */
    nerve__store_rel(&h->desc_seq, seq); /* D3 */
    NERVE_CRASHPOINT("put.after-desc-seq");
    nerve__store_rlx(&h->wpos, pos + len); /* W5 */
    NERVE_CRASHPOINT("put.after-wpos");
    /* SYNC(pub-seq) release: the commit. Payload (W3) and slot (W4) become
     * visible to readers that load head with acquire in locate(). The
     * store is seq_cst, which also makes it the store half of
     * SYNC(wake-check) (one locked instruction on x86, xchg, in place of a
     * release store here plus a fence after the unlock). */
    nerve__store_sc(&h->head, seq); /* W6 */
    NERVE_CRASHPOINT("put.after-commit");
    /* [stat], written only under the lock: a plain add, not a locked RMW. */
    nerve__store_rlx(&h->bytes_total, nerve__load_rlx(&h->bytes_total) + len);
    /* W7: unlock before waking, so no wake-up work is done while other
     * writers wait for the lock. */
    (void)nerve__mutex_unlock(&h->lock.l); /* W7 */
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
        nerve__loadi_sc(&c->bell->wake_until) > now)            /* W8 */
        (void)nerve__futex->wake((const uint32_t *)&h->head, 1, /* W8 */
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
    if (c->reserved && c->res_tid != nerve__tid() &&
        nerve__reservation_orphaned(c))
        c->reserved = 0;
    if (c->reserved)
        return c->res_tid == nerve__tid() ? NERVE_EBUSY : NERVE_EPERM;
    if ((uint64_t)len > c->data_size)
        return nerve__detail(NERVE_EMSGSIZE,
                             "a message of %zu bytes does not fit: the "
                             "channel's data ring is %" PRIu64
                             " bytes (the largest message)",
                             len, c->data_size);
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
        nerve__racy_write(dst, buf, len / 2); /* W3 */
        NERVE_CRASHPOINT("put.mid-payload");
        nerve__racy_write(dst + len / 2, (const unsigned char *)buf + len / 2,
                          len - len / 2); /* W3 */
    } else if (len) {
        nerve__racy_write(dst, buf, len); /* W3 */
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
    finish_message(c, c->res_seq, c->res_pos, len, info, c->res_recovered, at);
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
int nerve__still_valid(const nerve_chan *c, uint64_t seq)
{
    nerve__fence_acq();
    return nerve__load_rlx(&c->hdr->tail) <= seq;
}

/* R2-R3: read slot `seq` and validate it. Returns 0 (m filled, consistent),
 * NERVE_EOVERWRITTEN (a writer destroyed it: the caller retries or
 * reports), or NERVE_ECORRUPT (validated yet inconsistent). */
int nerve__read_slot(const nerve_chan *c, uint64_t seq, struct nerve__msg *m)
{
    const struct nerve__shm_slot *sl = slot_of(c, seq);
    /* Relaxed: validated by nerve__still_valid() below. */
    uint64_t sseq = nerve__load_rlx(&sl->seq);
    m->off = nerve__load_rlx(&sl->off); /* R2 */
    m->len = nerve__load_rlx(&sl->len);
    m->time_ns = nerve__loadi_rlx(&sl->time_ns);
    m->seq = seq;
    if (!nerve__still_valid(c, seq)) /* R3 */
        return NERVE_EOVERWRITTEN;
    if (sseq != seq || m->len > c->data_size)
        return NERVE_ECORRUPT;
    return 0;
}

/* R2 from the descriptor on the head line, for a reader that wants the
 * newest message `seq` (== head as locate() loaded it): SYNC(desc-seq), the
 * seqlock read. v1 = desc_seq (acquire), the fields, acquire fence (which
 * is also SYNC(read-validate)), v2 = desc_seq, then tail. Returns 0 (m
 * filled and validated, as nerve__read_slot()), NERVE_EOVERWRITTEN (tail moved
 * past seq), or NERVE_EAGAIN: the descriptor is not seq's (a writer is
 * between D1 and D3, or has moved on): the caller reads the slot. */
static inline __attribute__((always_inline)) int
read_desc(const nerve_chan *c, uint64_t seq, struct nerve__msg *m)
{
    const struct nerve__shm_hdr *h = c->hdr;
    uint64_t v1 = nerve__load_acq(&h->desc_seq);
    if (v1 != seq)
        return NERVE_EAGAIN;
    m->off = nerve__load_rlx(&h->desc_off); /* R2 */
    m->len = nerve__load_rlx(&h->desc_len);
    m->time_ns = nerve__loadi_rlx(&h->desc_time_ns);
    m->seq = seq;
    nerve__fence_acq();
    if (nerve__load_rlx(&h->desc_seq) != seq)
        return NERVE_EAGAIN;
    /* SYNC(read-validate): tail after the same acquire fence. */
    if (nerve__load_rlx(&h->tail) > seq) /* R3 */
        return NERVE_EOVERWRITTEN;
    if (m->len > c->data_size)
        return NERVE_ECORRUPT;
    return 0;
}

/* read_desc() for nerve_chan_check (chan_info.c); the read path inlines
 * read_desc() itself. */
int nerve__read_desc(const nerve_chan *c, uint64_t seq, struct nerve__msg *m)
{
    return read_desc(c, seq, m);
}

static const unsigned char *msg_ptr(const nerve_chan *c,
                                    const struct nerve__msg *m)
{
    /* In bounds: off % data_size < data_size and len <= data_size, and the
     * ring is mapped over 2 * data_size bytes. */
    return c->ring + m->off % c->data_size;
}

/* F1 SYNC(supersede) acquire: whether a writer superseded c (GROWTH).
 * After it, a second R1 sees c's final head: a reader that still finds
 * nothing new has read all of c and follows the name. */
static int superseded_now(const nerve_chan *c)
{
    return nerve__load_acq(&c->hdr->superseded) != 0; /* F1 */
}

/* One read's choice (R1): the message, how many the reader missed before
 * it, and the head the choice was made against (0 for NERVE_GET_AT). */
struct pick {
    uint64_t seq, missed, head_seen;
};

/* R1 for one mode: pick the sequence number to read. Returns 0 (with
 * p->seq, p->missed), NERVE_EAGAIN (nothing to read; p->head_seen is the
 * head the decision was based on, for waiting), NERVE_EOVERWRITTEN, or
 * NERVE_EINVAL. */
static int locate(const nerve_chan *c, uint32_t mode, int64_t arg,
                  unsigned retries, struct pick *p)
{
    const struct nerve__shm_hdr *h = c->hdr;
    /* SYNC(pub-seq) acquire: message head's slot and payload are visible;
     * pairs with the release store in finish_message(). */
    uint64_t head = nerve__load_acq(&h->head); /* R1 */
    /* Acquire: a tail loaded after head is at least the tail any writer
     * had published when it committed head. */
    uint64_t tail =
        nerve__readable_from(head, nerve__load_acq(&h->tail), /* R1 */
                             c->nslots);
    p->head_seen = head;
    uint64_t cur = c->cursor;
    p->missed = 0;
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
            uint64_t ahead =
                head - ((head - want) >> (retries < 63 ? retries : 63));
            if (ahead > want)
                want = ahead;
        }
        p->seq = want;
        p->missed = want - cur - 1;
        return 0;
    }
    case NERVE_GET_NEWEST: {
        if (head == 0 || head < tail)
            return NERVE_EAGAIN;
        p->seq = head;
        /* Skipped messages are missed only after the reader's start: the
         * history present when the handle opened is not loss (chan.h,
         * "missed"). */
        uint64_t from = cur > c->origin ? cur : c->origin;
        p->missed = head > from ? head - from - 1 : 0;
        return 0;
    }
    case NERVE_GET_SEQ:
        if (arg <= 0)
            return NERVE_EINVAL;
        if ((uint64_t)arg > head)
            return NERVE_EAGAIN;
        if ((uint64_t)arg < tail)
            return NERVE_EOVERWRITTEN;
        p->seq = (uint64_t)arg;
        return 0;
    default: return NERVE_EINVAL;
    }
}

/* NERVE_GET_AT: the newest message committed at or before `t`, by binary
 * search over the readable range (O(log n) slot reads, each validated).
 * Commit times never decrease with the sequence number: writers take them
 * under the lock from CLOCK_MONOTONIC. */
static int locate_at(const nerve_chan *c, int64_t t, uint64_t *seq)
{
    const struct nerve__shm_hdr *h = c->hdr;
    for (int attempt = 0; attempt < NERVE__READ_RETRIES; attempt++) {
        /* SYNC(pub-seq) acquire, as in locate(). */
        uint64_t head = nerve__load_acq(&h->head);
        uint64_t lo =
            nerve__readable_from(head, nerve__load_acq(&h->tail), c->nslots);
        if (head == 0 || lo > head)
            return NERVE_EAGAIN;
        uint64_t hi = head;
        struct nerve__msg m;
        int r = nerve__read_slot(c, lo, &m);
        if (r == NERVE_EOVERWRITTEN)
            continue;
        if (r)
            return r;
        if (m.time_ns > t)
            return lo > 1 ? NERVE_EOVERWRITTEN : NERVE_EAGAIN;
        /* Invariant: time(lo) <= t; the answer is in [lo, hi]. */
        while (lo < hi && r == 0) {
            uint64_t mid = lo + (hi - lo + 1) / 2;
            r = nerve__read_slot(c, mid, &m);
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

/* Entering a wait: count this reader in each channel's bell.waiters
 * ([stat]; V5 reads it). Returns whether some channel has no bell, so that
 * its reader cannot announce itself and polls. */
static int wait_enter(nerve_chan *const *chans, size_t n)
{
    int polling = 0;
    for (size_t i = 0; i < n; i++) {
        if (chans[i]->bell)
            nerve__add32_sc(&chans[i]->bell->waiters, 1); /* [stat] */
        else
            polling = 1;
    }
    return polling;
}

/* V1 SYNC(wait-announce) seq_cst: the lease says "a reader may sleep until
 * `slice`". A writer whose commit this reader does not see in V2 sees the
 * lease in its SYNC(wake-check) and wakes. The lease ends by itself, so a
 * killed reader costs writers nothing after NERVE__WAIT_SLICE_NS +
 * NERVE__LEASE_GRACE_NS. The seq_cst fence orders the lease before V2's
 * loads (Dekker's pattern with W6 and W8). */
static void wait_announce(nerve_chan *const *chans, size_t n, int64_t slice)
{
    for (size_t i = 0; i < n; i++) {
        if (chans[i]->bell)
            nerve__maxi_sc(&chans[i]->bell->wake_until, /* V1 */
                           slice + NERVE__LEASE_GRACE_NS);
    }
    nerve__fence_sc();
}

/* V2: after the lease, load each channel's head (seq_cst) and fill the
 * words V3 sleeps on: head's low word as loaded, so that a commit after
 * this load makes the sleep return at once, and the handle's cancel word.
 * Returns 1 if some head differs from seen[i], 0 if none does, or
 * NERVE_ECANCELED (a handle was cancelled; its release store pairs with
 * the acquire load here). */
static int wait_check(nerve_chan *const *chans, const uint64_t *seen, size_t n,
                      struct nerve__wait_word *w)
{
    int changed = 0;
    for (size_t i = 0; i < n; i++) {
        const nerve_chan *c = chans[i];
        if (nerve__load32_acq(&c->cancel))
            return NERVE_ECANCELED;
        uint64_t hv = nerve__load_sc(&c->hdr->head); /* V2 */
        if (hv != seen[i] || superseded_now(c))
            changed = 1;
        w[2 * i].word = (const uint32_t *)&c->hdr->head;
        w[2 * i].expect = (uint32_t)hv;
        w[2 * i].shared = 1;
        w[2 * i + 1].word = (const uint32_t *)&c->cancel;
        w[2 * i + 1].expect = 0;
        w[2 * i + 1].shared = 0;
    }
    return changed;
}

/* V4: whether a woken reader has something to read: V2's answer without
 * filling the words (1 changed, 0 nothing, NERVE_ECANCELED). */
static int wait_look(nerve_chan *const *chans, const uint64_t *seen, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        const nerve_chan *c = chans[i];
        if (nerve__load32_acq(&c->cancel))
            return NERVE_ECANCELED;
        if (nerve__load_acq(&c->hdr->head) != seen[i] || superseded_now(c))
            return 1;
    }
    return 0;
}

/* V3: sleep on the 2n words of V2 until `slice` ends, never past the
 * lease. Without futex_waitv, sleep on the first channel only, in polling
 * slices (*polling set), so that the others and the cancel words are
 * checked at least every NERVE__POLL_SLICE_NS; if no futex wait works at
 * all, sleep the slice: a poll, never a spin. Returns 1 if it slept on a
 * futex (woken, timed out, interrupted or spurious alike: the caller
 * re-checks), 0 if it only slept on the clock. */
static int wait_sleep(const struct nerve__wait_word *w, size_t n, int64_t now,
                      int64_t slice, int *polling)
{
    if (nerve__futex->waitv(w, (unsigned)(2 * n), slice) != NERVE_ENOSYS)
        return 1; /* V3 */
    *polling = 1;
    int64_t ps = now + NERVE__POLL_SLICE_NS;
    if (ps > slice)
        ps = slice;
    if (nerve__futex->wait1(&w[0], ps) != NERVE_ENOSYS)
        return 1;
    struct timespec ts = {(time_t)(ps / 1000000000), (long)(ps % 1000000000)};
    (void)clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
    return 0;
}

/* V5 SYNC(wake-pass), leaving a wait (bell.waiters -= 1): a put wakes at
 * most NERVE__WAKE_BATCH sleepers; a reader that slept and sees a new
 * message passes the wake on to as many more, so every sleeper is reached
 * in O(log n) rounds while each put's cost stays bounded. (A reader killed
 * before this step delays the others by one slice at most.) Only when more
 * than one batch of readers was inside the wait, counting this one
 * (`inside`, before its decrement): if a wake of B = NERVE__WAKE_BATCH left
 * R >= 1 sleepers, the first of the B woken readers to get here counts at
 * least B + R > B and passes it on; with at most B inside, the wake reached
 * every sleeper and the woken would only make B more empty wake calls. A
 * count left raised by a killed reader costs a needless wake, never a lost
 * one. Readers that cannot count (no bell) always pass on, and so does
 * every reader of a channel that wakes always (whose bell-less readers are
 * not counted). */
static void wait_leave(nerve_chan *const *chans, const uint64_t *seen, size_t n,
                       int slept)
{
    for (size_t i = 0; i < n; i++) {
        nerve_chan *c = chans[i];
        uint32_t inside = 0;
        if (c->bell)
            inside = nerve__sub32_sc(&c->bell->waiters, 1);
        if (slept &&
            (inside > NERVE__WAKE_BATCH || !c->bell || c->wake_always) &&
            nerve__load_rlx(&c->hdr->head) != seen[i])
            (void)nerve__futex->wake((const uint32_t *)&c->hdr->head,
                                     1, /* V5 */
                                     NERVE__WAKE_BATCH);
    }
}

/* Sleep until one of chans[0..n) has a head other than seen[i], the
 * deadline passes, or a handle is cancelled: V1-V5 of PROTOCOL, one slice
 * at a time. Returns 0 (something changed, or a slice ended: the caller
 * re-checks), NERVE_ETIMEDOUT or NERVE_ECANCELED. */
static int wait_change(nerve_chan *const *chans, const uint64_t *seen, size_t n,
                       int64_t deadline)
{
    struct nerve__wait_word w[2 * NERVE_WAIT_MAX];
    int polling = wait_enter(chans, n);
    int slept = 0;
    int r;
    for (;;) {
        int64_t now = nerve_clock_now_ns();
        int64_t slice =
            now + (polling ? NERVE__POLL_SLICE_NS : NERVE__WAIT_SLICE_NS);
        if (deadline >= 0 && deadline < slice)
            slice = deadline;
        wait_announce(chans, n, slice);    /* V1 */
        r = wait_check(chans, seen, n, w); /* V2 */
        if (r != 0) {
            r = r > 0 ? 0 : r;
            break;
        }
        if (deadline >= 0 && now >= deadline) {
            r = NERVE_ETIMEDOUT;
            break;
        }
        slept |= wait_sleep(w, n, now, slice, &polling); /* V3 */
        /* V4: after a sleep, look first; announce and look again (V1-V2)
         * only if nothing changed. Only a look that may end in a sleep
         * needs the lease before it (LOST WAKE-UP); a look that returns
         * needs none, so a woken reader goes straight back to R1. */
        if ((r = wait_look(chans, seen, n)) != 0) { /* V4 */
            r = r > 0 ? 0 : r;
            break;
        }
    }
    wait_leave(chans, seen, n, slept); /* V5 */
    return r;
}

static int read_flags_check(const nerve_chan *c, uint32_t flags)
{
    if (!c)
        return NERVE_EBADF;
    if (flags &
        ~(NERVE_GET_MASK | NERVE_F_WAIT | NERVE_F_ABSTIME | NERVE_F_REPEAT))
        return NERVE_EINVAL;
    if ((flags & NERVE_GET_MASK) == NERVE_GET_AT && (flags & NERVE_F_WAIT))
        return NERVE_EINVAL;
    return 0;
}

/* R1 for the call's flags: the message to read (locate(), or locate_at()
 * for NERVE_GET_AT), where NEWEST's message already returned counts as
 * nothing new unless NERVE_F_REPEAT. Returns locate()'s answers. */
static int read_pick(const nerve_chan *c, uint32_t flags, int64_t arg,
                     unsigned retries, struct pick *p)
{
    uint32_t mode = flags & NERVE_GET_MASK;
    p->seq = p->missed = p->head_seen = 0;
    if (mode == NERVE_GET_AT)
        return locate_at(c, arg, &p->seq);
    int r = locate(c, mode, arg, retries, p);
    if (r == 0 && mode == NERVE_GET_NEWEST && p->seq <= c->cursor &&
        !(flags & NERVE_F_REPEAT))
        r = NERVE_EAGAIN;
    return r;
}

/* R2-R3: message p->seq's descriptor, validated. A caught-up NEXT or a
 * NEWEST reader takes the newest message's from the head line
 * (SYNC(desc-seq)); otherwise, or when a writer is rewriting it, the
 * slot's. Returns 0 (m filled), NERVE_EOVERWRITTEN or NERVE_ECORRUPT. */
static int read_fetch(const nerve_chan *c, const struct pick *p,
                      struct nerve__msg *m)
{
    int r = NERVE_EAGAIN;
    if (p->seq == p->head_seen)
        r = read_desc(c, p->seq, m); /* R2 */
    if (r == NERVE_EAGAIN)
        r = nerve__read_slot(c, p->seq, m); /* R2-R3 */
    return r;
}

static void fill_info(struct nerve_get_info *info, const struct pick *p,
                      const struct nerve__msg *m)
{
    if (!info)
        return;
    info->seq = p->seq;
    info->missed = p->missed;
    info->time_ns = m->time_ns;
    info->len = m->len;
    info->reserved[0] = info->reserved[1] = 0;
}

/* R4: copy the validated message into buf (one memcpy; the double mapping
 * makes it contiguous), then SYNC(read-validate) again: a tail that moved
 * past the message during the copy means the copy may be torn. Returns 0,
 * NERVE_EOVERWRITTEN, or NERVE_EMSGSIZE with info describing the message
 * (nothing consumed). */
static int read_copy(const nerve_chan *c, void *buf, size_t len,
                     const struct pick *p, const struct nerve__msg *m,
                     struct nerve_get_info *info)
{
    if (m->len > len) {
        fill_info(info, p, m);
        return nerve__detail(NERVE_EMSGSIZE,
                             "the buffer of %zu bytes is smaller "
                             "than the message of %" PRIu64
                             " bytes (info.len; nothing consumed)",
                             len, (uint64_t)m->len);
    }
    nerve__racy_copy(buf, msg_ptr(c, m), m->len); /* R4 */
    if (!nerve__still_valid(c, p->seq))           /* R4: R3 again */
        return NERVE_EOVERWRITTEN;
    return 0;
}

/* What get and view ask of read_msg(): the message (flags' GET_ mode and
 * arg), the wait (NERVE_F_WAIT, timeout_ns) and where it goes: get copies
 * into buf[0, len); a view (view = 1) stops after R3 and copies nothing. */
struct read_req {
    void *buf;
    size_t len;
    int64_t arg;
    int64_t timeout_ns;
    uint32_t flags;
    int view;
};

/* The common read path of get and view: R1-R3 and (unless rq->view) R4 for
 * one message, waiting if asked (V1-V5), retrying when a writer destroys
 * the message being read (bounded: NERVE_ELAPPED). The cursor moves only
 * on success. Inlined into both: each caller's request is then constants
 * and registers, never a struct in memory (callgrind: no more instructions
 * per get or view than the nine-parameter call it replaces). */
static inline __attribute__((always_inline)) int
read_msg(nerve_chan *c, const struct read_req *rq, struct nerve_get_info *info,
         struct nerve__msg *out)
{
    uint32_t flags = rq->flags;
    int r = read_flags_check(c, flags);
    if (r)
        return r;
    uint32_t mode = flags & NERVE_GET_MASK;
    int64_t deadline = -1;
    if (flags & NERVE_F_WAIT)
        deadline =
            nerve__deadline_ns(rq->timeout_ns, (flags & NERVE_F_ABSTIME) != 0);
    int retries = 0;
    for (;;) {
        struct pick p;
        r = read_pick(c, flags, rq->arg, (unsigned)retries, &p); /* R1 */
        if (r == NERVE_EAGAIN && superseded_now(c) &&
            (r = read_pick(c, flags, rq->arg, (unsigned)retries, &p)) ==
                NERVE_EAGAIN)
            return NERVE_ESUPERSEDED; /* F1 */
        if (r == NERVE_EAGAIN && (flags & NERVE_F_WAIT)) {
            /* A copy: p's address stays private, so that the compiler
             * keeps the pick in registers on the path that reads. */
            uint64_t seen = p.head_seen;
            r = wait_change(&c, &seen, 1, deadline);
            if (r)
                return r;
            continue;
        }
        if (r)
            return r;
        struct nerve__msg m;
        r = read_fetch(c, &p, &m); /* R2-R3 */
        if (r == 0 && !rq->view)
            r = read_copy(c, rq->buf, rq->len, &p, &m, info); /* R4 */
        if (r == NERVE_EOVERWRITTEN) {
            if (mode == NERVE_GET_SEQ)
                return r;
            if (++retries >= NERVE__READ_RETRIES)
                return NERVE_ELAPPED;
            continue;
        }
        if (r)
            return r;
        if (mode == NERVE_GET_NEXT || mode == NERVE_GET_NEWEST)
            c->cursor = p.seq;
        fill_info(info, &p, &m);
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
    const struct read_req rq = {buf, len, arg, timeout_ns, flags, 0};
    return read_msg(c, &rq, info, NULL);
}

int nerve_chan_view(nerve_chan *c, int64_t arg, int64_t timeout_ns,
                    struct nerve_view *view, uint32_t flags)
{
    if (!c)
        return NERVE_EBADF;
    if (!view)
        return NERVE_EINVAL;
    const struct read_req rq = {NULL, 0, arg, timeout_ns, flags, 1};
    struct nerve__msg m;
    int r = read_msg(c, &rq, &view->info, &m);
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
    return nerve__still_valid(c, view->info.seq) ? 0 : NERVE_ESTALE;
}

uint64_t nerve_chan_cursor(const nerve_chan *c)
{
    return c->cursor;
}

void nerve_chan_seek(nerve_chan *c, uint64_t seq)
{
    c->cursor = seq;
    c->origin = 0; /* the caller placed the reader: count from seq */
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
    int64_t deadline =
        nerve__deadline_ns(timeout_ns, (flags & NERVE_F_ABSTIME) != 0);
    uint64_t seen[NERVE_WAIT_MAX];
    for (;;) {
        uint64_t mask = 0;
        int count = 0;
        for (size_t i = 0; i < n; i++) {
            /* SYNC(pub-seq) acquire, as in locate(). */
            seen[i] = nerve__load_acq(&chans[i]->hdr->head);
            if (seen[i] > chans[i]->cursor || superseded_now(chans[i])) {
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
