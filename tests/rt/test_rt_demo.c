/* The robot demo's short run (make demo, 2 s): it must finish cleanly and
 * its report must hold sane values -- every role counted messages, the
 * control loop ran before and after the logger and planner were killed, the
 * slow reader was told it missed messages, nothing was left in /dev/shm --
 * from its machine lines (--machine); and the text for people ends with a
 * summary and holds no machine line without --machine (a second, 1 s run).
 * No timing is asserted. argv[1] is the nerve-demo executable. */
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "nerve_test.h"

static char out[65536];

/* The value of `key=` on the RESULT line that contains `tag`, or -1. */
static long long result(const char *tag, const char *key)
{
    char pat[64];
    snprintf(pat, sizeof pat, " %s=", key);
    for (const char *p = out; (p = strstr(p, "RESULT ")) != NULL; p++) {
        const char *eol = strchr(p, '\n');
        size_t n = eol ? (size_t)(eol - p) : strlen(p);
        char line[512];
        snprintf(line, sizeof line, "%.*s", (int)(n < 511 ? n : 511), p);
        if (!strstr(line, tag))
            continue;
        const char *v = strstr(line, pat);
        if (v)
            return atoll(v + strlen(pat));
    }
    return -1;
}

/* Run `demo --seconds seconds --prefix prefix option`, its standard
 * output into `out`; returns its wait status. */
static int run_demo(const char *demo, const char *prefix, const char *seconds,
                    const char *option)
{
    int fd[2];
    NT_ASSERT(pipe(fd) == 0);
    pid_t pid = fork();
    NT_ASSERT(pid >= 0);
    if (pid == 0) {
        dup2(fd[1], 1);
        close(fd[0]);
        close(fd[1]);
        execl(demo, demo, "--seconds", seconds, "--prefix", prefix, option,
              (char *)NULL);
        _exit(127);
    }
    close(fd[1]);
    size_t len = 0;
    ssize_t r;
    while ((r = read(fd[0], out + len, sizeof out - 1 - len)) > 0)
        len += (size_t)r;
    out[len] = 0;
    close(fd[0]);
    int st;
    NT_ASSERT(waitpid(pid, &st, 0) == pid);
    return st;
}

int main(int argc, char **argv)
{
    if (argc < 2)
        NT_FAIL("usage: test_rt_demo path/to/nerve-demo");
    nt_watchdog(100);
    char prefix[64];
    snprintf(prefix, sizeof prefix, "nt-%d-demo", (int)getpid());
    int st = run_demo(argv[1], prefix, "2", "--machine");
    fputs(out, stdout);
    NT_ASSERT(WIFEXITED(st));
    NT_EQ(WEXITSTATUS(st), 0);

    /* Every role reported and counted something. */
    NT_CMP(result("role=imu", "cycles"), >, 0);
    NT_CMP(result("role=controller commands", "commands"), >, 0);
    NT_CMP(result("role=controller commands", "plans_seen"), >, 0);
    NT_CMP(result("role=actuator phase=before", "n"), >, 0);
    NT_CMP(result("role=actuator phase=after", "n"), >, 0);
    NT_CMP(result("role=controller phase=before", "n"), >, 0);
    NT_CMP(result("role=controller phase=after", "n"), >, 0);
    /* Percentiles are ordered and within the maximum. */
    long long p50 = result("role=actuator phase=before", "p50_us");
    long long p99 = result("role=actuator phase=before", "p99_us");
    NT_CMP(p50, >=, 0);
    NT_CMP(p50, <=, p99);
    NT_CMP(p99, <=, result("role=actuator phase=before", "max_us") + 1);
    /* The commands the actuator got never exceed what the controller sent. */
    NT_CMP(result("role=actuator phase=before", "n") +
               result("role=actuator phase=after", "n"),
           <=, result("role=controller commands", "commands"));
    /* The slow reader fell behind and was told so. */
    NT_CMP(result("role=slow", "received"), >, 0);
    NT_CMP(result("role=slow", "missed"), >, 0);
    /* The logger was killed, restarted and logged again. */
    NT_ASSERT(strstr(out, "killed=logger,planner") != NULL);
    NT_CMP(result("role=logger", "imu"), >, 0);
    /* Five roles reported (the planner was killed). */
    NT_EQ(result("role=launcher", "reports"), 5);
    /* The demo removed its channels. */
    char path[128];
    snprintf(path, sizeof path, "/dev/shm/nerve.%s.imu", prefix);
    NT_ASSERT(access(path, F_OK) != 0);
    snprintf(path, sizeof path, "/dev/shm/nerve.%s.report", prefix);
    NT_ASSERT(access(path, F_OK) != 0);
    /* The summary for people: what ran, was killed, latency, nothing lost
     * (the restarted logger's backlog is not loss). */
    NT_ASSERT(strstr(out, "\nSummary\n") != NULL);
    NT_ASSERT(strstr(out, "killed:  the logger and the planner") != NULL);
    NT_ASSERT(strstr(out, "control loop latency (IMU sample -> actuator)") !=
              NULL);
    NT_ASSERT(strstr(out, "  lost:") != NULL);
    /* The restarted logger's backlog is reported apart from its losses
     * (which a loaded machine may cause: not asserted). */
    NT_CMP(result("role=logger", "missed"), >=, 0);
    NT_CMP(result("role=logger", "backlog"), >, 0);
    NT_ASSERT(strstr(out, "abs err: wake-up minus its scheduled time") != NULL);

    /* Without --machine: no RESULT line in the text. */
    st = run_demo(argv[1], prefix, "1", "--no-kill");
    NT_ASSERT(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    NT_ASSERT(strstr(out, "RESULT") == NULL);
    NT_ASSERT(strstr(out, "killed:  nothing") != NULL);
    printf("ok: demo ran and reported sane values\n");
    return 0;
}
