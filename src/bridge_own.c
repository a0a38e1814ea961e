/* The own-sequence guard of the bridge kernel (include/nerve/bridge.h,
 * docs/bridge-kernel.md §3): the sequence numbers a bridge committed into
 * a channel, so that its exporter of that channel does not send them back.
 * Process-local memory only; nothing here touches a channel's file.
 *
 * The question the exporter asks is about a message it has already seen
 * committed, and the importer learns the number only from its commit, so
 * the record comes after the commit. What closes the gap is the in-flight
 * count, taken before the put:
 *
 *   importer: begin (inflight[c] += 1) -> put commits S -> record S
 *             -> inflight[c] -= 1
 *   exporter: views S -> record of S? ours : wait until inflight[c] is 0,
 *             then look again
 *
 * Invariant: begin happens before the put's commit, and the exporter's
 * view of S happens after that commit, so an exporter that has seen S
 * loads from inflight[c] a value that counts S's put (still >= 1) or one
 * written after its decrement, and the decrement comes after the record
 * (both RMWs are seq_cst: the load synchronises with the decrement), so it
 * then sees the record. A count of 0 therefore answers the question.
 *
 * Two counters, not one, so that a busy importer cannot keep the count
 * above 0 for ever (SRCU's shape): begin increments the counter `phase`
 * names and checks the phase again (retrying on the other counter if it
 * changed); an exporter that must wait flips the phase and waits for the
 * old counter only, which new puts no longer enter. A put's begin reads
 * the phase before the flip of any exporter that saw its commit, so the
 * first flip after that read drains the counter it entered. Exporters
 * flip one at a time (the mutex), and every wait is bounded by
 * NERVE_OWN_WAIT_NS: a stalled importer makes a late answer (not ours,
 * counted), never a hung exporter. */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <time.h>

#include "atomics.h"
#include "chan_internal.h"
#include "nerve/bridge.h"
#include "nerve/errors.h"
#include "platform.h"
#include "timeconv.h"

#define SPINS 64 /* looks at the count before sleeping on it */

struct nerve_own {
    nerve__a64 seq[NERVE_OWN_N]; /* the committed numbers, seq % N */
    nerve__a32 phase;            /* the counter begin enters: 0 or 1 */
    nerve__a32 inflight[2];      /* puts between begin and commit/abort */
    nerve__a32 waiting;          /* 1: an exporter sleeps on a counter */
    pthread_mutex_t flip;        /* one waiting exporter at a time */
    int undrained[2];            /* under flip: a drain of it timed out */
    nerve__a64 committed, waited, late;
};

int nerve_own_open(nerve_own **out)
{
    if (!out)
        return nerve__detail(NERVE_EINVAL, "out is NULL");
    *out = NULL;
    nerve_own *o = calloc(1, sizeof *o);
    if (!o)
        return NERVE_ENOMEM;
    (void)nerve_own_reset(o);
    pthread_mutex_init(&o->flip, NULL);
    *out = o;
    return 0;
}

int nerve_own_reset(nerve_own *o)
{
    if (!o)
        return nerve__detail(NERVE_EINVAL, "guard is NULL");
    /* Slot k holds a number that never maps to it, so an empty table
     * answers "not ours" for every number, 0 included. */
    for (uint64_t k = 0; k < NERVE_OWN_N; k++)
        nerve__store_rel(&o->seq[k], k + 1); /* SYNC(own-seq) */
    return 0;
}

int nerve_own_begin(nerve_own *o, uint32_t *token)
{
    if (!o || !token)
        return nerve__detail(NERVE_EINVAL, "guard or token is NULL");
    for (;;) {
        /* SYNC(own-flight): entered before the put's commit (see top). */
        uint32_t c = nerve__load32_sc(&o->phase);
        nerve__add32_sc(&o->inflight[c], 1);
        if (nerve__load32_sc(&o->phase) == c) {
            *token = c;
            return 0;
        }
        nerve_own_abort(o, c); /* an exporter flipped: take the new one */
    }
}

static void leave(nerve_own *o, uint32_t c)
{
    /* SYNC(own-flight): after the record, so a count of 0 shows it. */
    if (nerve__sub32_sc(&o->inflight[c], 1) == 1 &&
        nerve__load32_sc(&o->waiting))
        nerve__futex->wake_all((const uint32_t *)&o->inflight[c], 0);
}

int nerve_own_commit(nerve_own *o, uint32_t token, uint64_t seq)
{
    if (!o || token > 1)
        return nerve__detail(NERVE_EINVAL, "guard NULL or a bad token");
    /* SYNC(own-seq): the record, published by leave()'s decrement. */
    nerve__store_rel(&o->seq[seq % NERVE_OWN_N], seq);
    nerve__add_rlx(&o->committed, 1);
    leave(o, token);
    return 0;
}

