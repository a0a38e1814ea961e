/* nerve channel lifetime: a SPIN model of LIFETIME in src/chan_life.c
 * (steps K1-K2 of an opener, K3-K5 of a remover) and of the grower's hold
 * on its successor before it names it (src/chan_open.c, GROWTH's G1).
 *
 * What is modelled: channel files 1..MAXF; `name` is the file the
 * channel's name names (0: removed). Per file: linked (st_nlink > 0), the
 * shared OFD locks on its use byte (rd, a count) and the exclusive one
 * (wr). Every file system call and every lock operation is one atomic
 * step; a lock is taken never waiting (F_OFD_SETLK), as the code does.
 * A process is killed (KILLS in all) at any step: the kernel closes its
 * descriptors and so drops its OFD locks.
 *
 * Processes: NO openers (nerve_chan_open(): K1-K2, bounded TRIES, then
 * the handle held until close), NR removers (nerve_chan_remove_unused():
 * K3-K5, once each), NG growers (open, then G1: a new file, its use lock
 * held before it has a name, renamed over the name; then the old handle
 * closed and the new one held until close).
 *
 * K4 and K5 are one atomic step here, and so is a grower's check that the
 * name still names its file with the rename (G4): the RESIDUAL RACE of
 * src/chan_life.c needs a rename between K4's stat() and K5's unlink() by
 * a process that does not hold the file the name names, which only the
 * window between that check and the rename in src/chan_open.c allows;
 * both windows are two system calls that Linux cannot make one, so the
 * model leaves them out and the code says so where they are.
 *
 * Properties (assert, and no invalid end state):
 *   - a remover never removes a file that someone holds, or that an opener
 *     holds between K1 and K2 (K5: rd == 0 on the file it unlinks);
 *   - no open ends holding a file a remover unlinked (K2's recheck);
 *   - the successor a grower follows was never removed;
 *   - at the end, when every process has closed or was killed, no lock is
 *     left on any file: a channel nobody holds is removable by the next
 *     sweep (and `name` is then removed by it, asserted).
 *
 * Knobs: NO, NR, NG (two growers: the second finds the name moved on at
 * G4 and follows), KILLS, TRIES; broken variants BROKEN_NO_RECHECK (no
 * K2: an open that raced a remover holds a removed file), BROKEN_NO_K4
 * (K5 unlinks whatever the name names now: a grower's held successor),
 * BROKEN_HOLD_LATE (the grower locks its successor only after renaming it:
 * a sweep removes it first), BROKEN_LOCK_LEAKS (a killed process's locks
 * stay, as a use count in shared memory would: the channel is never
 * removable); WITNESS=k (asserts case k never happens, so SPIN must find
 * it, which proves the bounds reach it: 1 an opener's K2 finds its file
 * unlinked and opens again, 2 a remover finds the channel held (EBUSY),
 * 3 a remover's K4 finds the name moved on or removed, 4 a process killed
 * holding a lock, 5 a second grower follows the first's successor).
 * model/check.sh runs them. */

#ifndef NO
#define NO 2
#endif
#ifndef NR
#define NR 1
#endif
#ifndef NG
#define NG 1
#endif
#ifndef KILLS
#define KILLS 1
#endif
#ifndef TRIES
#define TRIES 2
#endif
#define MAXF (NG + 2)

byte name = 1;        /* the file the name names; 0: none */
byte nextf = 2;       /* the next file a grower makes (G1) */
bit linked[MAXF];     /* st_nlink > 0 */
bit removed[MAXF];    /* unlinked by a remover (K5), not by a rename */
byte rd[MAXF];        /* shared OFD locks on the use byte */
bit wr[MAXF];         /* the exclusive OFD lock on it */
byte g_kills = 0;
byte done = 0;

#ifdef WITNESS
#define REACHED(k) assert(WITNESS != k)
#else
#define REACHED(k) skip
#endif

/* Killed: the kernel closes every descriptor, and OFD locks go with the
 * last one of their open file description. */
inline die()
{
    atomic {
        g_kills++;
#ifndef BROKEN_LOCK_LEAKS
        if
        :: held != 0 -> rd[held]--; REACHED(4)
        :: else -> skip
        fi;
        if
        :: held2 != 0 -> rd[held2]--
        :: else -> skip
        fi;
        if
        :: excl != 0 -> wr[excl] = 0
        :: else -> skip
        fi;
#endif
        held = 0; held2 = 0; excl = 0
    };
    goto dead
}

/* First in each atomic step: killed before it, or it happens. */
#define MAYDIE                                                                 \
    if                                                                         \
    :: g_kills < KILLS -> die()                                                \
    :: true -> skip                                                            \
    fi

