/* Create, unlink and open + put on one name from three processes at once,
 * then a final unlink: not one file of the name may be left in /dev/shm
 * (issue 28, item 6). Before bell-before-channel (src/chan_open.c) an
 * unlink between a creator's two links left nerve-bell.NAME behind when
 * that create was the name's last (1 in 3 runs of a 3 s storm). Each
 * round's end is one chance for it, so the storm is 120 rounds of 25 ms,
 * each on its own name (on the old code it failed 3 runs of 3 here, with
 * 1 to 3 bells left); every file of the name is counted, and the
 * temporaries of the storm's processes. The bound is the watchdog.
 * On a loaded host a storm process may start after its round's time is
 * up, or stall holding the writer lock: each process's first operation
 * is its own role whatever the clock says (so every round creates), and
 * a put waits out a stalled lock holder. */
#include "nerve_test.h"

#include <dirent.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define PROCS 3
#define ROUND_NS 25000000ll
#define ROUNDS 120

struct tally {
    long creates, unlinks, opens, puts;
};

static void storm(const char *name, int64_t until, unsigned role, unsigned seed,
                  struct tally *out)
{
    struct tally t = {0, 0, 0, 0};
    struct nerve_chan_opts o = NERVE_CHAN_OPTS_INIT;
    o.slots = 4;
    o.data_size = 4096;
    int first = 1;
    while (first || nerve_clock_now_ns() < until) {
        /* Mostly its own role (0: create, 1: unlink, 2: open + put),
         * sometimes another's: a creator against an unlink that spins is
         * the interleaving that matters (an unlink between a create's two
         * links). */
        seed = seed * 1103515245u + 12345u;
        unsigned op = first || (seed >> 16) % 8 < 6 ? role : (seed >> 20) % 3;
        first = 0;
        nerve_chan *c;
        int r;
        switch (op) {
        case 0:
            r = nerve_chan_create(name, &o);
            if (r != 0 && r != NERVE_EEXIST)
                NT_FAIL("create: %s", nerve_err_name(r));
            t.creates += r == 0;
            break;
        case 1:
            r = nerve_chan_unlink(name);
            if (r != 0 && r != NERVE_ENOENT)
                NT_FAIL("unlink: %s", nerve_err_name(r));
            t.unlinks += r == 0;
            break;
        default:
            r = nerve_chan_open(name, NERVE_O_WRITE, &c);
            if (r == NERVE_ENOENT)
                break;
            if (r != 0)
                NT_FAIL("open: %s", nerve_err_name(r));
            t.opens++;
            /* Another process may hold the writer lock, and be stalled
             * holding it on a loaded host: wait for it (30 s). */
            r = nerve_chan_put(c, "storm", 5, 30000000000ll, NULL, 0);
            if (r != 0)
                NT_FAIL("put: %s", nerve_err_name(r));
            t.puts++;
            NT_OK(nerve_chan_close(c));
        }
    }
    *out = t;
}

/* Files in /dev/shm of this name (nerve.NAME, nerve-bell.NAME, anything
 * else ending in it) or temporaries of the storm's processes. */
static int leftovers(const char *name, const pid_t *pids)
{
    DIR *d = opendir("/dev/shm");
    NT_ASSERT(d != NULL);
    size_t nl = strlen(name);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        size_t el = strlen(e->d_name);
        int mine = el >= nl && strcmp(e->d_name + el - nl, name) == 0;
        for (int i = 0; i < PROCS && !mine; i++) {
            char tag[64];
            snprintf(tag, sizeof tag, "-%d-", (int)pids[i]);
            mine = strncmp(e->d_name, ".nerve-tmp-", 11) == 0 &&
                   strstr(e->d_name, tag) != NULL;
        }
        if (mine) {
            printf("left: /dev/shm/%s\n", e->d_name);
            n++;
        }
    }
    closedir(d);
    return n;
}

int main(void)
{
    nt_watchdog(240);
    /* Each storm process's counts, in memory shared with this one. */
    struct tally *tl =
        mmap(NULL, sizeof(struct tally) * PROCS, PROT_READ | PROT_WRITE,
             MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    NT_ASSERT(tl != MAP_FAILED);
    struct tally sum = {0, 0, 0, 0};
    int left = 0;
    for (int round = 0; round < ROUNDS; round++) {
        char name[NERVE_NAME_MAX + 1];
        snprintf(name, sizeof name, "%s", nt_name("storm"));
        int64_t until = nerve_clock_now_ns() + ROUND_NS;
        pid_t pids[PROCS];
        fflush(stdout); /* nothing buffered is written twice by the children */
        for (int i = 0; i < PROCS; i++) {
            pids[i] = fork();
            NT_ASSERT(pids[i] >= 0);
            if (pids[i] == 0) {
                storm(name, until, (unsigned)i,
                      (unsigned)getpid() * 2654435761u, &tl[i]);
                _exit(0);
            }
        }
        for (int i = 0; i < PROCS; i++) {
            int st;
            NT_EQ(waitpid(pids[i], &st, 0), pids[i]);
            if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
                NT_FAIL("storm process %d failed (status 0x%x)", (int)pids[i],
                        st);
            sum.creates += tl[i].creates;
            sum.unlinks += tl[i].unlinks;
            sum.opens += tl[i].opens;
        }
        /* A round's channel, created at least once, was removed by a storm
         * unlink or is removed now: either way one unlink per round. */
        int r = nerve_chan_unlink(name);
        NT_ASSERT(r == 0 || r == NERVE_ENOENT);
        sum.unlinks += r == 0;
        int n = leftovers(name, pids);
        if (n)
            printf("round %d: %d file(s) of %s left\n", round, n, name);
        left += n;
        /* Clean up for the next round and the fixture either way. */
        char path[300];
        snprintf(path, sizeof path, "/dev/shm/nerve-bell.%s", name);
        (void)unlink(path);
    }
    printf("%d rounds: %ld creates, %ld unlinks, %ld opens + puts; %d file(s) "
           "left\n",
           ROUNDS, sum.creates, sum.unlinks, sum.opens, left);
    /* Not vacuous: channels were made and removed all along. */
    NT_ASSERT(sum.creates >= ROUNDS && sum.unlinks >= ROUNDS);
    NT_EQ(left, 0);
    printf("ok\n");
    return 0;
}
