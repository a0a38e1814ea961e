/* The bridge kernel's own-sequence guard (nerve_own_*, include/nerve/
 * bridge.h): bad input, the table's wrap, a stalled importer (a bounded,
 * counted "late" answer), and a stress: an importer thread (begin, put,
 * commit) and a foreign writer put into one channel while an exporter
 * thread classifies every message; every importer message must be ours
 * and every foreign one not. */
#include "nerve_test.h"

#include <pthread.h>
#include <sched.h>

/* Messages per writer in the stress: all of them within NERVE_OWN_N
 * sequence numbers, so that a lagging exporter still finds every record. */
#define EACH 2000

static void bad_input(void)
{
    nerve_own *o;
    uint32_t tok;
    struct nerve_own_stats st;
    NT_RC(nerve_own_open(NULL), NERVE_EINVAL);
    NT_OK(nerve_own_open(&o));
    NT_RC(nerve_own_begin(NULL, &tok), NERVE_EINVAL);
    NT_RC(nerve_own_begin(o, NULL), NERVE_EINVAL);
    NT_RC(nerve_own_commit(NULL, 0, 1), NERVE_EINVAL);
    NT_RC(nerve_own_commit(o, 2, 1), NERVE_EINVAL);
    NT_RC(nerve_own_abort(NULL, 0), NERVE_EINVAL);
    NT_RC(nerve_own_abort(o, 7), NERVE_EINVAL);
    NT_RC(nerve_own_check(NULL, 1), NERVE_EINVAL);
    NT_ASSERT(nerve_err_detail(NERVE_EINVAL)[0] != '\0');
    NT_RC(nerve_own_stat(NULL, &st), NERVE_EINVAL);
    NT_RC(nerve_own_stat(o, NULL), NERVE_EINVAL);
    NT_RC(nerve_own_reset(NULL), NERVE_EINVAL);
    NT_OK(nerve_own_close(o));
    NT_OK(nerve_own_close(NULL));
}

static void commit_one(nerve_own *o, uint64_t seq)
{
    uint32_t tok;
    NT_OK(nerve_own_begin(o, &tok));
    NT_OK(nerve_own_commit(o, tok, seq));
}

static void table(void)
{
    nerve_own *o;
    NT_OK(nerve_own_open(&o));
    /* Empty: nothing is ours, whatever slot the number maps to. */
    for (uint64_t s = 0; s <= NERVE_OWN_N + 1; s++)
        NT_EQ(nerve_own_check(o, s), 0);
    NT_EQ(nerve_own_check(o, UINT64_MAX), 0);
    for (uint64_t s = 1; s <= NERVE_OWN_N; s++)
        commit_one(o, s);
    NT_EQ(nerve_own_check(o, 1), 1);
    NT_EQ(nerve_own_check(o, NERVE_OWN_N), 1);
    NT_EQ(nerve_own_check(o, NERVE_OWN_N + 1), 0);
    /* The wrap: N + 1 takes number 1's place. */
    commit_one(o, NERVE_OWN_N + 1);
    NT_EQ(nerve_own_check(o, NERVE_OWN_N + 1), 1);
    NT_EQ(nerve_own_check(o, 1), 0);
    NT_EQ(nerve_own_check(o, 2), 1);
    commit_one(o, UINT64_MAX);
    NT_EQ(nerve_own_check(o, UINT64_MAX), 1);
    /* A failed put records nothing and leaves nothing in flight. */
    uint32_t tok;
    NT_OK(nerve_own_begin(o, &tok));
    NT_OK(nerve_own_abort(o, tok));
    NT_EQ(nerve_own_check(o, 1u << 20), 0);
    /* A channel made again: nothing of the old one is ours. */
    NT_OK(nerve_own_reset(o));
    NT_EQ(nerve_own_check(o, 2), 0);
    NT_EQ(nerve_own_check(o, UINT64_MAX), 0);
    struct nerve_own_stats st;
    NT_OK(nerve_own_stat(o, &st));
    NT_EQ(st.committed, NERVE_OWN_N + 2);
    NT_EQ(st.late, 0);
    NT_OK(nerve_own_close(o));
}

/* An importer stalled between its commit and nerve_own_commit(): the
 * exporter's answers come at the bound, as not ours, and are counted; a
 * later put is judged right again. */
