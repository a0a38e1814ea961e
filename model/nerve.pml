/* nerve channel protocol: a SPIN model of src/chan.c.
 *
 * Steps carry the names of the DESIGN block of src/chan.c (W1-W8 for a
 * writer, D1-D3 for the descriptor, R1-R4 for a reader, V1-V5 for
 * a wait), its SYNC tags and its crash point names; model/README.md maps each one to the code.
 *
 * What is modelled:
 *   - the index ring of NS slots {seq, off, len} and the data ring of DS
 *     cells, each cell standing for one NERVE__MSG_ALIGN (64-byte) unit, so
 *     W1's rounding is the identity; the double mapping makes absolute
 *     position p stand for cell p % DS;
 *   - NW writers serialised by a robust mutex. A writer can be killed
 *     (SIGKILL) after any of its shared stores, WKILLS times in all; the
 *     next locker gets EOWNERDEAD, runs lock_writer()'s sanity check and
 *     wpos repair, and carries on;
 *   - NRD lock-free readers doing NEXT (poll or untimed wait), NEWEST and
 *     SEQ gets, each a locate (R1), a slot read and validation (R2-R3) and a
 *     copy and validation (R4), retried on EOVERWRITTEN as read_msg() does
 *     (RETRIES times in the model, NERVE__READ_RETRIES in the code); waiting
 *     readers can be killed (RKILLS);
 *   - the futex: a wait sleeps only if the word still equals the value the
 *     reader saw (compared atomically, as the kernel does under its bucket
 *     lock); a put wakes at most WAKEK sleepers (any of them: the kernel
 *     picks by priority), after unlocking, and a woken reader that sees a
 *     new message passes the wake on to WAKEK more (SYNC(wake-pass)); an
 *     untimed wait is sliced, which is modelled by SPIN's `timeout`: it
 *     fires only when nothing else in the system can move;
 *   - the newest message's descriptor on the head line (layout 2):
 *     writers store it after the slot (D1 dseq = 0, D2 off and size, D3
 *     dseq = s, each a step a kill can follow); a reader that wants the
 *     head it loaded takes it when dseq reads that seq before and after
 *     the fields, and otherwise reads the slot; validation is unchanged;
 *   - the wake lease (bell.wake_until): a waiting reader registers a lease
 *     before each check-and-sleep; a writer wakes only while some lease
 *     runs. A lease runs out only while its reader is not asleep (in the
 *     code a lease ends after the reader's sleep deadline): between its
 *     check and its sleep (the sleep then returns at once: its deadline
 *     has passed), after the reader left the wait, or after it was
 *     killed;
 *   - the lock word's dead-owner states: a writer killed holding the lock
 *     is cleaned up by the kernel's robust list (OWNER_DIED) or, when its
 *     entry was lost (a corrupted word, a dropped mapping), leaves a word
 *     naming a thread that no longer exists: the next locker gets ESRCH
 *     and takes it over; `nerve check --repair` (REPAIR) resets such a word
 *     and must never reset a live owner's.
 *
 * Every payload cell written by a put attempt holds that attempt's unique
 * id, and the ghost arrays g_id[]/g_len[] record which attempt committed
 * which sequence number, so "a delivered copy is exactly what one writer
 * committed" is a plain comparison.
 *
 * Memory model: SPIN explores sequentially consistent interleavings of the
 * steps. The C code obtains that behaviour for these accesses from its
 * SYNC pairs (release/acquire, the release/acquire fence pair
 * tail-inval/read-validate, and the seq_cst pair wake-check/wait-announce);
 * the BROKEN_* variants show what the model catches when one of those
 * orders is lost.
 *
 * Knobs (spin -D...): NS, DS, MINLEN, MAXLEN, NW, PUTS, WKILLS, NRD, GETS,
 * RKILLS, RMODES, RETRIES; BROKEN_* (deliberately wrong variants) and
 * WITNESS=k (asserts that case k never happens, so SPIN must find it).
 * model/check.sh runs the configurations. */

