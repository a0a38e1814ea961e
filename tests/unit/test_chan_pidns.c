/* Writers in different PID namespaces (issue 11, defect 3; issue 27,
 * item 1): containers that share /dev/shm (--ipc=host) but not their PID
 * namespace, and are restarted into a fresh namespace. The writer lock's
 * priority inheritance names threads by TID, which the kernel resolves in
 * the caller's namespace, so one namespace writes a channel at a time
 * (lock.pidns); it passes to another namespace at the first writer open
 * after the last writer handle of the recorded one closed or died
 * (src/platform/linux/mutex.c, WRITERS' NAMESPACE). Readers work from
 * anywhere. Cases, each pinned below:
 *   1. a writer killed in namespace A while it holds the lock, a bystander
 *      namespace B created, a writer in the new namespace C opens and puts
 *      (recovering the lock), even though the word names a TID of A that
 *      in C is C's own writer (what a lost robust-list entry leaves), and
 *      whether or not C got A's inode number back from the kernel;
 *   2. while C's writer is open, a writer from the host and one from
 *      another new namespace are refused with NERVE_EXDEV, and reading and
 *      waiting work there;
 *   3. once C's writer exited, the host takes the channel over and puts.
 *
 * Each namespace is made as `unshare --pid --fork` does: unshare
 * (CLONE_NEWPID), then fork (the child is PID 1 there). Needs
 * CAP_SYS_ADMIN; without it the test says why and is skipped. The
 * processes talk over pipes (no sleeps); alarm() bounds every wait, so
 * "within a bounded time" is the watchdog's bound. */
#include "nerve_test.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *chan;

/* ---- a process as PID 1 of a new PID namespace ------------------------ */

struct nsproc {
    pid_t mid; /* our child: made the namespace, mirrors its init's end */
    pid_t pid; /* the namespace's PID 1, as this namespace numbers it */
    int to;    /* pipe to it */
    int from;  /* pipe from it */
};

static void put_byte(int fd, char b)
{
    if (write(fd, &b, 1) != 1)
        _exit(1);
}

/* One byte from fd; EOF (the other side is gone) ends the process. */
static char get_byte(int fd)
{
    char b;
    ssize_t n;
    while ((n = read(fd, &b, 1)) < 0 && errno == EINTR) {
    }
    if (n != 1) {
        fprintf(stderr, "pipe closed\n");
        exit(1);
    }
    return b;
}

/* Run fn(in, out) as PID 1 of a new PID namespace. Returns 0, or 77 when
 * the namespace cannot be made. */
static int ns_start(struct nsproc *p, int (*fn)(int in, int out))
{
    int down[2], up[2], pid_pipe[2];
    NT_OK(pipe(down));
    NT_OK(pipe(up));
    NT_OK(pipe(pid_pipe));
    fflush(NULL);
    p->mid = fork();
    NT_CMP(p->mid, >=, 0);
    if (p->mid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        close(down[1]);
        close(up[0]);
        close(pid_pipe[0]);
        if (unshare(CLONE_NEWPID) != 0)
            _exit(errno == EPERM || errno == EINVAL || errno == ENOSPC ? 77
                                                                       : 1);
        pid_t k = fork();
        if (k < 0)
            _exit(1);
        if (k == 0) {
            prctl(PR_SET_PDEATHSIG, SIGKILL);
            close(pid_pipe[1]);
            nt_watchdog(60);
            if (getpid() != 1)
                _exit(1);
            _exit(fn(down[0], up[1]));
        }
        if (write(pid_pipe[1], &k, sizeof k) != sizeof k)
            _exit(1);
        int st;
        if (waitpid(k, &st, 0) != k)
            _exit(1);
        if (WIFSIGNALED(st))
            kill(getpid(), WTERMSIG(st)); /* mirror a kill */
        _exit(WIFEXITED(st) ? WEXITSTATUS(st) : 1);
    }
    close(down[0]);
    close(up[1]);
    close(pid_pipe[1]);
    p->to = down[1];
    p->from = up[0];
    ssize_t n = read(pid_pipe[0], &p->pid, sizeof p->pid);
    close(pid_pipe[0]);
    if (n != (ssize_t)sizeof p->pid) {
        int st;
        NT_EQ(waitpid(p->mid, &st, 0), p->mid);
        NT_ASSERT(WIFEXITED(st));
        NT_EQ(WEXITSTATUS(st), 77);
        close(p->to);
        close(p->from);
        return 77;
    }
    return 0;
}

