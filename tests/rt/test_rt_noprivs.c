/* The defined fallback without privileges. A child process drops to user
 * nobody with RLIMIT_RTPRIO and RLIMIT_MEMLOCK at 0 (when the test runs as
 * root), then checks that every real-time request fails with NERVE_EPERM by
 * default and, with NERVE_RT_BEST_EFFORT, falls back and says so. Where the
 * test runs as an ordinary user it checks the same things directly. The
 * parent also checks that SCHED_FIFO works where it is permitted. */
#include <grp.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <nerve/rt.h>

#include "nerve_test.h"

static int quick_body(void *p, const struct nerve_task_tick *tk)
{
    (void)p;
    return tk->cycle >= 4 ? 1 : 0;
}

/* Runs in a process that may not use real-time scheduling or lock memory. */
static int unprivileged_checks(void)
{
    struct nerve_rt_caps caps;
    NT_OK(nerve_rt_probe(&caps));
    NT_EQ(caps.fifo_ok, 0);
    NT_EQ(caps.fifo_max_prio, 0);

    struct nerve_rt_applied ap;
    NT_RC(nerve_rt_sched_set(NERVE_RT_FIFO, 10, 0, &ap), NERVE_EPERM);
    NT_ASSERT(strstr(ap.msg, "refused") != NULL);
    NT_RC(nerve_rt_sched_set(NERVE_RT_RR, 10, 0, NULL), NERVE_EPERM);
    NT_OK(nerve_rt_sched_set(NERVE_RT_FIFO, 10, NERVE_RT_BEST_EFFORT, &ap));
    NT_EQ(ap.policy, NERVE_RT_OTHER);
    NT_EQ(ap.priority, 0);
    NT_EQ(ap.fallback_err, NERVE_EPERM);
    NT_ASSERT(strstr(ap.msg, "SCHED_OTHER") != NULL);
    int pol, prio;
    NT_OK(nerve_rt_sched_get(&pol, &prio));
    NT_EQ(pol, NERVE_RT_OTHER);

    /* Memory locking refused (RLIMIT_MEMLOCK is 0). The sanitizers
     * replace mlockall() with a call that does nothing and succeeds, so
     * the refusal cannot be observed in their builds. */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
    printf("note: mlock refusal not checked under a sanitizer "
           "(its mlockall() always succeeds)\n");
#else
    int rc = nerve_rt_lock_memory(0, 0, 0, &ap);
    NT_ASSERT(rc == NERVE_EPERM || rc == NERVE_ENOMEM);
    NT_EQ(ap.mem_locked, 0);
    NT_OK(
        nerve_rt_lock_memory(64 * 1024, 256 * 1024, NERVE_RT_BEST_EFFORT, &ap));
    NT_EQ(ap.mem_locked, 0);
    NT_ASSERT(ap.fallback_err == NERVE_EPERM ||
              ap.fallback_err == NERVE_ENOMEM);
    NT_ASSERT(strstr(ap.msg, "not locked") != NULL);
#endif

    /* A FIFO task: strict start fails and leaves no thread; best effort
     * runs under SCHED_OTHER and reports why. */
    struct nerve_task_opts o = NERVE_TASK_OPTS_INIT;
    o.period_ns = 1000000;
    o.policy = NERVE_RT_FIFO;
    nerve_task *t;
    NT_OK(nerve_task_open(&o, quick_body, NULL, &t));
    NT_RC(nerve_task_start(t), NERVE_EPERM);
    NT_RC(nerve_task_join(t), NERVE_EPERM);
    nerve_task_close(t);
    NT_OK(nerve_task_open(&o, quick_body, NULL, &t));
    NT_RC(nerve_task_run(t), NERVE_EPERM);
    nerve_task_close(t);
    o.flags = NERVE_RT_BEST_EFFORT | NERVE_TASK_MLOCK;
    NT_OK(nerve_task_open(&o, quick_body, NULL, &t));
    NT_OK(nerve_task_start(t));
    NT_OK(nerve_task_join(t));
    struct nerve_task_stats st;
    NT_OK(nerve_task_stat(t, &st));
    NT_EQ(st.cycles, 5);
    NT_EQ(st.policy, NERVE_RT_OTHER);
    NT_EQ(st.sched_err, NERVE_EPERM);
    char text[1024];
    NT_CMP(nerve_task_stats_format(&st, "fallback", text, sizeof text), >, 0);
    NT_ASSERT(strstr(text, "fell back") != NULL);
    nerve_task_close(t);
    return 0;
}

static void drop_limits(void)
{
    struct rlimit zero = {0, 0};
    if (setrlimit(RLIMIT_RTPRIO, &zero) != 0 ||
        setrlimit(RLIMIT_MEMLOCK, &zero) != 0)
        NT_FAIL("setrlimit: cannot lower limits");
}

int main(void)
{
    nt_watchdog(50);
    struct nerve_rt_caps caps;
    NT_OK(nerve_rt_probe(&caps));
    printf("this process: fifo_ok %d (max prio %d), memlock_max %lld, "
           "PREEMPT_RT %d\n",
           caps.fifo_ok, caps.fifo_max_prio, (long long)caps.memlock_max,
           caps.preempt_rt);
    if (caps.fifo_ok) {
        /* Permitted here: the request is applied as asked. */
        struct nerve_rt_applied ap;
        NT_OK(nerve_rt_sched_set(NERVE_RT_FIFO, 10, 0, &ap));
        NT_EQ(ap.policy, NERVE_RT_FIFO);
        NT_EQ(ap.fallback_err, 0);
        int pol, prio;
        NT_OK(nerve_rt_sched_get(&pol, &prio));
        NT_EQ(pol, NERVE_RT_FIFO);
        NT_EQ(prio, 10);
        NT_OK(nerve_rt_sched_set(NERVE_RT_OTHER, 0, 0, NULL));
    }

    if (geteuid() != 0) {
        if (caps.fifo_ok)
            NT_SKIP_BECAUSE("not root, yet real-time scheduling is permitted "
                            "(CAP_SYS_NICE?): cannot become unprivileged");
        drop_limits();
        return unprivileged_checks();
    }
    fflush(stdout); /* or the child repeats the buffered lines */
    pid_t pid = fork();
    NT_ASSERT(pid >= 0);
    if (pid == 0) {
        drop_limits();
        /* nobody:nogroup; setuid() from root drops every capability. */
        if (setgroups(0, NULL) != 0 || setgid(65534) != 0 ||
            setuid(65534) != 0) {
            printf("SKIP: cannot switch to user nobody\n");
            _exit(NT_SKIP);
        }
        fflush(stdout);
        _exit(unprivileged_checks());
    }
    int status;
    NT_ASSERT(waitpid(pid, &status, 0) == pid);
    NT_ASSERT(WIFEXITED(status));
    if (WEXITSTATUS(status) == NT_SKIP)
        return NT_SKIP;
    NT_EQ(WEXITSTATUS(status), 0);
    printf("ok: fallback without privileges\n");
    return 0;
}
