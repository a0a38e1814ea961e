/* A NULL handle is NERVE_EBADF in every status-returning call that takes
 * one (chan.h and rt.h say so), checked before any other argument; close
 * and destroy ignore NULL. */
#include "nerve_test.h"

int main(void)
{
    nt_watchdog(30);
    char buf[8];
    void *ptr;
    uint64_t len, ready;
    struct nerve_put_info pi;
    struct nerve_get_info gi;
    struct nerve_view v;
    struct nerve_stats st;
    struct nerve_meta m;
    struct nerve_task_stats ts;

    NT_RC(nerve_chan_put(NULL, buf, 1, 0, &pi, 0), NERVE_EBADF);
    NT_RC(nerve_chan_put_at(NULL, buf, 1, 0, 0, &pi, 0), NERVE_EBADF);
    NT_RC(nerve_chan_reserve(NULL, 1, 0, &ptr, 0), NERVE_EBADF);
    NT_RC(nerve_chan_commit(NULL, 1, &pi), NERVE_EBADF);
    NT_RC(nerve_chan_commit_at(NULL, 1, 0, &pi), NERVE_EBADF);
    NT_RC(nerve_chan_abort(NULL), NERVE_EBADF);
    NT_RC(nerve_chan_ring(NULL, &ptr, &len), NERVE_EBADF);
    /* Before the other arguments are looked at. */
    NT_RC(nerve_chan_get(NULL, NULL, 8, 0, 0, &gi, 0), NERVE_EBADF);
    NT_RC(nerve_chan_get(NULL, buf, sizeof buf, 0, 0, &gi, 0xffu), NERVE_EBADF);
    NT_RC(nerve_chan_view(NULL, 0, 0, NULL, 0), NERVE_EBADF);
    NT_RC(nerve_chan_view(NULL, 0, 0, &v, 0), NERVE_EBADF);
    v.info.seq = 1;
    NT_RC(nerve_chan_view_check(NULL, &v), NERVE_EBADF);
    NT_RC(nerve_chan_stat(NULL, &st), NERVE_EBADF);
    NT_RC(nerve_chan_seq_range(NULL, &len, &len), NERVE_EBADF);
    NT_RC(nerve_chan_meta(NULL, &m), NERVE_EBADF);
    nerve_chan *none[2] = {NULL, NULL};
    NT_RC(nerve_chan_wait_any(none, 2, 0, &ready, 0), NERVE_EBADF);
    NT_OK(nerve_chan_close(NULL));

    NT_RC(nerve_task_start(NULL), NERVE_EBADF);
    NT_RC(nerve_task_run(NULL), NERVE_EBADF);
    NT_RC(nerve_task_join(NULL), NERVE_EBADF);
    NT_RC(nerve_task_stat(NULL, &ts), NERVE_EBADF);
    nerve_task_stop(NULL);
    nerve_task_close(NULL);

    /* A real handle with a bad argument is still NERVE_EINVAL. */
    const char *n = nt_name("badf");
    nt_create(n, 8, 4096);
    nerve_chan *c = NULL;
    NT_OK(nerve_chan_open(n, NERVE_O_WRITE, &c));
    NT_RC(nerve_chan_get(c, NULL, 8, 0, 0, &gi, 0), NERVE_EINVAL);
    NT_RC(nerve_chan_stat(c, NULL), NERVE_EINVAL);
    NT_RC(nerve_chan_seq_range(c, NULL, &len), NERVE_EINVAL);
    NT_RC(nerve_chan_seq_range(c, &len, NULL), NERVE_EINVAL);
    NT_RC(nerve_chan_abort(c), NERVE_EINVAL);
    NT_OK(nerve_chan_close(c));
    NT_OK(nerve_chan_unlink(n));
    printf("ok\n");
    return 0;
}
