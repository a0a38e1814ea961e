/* Writers in different PID namespaces (issue 11, defect 3): containers that
 * share /dev/shm (--ipc=host) but not their PID namespace. The writer
 * lock's priority inheritance names threads by TID, which the kernel
 * resolves in the caller's namespace, so writers from a second namespace
 * are refused at open with NERVE_EXDEV; readers work from anywhere.
 *
 * The second namespace is made as `unshare --pid --fork` does:
 * unshare(CLONE_NEWPID), then fork (the child is PID 1 there). Needs
 * CAP_SYS_ADMIN; without it the test says why and is skipped. */
#include "nerve_test.h"

#include <errno.h>
#include <sched.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *c1, *c2;

/* Runs as PID 1 of a new PID namespace. */
static int in_child_ns(void)
{
    NT_EQ(getpid(), 1);
    nerve_chan *w, *r;
    /* c1's writers live in the parent's namespace: refused, with a code
     * that says why. */
    NT_RC(nerve_chan_open(c1, NERVE_O_WRITE, &w), NERVE_EXDEV);
    /* Reading works from any namespace, waits included. */
    NT_OK(nerve_chan_open(c1, NERVE_O_READ, &r));
    char buf[32];
    struct nerve_get_info gi;
    NT_OK(nerve_chan_get(r, buf, sizeof buf, 0, 0, &gi, NERVE_GET_NEWEST));
    NT_EQ(gi.len, 6);
    NT_ASSERT(memcmp(buf, "parent", 6) == 0);
    NT_RC(nerve_chan_get(r, buf, sizeof buf, 0, 1000000, &gi,
                         NERVE_GET_NEXT | NERVE_F_WAIT),
          NERVE_ETIMEDOUT);
    NT_OK(nerve_chan_close(r));
    /* c2 is first opened for writing here: this namespace owns it, and
     * its writers work here (lock, unlock, contention by two handles). */
    nerve_chan *w2;
    NT_OK(nerve_chan_open(c2, NERVE_O_WRITE, &w));
    NT_OK(nerve_chan_open(c2, NERVE_O_WRITE, &w2));
    void *p;
    NT_OK(nerve_chan_reserve(w, 5, 0, &p, 0));
    memcpy(p, "child", 5);
    NT_RC(nerve_chan_put(w2, "x", 1, 0, NULL, 0), NERVE_EDEADLK);
    NT_OK(nerve_chan_commit(w, 5, NULL));
    NT_OK(nerve_chan_close(w));
    NT_OK(nerve_chan_close(w2));
    return 0;
}

int main(void)
{
    nt_watchdog(60);
    c1 = nt_name("pidns1");
    c2 = nt_name("pidns2");
    nt_create(c1, 8, 4096);
    nt_create(c2, 8, 4096);
    nerve_chan *w;
    NT_OK(nerve_chan_open(c1, NERVE_O_WRITE, &w));
    NT_OK(nerve_chan_put(w, "parent", 6, 0, NULL, 0));

    pid_t mid = fork();
    NT_CMP(mid, >=, 0);
    if (mid == 0) {
        if (unshare(CLONE_NEWPID) != 0)
            _exit(errno == EPERM || errno == EINVAL || errno == ENOSPC ? 77
                                                                       : 1);
        pid_t k = fork();
        if (k < 0)
            _exit(1);
        if (k == 0)
            _exit(in_child_ns());
        int st;
        if (waitpid(k, &st, 0) != k)
            _exit(1);
        _exit(WIFEXITED(st) ? WEXITSTATUS(st) : 1);
    }
    int st;
    NT_EQ(waitpid(mid, &st, 0), mid);
    NT_ASSERT(WIFEXITED(st));
    int skipped = WEXITSTATUS(st) == 77;
    if (!skipped) {
        NT_EQ(WEXITSTATUS(st), 0);
        /* c2 belongs to the child's namespace now: this one may read it
         * but not write it. */
        nerve_chan *r, *w2;
        NT_RC(nerve_chan_open(c2, NERVE_O_WRITE, &w2), NERVE_EXDEV);
        NT_OK(nerve_chan_open(c2, NERVE_O_READ, &r));
        char buf[16];
        struct nerve_get_info gi;
        NT_OK(nerve_chan_get(r, buf, sizeof buf, 0, 0, &gi, NERVE_GET_NEWEST));
        NT_EQ(gi.len, 5);
        NT_ASSERT(memcmp(buf, "child", 5) == 0);
        NT_OK(nerve_chan_close(r));
    }
    /* This namespace's writers still work. */
    NT_OK(nerve_chan_put(w, "again", 5, 0, NULL, 0));
    NT_OK(nerve_chan_close(w));
    NT_OK(nerve_chan_unlink(c1));
    NT_OK(nerve_chan_unlink(c2));
    if (skipped)
        NT_SKIP_BECAUSE("unshare(CLONE_NEWPID) not permitted (needs root / "
                        "CAP_SYS_ADMIN, as `unshare --pid --fork` does)");
    printf("ok\n");
    return 0;
}