static void stalled(void)
{
    nerve_own *o;
    uint32_t tok, tok2;
    struct nerve_own_stats st;
    NT_OK(nerve_own_open(&o));
    NT_OK(nerve_own_begin(o, &tok));
    NT_RC(nerve_own_check(o, 10), NERVE_ETIMEDOUT);
    NT_ASSERT(nerve_err_detail(NERVE_ETIMEDOUT)[0] != '\0');
    NT_RC(nerve_own_check(o, 11), NERVE_ETIMEDOUT);
    NT_OK(nerve_own_stat(o, &st));
    NT_EQ(st.late, 2);
    NT_EQ(st.waited, 2);
    /* Another put, begun while the first is still stalled, finishes. */
    NT_OK(nerve_own_begin(o, &tok2));
    NT_OK(nerve_own_commit(o, tok2, 12));
    NT_EQ(nerve_own_check(o, 12), 1);
    NT_OK(nerve_own_commit(o, tok, 10));
    NT_EQ(nerve_own_check(o, 10), 1);
    NT_EQ(nerve_own_check(o, 11), 0);
    NT_OK(nerve_own_stat(o, &st));
    NT_EQ(st.late, 2);
    NT_OK(nerve_own_close(o));
}

struct stress {
    const char *name;
    nerve_chan *r; /* the exporter's, opened before any put */
    nerve_own *own;
    uint64_t ours, theirs, late;
};

static void *importer(void *arg)
{
    struct stress *s = arg;
    nerve_chan *w;
    NT_OK(nerve_chan_open(s->name, NERVE_O_WRITE, &w));
    for (int i = 0; i < EACH; i++) {
        uint32_t tok;
        struct nerve_put_info pi;
        NT_OK(nerve_own_begin(s->own, &tok));
        NT_OK(nerve_chan_put(w, "I", 1, NERVE_FOREVER, &pi, 0));
        if (i % 5 == 0)
            sched_yield(); /* widen the gap the exporter must wait out */
        NT_OK(nerve_own_commit(s->own, tok, pi.seq));
    }
    NT_OK(nerve_chan_close(w));
    return NULL;
}

static void *foreign(void *arg)
{
    struct stress *s = arg;
    nerve_chan *w;
    NT_OK(nerve_chan_open(s->name, NERVE_O_WRITE, &w));
    for (int i = 0; i < EACH; i++)
        NT_OK(nerve_chan_put(w, "F", 1, NERVE_FOREVER, NULL, 0));
    NT_OK(nerve_chan_close(w));
    return NULL;
}

static void *exporter(void *arg)
{
    struct stress *s = arg;
    nerve_chan *r = s->r;
    for (int n = 0; n < 2 * EACH; n++) {
        char tag;
        struct nerve_get_info gi;
        NT_OK(nerve_chan_get(r, &tag, 1, NERVE_GET_NEXT, 30 * 1000000000LL, &gi,
                             NERVE_F_WAIT));
        NT_EQ(gi.missed, 0);
        int rc = nerve_own_check(s->own, gi.seq);
        if (rc == NERVE_ETIMEDOUT) {
            s->late++; /* a stalled importer thread on a loaded host */
            rc = 0;
        }
        if (rc != (tag == 'I'))
            NT_FAIL("message %llu put by %s judged %s",
                    (unsigned long long)gi.seq,
                    tag == 'I' ? "the importer" : "the foreign writer",
                    rc ? "ours" : "not ours");
        *(rc ? &s->ours : &s->theirs) += 1;
    }
    return NULL;
}

static void stress(void)
{
    struct stress s = {.name = nt_name("own")};
    nt_create(s.name, 4 * EACH, 256 * EACH); /* holds every message */
    NT_OK(nerve_chan_open(s.name, NERVE_O_READ, &s.r));
    NT_OK(nerve_own_open(&s.own));
    pthread_t t[3];
    NT_ASSERT(pthread_create(&t[0], NULL, exporter, &s) == 0);
    NT_ASSERT(pthread_create(&t[1], NULL, importer, &s) == 0);
    NT_ASSERT(pthread_create(&t[2], NULL, foreign, &s) == 0);
    for (int i = 0; i < 3; i++)
        NT_ASSERT(pthread_join(t[i], NULL) == 0);
    struct nerve_own_stats st;
    NT_OK(nerve_own_stat(s.own, &st));
    printf("stress: %llu ours, %llu not, %llu checks waited, %llu late\n",
           (unsigned long long)s.ours, (unsigned long long)s.theirs,
           (unsigned long long)st.waited, (unsigned long long)s.late);
    NT_EQ(s.ours, EACH);
    NT_EQ(s.theirs, EACH);
    NT_EQ(st.late, s.late);
    NT_OK(nerve_own_close(s.own));
    NT_OK(nerve_chan_close(s.r));
    NT_OK(nerve_chan_unlink(s.name));
}

int main(void)
{
    nt_watchdog(120);
    bad_input();
    table();
    stalled();
    stress();
    printf("ok\n");
    return 0;
}
