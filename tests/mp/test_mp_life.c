/* Channel lifetime (src/chan_life.c, LIFETIME): a channel made with
 * NERVE_C_REMOVE_UNUSED is removed by nerve_chan_remove_unused() or
 * nerve_chan_sweep_unused() only while no handle of any process has it
 * open; a killed holder's handle stops counting; a channel without the
 * flag is never removed by them; an opener racing a remover never ends up
 * with a handle on a removed file. Pipes order the processes (no sleeps);
 * the watchdog bounds every wait. */
#include "nerve_test.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static void make(const char *name, uint32_t flags)
{
    struct nerve_chan_opts o = NERVE_CHAN_OPTS_INIT;
    o.flags = flags;
    o.slots = 8;
    o.data_size = 4096;
    NT_OK(nerve_chan_create(name, &o));
}

static int exists(const char *prefix, const char *name)
{
    char p[512];
    struct stat st;
    snprintf(p, sizeof p, "/dev/shm/%s%s", prefix, name);
    return stat(p, &st) == 0;
}

/* A child that opens `name` read-only, says so on the pipe, then waits to
 * be killed. */
static pid_t holder(const char *name)
{
    int p[2];
    NT_OK(pipe(p));
    pid_t pid = fork();
    NT_ASSERT(pid >= 0);
    if (pid == 0) {
        nerve_chan *c;
        NT_OK(nerve_chan_open(name, NERVE_O_READ, &c));
        char b = 1;
        NT_ASSERT(write(p[1], &b, 1) == 1);
        for (;;)
            pause();
    }
    char b;
    NT_ASSERT(read(p[0], &b, 1) == 1);
    close(p[0]);
    close(p[1]);
    return pid;
}