/* Wait for the namespace's init; returns its wait status (a kill of the
 * init shows as that signal). */
static int ns_wait(struct nsproc *p)
{
    int st;
    NT_EQ(waitpid(p->mid, &st, 0), p->mid);
    close(p->to);
    close(p->from);
    return st;
}

static void ns_done(struct nsproc *p)
{
    int st = ns_wait(p);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
        NT_FAIL("namespace process ended with status 0x%x", st);
}

static uint64_t my_pidns(void)
{
    struct stat st;
    NT_OK(stat("/proc/self/ns/pid", &st));
    return (uint64_t)st.st_ino;
}

static void send_ns(int out)
{
    uint64_t ns = my_pidns();
    if (write(out, &ns, sizeof ns) != sizeof ns)
        _exit(1);
}

static uint64_t recv_ns(struct nsproc *p)
{
    uint64_t ns;
    NT_EQ(read(p->from, &ns, sizeof ns), (ssize_t)sizeof ns);
    return ns;
}

/* ---- the namespaces' programs ----------------------------------------- */

/* A: writes, then dies (killed by the test) holding the lock. */
static int writer_a(int in, int out)
{
    nerve_chan *w;
    NT_OK(nerve_chan_open(chan, NERVE_O_WRITE, &w));
    NT_OK(nerve_chan_put(w, "A1", 2, 0, NULL, 0));
    void *p;
    NT_OK(nerve_chan_reserve(w, 8, 0, &p, 0));
    memcpy(p, "A-unseen", 8);
    send_ns(out);
    put_byte(out, 'h'); /* holding the lock */
    (void)get_byte(in); /* killed here */
    return 1;
}

/* B: a bystander namespace that exists meanwhile and writes nothing. */
static int bystander(int in, int out)
{
    send_ns(out);
    (void)get_byte(in);
    return 0;
}

/* C: the restarted writer. */
static int writer_c(int in, int out)
{
    send_ns(out);
    nerve_chan *w;
    NT_OK(nerve_chan_open(chan, NERVE_O_WRITE, &w));
    struct nerve_put_info pi;
    NT_OK(nerve_chan_put(w, "C1", 2, NERVE_FOREVER, &pi, 0));
    /* The lock was taken from a dead owner; A's reservation never shows. */
    NT_EQ(pi.recovered, 1);
    NT_EQ(pi.seq, 2);
    char buf[16];
    struct nerve_get_info gi;
    NT_OK(nerve_chan_get(w, buf, sizeof buf, 0, 0, &gi, NERVE_GET_NEWEST));
    NT_EQ(gi.seq, 2);
    NT_ASSERT(gi.len == 2 && memcmp(buf, "C1", 2) == 0);
    /* The lock works for this namespace's threads: a second handle sees
     * the first one's reservation as the caller's own (EDEADLK). */
    nerve_chan *w2;
    NT_OK(nerve_chan_open(chan, NERVE_O_WRITE, &w2));
    void *p;
    NT_OK(nerve_chan_reserve(w, 2, 0, &p, 0));
    memcpy(p, "C2", 2);
    NT_RC(nerve_chan_put(w2, "x", 1, 0, NULL, 0), NERVE_EDEADLK);
    NT_OK(nerve_chan_commit(w, 2, NULL));
    NT_OK(nerve_chan_close(w2));
    put_byte(out, 'w'); /* writing; the others must be refused now */
    (void)get_byte(in);
    NT_OK(nerve_chan_put(w, "C3", 2, 0, NULL, 0));
    NT_OK(nerve_chan_close(w));
    return 0;
}

/* D: a writer in yet another namespace while C's is open: refused; its
 * reader reads and waits. */
static int refused(int in, int out)
{
    (void)in;
    nerve_chan *w, *r;
    NT_RC(nerve_chan_open(chan, NERVE_O_WRITE, &w), NERVE_EXDEV);
    NT_OK(nerve_chan_open(chan, NERVE_O_READ, &r));
    char buf[16];
    struct nerve_get_info gi;
    NT_OK(nerve_chan_get(r, buf, sizeof buf, 0, 0, &gi, NERVE_GET_NEWEST));
    NT_ASSERT(gi.len == 2 && memcmp(buf, "C2", 2) == 0);
    NT_RC(nerve_chan_get(r, buf, sizeof buf, 0, 1000000, &gi,
                         NERVE_GET_NEXT | NERVE_F_WAIT),
          NERVE_ETIMEDOUT);
    NT_OK(nerve_chan_close(r));
    put_byte(out, 'd');
    return 0;
}

