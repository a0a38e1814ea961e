/* The writers' namespace: which PID namespace's threads the writer lock's
 * word may name (struct nerve__shm_lock.pidns), kept true by a claim that
 * every writer handle makes at open. The lock itself is in mutex.c.
 *
 * WRITERS' NAMESPACE (nerve__mutex_claim(); model/claim.pml). A TID means
 * a thread only in one PID namespace: the kernel resolves the word's TID
 * in the caller's namespace (FUTEX_LOCK_PI boosts and waits for whatever
 * thread has that number there, or answers ESRCH, which a locker takes for
 * a dead owner), writes a new owner's TID as the unlocker sees it
 * (FUTEX_UNLOCK_PI), and the robust list clears a TID as the dying thread
 * sees it. So the lockers of one word must share a PID namespace, and
 * containers that share /dev/shm but not their PID namespace (Docker's
 * default) would corrupt each other's lock. lock.pidns records the
 * namespace whose threads the word may name; the claim keeps it true and
 * hands the channel to another namespace as soon as no writer of the
 * recorded one is left, with no manual step:
 *   - every writer handle holds a shared open-file-description (OFD)
 *     byte-range lock on byte NERVE__CLAIM_BYTE of the channel file from
 *     its open to its close. The kernel drops it when the last descriptor
 *     of that open goes, so also when the process dies by any means, in
 *     any namespace: it is the liveness test that /proc cannot give across
 *     namespaces (a container does not see the host's PIDs, and a
 *     namespace's inode number is reused once it is gone);
 *   - openers pass N2-N5 one at a time, holding an exclusive OFD lock on
 *     byte NERVE__CLAIM_GATE, so that every other holder of the claim
 *     byte is an admitted writer handle (never an opener midway);
 *   N1  take the gate (F_OFD_SETLK F_WRLCK, not waiting). EAGAIN: another
 *       opener is in N2-N5, a few system calls: retry for up to
 *       NERVE__CLAIM_WAIT_NS (then NERVE_EXDEV: that opener is stopped);
 *   N2  take the claim byte shared (cannot conflict: only a gate holder
 *       takes it exclusively) and read pidns (acquire; SYNC(ns-claim));
 *       0: set it to ours by CAS;
 *   N3  convert the shared lock to exclusive, not waiting. EAGAIN: another
 *       writer handle is open, an admitted one (the gate keeps openers
 *       out): if pidns is ours, we are admitted beside it (go to N5,
 *       keeping the shared lock); if it is another namespace's, drop both
 *       locks and return NERVE_EXDEV. Success: no other writer handle is
 *       open anywhere;
 *   N4  so no thread can hold or wait for the word, and whatever TID it
 *       names is stale (its owner died with its robust entry lost, or
 *       lived in another namespace). Reset a non-zero word to
 *       FUTEX_OWNER_DIED (free; the next locker recovers and validates the
 *       ring). This is done even when pidns reads as ours: a namespace's
 *       inode number is reused once it is gone, so a restarted container
 *       may look like the dead one while the word still names the dead
 *       one's PID 1 -- in the new namespace, likely its own writer. If
 *       pidns is another namespace's, store ours with release:
 *       SYNC(ns-claim), pairs with N2's acquire, so a writer that sees the
 *       new owner also sees the reset word (when pidns stays, lockers
 *       reach the reset word by their CAS, which reads its newest value);
 *   N5  keep the claim byte shared (a downgrade never conflicts) and drop
 *       the gate.
 *   INVARIANT: every admitted writer handle -- every holder of the claim
 *   byte outside the gate -- runs in namespace pidns (a writer without
 *   /proc, id 0, is admitted unchecked, as before), and the word names no
 *   thread but one of theirs. N3 admits only pidns's writers beside
 *   others; pidns changes, and the word is reset, only in N4, under the
 *   exclusive claim byte, when there is no other holder. Every thread that locks or waits
 *   on the word does so through an admitted handle, so all of them share
 *   one namespace: within it the lock keeps all its guarantees (mutual
 *   exclusion, robust recovery, priority inheritance, the dead-owner check
 *   of nerve check).
 *   Two namespaces never write at once: the second is refused with
 *   NERVE_EXDEV exactly while a writer handle of the first is open (a PI
 *   word cannot be shared, see above; a lock without PI for mixed
 *   namespaces would give up the real-time guarantee silently). Openers
 *   of one new namespace that race to take a channel over all get it: the
 *   gate makes the first take it and the others find it theirs in N2.
 *   Any descriptor open for reading may take the claim byte shared, so a
 *   local user who may only read the channel can keep it from passing to
 *   another namespace (N3 then refuses as if a writer were open); it
 *   cannot admit a second namespace or touch the admitted writers.
 *   A death anywhere in N1-N5 leaves a state N1-N5 continue from: the
 *   kernel drops the dead opener's OFD locks; a reset word is a recovered
 *   lock whether or not pidns was stored; pidns is one word. Crash points
 *   claim.exclusive, claim.after-reset and claim.after-ns (torture). */