#ifndef NS
#define NS 2        /* index ring slots */
#endif
#ifndef DS
#define DS 2        /* data ring cells */
#endif
#ifndef MINLEN
#define MINLEN 1    /* message sizes MINLEN..MAXLEN cells */
#endif
#ifndef MAXLEN
#define MAXLEN DS
#endif
#ifndef NW
#define NW 2        /* writer processes */
#endif
#ifndef PUTS
#define PUTS 2      /* puts each writer makes */
#endif
#ifndef WKILLS
#define WKILLS 1    /* writers killed, in all */
#endif
#ifndef NRD
#define NRD 1       /* reader processes */
#endif
#ifndef GETS
#define GETS 2      /* gets each reader makes */
#endif
#ifndef RKILLS
#define RKILLS 0    /* readers killed while waiting, in all */
#endif
#ifndef RMODES
#define RMODES 3    /* bit 0 NEXT poll, 1 NEXT wait, 2 NEWEST, 3 SEQ */
#endif
#ifndef RETRIES
#define RETRIES 2   /* read_msg(): NERVE__READ_RETRIES */
#endif
#ifndef WITNESS
#define WITNESS 0
#endif
#ifndef WAKEK
#define WAKEK 1     /* sleepers one wake wakes (NERVE__WAKE_BATCH) */
#endif
#ifndef REPAIR
#define REPAIR 0    /* a `nerve check --repair` process */
#endif
#ifndef GHOST
#define GHOST 0     /* a kill may leave the word naming the dead thread */
#endif
#ifndef LEASE_EXPIRY
#define LEASE_EXPIRY 0 /* a lease may run out between check and sleep */
#endif
#ifndef WAKE_SPLIT
#define WAKE_SPLIT 0 /* unlock (W7) and wake (W8) as separate steps */
#endif
#ifndef DESC
#define DESC 1      /* the descriptor on the head line (D1-D3) */
#endif

#define MAXSEQ (NW * PUTS)

/* Some reader's lease runs (written out for NRD <= 2). */
#if NRD > 1
#define ANY_LEASE (lease[0] || lease[1])
#else
#define ANY_LEASE (lease[0])
#endif

#define M_NEXT 0
#define M_WAIT 1    /* NEXT with NERVE_F_WAIT, NERVE_FOREVER */
#define M_NEWEST 2
#define M_SEQ 3

/* ---- shared state: struct nerve__shm_hdr, slots, ring, bell ---- */
byte head = 0;          /* SYNC(pub-seq); its low word is the futex word */
byte tail = 1;          /* SYNC(tail-inval); > head: nothing readable */
byte wpos = 0;          /* [W:lock] */
typedef slot_t {
    byte seq;
    byte off;
    byte size           /* `len` in shm.h (a Promela keyword here) */
};
slot_t slot[NS];
/* The newest message's descriptor on the head line (layout version 2):
 * a seqlock keyed by the sequence number. SYNC(desc-seq) */
byte dseq = 0;
byte doff = 0;
byte dsize = 0;
byte ring[DS];          /* a cell holds the id of the attempt that wrote it */
bool lease[NRD];        /* bell.wake_until covers reader r: SYNC(wait-announce) */
byte waiters = 0;       /* bell.waiters: readers inside a wait (V5 reads it) */

/* The PI lock word: owner (pid + 1) or 0. `dead`: FUTEX_OWNER_DIED (its
 * owner died holding it; the kernel's robust list cleared the TID): the
 * next locker takes it by CAS, recovered. `ghost`: the word still names
 * its dead owner (no robust cleanup): FUTEX_LOCK_PI answers ESRCH and the
 * locker takes it over, recovered. */
byte mtx = 0;
bool mtx_dead = false;
bool mtx_ghost = false;
bool alive[NW];         /* writer w's thread exists */

bool asleep[NRD];       /* reader r sleeps in futex_waitv on head */
bool woken[NRD];        /* ghost: r was woken by a wake it must pass on */
bool g_pass_lost = false; /* ghost: a woken reader died before passing on */
byte g_rdone = 0;       /* ghost: readers finished */