/* nerve__use_open(): f = the file held, or 0 (NERVE_ENOENT). */
inline use_open(f)
{
    byte tries = 0;
    do
    :: atomic {
        MAYDIE;
        if
        :: tries == TRIES -> f = 0; break
        :: else -> skip
        fi;
        tries++;
        f = name; /* open(): the file the name names now */
        if
        :: f == 0 -> break
        :: else -> skip
        fi
    };
        /* K1: the shared lock; EAGAIN while a remover holds it */
        atomic {
            MAYDIE;
            if
            :: wr[f] == 0 -> rd[f]++; held = f
            :: else -> skip
            fi
        };
        /* K2: locked, and still linked? Else close and open again. */
        atomic {
            MAYDIE;
#ifdef BROKEN_NO_RECHECK
            if
            :: held == f -> break
            :: else -> skip
            fi;
#else
            if
            :: held == f && linked[f] -> break
            :: held == f -> REACHED(1)
            :: else -> skip
            fi;
#endif
            if
            :: held == f -> rd[f]--; held = 0
            :: else -> skip
            fi
        }
    od;
    /* No handle stays on a removed file. */
    assert(f == 0 || !removed[f])
}

proctype opener()
{
    byte f, held = 0, held2 = 0, excl = 0;
    use_open(f);
    atomic {
        MAYDIE;
        if
        :: f != 0 -> rd[f]--; held = 0 /* nerve_chan_close() */
        :: else -> skip
        fi
    };
dead:
    done++
}

proctype remover()
{
    byte f, held = 0, held2 = 0, excl = 0;
    atomic {
        MAYDIE;
        f = name; /* K3: open by name */
        if
        :: f == 0 -> goto out
        :: else -> skip
        fi
    };
    /* K3: the exclusive lock, never waiting; EAGAIN is NERVE_EBUSY */
    atomic {
        MAYDIE;
        if
        :: rd[f] == 0 && wr[f] == 0 -> wr[f] = 1; excl = f
        :: else -> REACHED(2); goto out
        fi
    };
#if defined(BROKEN_NO_K4)
    atomic {
        MAYDIE;
        if
        :: name != 0 ->
            assert(rd[name] == 0); /* K5: nobody holds what it removes */
            removed[name] = 1; linked[name] = 0; name = 0
        :: else -> skip
        fi
    };
#else
    atomic {
        MAYDIE;
        /* K4: still the file it locked, and not removed? */
        if
        :: linked[f] && name == f ->
            assert(rd[f] == 0); /* K5: nobody holds what it removes */
            removed[f] = 1; linked[f] = 0; name = 0
        :: else -> REACHED(3)
        fi
    };
#endif
    atomic { MAYDIE; wr[f] = 0; excl = 0 }; /* close() drops the lock */
out:
dead:
    done++
}

proctype grower()
{
    byte f, j, held = 0, held2 = 0, excl = 0;
    use_open(f);
    if
    :: f == 0 -> goto dead
    :: else -> skip
    fi;
    /* G1: a new file, no name yet, and (nerve__use_hold()) its use lock
     * held before it has one */
    atomic {
        MAYDIE;
        j = nextf; nextf++;
#ifndef BROKEN_HOLD_LATE
        rd[j]++; held2 = j
#endif
    };
    atomic { /* G4: the rename over the name, if it still names f */
        MAYDIE;
        if
        :: name == f -> linked[f] = 0; name = j; linked[j] = 1
        :: else -> /* another grower's successor: follow it instead */
            REACHED(5);
            if
            :: held2 != 0 -> rd[j]--; held2 = 0
            :: else -> skip
            fi;
            goto dead_close
        fi
    };
#ifdef BROKEN_HOLD_LATE
    atomic {
        MAYDIE;
        if
        :: wr[j] == 0 -> rd[j]++; held2 = j
        :: else -> skip
        fi
    };
#endif
    /* The successor the grower follows was never removed. */
    assert(!removed[j]);
    atomic { MAYDIE; rd[f]--; held = 0 }; /* the old handle closed */
    atomic {
        MAYDIE;
        if
        :: held2 != 0 -> rd[j]--; held2 = 0
        :: else -> skip
        fi
    };
    goto dead;
dead_close:
    atomic { MAYDIE; rd[f]--; held = 0 };
dead:
    done++
}

init
{
    byte i;
    linked[1] = 1;
    atomic {
        i = 0;
        do
        :: i == NO -> break
        :: else -> run opener(); i++
        od;
        i = 0;
        do
        :: i == NR -> break
        :: else -> run remover(); i++
        od;
        i = 0;
        do
        :: i == NG -> break
        :: else -> run grower(); i++
        od
    };
    (done == NO + NR + NG);
    /* Every process closed or was killed: no lock is left anywhere. */
    i = 1;
    do
    :: i == MAXF -> break
    :: else -> assert(rd[i] == 0 && wr[i] == 0); i++
    od;
    /* So the next sweep removes what the name names (K3-K5 succeed). */
    if
    :: name != 0 -> removed[name] = 1; linked[name] = 0; name = 0
    :: else -> skip
    fi;
    assert(name == 0)
}
