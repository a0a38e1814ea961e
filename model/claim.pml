/* The writers' namespace claim (src/platform/linux/mutex.c, WRITERS'
 * NAMESPACE, steps N1-N5, SYNC(ns-claim)): which PID namespace's threads
 * the writer lock's PI futex word may name, and how a channel passes from
 * one namespace to another when no writer of the first is left.
 *
 * Each writer process runs in a PID namespace (nsof[]), opens a writer
 * handle (the claim), takes and releases the lock LOOPS times, and closes
 * it; up to KILLS writers are killed at any step. The kernel's parts are
 * single atomic steps: the OFD byte-range locks on the gate byte and the
 * claim byte (shared holders, one exclusive holder, dropped when their
 * holder dies; a conversion from shared to exclusive fails, changing
 * nothing, while another holds the byte), and the PI
 * futex word (a TID and FUTEX_OWNER_DIED): a dying owner's robust list
 * frees the word and sets OWNER_DIED, or with GHOST may leave its TID in
 * the word (a lost robust-list entry). The kernel resolves a TID in the
 * locker's namespace only, so a locker meeting a TID of another namespace
 * is the failure this protocol exists to prevent: it is asserted never to
 * happen. pidns records a namespace's inode number (nsid[]), which the
 * kernel reuses once the namespace is gone: with NSCFG 2 the third writer's
 * namespace starts after the first one's ended and has its number.
 *
 * Properties (any violation, deadlock or stuck writer fails a run):
 *   1. every admitted writer handle (past N3, or N5) has the namespace
 *      number in pidns (the monitor);
 *   2. no locker ever meets a TID of another namespace in the word;
 *   3. mutual exclusion of the lock;
 *   4. no writer is stuck: a killed opener or writer never blocks the
 *      others (an invalid end state otherwise), and a writer is refused
 *      (NERVE_EXDEV) only while an admitted writer handle of another
 *      namespace is open (never because of another opener midway).
 *
 * The ring itself is model/nerve.pml's: here a recovered lock (OWNER_DIED
 * or ESRCH) is only counted, and nerve.pml proves that the ring state a
 * dead owner leaves is recovered. */

#ifndef NP
#define NP 3
#endif
#ifndef KILLS
#define KILLS 1
#endif
#ifndef LOOPS
#define LOOPS 1
#endif
#ifndef GHOST
#define GHOST 0
#endif
#ifndef NSCFG
#define NSCFG 0
#endif
#ifndef WITNESS
#define WITNESS 0
#endif

/* check.sh compiles with WITNESS=k and requires SPIN to find a violation
 * of REACH(k): the bounds reach case k. */
#define REACH(k) assert(WITNESS != k)

byte nsof[NP];      /* each writer's PID namespace, 1.. */
byte nsid[NP];      /* its inode number (NSCFG 2: C reuses A's) */
byte pidns = 0;     /* lock.pidns, an inode number: 0 unclaimed */
bool gone[NP];      /* the writer's process, and namespace, ended */
byte wown = 0;      /* the word's TID: writer index + 1, 0 none */
bool wdied = false; /* the word's FUTEX_OWNER_DIED */
bool alive[NP];
bool hold[NP];      /* shared OFD lock on the claim byte */
bool adm[NP];       /* an admitted writer handle (past N2 or N5) */
byte nsh = 0;       /* shared holders */
byte excl = 0;      /* exclusive holder of the claim byte + 1 */
byte gate = 0;      /* holder of the gate byte + 1 */
byte incs = 0;      /* writers inside the lock */
byte kills = 0;
byte takeovers = 0, refusals = 0, cross_resets = 0, cross_recoveries = 0;

#define CRASH                                                                  \
    if                                                                         \
    :: kills < KILLS -> kills++; goto killed                                   \
    :: true                                                                    \
    fi

/* Writer j is an admitted handle of another namespace id than `id`. */
#define ADM_OTHER(j, id) (adm[j] && hold[j] && nsid[j] != id)