#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../../atomics.h"
#include "../../crashpoint.h"
#include "../../platform.h"
#include "../../shm.h"
#include "../../timeconv.h"
#include "nerve/errors.h"

/* How long N1 waits for another opener's N2-N5. */
#define NERVE__CLAIM_WAIT_NS 1000000000ll

/* Set (F_RDLCK, F_WRLCK) or drop (F_UNLCK) this open file description's
 * lock on byte `at` of the file, never waiting. 0 or -1 with errno. */
static int ofd_lock(int fd, off_t at, short type)
{
    struct flock fl;
    memset(&fl, 0, sizeof fl); /* l_pid must be 0 for OFD locks */
    fl.l_type = type;
    fl.l_whence = SEEK_SET;
    fl.l_start = at;
    fl.l_len = 1;
    return fcntl(fd, F_OFD_SETLK, &fl);
}

/* Without OFD locks (Linux before 3.15) there is no takeover: the
 * namespace record alone decides, as it did before the claim. */
static int claim_by_record(struct nerve__shm_lock *l, uint64_t ns)
{
    if (ns == 0)
        return 0;
    uint64_t cur = nerve__load_acq(&l->pidns);
    if (cur == 0 && nerve__cas_rlx(&l->pidns, &cur, ns))
        return 0;
    return cur == ns ? 0 : NERVE_EXDEV;
}

/* N1: take the gate, retrying while another opener is inside N2-N5 (a
 * few system calls) for up to NERVE__CLAIM_WAIT_NS. Returns 0 (the gate is
 * ours), 1 (no OFD locks on this kernel), NERVE_EXDEV (that opener is
 * stopped) or another error. */
static int gate_take(int fd)
{
    int64_t give_up = -1;
    while (ofd_lock(fd, NERVE__CLAIM_GATE, F_WRLCK) != 0) {
        int e = errno;
        if (e == EINVAL)
            return 1;
        if (e != EAGAIN && e != EACCES && e != EINTR)
            return nerve__err_from_errno(e);
        int64_t now = nerve__mono_now();
        if (give_up < 0) {
            give_up = now + NERVE__CLAIM_WAIT_NS;
        } else if (now >= give_up) {
            return NERVE_EXDEV;
        }
        struct timespec ms = {0, 1000000};
        nanosleep(&ms, NULL);
    }
    return 0;
}

/* N2's read: the recorded namespace, which becomes `ns` if none is
 * recorded yet. */
static uint64_t ns_recorded(struct nerve__shm_lock *l, uint64_t ns)
{
    /* SYNC(ns-claim) acquire: a takeover's word reset (N4) is visible to
     * the writer that sees its namespace; pairs with N4's release. */
    uint64_t cur = nerve__load_acq(&l->pidns);
    /* Relaxed CAS: a first claim publishes nothing (the word is fresh). A
     * failed CAS leaves the recorded namespace in cur. */
    if (cur == 0 && nerve__cas_rlx(&l->pidns, &cur, ns))
        cur = ns;
    return cur;
}