/* The lock word, to plant what a lost robust-list entry leaves. */
static volatile uint32_t *lock_word(void)
{
    return (volatile uint32_t *)((char *)nt_map_header(chan) + 128);
}

/* 3. C's writer is gone: the host takes over, writes the fifth message
 * after those of A and C, and finds the lock healthy. */
static void host_takes_over(void)
{
    nerve_chan *w, *r;
    char msg[256];
    NT_OK(nerve_chan_open(chan, NERVE_O_WRITE, &w));
    struct nerve_put_info pi;
    NT_OK(nerve_chan_put(w, "host", 4, 0, &pi, 0));
    NT_EQ(pi.seq, 5);
    NT_OK(nerve_chan_open(chan, NERVE_O_READ, &r));
    char buf[16];
    struct nerve_get_info gi;
    static const char *const want[] = {"A1", "C1", "C2", "C3", "host"};
    for (uint64_t s = 1; s <= 5; s++) {
        NT_OK(nerve_chan_get(r, buf, sizeof buf, s, 0, &gi, NERVE_GET_SEQ));
        NT_ASSERT(gi.len == strlen(want[s - 1]) &&
                  memcmp(buf, want[s - 1], gi.len) == 0);
    }
    /* A channel check from here sees a healthy lock. */
    NT_OK(nerve_chan_check(chan, msg, sizeof msg));
    if (!strstr(msg, "writer lock: free"))
        NT_FAIL("nerve_chan_check: %s", msg);
    NT_OK(nerve_chan_close(r));
    NT_OK(nerve_chan_close(w));
    NT_OK(nerve_chan_unlink(chan));
}

int main(void)
{
    nt_watchdog(60);
    chan = nt_name("pidns");
    nt_create(chan, 8, 4096);
    volatile uint32_t *word = lock_word();

    /* 1. A writes and dies holding the lock. */
    struct nsproc a, b, c, d;
    if (ns_start(&a, writer_a) == 77) {
        NT_OK(nerve_chan_unlink(chan));
        NT_SKIP_BECAUSE("unshare(CLONE_NEWPID) not permitted (needs root / "
                        "CAP_SYS_ADMIN, as `unshare --pid --fork` does)");
    }
    uint64_t ns_a = recv_ns(&a);
    NT_EQ(get_byte(a.from), 'h');
    NT_EQ(*word & 0x3fffffffu, 1u); /* PID 1 of A holds it */
    NT_OK(kill(a.pid, SIGKILL));
    int st = ns_wait(&a);
    NT_ASSERT(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
    /* A's robust list freed the word. Make it what a lost entry leaves:
     * it names TID 1 -- in C, C's own writer, which would take the lock
     * for its own (EDEADLK) if the word were used across namespaces. */
    *word = 1;
    /* The host cannot look up A's TID, but sees that no writer is open. */
    char msg[256];
    NT_OK(nerve_chan_check(chan, msg, sizeof msg));
    if (!strstr(msg, "another PID namespace, which has no writer open"))
        NT_FAIL("nerve_chan_check: %s", msg);
    NT_EQ(ns_start(&b, bystander), 0);
    uint64_t ns_b = recv_ns(&b);

    /* The restart, in a namespace of its own. */
    NT_EQ(ns_start(&c, writer_c), 0);
    uint64_t ns_c = recv_ns(&c);
    NT_EQ(get_byte(c.from), 'w');
    printf("namespaces: A %llu, bystander %llu, C %llu, host %llu\n",
           (unsigned long long)ns_a, (unsigned long long)ns_b,
           (unsigned long long)ns_c, (unsigned long long)my_pidns());
    /* C may have A's inode number (the kernel reuses a gone namespace's
     * number; the bystander usually takes it first): then the header
     * cannot tell C from A, and the stale word is reset because no writer
     * was open. Either way C wrote above. */
    NT_ASSERT(ns_c != ns_b && ns_a != my_pidns());
    if (ns_c == ns_a)
        printf("C reused A's namespace number\n");

    /* 2. While C writes: the host and another namespace are refused. */
    nerve_chan *w;
    NT_RC(nerve_chan_open(chan, NERVE_O_WRITE, &w), NERVE_EXDEV);
    NT_EQ(ns_start(&d, refused), 0);
    NT_EQ(get_byte(d.from), 'd');
    ns_done(&d);
    put_byte(c.to, 'x');
    ns_done(&c);
    put_byte(b.to, 'x');
    ns_done(&b);

    host_takes_over();
    printf("ok\n");
    return 0;
}
