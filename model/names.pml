/* nerve channel names: a SPIN model of create and unlink in
 * src/chan_open.c ("the bell and the channel's name").
 *
 * A channel is two names in /dev/shm, nerve.NAME and its bell
 * nerve-bell.NAME, and the file system has no operation on two names.
 * INVARIANT (bell-before-channel): a creator links the bell (C1) before the
 * channel (C2) and removes its own bell if C2 failed (C3); an unlink removes
 * the channel (U1), then the bell (U2). Steps carry those labels, as the
 * code does; model/README.md maps them.
 *
 * What is modelled: `cname` and `bname` are the two names (nerve.NAME and nerve-bell.NAME), 0 when free, else
 * the id of the creator whose file is there (each creator's files are
 * distinct inodes). Every file system call is one atomic step: link without
 * replacing (C1, C2), unlink of whatever is at a name (U1, U2, the stale
 * removal), lstat of one name. NC creators make CREATES creates each, NU
 * unlinkers make UNLINKS unlinks each, in any interleaving; then a final
 * unlink, as the storm test's (tests/mp/test_mp_bell_storm.c).
 *
 * The grace: a creator whose C1 met a bell with no channel, and an unlink
 * that found no channel but a bell, wait (bounded by BELL_GRACE_NS in the
 * code) for the create or unlink in flight to finish, then take what is
 * still there for an orphan and remove it. With GIVEUP=1 a waiter may give
 * up at any moment: that is every case of a process stalled longer than
 * the grace in the middle of its two steps. With GIVEUP=0 waiters wait
 * until the lone bell is resolved (no process stalls that long).
 *
 * Properties (assert):
 *   - every run ends with neither name taken after the final unlink, and
 *     no bell without its channel before it (no orphan), GIVEUP or not;
 *   - with GIVEUP=0, at every step: a visible channel has its creator's
 *     bell (bell-before-channel holds all along).
 *
 * Knobs (spin -D...): NC, CREATES, NU, UNLINKS, GIVEUP;
 * BROKEN_CHANNEL_FIRST (the order before issue 28: C2 first, then the bell,
 * replacing a stale one; must leave an orphan) and WITNESS=k (asserts that
 * case k never happens, so SPIN must find it). model/check.sh runs them. */

#ifndef NC
#define NC 2        /* creator processes */
#endif
#ifndef CREATES
#define CREATES 1   /* creates each */
#endif
#ifndef NU
#define NU 1        /* unlinker processes */
#endif
#ifndef UNLINKS
#define UNLINKS 2   /* unlinks each */
#endif
#ifndef GIVEUP
#define GIVEUP 0    /* waiters may give up on a lone bell at any time */
#endif

byte cname = 0;      /* nerve.NAME: 0 or its creator's id (1..NC) */
byte bname = 0;      /* nerve-bell.NAME: 0 or its creator's id */
byte done = 0;      /* processes finished */

#ifdef WITNESS
#define REACHED(k) assert(WITNESS != k)
#else
#define REACHED(k) skip
#endif

/* With GIVEUP=0 the bell of a visible channel is its creator's. */
#define CONSISTENT (GIVEUP || cname == 0 || bname == cname)

/* Wait while a bell is alone (no channel), as lone_bell_settle() does; it
 * answers with the observation that ended the wait: lone = 0 when the bell
 * went or a channel came (resolved), lone = 1 when the grace ran out with
 * the bell still alone (only with GIVEUP, which lets the grace end at any
 * moment). */
inline settle()
{
    do
    :: atomic { bname == 0 || cname != 0 -> lone = 0 }; break
#if GIVEUP
    :: atomic { bname != 0 && cname == 0 -> lone = 1 }; break
#endif
    od
}

/* The locals of create() and unlink(), declared by every process that
 * runs them (an inline's declarations would be initialised only once). */
#define LOCALS byte have, attempt, ok, t, removed, lone

inline create(me)
{
    have = 0; attempt = 0; ok = 0; t = 0;
#ifdef BROKEN_CHANNEL_FIRST
    /* Before issue 28: the channel, then the bell, replacing one there. */
    atomic { if :: cname == 0 -> cname = me; ok = 1 :: else -> ok = 0 fi };
    if
    :: ok ->
        do
        :: attempt < 3 ->
            atomic { if :: bname == 0 -> bname = me; have = 1 :: else -> skip fi };
            if :: have -> break :: else -> skip fi;
            bname = 0;               /* unlink the stale one, try again */
            attempt++
        :: else -> break
        od
    :: else -> skip
    fi
#else
    /* C1: the bell, linked without replacing. A lone bell that is
     * resolved (its create or unlink finished) costs a retry but no
     * attempt: it means another process made progress. Removing an orphan
     * costs one (3 at most); with GIVEUP the create may also stop trying at
     * any retry (the code's overall bound, BELL_CLAIM_NS) and make the
     * channel without a bell. */
    do
    :: atomic { bname == 0 -> bname = me; have = 1 }; break
    :: atomic { bname != 0 && cname != 0 -> have = 2 }; break  /* the name is taken */
    :: atomic { bname != 0 && cname == 0 };
        REACHED(1);                          /* a lone bell met at create */
        settle();
        if
        :: lone && attempt < 3 -> REACHED(2); bname = 0; attempt++  /* an orphan */
        :: lone && attempt >= 3 -> break     /* no bell */
        :: !lone -> skip                     /* resolved: look again */
        fi
#if GIVEUP
    :: break                                 /* contended too long: no bell */
#endif
    od;
    if
    :: have == 2 -> have = 0; ok = 0         /* EEXIST, nothing touched */
    :: else ->
        /* C2: the channel, linked without replacing. */
        atomic { if :: cname == 0 -> cname = me; ok = 1 :: else -> ok = 0 fi };
        /* C3: the creator's own bell, if C2 failed: lstat compares the
         * inode, then unlink removes whatever is there by then. */
        if
        :: !ok && have == 1 ->
            atomic { t = (bname == me) };
            if :: t -> bname = 0 :: else -> skip fi
        :: else -> skip
        fi
    fi
#endif
}

inline unlink()
{
    removed = 0; t = 0;
    /* U1: the channel. */
    atomic { if :: cname != 0 -> cname = 0; removed = 1 :: else -> removed = 0 fi };
    if
    :: removed ->
        /* U2: the bell, whatever is there. */
        bname = 0
    :: else ->
#ifndef BROKEN_CHANNEL_FIRST
        /* No channel: an orphaned bell is removed after the grace. */
        settle();
        if :: lone -> REACHED(3); bname = 0 :: else -> skip fi
#else
        skip
#endif
    fi
}

proctype creator(byte me)
{
    LOCALS;
    byte n = 0;
    do
    :: n < CREATES -> create(me); n++
    :: else -> break
    od;
    done++
}

proctype unlinker()
{
    LOCALS;
    byte n = 0;
    do
    :: n < UNLINKS -> unlink(); n++
    :: else -> break
    od;
    done++
}

/* bell-before-channel, at every step (GIVEUP=0). */
active proctype invariant()
{
end:
    do
    :: atomic { !CONSISTENT -> assert(CONSISTENT) }
    od
}

init
{
    LOCALS;
    byte i;
    atomic {
        for (i : 1 .. NC) { run creator(i) }
        for (i : 1 .. NU) { run unlinker() }
    }
    (done == NC + NU);
    /* No orphan when everything has returned, then the final unlink. */
    assert(bname == 0 || cname != 0);
    if :: cname != 0 -> REACHED(4) :: else -> skip fi;
    unlink();
    assert(cname == 0 && bname == 0)
}