/* N4, holding the claim byte exclusively: no other writer handle is open
 * anywhere, so no thread holds or waits for the word and any TID in it is
 * stale -- also when the recorded namespace `cur` looks like ours, for an
 * inode number is reused once its namespace is gone (a restarted container
 * may get the old number while the word still names the old PID 1). Resets
 * the word, then records `ns`. Returns 1 if the channel passed from
 * another namespace, else 0. */
static int take_over(struct nerve__shm_lock *l, uint64_t cur, uint64_t ns)
{
    NERVE_CRASHPOINT("claim.exclusive");
    if (nerve__load32_rlx(&l->word) != 0)
        nerve__store32_rel(&l->word, FUTEX_OWNER_DIED);
    NERVE_CRASHPOINT("claim.after-reset");
    int r = 0;
    if (cur != ns) {
        /* SYNC(ns-claim) release: the reset word is visible to any writer
         * that reads this namespace in N2; pairs with N2's acquire. (When
         * the namespace stays, later lockers reach the reset word by their
         * CAS, which reads the newest value of the word.) */
        nerve__store_rel(&l->pidns, ns);
        r = 1;
    }
    NERVE_CRASHPOINT("claim.after-ns");
    return r;
}

/* N2-N5 but the gate's release, with the gate held: every other holder of
 * the claim byte is an admitted writer handle. Returns 0 (admitted), 1
 * (taken over) or an error, holding the claim byte shared exactly when
 * admitted or taken over. */
static int admit(struct nerve__shm_lock *l, int fd, uint64_t ns)
{
    /* N2: the claim byte, shared; only a gate holder takes it exclusively,
     * and the gate is ours. */
    if (ofd_lock(fd, NERVE__CLAIM_BYTE, F_RDLCK) != 0)
        return nerve__err_from_errno(errno);
    if (ns == 0)
        return 0; /* no /proc: cannot tell, not checked (as before) */
    uint64_t cur = ns_recorded(l, ns);
    /* N3: is this the only writer handle? */
    if (ofd_lock(fd, NERVE__CLAIM_BYTE, F_WRLCK) != 0) {
        int e = errno;
        int busy = e == EAGAIN || e == EACCES;
        if (busy && cur == ns)
            return 0; /* admitted beside the open writers of ours */
        (void)ofd_lock(fd, NERVE__CLAIM_BYTE, F_UNLCK);
        /* busy: writers of another namespace are open. */
        return busy ? NERVE_EXDEV : nerve__err_from_errno(e);
    }
    int r = take_over(l, cur, ns); /* N4 */
    /* N5: keep the claim byte shared for the handle's life. */
    if (ofd_lock(fd, NERVE__CLAIM_BYTE, F_RDLCK) != 0)
        r = nerve__err_from_errno(errno);
    return r;
}

int nerve__mutex_claim(struct nerve__shm_lock *l, int fd, uint64_t ns)
{
    int r = gate_take(fd); /* N1 */
    if (r == 1)
        return claim_by_record(l, ns);
    if (r < 0)
        return r;
    r = admit(l, fd, ns);
    (void)ofd_lock(fd, NERVE__CLAIM_GATE, F_UNLCK); /* N5: drop the gate */
    return r;
}

/* Does an open file description other than fd's hold the claim byte, that
 * is, is a writer handle open anywhere? 1 yes, 0 no, -1 cannot tell. */
int nerve__claim_held(int fd)
{
    if (fd < 0)
        return -1;
    struct flock fl;
    memset(&fl, 0, sizeof fl);
    fl.l_type = F_WRLCK; /* conflicts with any holder */
    fl.l_whence = SEEK_SET;
    fl.l_start = NERVE__CLAIM_BYTE;
    fl.l_len = 1;
    if (fcntl(fd, F_OFD_GETLK, &fl) != 0)
        return -1;
    return fl.l_type != F_UNLCK;
}
