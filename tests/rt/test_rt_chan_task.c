/* Channel-driven tasks: the loop wakes for each message (NEXT walks every
 * one, in order), a deadline without a message calls the body with
 * NERVE_ETIMEDOUT and counts it, and a task waiting without a deadline is
 * stopped at once from another thread (its handle is cancelled and then
 * un-cancelled). */
#include <pthread.h>
#include <semaphore.h>

#include <nerve/rt.h>

#include "nerve_test.h"

#define MS 1000000LL
#define NMSG 200

struct rx {
    uint64_t got, last_counter, timeouts, bad;
    uint64_t stop_after_timeouts;
    sem_t ready;
};

static int rx_body(void *p, const struct nerve_task_tick *tk)
{
    struct rx *a = p;
    if (tk->msg_status == NERVE_ETIMEDOUT) {
        a->timeouts++;
        if (tk->msg != NULL)
            a->bad++;
        return a->stop_after_timeouts && a->timeouts >= a->stop_after_timeouts;
    }
    if (tk->msg_status != 0 || tk->msg == NULL)
        return NERVE_ECORRUPT;
    uint32_t id;
    uint64_t counter;
    if (!nt_payload_check(tk->msg, (size_t)tk->msg_info.len, &id, &counter))
        a->bad++;
    /* The release of a message is its commit time. */
    if (tk->release_ns != tk->msg_info.time_ns)
        a->bad++;
    if (counter != a->last_counter + 1)
        a->bad++;
    a->last_counter = counter;
    a->got++;
    return a->got >= NMSG ? 1 : 0;
}

struct tx {
    const char *name;
    sem_t *go;
};

static void *writer(void *p)
{
    struct tx *w = p;
    nerve_chan *c;
    if (nerve_chan_open(w->name, NERVE_O_WRITE, &c) != 0)
        return (void *)1;
    while (sem_wait(w->go) != 0) {
    }
    unsigned char buf[256];
    for (uint64_t i = 1; i <= NMSG; i++) {
        nt_payload_fill(buf, 64 + (size_t)(i % 150), 7, i);
        if (nerve_chan_put(c, buf, 64 + (size_t)(i % 150), NERVE_FOREVER, NULL,
                           0) != 0)
            return (void *)1;
    }
    nerve_chan_close(c);
    return NULL;
}

static void test_every_message(void)
{
    /* The ring holds every message, so NEXT must see all of them. */
    const char *name = nt_name("rx");
    nt_create(name, 512, 1 << 20);
    nerve_chan *c;
    NT_OK(nerve_chan_open(name, NERVE_O_READ, &c));
    struct rx a;
    memset(&a, 0, sizeof a);
    struct nerve_task_opts o = NERVE_TASK_OPTS_INIT;
    o.chan = c;
    o.chan_which = NERVE_GET_NEXT;
    o.deadline_ns = 10000 * MS; /* generous; only a safety net */
    nerve_task *t;
    NT_OK(nerve_task_open(&o, rx_body, &a, &t));
    sem_t go;
    sem_init(&go, 0, 0);
    struct tx w = {name, &go};
    pthread_t th;
    NT_OK(pthread_create(&th, NULL, writer, &w));
    NT_OK(nerve_task_start(t));
    sem_post(&go);
    NT_OK(nerve_task_join(t));
    void *wr;
    pthread_join(th, &wr);
    NT_ASSERT(wr == NULL);
    NT_EQ(a.got, NMSG);
    NT_EQ(a.bad, 0);
    struct nerve_task_stats st;
    NT_OK(nerve_task_stat(t, &st));
    NT_EQ(st.cycles, NMSG + a.timeouts);
    NT_EQ(st.missed, 0);
    NT_EQ(st.latency.n, NMSG);
    NT_EQ(st.abs_err.n, 0); /* no clock: no absolute error */
    NT_CMP(st.latency.min_ns, >=, 0);
    nerve_task_close(t);
    nerve_chan_close(c);
    NT_OK(nerve_chan_unlink(name));
    sem_destroy(&go);
}

static void test_deadline(void)
{
    const char *name = nt_name("dl");
    nt_create(name, 16, 4096);
    nerve_chan *c;
    NT_OK(nerve_chan_open(name, NERVE_O_READ, &c));
    struct rx a;
    memset(&a, 0, sizeof a);
    a.stop_after_timeouts = 3;
    struct nerve_task_opts o = NERVE_TASK_OPTS_INIT;
    o.chan = c;
    o.chan_which = NERVE_GET_NEWEST;
    o.deadline_ns = 5 * MS;
    nerve_task *t;
    NT_OK(nerve_task_open(&o, rx_body, &a, &t));
    NT_OK(nerve_task_run(t));
    NT_EQ(a.timeouts, 3);
    NT_EQ(a.bad, 0);
    struct nerve_task_stats st;
    NT_OK(nerve_task_stat(t, &st));
    NT_EQ(st.timeouts, 3);
    NT_EQ(st.cycles, 3);
    nerve_task_close(t);

    /* No deadline and no writer: only a stop ends the wait. */
    memset(&a, 0, sizeof a);
    o.deadline_ns = 0;
    NT_OK(nerve_task_open(&o, rx_body, &a, &t));
    NT_OK(nerve_task_start(t));
    nerve_task_stop(t);
    NT_OK(nerve_task_join(t));
    NT_OK(nerve_task_stat(t, &st));
    NT_EQ(st.cycles, 0);
    nerve_task_close(t);
    /* The handle was un-cancelled: a get polls normally again. */
    char buf[64];
    NT_RC(nerve_chan_get(c, buf, sizeof buf, 0, 0, NULL, NERVE_GET_NEWEST),
          NERVE_EAGAIN);

    /* msg_max smaller than a message: the loop ends with EMSGSIZE. */
    nerve_chan *wc;
    NT_OK(nerve_chan_open(name, NERVE_O_WRITE, &wc));
    char big[100] = {0};
    NT_OK(nerve_chan_put(wc, big, sizeof big, NERVE_FOREVER, NULL, 0));
    o.msg_max = 10;
    NT_OK(nerve_task_open(&o, rx_body, &a, &t));
    NT_RC(nerve_task_run(t), NERVE_EMSGSIZE);
    nerve_task_close(t);
    nerve_chan_close(wc);
    nerve_chan_close(c);
    NT_OK(nerve_chan_unlink(name));
}

int main(void)
{
    nt_watchdog(50);
    test_every_message();
    test_deadline();
    printf("ok: channel-driven tasks\n");
    return 0;
}