static void reap(pid_t pid, int want_signal)
{
    int st;
    NT_ASSERT(waitpid(pid, &st, 0) == pid);
    if (want_signal)
        NT_ASSERT(WIFSIGNALED(st) && WTERMSIG(st) == want_signal);
    else
        NT_ASSERT(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

static void flag_and_holders(void)
{
    /* Without the flag: never removed, as `nerve create` makes them. */
    const char *plain = nt_name("plain");
    make(plain, 0);
    nerve_chan *pc;
    struct nerve_stats pst;
    NT_OK(nerve_chan_open(plain, NERVE_O_READ, &pc));
    NT_OK(nerve_chan_stat(pc, &pst));
    NT_EQ(pst.create_flags, 0);
    NT_OK(nerve_chan_close(pc));
    NT_EQ(nerve_chan_remove_unused(plain), NERVE_EPERM);
    NT_ASSERT(exists("nerve.", plain));
    NT_OK(nerve_chan_unlink(plain));

    /* With it and unused: removed with its bell. */
    const char *f = nt_name("flag");
    make(f, NERVE_C_REMOVE_UNUSED);
    NT_ASSERT(exists("nerve-bell.", f));
    NT_OK(nerve_chan_remove_unused(f));
    NT_ASSERT(!exists("nerve.", f) && !exists("nerve-bell.", f));
    NT_EQ(nerve_chan_remove_unused(f), NERVE_ENOENT);

    /* A handle of this process, read-only, keeps it; its statistics show
     * the flag (nerve ls / info print it from there). */
    make(f, NERVE_C_REMOVE_UNUSED);
    nerve_chan *c;
    NT_OK(nerve_chan_open(f, NERVE_O_READ, &c));
    struct nerve_stats st;
    NT_OK(nerve_chan_stat(c, &st));
    NT_EQ(st.create_flags, NERVE_C_REMOVE_UNUSED);
    NT_EQ(nerve_chan_remove_unused(f), NERVE_EBUSY);
    NT_OK(nerve_chan_close(c));
    NT_OK(nerve_chan_remove_unused(f));

    /* A holder in another process keeps it; killed with SIGKILL, its
     * handle stops counting. */
    make(f, NERVE_C_REMOVE_UNUSED);
    pid_t pid = holder(f);
    NT_EQ(nerve_chan_remove_unused(f), NERVE_EBUSY);
    NT_ASSERT(exists("nerve.", f));
    NT_OK(kill(pid, SIGKILL));
    reap(pid, SIGKILL);
    NT_OK(nerve_chan_remove_unused(f));
    NT_ASSERT(!exists("nerve.", f));
}

static void sweep(void)
{
    char prefix[64];
    snprintf(prefix, sizeof prefix, "nt-%d-sweep-", (int)getpid());
    char a[96], b[96], held[96], plain[96];
    snprintf(a, sizeof a, "%sa", prefix);
    snprintf(b, sizeof b, "%sb", prefix);
    snprintf(held, sizeof held, "%sheld", prefix);
    snprintf(plain, sizeof plain, "%splain", prefix);
    make(a, NERVE_C_REMOVE_UNUSED);
    make(b, NERVE_C_REMOVE_UNUSED);
    make(held, NERVE_C_REMOVE_UNUSED);
    make(plain, 0);
    pid_t pid = holder(held);
    unsigned n = 99;
    NT_OK(nerve_chan_sweep_unused(prefix, &n));
    NT_EQ(n, 2);
    NT_ASSERT(!exists("nerve.", a) && !exists("nerve.", b));
    NT_ASSERT(exists("nerve.", held) && exists("nerve.", plain));
    NT_OK(kill(pid, SIGKILL));
    reap(pid, SIGKILL);
    NT_OK(nerve_chan_sweep_unused(prefix, &n));
    NT_EQ(n, 1);
    NT_ASSERT(!exists("nerve.", held) && exists("nerve.", plain));
    NT_OK(nerve_chan_unlink(plain));
    NT_EQ(nerve_chan_sweep_unused(NULL, &n), NERVE_EINVAL);
}

/* An opener (create if missing, open, check) racing a remover: every
 * handle the opener gets is on the file the name names: a message put
 * through it is read through a second handle opened by name. */
static void race(void)
{
    const char *r = nt_name("race");
    enum { ROUNDS = 400 };
    pid_t pid = fork();
    NT_ASSERT(pid >= 0);
    if (pid == 0) {
        for (int i = 1; i <= ROUNDS; i++) {
            nerve_chan *w = NULL, *rd = NULL;
            int e;
            do {
                struct nerve_chan_opts o = NERVE_CHAN_OPTS_INIT;
                o.flags = NERVE_C_REMOVE_UNUSED | NERVE_C_EXIST_OK;
                o.slots = 8;
                o.data_size = 4096;
                NT_OK(nerve_chan_create(r, &o));
                e = nerve_chan_open(r, NERVE_O_WRITE, &w);
                NT_ASSERT(e == 0 || e == NERVE_ENOENT);
            } while (e == NERVE_ENOENT);
            NT_OK(nerve_chan_open(r, NERVE_O_READ, &rd));
            uint64_t v = (uint64_t)i, got = 0;
            NT_OK(nerve_chan_put(w, &v, sizeof v, NERVE_FOREVER, NULL, 0));
            struct nerve_get_info gi;
            NT_OK(nerve_chan_get(rd, &got, sizeof got, 0, 0, &gi,
                                 NERVE_GET_NEWEST));
            NT_EQ(got, v);
            NT_OK(nerve_chan_close(rd));
            NT_OK(nerve_chan_close(w));
        }
        _exit(0);
    }
    unsigned removed = 0;
    int st;
    while (waitpid(pid, &st, WNOHANG) == 0) {
        int e = nerve_chan_remove_unused(r);
        NT_ASSERT(e == 0 || e == NERVE_EBUSY || e == NERVE_ENOENT);
        removed += e == 0;
    }
    NT_ASSERT(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    printf("race: %d rounds, %u removals by the sweeper\n", ROUNDS, removed);
    int e = nerve_chan_remove_unused(r);
    NT_ASSERT(e == 0 || e == NERVE_ENOENT);
    NT_ASSERT(!exists("nerve.", r) && !exists("nerve-bell.", r));
}

int main(void)
{
    nt_watchdog(120);
    flag_and_holders();
    sweep();
    race();
    printf("ok\n");
    return 0;
}
