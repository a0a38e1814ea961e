/* A creator killed at any point of nerve_chan_create leaves no temporary
 * file and never a half-made channel: killed after filling its files it
 * leaves nothing; killed between linking the bell and the channel
 * (bell-before-channel, src/chan_open.c) it leaves an orphaned bell, which
 * check reports and the next unlink or create of the name removes. An
 * unlink killed between removing the channel and its bell leaves the same.
 * Where files cannot be made unnamed (no O_TMPFILE or /proc; forced here)
 * the named temporaries of a killed creator are swept by the next create.
 * Uses the crash-point build (crashpoint.h) and its internal hooks. */
#include "nerve_test.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* Internal (crashpoint.h, platform.h); declared here as tests do. */
void nerve__crashpoint_arm(const char *name, long skip);
extern int nerve__shm_force_named_tmp;

/* Apply fn to every .nerve-tmp file of creator `pid`; returns the count. */
static int for_tmp(pid_t pid, int (*fn)(const char *path))
{
    DIR *d = opendir("/dev/shm");
    NT_ASSERT(d != NULL);
    char tag[64];
    snprintf(tag, sizeof tag, "-%d-", (int)pid);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (strncmp(e->d_name, ".nerve-tmp-", 11) != 0 ||
            strstr(e->d_name, tag) == NULL)
            continue;
        n++;
        if (fn) {
            char path[512];
            snprintf(path, sizeof path, "/dev/shm/%s", e->d_name);
            NT_EQ(fn(path), 0);
        }
    }
    closedir(d);
    return n;
}

/* Make a temporary look abandoned long ago (the sweep spares young ones,
 * which may belong to a creator in another PID namespace). */
static int age(const char *path)
{
    struct timespec t[2] = {{0, UTIME_OMIT}, {time(NULL) - 3600, 0}};
    return utimensat(AT_FDCWD, path, t, 0);
}

static pid_t killed_create(const char *name, const char *point, int named)
{
    pid_t pid = fork();
    NT_ASSERT(pid >= 0);
    if (pid == 0) {
        nerve__shm_force_named_tmp = named;
        nerve__crashpoint_arm(point, 0);
        struct nerve_chan_opts o = NERVE_CHAN_OPTS_INIT;
        o.data_size = 8u << 20; /* a temporary worth leaking */
        int r = nerve_chan_create(name, &o);
        fprintf(stderr, "create returned %d, not killed at %s\n", r, point);
        _exit(2);
    }
    int status;
    NT_EQ(waitpid(pid, &status, 0), pid);
    NT_ASSERT(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
    return pid;
}

static void crash_points(int named)
{
    const char *n = nt_name(named ? "named" : "unnamed");
    char path[256], msg[256];
    snprintf(path, sizeof path, "/dev/shm/nerve.%s", n);

    /* Killed with both files complete but not linked. */
    pid_t pid = killed_create(n, "create.filled", named);
    NT_ASSERT(access(path, F_OK) != 0);
    if (!named) {
        NT_EQ(for_tmp(pid, NULL), 0); /* unnamed files vanish with it */
    } else {
        NT_EQ(for_tmp(pid, NULL), 2);
        /* Young temporaries are spared by the sweep ... */
        nt_create(n, 8, 4096);
        NT_EQ(for_tmp(pid, NULL), 2);
        NT_OK(nerve_chan_unlink(n));
        /* ... abandoned ones are removed by the next create. */
        NT_EQ(for_tmp(pid, age), 2);
        nt_create(n, 8, 4096);
        NT_EQ(for_tmp(pid, NULL), 0);
        NT_OK(nerve_chan_unlink(n));
    }

    /* Killed between the bell's link and the channel's: an orphaned bell,
     * reported by check and removed by unlink (ENOENT: no channel). */
    char bell[256];
    snprintf(bell, sizeof bell, "/dev/shm/nerve-bell.%s", n);
    pid = killed_create(n, "create.bell-linked", named);
    pid_t first = pid;
    NT_ASSERT(access(path, F_OK) != 0);
    NT_EQ(access(bell, F_OK), 0);
    if (named) /* the channel's temporary and the bell's temporary name */
        NT_EQ(for_tmp(pid, age), 2);
    NT_RC(nerve_chan_check(n, msg, sizeof msg), NERVE_ENOENT);
    if (strstr(msg, "orphaned bell") == NULL)
        NT_FAIL("check: '%s'", msg);
    NT_RC(nerve_chan_unlink(n), NERVE_ENOENT);
    NT_ASSERT(access(bell, F_OK) != 0);
    NT_RC(nerve_chan_check(n, msg, sizeof msg), NERVE_ENOENT);
    NT_ASSERT(strstr(msg, "orphaned bell") == NULL);
    /* Again, and this time the next create meets the orphan: it takes its
     * name over, and the channel has its own, working bell. */
    pid = killed_create(n, "create.bell-linked", named);
    NT_EQ(access(bell, F_OK), 0);
    if (named)
        NT_EQ(for_tmp(pid, age), 2);
    nt_create(n, 8, 4096); /* also sweeps the aged temporaries */
    NT_EQ(for_tmp(first, NULL), 0);
    NT_OK(nerve_chan_check(n, msg, sizeof msg));
    if (strcmp(msg, "ok; writer lock: free") != 0)
        NT_FAIL("check: '%s'", msg);
    nerve_chan *w;
    NT_OK(nerve_chan_open(n, NERVE_O_WRITE, &w));
    NT_OK(nerve_chan_put(w, "x", 1, 0, NULL, 0));
    nerve_chan_close(w);
    /* An unlink killed between the channel and the bell. */
    pid_t upid = fork();
    NT_ASSERT(upid >= 0);
    if (upid == 0) {
        nerve__crashpoint_arm("unlink.channel-removed", 0);
        int r = nerve_chan_unlink(n);
        fprintf(stderr, "unlink returned %d, not killed\n", r);
        _exit(2);
    }
    int status;
    NT_EQ(waitpid(upid, &status, 0), upid);
    NT_ASSERT(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
    NT_ASSERT(access(path, F_OK) != 0);
    NT_EQ(access(bell, F_OK), 0);
    NT_RC(nerve_chan_check(n, msg, sizeof msg), NERVE_ENOENT);
    NT_ASSERT(strstr(msg, "orphaned bell") != NULL);
    NT_RC(nerve_chan_unlink(n), NERVE_ENOENT);
    NT_ASSERT(access(bell, F_OK) != 0);
    NT_EQ(for_tmp(pid, NULL), 0);
}

int main(void)
{
    nt_watchdog(120);
    crash_points(0);
    crash_points(1);
    /* The named fallback makes complete channels too. */
    nerve__shm_force_named_tmp = 1;
    const char *n = nt_name("fallback");
    nt_create(n, 8, 4096);
    char msg[256];
    NT_OK(nerve_chan_check(n, msg, sizeof msg));
    NT_ASSERT(strcmp(msg, "ok; writer lock: free") == 0);
    NT_EQ(for_tmp(getpid(), NULL), 0);
    NT_OK(nerve_chan_unlink(n));
    printf("ok\n");
    return 0;
}