int nerve_own_abort(nerve_own *o, uint32_t token)
{
    if (!o || token > 1)
        return nerve__detail(NERVE_EINVAL, "guard NULL or a bad token");
    leave(o, token);
    return 0;
}

static int recorded(const nerve_own *o, uint64_t seq)
{
    /* SYNC(own-seq) */
    return nerve__load_acq(&o->seq[seq % NERVE_OWN_N]) == seq;
}

/* Wait until inflight[c] is 0, until deadline (a CLOCK_MONOTONIC ns).
 * Not until the number asked about is recorded: the next flip relies on
 * this counter being drained, so a drain ends only when it is (0) or at
 * the bound (NERVE_ETIMEDOUT, and the counter is noted undrained). */
static int drain(nerve_own *o, uint32_t c, int64_t deadline)
{
    int rc = 0;
    for (int i = 0;; i++) {
        /* SYNC(own-flight): waiting is set before the count is loaded,
         * and leave() decrements before it loads waiting (both seq_cst),
         * so one of them sees the other: no wake is lost. */
        uint32_t n = nerve__load32_sc(&o->inflight[c]);
        if (n == 0)
            break;
        if (nerve__mono_now() >= deadline) {
            rc = NERVE_ETIMEDOUT;
            break;
        }
        if (i < SPINS) {
            sched_yield();
            continue;
        }
        struct nerve__wait_word w = {(const uint32_t *)&o->inflight[c], n, 0};
        (void)nerve__futex->wait1(&w, deadline); /* bounded by deadline */
    }
    /* A counter whose drain timed out may still hold a put that began
     * before the flip after it, so it is drained again before the next
     * "not ours" (check_wait). */
    o->undrained[c] = rc != 0;
    return rc;
}

static int lock_flip(nerve_own *o, int64_t deadline)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    int64_t left = deadline - nerve__mono_now();
    int64_t ns = ts.tv_nsec + (left > 0 ? left : 0);
    ts.tv_sec += (time_t)(ns / NERVE__NS_PER_S);
    ts.tv_nsec = (long)(ns % NERVE__NS_PER_S);
    return pthread_mutex_timedlock(&o->flip, &ts) == 0 ? 0 : NERVE_ETIMEDOUT;
}

/* The slow path: a put of this process may sit between its commit and
 * its record. Flip the phase and drain the old counter. */
static int check_wait(nerve_own *o, uint64_t seq)
{
    int64_t deadline = nerve__mono_now() + NERVE_OWN_WAIT_NS;
    nerve__add_rlx(&o->waited, 1);
    int rc = lock_flip(o, deadline);
    if (rc == 0) {
        uint32_t c = nerve__load32_sc(&o->phase);
        nerve__store32_sc(&o->phase, c ^ 1u);
        nerve__store32_sc(&o->waiting, 1);
        rc = drain(o, c, deadline);
        if (rc == 0 && o->undrained[c ^ 1u])
            rc = drain(o, c ^ 1u, deadline);
        nerve__store32_sc(&o->waiting, 0);
        pthread_mutex_unlock(&o->flip);
    }
    if (recorded(o, seq))
        return 1;
    if (rc < 0) {
        nerve__add_rlx(&o->late, 1);
        return nerve__detail(NERVE_ETIMEDOUT,
                             "a put of this process stayed in flight for "
                             "%lld ms: sequence %llu taken as not ours",
                             NERVE_OWN_WAIT_NS / 1000000,
                             (unsigned long long)seq);
    }
    return 0;
}

int nerve_own_check(nerve_own *o, uint64_t seq)
{
    if (!o)
        return nerve__detail(NERVE_EINVAL, "guard is NULL");
    if (recorded(o, seq))
        return 1;
    /* SYNC(own-flight): a count of 0 on the counter S's put entered
     * means its record is visible now (see top); look again. */
    if (nerve__load32_sc(&o->inflight[0]) == 0 &&
        nerve__load32_sc(&o->inflight[1]) == 0)
        return recorded(o, seq);
    return check_wait(o, seq);
}

int nerve_own_stat(const nerve_own *o, struct nerve_own_stats *st)
{
    if (!o || !st)
        return nerve__detail(NERVE_EINVAL, "guard or stats is NULL");
    *st = (struct nerve_own_stats){
        .committed = nerve__load_rlx(&o->committed),
        .waited = nerve__load_rlx(&o->waited),
        .late = nerve__load_rlx(&o->late),
    };
    return 0;
}

int nerve_own_close(nerve_own *o)
{
    if (o) {
        pthread_mutex_destroy(&o->flip);
        free(o);
    }
    return 0;
}