/* ---- ghosts: never read by the protocol ---- */
byte g_id[MAXSEQ + 1];  /* attempt id committed as seq s */
byte g_len[MAXSEQ + 1]; /* and its length */
byte g_att = 0;         /* put attempts started */
byte g_wkills = 0;
byte g_rkills = 0;

/* Witnesses: check.sh compiles with WITNESS=k and requires SPIN to find a
 * violation, proving the bounds reach case k. */
#define REACH(k) assert(WITNESS != k)

/* FUTEX_WAKE(WAKEK) on head: wakes up to WAKEK sleepers, any of them
 * (written out for NRD <= 2, the bounds model/check.sh uses). */
inline wake_some() {
    atomic {
        i = 0;
        do
        :: i < WAKEK ->
            if
#if NRD > 1
            :: asleep[0] -> asleep[0] = false; woken[0] = true
            :: asleep[1] -> asleep[1] = false; woken[1] = true
#else
            /* One reader: nobody to pass a wake on to; no ghost needed. */
            :: asleep[0] -> asleep[0] = false
#endif
            :: else -> break
            fi;
            i++
        :: else -> break
        od;
        i = 0
    }
}

/* Killed here? (every crash point of chan.c is one of these; the model
 * also allows a kill after every other shared store.) */
#define CRASH                                                               \
    if                                                                      \
    :: g_wkills < WKILLS -> g_wkills++; goto killed                         \
    :: true -> skip                                                         \
    fi

/* Holding the lock, nothing is in flight: every readable message must be
 * intact, described by its slot, in order, and behind wpos. Stronger than
 * lock_writer()'s `sane`, which is asserted too (it returning
 * NERVE_ECORRUPT after a mere crash would be a bug). */
inline locked_invariants() {
    d_step {
        /* lock_writer(): sane */
        assert(tail >= 1 && tail <= head + 1);
        assert(tail > head || head - tail + 1 <= NS);
        assert(tail > head || slot[(head - 1) % NS].seq == head);
        /* The descriptor: being rewritten (0), head's, or that of a
         * writer killed between D3 and W6 (head + 1); naming a readable
         * head, it says what head's slot says (nerve check). */
        assert(dseq == 0 || dseq == head || dseq == head + 1);
        assert(dseq != head || tail > head ||
               (doff == slot[(head - 1) % NS].off &&
                dsize == slot[(head - 1) % NS].size));
        q = tail;
        do
        :: q <= head ->
            assert(slot[(q - 1) % NS].seq == q);
            assert(slot[(q - 1) % NS].size == g_len[q]);
            assert(slot[(q - 1) % NS].off + slot[(q - 1) % NS].size <= wpos);
            if
            :: q < head -> assert(slot[(q - 1) % NS].off +
                                  slot[(q - 1) % NS].size <= slot[q % NS].off)
            :: else -> skip
            fi;
            c = 0;
            do
            :: c < slot[(q - 1) % NS].size ->
                assert(ring[(slot[(q - 1) % NS].off + c) % DS] == g_id[q]);
                c++
            :: else -> break
            od;
            q++
        :: else -> break
        od;
        q = 0;
        c = 0
    }
}