proctype writer(byte me)
{
    byte my = nsof[me];  /* the namespace itself: what a TID means */
    byte myid = nsid[me]; /* its inode number: what pidns records */
    byte cur, n;
    bool in_cs = false;
    bool rec;
    bool reset_cross = false;

#if NSCFG == 2
    /* C's namespace has A's inode number: A's is gone first. */
    if
    :: me == 2 -> gone[0]
    :: else
    fi;
#endif
    /* N1: the gate (the code retries for at most a second while another
     * opener is in N2-N5; a killed one lets go at once). */
#ifndef BROKEN_NO_GATE
    atomic { gate == 0 -> gate = me + 1 };
#endif
    CRASH;
    /* N2: the claim byte, shared (only a gate holder takes it
     * exclusively), and SYNC(ns-claim) acquire of pidns; CAS from 0. */
    atomic { excl == 0 -> hold[me] = true; nsh++ };
    CRASH;
    cur = pidns;
    if
    :: cur == 0 ->
        atomic {
            if
            :: pidns == 0 -> pidns = myid; cur = myid
            :: else -> cur = pidns
            fi
        }
    :: else
    fi;
#ifdef BROKEN_NO_EXCL
    /* Take over without asking the kernel whether writers are open. */
    if
    :: cur != myid -> goto n4
    :: else -> adm[me] = true; goto n5gate
    fi;
#endif
#ifdef BROKEN_RESET_FOREIGN_ONLY
    /* Trust the word whenever pidns reads as ours. */
    if
    :: cur == myid -> adm[me] = true; goto n5gate
    :: else
    fi;
#endif
    /* N3: convert to exclusive, not waiting. */
    atomic {
        if
        :: nsh == 1 && excl == 0 ->
            hold[me] = false;
            nsh--;
            excl = me + 1
        :: else ->
            if
            :: cur == myid ->
                /* Admitted beside the open writers of this namespace. */
                adm[me] = true;
                goto n5gate
            :: else ->
                /* Refused exactly while a writer of another namespace is
                 * open (property 4). */
                assert(ADM_OTHER(0, myid) || ADM_OTHER(1, myid) ||
                       ADM_OTHER(2, myid));
                refusals++;
                hold[me] = false;
                nsh--;
                if
                :: gate == me + 1 -> gate = 0
                :: else
                fi;
                goto refused
            fi
        fi
    };
    CRASH; /* claim.exclusive */
n4:
    /* N4: no other writer handle is open; a word that is not 0 is stale,
     * whatever pidns says. */
#ifndef BROKEN_NO_RESET
    atomic {
        if
        :: wown != 0 || wdied ->
            reset_cross = wown != 0 && nsof[wown - 1] != my;
            wown = 0;
            wdied = true
        :: else
        fi
    };
#endif
    CRASH; /* claim.after-reset */
    /* SYNC(ns-claim) release, if the namespace changes. */
    if
    :: cur != myid ->
        pidns = myid;
        takeovers++
    :: else
    fi;
    if
    :: reset_cross -> cross_resets++
    :: else
    fi;
    CRASH; /* claim.after-ns */
    /* N5: downgrade, then let go of the gate. */
    atomic {
        excl = 0;
        if
        :: !hold[me] -> hold[me] = true; nsh++
        :: else
        fi;
        adm[me] = true
    };
n5gate:
    atomic {
        if
        :: gate == me + 1 -> gate = 0
        :: else
        fi
    };
opened:
#ifdef BROKEN_NO_HOLD
    /* The handle does not keep the byte: a takeover cannot see it. */
    atomic { hold[me] = false; nsh-- };
#endif
    n = 0;
    do
    :: n < LOOPS ->
        rec = false;
        /* The lock (nerve__mutex_lock): CAS on 0 or OWNER_DIED, ESRCH
         * takeover of a dead owner, else the kernel queues the locker
         * behind a live owner. */
        atomic {
            (wown == 0 || !alive[wown - 1] || nsof[wown - 1] != my) ->
            if
            :: wown == 0 -> rec = wdied
            :: else ->
                /* The kernel looks the TID up in the locker's namespace. */
                assert(nsof[wown - 1] == my);
                rec = true
            fi;
            wown = me + 1;
            wdied = false;
            incs++;
            in_cs = true
        };
        assert(incs == 1);
        if
        :: rec && takeovers > 0 && cross_resets > 0 -> cross_recoveries++
        :: else
        fi;
        CRASH;
        /* Unlock (only the owner; the word still names it). */
        atomic {
            assert(wown == me + 1);
            wown = 0;
            incs--;
            in_cs = false
        };
        n++
    :: else -> break
    od;
    /* Close: the kernel drops the byte with the last descriptor. */
    atomic {
        adm[me] = false;
        if
        :: hold[me] -> hold[me] = false; nsh--
        :: else
        fi
    };
    goto done;
killed:
    /* The process exits: the robust list frees a held word (or, with
     * GHOST, the entry was lost and the TID stays), the kernel drops its
     * OFD locks. */
    atomic {
        alive[me] = false;
        gone[me] = true;
        adm[me] = false;
        if
        :: in_cs -> incs--; in_cs = false
        :: else
        fi;
        if
        :: wown == me + 1 -> wown = 0; wdied = true
#if GHOST
        :: wown == me + 1 -> skip
#endif
        :: else
        fi;
        if
        :: hold[me] -> hold[me] = false; nsh--
        :: else
        fi;
        if
        :: excl == me + 1 -> excl = 0
        :: else
        fi;
        if
        :: gate == me + 1 -> gate = 0
        :: else
        fi
    };
refused:
done:
    gone[me] = true
}

/* Property 1: every admitted handle is of the recorded namespace. */
#define INV(i) (!adm[i] || nsid[i] == pidns)
active proctype monitor()
{
end:
    atomic {
        !(INV(0) && INV(1) && INV(NP - 1)) -> assert(false)
    }
}

init {
    byte i;
    atomic {
#if NSCFG == 0
        /* A, B, C: a restart into a new namespace while another exists. */
        nsof[0] = 1; nsof[1] = 2; nsof[2] = 3;
        nsid[0] = 1; nsid[1] = 2; nsid[2] = 3;
#elif NSCFG == 1
        /* Two writers of A (PI contention, a dead owner's TID) and C. */
        nsof[0] = 1; nsof[1] = 1; nsof[2] = 2;
        nsid[0] = 1; nsid[1] = 1; nsid[2] = 2;
#else
        /* A, B, and C started after A's end with A's inode number. */
        nsof[0] = 1; nsof[1] = 2; nsof[2] = 3;
        nsid[0] = 1; nsid[1] = 2; nsid[2] = 1;
#endif
        for (i : 0 .. NP - 1) {
            alive[i] = true
        }
        for (i : 0 .. NP - 1) {
            run writer(i)
        }
    }
    /* All writers are done: whatever survived completed its loops. */
    (_nr_pr == 2);
    /* Witnesses (check.sh: SPIN must find each): 1 a takeover from another
     * namespace; 2 a writer refused while another namespace's is open;
     * 3 a stale TID of another namespace reset and the lock recovered. */
    if
    :: takeovers > 0 -> REACH(1)
    :: else
    fi;
    if
    :: refusals > 0 -> REACH(2)
    :: else
    fi;
    if
    :: cross_recoveries > 0 -> REACH(3)
    :: else
    fi
}
