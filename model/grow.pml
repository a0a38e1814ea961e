/* nerve channel growth: a SPIN model of GROWTH in src/chan_open.c (steps
 * G1-G5 of the grower, F1-F2 of a reader) and of its crash recovery in
 * lock_writer() (src/chan.c).
 *
 * What is modelled: channel files 1..MAXF, each with its head (the newest
 * committed sequence number), its lowest message, its superseded mark
 * SYNC(supersede), and its robust writer lock (the owner, whose death the
 * next locker is told of). `name` is the file the channel's name names.
 * Every file system call and every lock operation is one atomic step; the
 * ring's capacity is not modelled (the channel protocol's own model,
 * nerve.pml, checks overwriting), so every message stays readable: a
 * reader must see every sequence number exactly once, in order.
 *
 * Processes: NW writers, each putting PUTS messages (on EMSGSIZE nothing
 * is modelled; they follow ESUPERSEDED); NG growers, each growing the
 * channel once, killed (KILLS in all) at any step; one reader following
 * the name, which at the end also asks nerve_chan_renamed() (what an idle
 * reader does when a grower died between G4 and G5 and no writer of the
 * old file came).
 *
 * Properties (assert, and no invalid end state: no deadlock):
 *   - the sequence numbers committed, over every file, are 1, 2, 3, ...
 *     with no repeat and no gap (no commit lands in a superseded file);
 *   - the reader reads 1, 2, ... in order, each once, and ends at the last
 *     committed number.
 *
 * Knobs: NW, PUTS, NG, KILLS; BROKEN_NO_RECOVER_MARK (lock_writer() does
 * not finish a dead grower's G5: a writer of the old file commits there,
 * a number committed twice) and BROKEN_COPY_UNLOCKED (G3 before G2: a put
 * between the copy and the lock is not copied); WITNESS=k (asserts case k never
 * happens, so SPIN must find it). model/check.sh runs them. */

#ifndef NW
#define NW 2
#endif
#ifndef PUTS
#define PUTS 2
#endif
#ifndef NG
#define NG 2
#endif
#ifndef KILLS
#define KILLS 1
#endif
#define MAXF (NG + 2)
#define NPROC (NW + NG + 1)

byte name = 1;            /* the file the channel's name names */
byte nextf = 2;           /* the next file a grower makes (G1) */
byte head[MAXF];          /* newest committed seq of each file */
byte lo[MAXF];            /* its oldest message (head + 1: none) */
bit superseded[MAXF];     /* SYNC(supersede) */
byte lk[MAXF];            /* lock owner: 0 free, else process id + 1 */
bit dead[NPROC + 1];      /* by process id + 1: the owner died */
byte g_last = 0;          /* the last seq committed, over every file */
byte g_kills = 0;
byte done = 0;

#ifdef WITNESS
#define REACHED(k) assert(WITNESS != k)
#else
#define REACHED(k) skip
#endif

/* Take file f's writer lock; rec = 1 when its owner had died. */
inline lock(f, me, rec)
{
    atomic {
        (lk[f] == 0 || dead[lk[f]]) ->
        rec = (lk[f] != 0);
        lk[f] = me + 1
    }
}

inline unlock(f)
{
    lk[f] = 0
}

/* lock_writer(): lock, finish a dead grower's G5, refuse a superseded
 * file (ok = 0: ESUPERSEDED, lock released). */
inline lock_writer(f, me, ok)
{
    bit rec;
    lock(f, me, rec);
#ifndef BROKEN_NO_RECOVER_MARK
    if
    :: rec && !superseded[f] && name != f ->
        superseded[f] = 1; /* G5, for the dead grower */
        REACHED(1)
    :: else -> skip
    fi;
#endif
    if
    :: superseded[f] -> unlock(f); ok = 0
    :: else -> ok = 1
    fi
}

proctype writer(byte me)
{
    byte h = name;
    byte n = 0;
    bit ok;
    do
    :: n == PUTS -> break
    :: n < PUTS ->
        lock_writer(h, me, ok);
        if
        :: ok ->
            atomic {
                head[h]++;
                assert(head[h] == g_last + 1); /* no repeat, no gap */
                g_last = head[h]
            };
            unlock(h);
            n++
        :: else -> h = name /* F2 for a writer: follow the name */
        fi
    od;
    done++
}

/* A grower killed here leaves what it did so far: its lock, if held,
 * stays its (dead) own; an unnamed successor vanishes with it. */
#define MAY_DIE                                                              \
    if                                                                       \
    :: g_kills < KILLS -> atomic { g_kills++; dead[me + 1] = 1 }; goto out   \
    :: true -> skip                                                          \
    fi

proctype grower(byte me)
{
    byte h = name;
    byte nf;
    bit ok;
    atomic { nf = nextf; nextf++ }; /* G1: an unnamed larger file */
    MAY_DIE;
#ifdef BROKEN_COPY_UNLOCKED
    lo[nf] = lo[h];         /* G3 before G2: a put may follow the copy */
    head[nf] = head[h];
    lock_writer(h, me, ok);
    if
    :: !ok -> goto out
    :: else -> skip
    fi;
#else
    lock_writer(h, me, ok); /* G2 */
    if
    :: !ok -> goto out      /* another grower came first: follow it */
    :: else -> skip
    fi;
    MAY_DIE;
    lo[nf] = lo[h];         /* G3: every message, same numbers */
    head[nf] = head[h];
#endif
    MAY_DIE;
    name = nf;              /* G4: the rename */
    MAY_DIE;
    superseded[h] = 1;      /* G5 SYNC(supersede), then wake */
    REACHED(2);
    MAY_DIE;
    unlock(h);
out:
    done++
}

proctype reader()
{
    byte h = name;
    byte cursor = 0;
    do
    :: head[h] > cursor ->
        assert(cursor + 1 >= lo[h]); /* still present: none overwritten */
        cursor++                     /* read cursor (R1-R4) */
    :: head[h] == cursor && superseded[h] ->
        /* F1: the mark was stored after the last commit, so head is
         * final: all of h is read. F2: follow the name, keep the cursor
         * (the successor continues the numbers). */
        if
        :: head[name] >= cursor -> h = name; REACHED(3)
        fi
    :: head[h] == cursor && !superseded[h] && done == NW + NG ->
        /* Idle at the end: nerve_chan_renamed(). */
        if
        :: name != h -> h = name; REACHED(4)
        :: else -> break
        fi
    od;
    assert(cursor == g_last); /* read every message, in order */
    assert(head[name] == g_last)
}

init {
    byte i;
    lo[1] = 1;
    atomic {
        for (i : 0 .. NW - 1) { run writer(i) }
        for (i : 0 .. NG - 1) { run grower(NW + i) }
        run reader()
    }
}