proctype writer(byte me)
{
    byte n = 0, mlen, s, p, t, id, i, q, c;
    bool rec;

    do
    :: n < PUTS ->
        /* lock_writer(): robust mutex; EOWNERDEAD hands over a dead
         * owner's lock. BROKEN_NO_RECOVER waits for an unlock that never
         * comes. */
        /* nerve__mutex_lock(): CAS on a free word or an OWNER_DIED word;
         * ESRCH from FUTEX_LOCK_PI (ghost: the word names a thread that
         * does not exist) is a takeover too. Both report recovered. */
        atomic {
#ifdef BROKEN_NO_RECOVER
            /* OWNER_DIED read as "held": waits for an unlock that never
             * comes. */
            mtx == 0 && !mtx_dead ->
#else
            mtx == 0 || mtx_dead || mtx_ghost ->
#endif
            rec = mtx_dead || mtx_ghost;
            if
            :: mtx_ghost -> REACH(10)
            :: else -> skip
            fi;
            mtx = me + 1;
            mtx_dead = false;
            mtx_ghost = false
        }
        if
        :: rec -> REACH(5)
        :: else -> skip
        fi;
        /* wpos_repaired(), on every lock (not only after a death): never
         * behind the newest readable message. */
        d_step {
            if
            :: head > 0 && tail <= head &&
               wpos < slot[(head - 1) % NS].off + slot[(head - 1) % NS].size ->
                wpos = slot[(head - 1) % NS].off + slot[(head - 1) % NS].size
            :: else -> skip
            fi
        };
        locked_invariants();
        select(mlen : MINLEN .. MAXLEN);
        CRASH;                                  /* put.locked */

        /* W1-W2, begin_message(): compute the new tail (this writer's own
         * data, stable under the lock), then one store. */
        d_step {
            s = head + 1;
            p = wpos;
            t = tail;
            if
            :: s > NS && t + NS <= s -> t = s - NS + 1; REACH(1)
            :: else -> skip
            fi;
            if
            :: p + mlen > DS ->
                do
#ifdef BROKEN_BYTE_CHECK
                :: t <= head && slot[(t - 1) % NS].off + DS + 1 < p + mlen -> t++
#else
                :: t <= head && slot[(t - 1) % NS].off + DS < p + mlen ->
                    t++; REACH(7)
#endif
                :: else -> break
                od
            :: else -> skip
            fi;
            if
            :: mlen == DS && t == head + 1 && head > 0 -> REACH(8)
            :: else -> skip
            fi;
            g_att++;
            id = g_att
        }
#ifndef BROKEN_TAIL_LATE
        if
        :: t != tail -> tail = t    /* SYNC(tail-inval): store, rel fence */
        :: else -> skip
        fi;
#endif
        CRASH;                                  /* put.after-tail */

#ifdef BROKEN_PUB_EARLY
        /* The commit moved before the payload: readers may see it half
         * written. */
        slot[(s - 1) % NS].seq = s;
        slot[(s - 1) % NS].off = p;
        slot[(s - 1) % NS].size = mlen;
        atomic { head = s; g_id[s] = id; g_len[s] = mlen }
#endif

        /* W3: the payload, one cell at a time (readers may copy it
         * meanwhile; a kill can fall between any two cells). */
        i = 0;
        do
        :: i < mlen ->
            ring[(p + i) % DS] = id;
            if
            :: (p + i) % DS == DS - 1 && i + 1 < mlen -> REACH(2)
            :: else -> skip
            fi;
            i++;
            CRASH                               /* put.mid-payload */
        :: else -> break
        od;
        /* put.after-payload is the last CRASH of the loop. */

#ifndef BROKEN_PUB_EARLY
        /* W4: the slot, relaxed stores, one at a time. */
        slot[(s - 1) % NS].seq = s;
        slot[(s - 1) % NS].off = p;
        slot[(s - 1) % NS].size = mlen;
        CRASH;                                  /* put.after-slot */
#endif
        /* D1-D3 SYNC(desc-seq): the descriptor, a seqlock keyed by seq.
         * D1 and D2 are one step: a reader between them reads dseq == 0
         * on its first or its second load and falls back to the slot, as
         * it would after D2, and a kill between them leaves what a kill
         * after D2 leaves (dseq == 0, fields nobody takes).
         * BROKEN_DESC_NO_CLEAR leaves out D1: a reader can pair an old
         * dseq with the next message's fields. DESC=0 leaves the
         * descriptor out (checks whose subject is elsewhere). */
#if DESC
        atomic {
#ifndef BROKEN_DESC_NO_CLEAR
            dseq = 0;                           /* D1, release fence */
#endif
            doff = p;                           /* D2 */
            dsize = mlen
        }
        CRASH;                  /* put.after-desc-clear, -fields */
        dseq = s;                               /* D3, release */
        CRASH;                                  /* put.after-desc-seq */
#endif
#ifdef BROKEN_TAIL_LATE
        /* Invalidation after the overwrite. */
        if
        :: t != tail -> tail = t
        :: else -> skip
        fi;
#endif

        /* W5 */
        wpos = p + mlen;
        CRASH;                                  /* put.after-wpos */

#ifdef BROKEN_NO_WAKE_FENCE
        /* Without the seq_cst fence the lease load may be satisfied
         * before the head store is visible (store-load reordering). */
        c = ANY_LEASE;
#endif
#ifndef BROKEN_PUB_EARLY
        /* W6: SYNC(pub-seq) release, the commit. */
        atomic { head = s; g_id[s] = id; g_len[s] = mlen }
#endif
        CRASH;                                  /* put.after-commit */

        /* W7: unlock first (no wake-up work under the lock). Mutual
         * exclusion: nobody took the lock from this live owner. */
#if WAKE_SPLIT
        d_step {
            assert(mtx == me + 1);
            mtx = 0;
            n++; s = 0; p = 0; t = 0; id = 0; i = 0; mlen = 0; rec = false
        }
        CRASH;                                  /* put.after-unlock */
#endif
        /* W8: SYNC(wake-check), seq_cst fence then the leases; wake at
         * most WAKEK sleepers. The lease load and the wake are one step
         * here: a reader that registers between them registered after
         * the load, so it sees the new head (Dekker) and does not sleep.
         * Without WAKE_SPLIT (the data checks, whose properties do not
         * depend on wake-ups) W7 and W8 are one step, which keeps the
         * other writer's steps from interleaving with the wake. */
        atomic {
#if !WAKE_SPLIT
            assert(mtx == me + 1);
            mtx = 0;
            n++; s = 0; p = 0; t = 0; id = 0; i = 0; mlen = 0; rec = false;
#endif
#ifndef BROKEN_NO_WAKE_FENCE
            c = ANY_LEASE;
#endif
            if
            :: c > 0 -> wake_some()
            :: else -> skip
            fi;
            c = 0
        }
        CRASH;                                  /* put.after-wake */
    :: else -> break
    od;
    goto end;

killed:
    /* The kernel's robust list: a lock the dead owner held now reads
     * OWNER_DIED; or (its entry lost) the word keeps naming the dead
     * thread. */
    atomic {
        alive[me] = false;
        if
        :: mtx == me + 1 -> mtx_dead = true; mtx = 0
#if GHOST
        :: mtx == me + 1 -> mtx_ghost = true
#endif
        :: else -> skip
        fi
    }
end:
    skip
}

/* `nerve check --repair`: resets a word whose named owner does not exist
 * (nerve__mutex_repair: kill(tid, 0) == ESRCH), never a live owner's. */
proctype repair()
{
end:
    atomic {
#ifdef BROKEN_REPAIR_LIVE
        mtx != 0 ->
#else
        mtx != 0 && !alive[mtx - 1] ->
#endif
        mtx = 0;
        mtx_ghost = false;
        mtx_dead = true
    }
}

proctype reader(byte me)
{
    byte cur = 0;           /* the handle's cursor */
    byte g = 0, mode, h, h0, t, want, sq, o, l, i, tries, missed, v;
    byte seen = 0;          /* ghost: delivered + missed over NEXT/NEWEST */
    bool differs = false;   /* ghost: the copy differs from the message */

    do
    :: g < GETS ->
        g++;
        atomic {
            if
            :: RMODES & 1 -> mode = M_NEXT
            :: RMODES & 2 -> mode = M_WAIT
            :: RMODES & 4 -> mode = M_NEWEST
            :: RMODES & 8 -> mode = M_SEQ; select(want : 1 .. MAXSEQ)
            fi;
            if                      /* ghost: head when NEWEST began */
            :: mode == M_NEWEST -> h0 = head
            :: else -> skip
            fi
        }

locate:
        /* R1, locate(): SYNC(pub-seq) acquire, then tail acquire. */
        h = head;
        t = tail;
        d_step {
            if
            :: h >= NS && t < h - NS + 1 -> t = h - NS + 1
            :: else -> skip
            fi;
            if
            :: mode == M_NEXT || mode == M_WAIT ->
                want = cur + 1;
                if
                :: want > h -> v = 1            /* EAGAIN */
                :: else ->
                    if
                    :: want < t -> want = t
                    :: else -> skip
                    fi;
                    if
                    :: want > h -> v = 1        /* all being overwritten */
                    :: else ->
                        /* A retry aims closer to head. */
                        if
                        :: tries > 0 && want < h &&
                           h - ((h - want) >> tries) > want ->
                            want = h - ((h - want) >> tries)
                        :: else -> skip
                        fi;
                        missed = want - cur - 1
                    fi
                fi
            :: mode == M_NEWEST ->
                if
                :: h == 0 || h < t -> v = 1
                :: else ->
                    want = h;
                    if
                    :: h > cur -> missed = h - cur - 1
                    :: else -> missed = 0
                    fi;
                    if
                    :: want <= cur -> v = 1     /* no NERVE_F_REPEAT */
                    :: else -> skip
                    fi
                fi
            :: mode == M_SEQ ->
                if
                :: want > h -> v = 1
                :: want < t -> v = 2            /* EOVERWRITTEN */
                :: else -> skip
                fi
            fi
        }
        if
        :: v == 1 && mode == M_WAIT ->
            /* wait_change(seen = h): V1-V5. */
            v = 0;
            waiters++;
            do
            :: lease[me] = true;                /* V1 SYNC(wait-announce) */
               t = head;                        /* V2 seq_cst fence, head */
               if
               :: t != h -> break
               :: else -> skip
               fi;
#if LEASE_EXPIRY
               if                               /* preempted past the */
               :: lease[me] = false             /* slice end: lease over */
               :: true -> skip
               fi;
#endif
               if
               :: g_rkills < RKILLS -> g_rkills++; goto rkilled
               :: true -> skip
               fi;
               /* V3 futex_waitv(head word == h) until the slice end:
                * compare and queue as one step, as the kernel does. The
                * lease outlives the slice, so a reader whose lease already
                * ran out is past its slice end: the wait returns at once. */
               atomic {
                   if
                   :: head == h && lease[me] -> asleep[me] = true
                   :: else -> skip
                   fi
               }
               if
               :: !asleep[me] -> skip           /* woken, or head moved */
               :: timeout ->
                   /* The 100 ms slice ended with nothing else able to
                    * move. If a message was committed while this reader
                    * slept, its wake-up was lost: allowed only when the
                    * committing writer was killed before W7. */
                   assert(head == h || g_wkills > 0 || g_pass_lost);
                   if
                   :: head != h -> REACH(4)
                   :: else -> skip
                   fi;
                   asleep[me] = false;
                   if
                   :: head == h -> v = 1; break /* nothing will come */
                   :: else -> skip
                   fi
               fi;
               /* V4 wait_look(): a woken reader looks before it announces
                * again, and leaves when head moved (no lease needed for a
                * look that does not end in a sleep). */
               if
               :: head != h -> break
               :: else -> skip
               fi
            od;
            lease[me] = false;                  /* runs out later */
            /* bell.waiters -= 1 (fetch_sub: the count before, in i). */
            atomic { i = waiters; waiters-- }
            /* V5 SYNC(wake-pass): woken and a new message: pass the wake
             * on. A kill before it loses the other sleepers' wake-up until
             * their slice ends. */
            if
            :: woken[me] && g_rkills < RKILLS ->
                g_rkills++; g_pass_lost = true; goto rkilled
            :: true -> skip
            fi;
#ifndef BROKEN_NO_PASS
            if
            :: woken[me] && head != h && i > WAKEK -> REACH(11); wake_some()
            :: else -> skip
            fi;
            i = 0;
#endif
            woken[me] = false;
            if
            :: v == 1 -> goto done
            :: else -> goto locate
            fi
        :: v == 1 || v == 2 -> goto done        /* EAGAIN, EOVERWRITTEN */
        :: else -> skip
        fi;

        /* R2, read_desc(): wanting the head it loaded, the reader takes
         * the descriptor if dseq reads `want` before and after the fields
         * (SYNC(desc-seq): acquire load, fields, acquire fence, load). */
        if
        :: DESC && want == h ->
            v = dseq;
            /* The fields and the second load as one step: a writer step
             * between them could only make the second load differ (a
             * fallback to the slot, always safe), never change what was
             * read. Between the first load and the fields every writer
             * step is explored (BROKEN_DESC_NO_CLEAR shows why D1 is
             * needed). */
            atomic { o = doff; l = dsize; sq = dseq }
            if
            :: v == want && sq == want -> REACH(12); goto validate
            :: else -> REACH(13)                /* falls back to the slot */
            fi
        :: else -> skip
        fi;
        /* R2, nerve__read_slot(): relaxed loads. */
        sq = slot[(want - 1) % NS].seq;
        o = slot[(want - 1) % NS].off;
        l = slot[(want - 1) % NS].size;
validate:
        /* R3, nerve__still_valid(): SYNC(read-validate) acquire fence, tail. */
#ifdef BROKEN_NO_VALIDATE
        v = t;
#else
        v = tail;
#endif
        if
        :: v > want -> goto overwritten
        :: else -> skip
        fi;
        /* Validated: NERVE_ECORRUPT here would be a protocol bug. */
        assert(sq == want && l <= DS);

        /* R4: the copy (compared with the ghost as it goes, so the model
         * keeps no bytes), then nerve__still_valid() again. */
        i = 0;
        do
        :: i < l ->
            atomic { differs = differs || ring[(o + i) % DS] != g_id[want];
                     i++ }
        :: else -> break
        od;
#ifdef BROKEN_NO_VALIDATE
        v = t;
#else
        v = tail;                               /* SYNC(read-validate) */
#endif
        if
        :: v > want -> REACH(3); goto overwritten
        :: else -> skip
        fi;

        /* Delivered: exactly what the committing attempt wrote. */
        assert(l == g_len[want] && !differs);
        if
        :: mode != M_SEQ ->
            assert(want > cur);                 /* strictly increasing */
            /* Without a retry, NEXT skips only invalidated messages. */
            assert(mode == M_NEWEST || missed == 0 || tries > 0 ||
                   tail >= want);
            if
            :: missed > 0 && mode != M_NEWEST -> REACH(6)
            :: else -> skip
            fi;
            /* Missed count exact: every seq up to the cursor was either
             * delivered or counted as missed, once. */
            seen = seen + missed + 1;
            assert(seen == want);
            cur = want
        :: else -> skip
        fi;
        if
        :: mode == M_NEWEST -> assert(want >= h0)   /* newest at an instant
                                                       of the call */
        :: else -> skip
        fi;
        goto done;

overwritten:
        skip;
        /* EOVERWRITTEN: SEQ reports it, the others retry (ELAPPED after
         * RETRIES). */
        d_step {
            differs = false; sq = 0; o = 0; l = 0; i = 0; v = 0; missed = 0
        }
        if
        :: mode != M_SEQ && tries + 1 < RETRIES -> tries++; goto locate
        :: mode != M_SEQ && tries + 1 >= RETRIES -> REACH(9)  /* ELAPPED */
        :: else -> skip
        fi;
done:
        skip;
        d_step {
            h = 0; h0 = 0; t = 0; want = 0; sq = 0; o = 0; l = 0; i = 0;
            tries = 0; missed = 0; v = 0; mode = 0; differs = false
        }
    :: else -> break
    od;
    goto end;
rkilled:
    lease[me] = false;  /* a killed reader's lease runs out */
end:
    g_rdone++
}

init {
    byte k;
    atomic {
        k = 0;
        do
        :: k < NW -> run writer(k); k++
        :: else -> break
        od;
        k = 0;
        do
        :: k < NRD -> run reader(k); k++
        :: else -> break
        od;
        k = 0;
        do
        :: k < NW -> alive[k] = true; k++
        :: else -> break
        od;
        if
        :: REPAIR -> run repair()
        :: else -> skip
        fi
    }
}

/* Liveness under crashes: with SAFETY, SPIN reports any state where some
 * process is stuck and none can move (an invalid end state), so every
 * writer that was not killed finishes all its puts after any death, and no
 * reader waits forever for a message that was committed. */
