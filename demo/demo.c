/* nerve-demo (`make demo`): a balancing robot in miniature, the Golem Krang
 * pattern of the Ach paper (Dantam and Stilman, "Robust and efficient
 * communication for real-time multi-process robot software", Humanoids
 * 2012) on nerve channels, one process per role:
 *
 *   imu        1 kHz periodic task (SCHED_FIFO when permitted) publishing a
 *              sample stamped with its measurement time        -> .imu
 *   controller woken by each new IMU sample (newest), reads the newest
 *              plan without waiting, publishes a command        -> .cmd
 *   actuator   consumes every command; measures the end-to-end latency
 *              from the IMU sample to the actuator
 *   planner    100 Hz periodic task publishing a target         -> .plan
 *   logger     walks every message of all three channels (nerve_chan_wait_any)
 *   slow       a deliberately slow reader of .imu (20 ms per message) that
 *              falls behind and is told how many it missed
 *
 * The launcher creates the channels under a unique prefix, starts the
 * roles (the same executable with --role), and halfway through kills the
 * logger and the planner with SIGKILL (restarting the logger) to show that
 * the control loop does not notice: the actuator and controller keep
 * separate statistics before and after the kill. At the end every role
 * stops on SIGTERM and puts a text report into the .report channel, which
 * the launcher prints, followed by a short summary (what ran, what was
 * killed, the control loop's latency before and after, what was lost).
 * Channels are removed at the end, also after Ctrl-C. Every process uses
 * only the public API. With --machine the launcher also prints the
 * machine-readable "RESULT role=..." lines (tests/rt/test_rt_demo.c reads
 * them); without it they stay out of the text for people. */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <nerve/nerve.h>
#include <nerve/rt.h>

#define MS 1000000LL
#define HIST_US 100000 /* latency histogram range: 100 ms in 1 us bins */

struct imu_msg {
    uint64_t n;
    int64_t t_sample; /* CLOCK_MONOTONIC ns of the measurement */
    float gyro[3], accel[3];
    float tilt;
    uint32_t pad;
};

struct plan_msg {
    uint64_t n;
    float target_tilt;
    uint32_t pad;
};

struct cmd_msg {
    uint64_t n;
    uint64_t imu_n;
    int64_t t_sample; /* copied from the IMU sample */
    float torque;
    uint32_t plan_n;
};

static char g_prefix[128];
static int g_machine; /* --machine: print the RESULT lines */
static volatile sig_atomic_t g_stop, g_phase;
static nerve_task *g_task;
static nerve_chan *g_wait[3];
static int g_nwait;

static const char *chan_name(const char *what)
{
    static char bufs[4][192];
    static int k;
    char *b = bufs[k++ % 4];
    snprintf(b, sizeof bufs[0], "%s.%s", g_prefix, what);
    return b;
}

static void die(const char *what, int rc)
{
    fprintf(stderr, "nerve-demo: %s: %s\n", what, nerve_strerror(rc));
    exit(1);
}

static nerve_chan *open_chan(const char *what, uint32_t flags)
{
    nerve_chan *c;
    int rc = nerve_chan_open(chan_name(what), flags, &c);
    if (rc != 0)
        die(chan_name(what), rc);
    return c;
}

/* ---- per-phase latency statistics (before / after the kill) ----------- */

struct lat {
    uint64_t n, missed;
    int64_t max;
    double sumsq;
    uint32_t *hist; /* 1 us bins */
    uint64_t over;
};

static void lat_init(struct lat *l)
{
    memset(l, 0, sizeof *l);
    l->hist = calloc(HIST_US, sizeof *l->hist);
    if (!l->hist)
        die("calloc", NERVE_ENOMEM);
}

static void lat_add(struct lat *l, int64_t ns)
{
    int64_t us = ns / 1000;
    if (us < 0)
        us = 0;
    if (us >= HIST_US)
        l->over++;
    else
        l->hist[us]++;
    if (ns > l->max)
        l->max = ns;
    l->sumsq += (double)ns * (double)ns;
    l->n++;
}

static double lat_q(const struct lat *l, double q)
{
    uint64_t want = (uint64_t)(q * (double)l->n), acc = 0;
    if (l->n == 0)
        return 0;
    if (want >= l->n)
        want = l->n - 1;
    for (int i = 0; i < HIST_US; i++) {
        acc += l->hist[i];
        if (acc > want)
            return i + 1;
    }
    return l->max / 1e3;
}

/* ---- reports ------------------------------------------------------------ */

static char g_report[8192];
static size_t g_rlen;

__attribute__((format(printf, 1, 2))) static void rep(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(g_report + g_rlen, sizeof g_report - g_rlen, fmt, ap);
    va_end(ap);
    if (n > 0)
        g_rlen += (size_t)n < sizeof g_report - g_rlen
                      ? (size_t)n
                      : sizeof g_report - g_rlen - 1;
}

static const char *policy_name(int32_t p)
{
    return p == NERVE_RT_FIFO ? "SCHED_FIFO"
           : p == NERVE_RT_RR ? "SCHED_RR"
                              : "SCHED_OTHER";
}

/* A task's statistics in words. `clock`: a periodic task (its wake-up and
 * period errors are shown); otherwise a task woken by a channel, whose
 * latency the role reports itself (rep_lat), once. */
static void rep_task(const char *name, int clock)
{
    struct nerve_task_stats st;
    if (nerve_task_stat(g_task, &st) != 0)
        return;
    rep("%s: %s priority %d, %llu cycles", name, policy_name(st.policy),
        (int)st.priority, (unsigned long long)st.cycles);
    if (clock)
        rep(", %llu overruns, %llu skipped\n", (unsigned long long)st.overruns,
            (unsigned long long)st.skipped);
    else
        rep(", %llu deadlines without a message\n",
            (unsigned long long)st.timeouts);
    if (clock && st.abs_err.n) {
        rep("  wake-up error (abs err: wake-up minus its scheduled time): "
            "mean %.1f us, max %.1f us\n",
            st.abs_err.mean_ns / 1e3, st.abs_err.max_ns / 1e3);
    }
    if (clock && st.rel_err.n) {
        rep("  period error (rel err: time between two wake-ups minus the "
            "period): largest %.1f us, rms %.1f us\n",
            st.rel_err.max_abs_ns / 1e3, st.rel_err.rms_ns / 1e3);
    }
    if (st.exec.n)
        rep("  work per cycle: mean %.1f us, max %.1f us\n",
            st.exec.mean_ns / 1e3, st.exec.max_ns / 1e3);
}

/* One latency figure of a role, per phase: a line for people and the
 * RESULT line (printed by the launcher only with --machine). */
static void rep_lat(const char *role, const char *what, const char *phase,
                    const struct lat *l)
{
    rep("  %s, %s the kill: p50 %.0f us, p99 %.0f us, max %.0f us "
        "(%llu samples)\n",
        what, phase, lat_q(l, 0.5), lat_q(l, 0.99), l->max / 1e3,
        (unsigned long long)l->n);
    rep("RESULT role=%s phase=%s n=%llu missed=%llu p50_us=%.0f "
        "p90_us=%.0f p99_us=%.0f p999_us=%.0f max_us=%.1f rms_us=%.1f\n",
        role, phase, (unsigned long long)l->n, (unsigned long long)l->missed,
        lat_q(l, 0.5), lat_q(l, 0.9), lat_q(l, 0.99), lat_q(l, 0.999),
        l->max / 1e3, l->n ? sqrt(l->sumsq / (double)l->n) / 1e3 : 0.0);
}

static void send_report(void)
{
    nerve_chan *r = open_chan("report", NERVE_O_WRITE);
    int rc = nerve_chan_put(r, g_report, g_rlen + 1, 1000 * MS, NULL, 0);
    if (rc != 0)
        die("report", rc);
    nerve_chan_close(r);
}

static void send_ready(const char *role)
{
    char msg[64];
    int n = snprintf(msg, sizeof msg, "READY %s", role);
    nerve_chan *r = open_chan("report", NERVE_O_WRITE);
    int rc = nerve_chan_put(r, msg, (size_t)n + 1, 1000 * MS, NULL, 0);
    if (rc != 0)
        die("report", rc);
    nerve_chan_close(r);
}

/* ---- role set-up -------------------------------------------------------- */

static void on_term(int sig)
{
    (void)sig;
    g_stop = 1;
    if (g_task)
        nerve_task_stop(g_task);
    for (int i = 0; i < g_nwait; i++)
        nerve_chan_cancel(g_wait[i]);
}

static void on_phase(int sig)
{
    (void)sig;
    g_phase = 1;
}

static void role_signals(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_term;
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    sa.sa_handler = on_phase;
    sigaction(SIGUSR1, &sa, NULL);
}

/* Lock memory (best effort) and describe what real-time set-up we got. */
static void rt_setup(void)
{
    struct nerve_rt_applied ap;
    if (nerve_rt_lock_memory(256 * 1024, 1 << 20, NERVE_RT_BEST_EFFORT, &ap) ==
            0 &&
        !ap.mem_locked)
        rep("  (%s)\n", ap.msg);
}

static void run_task(const struct nerve_task_opts *o, nerve_task_fn fn,
                     void *arg, const char *role)
{
    int rc = nerve_task_open(o, fn, arg, &g_task);
    if (rc != 0)
        die("task", rc);
    send_ready(role);
    rc = nerve_task_run(g_task);
    if (rc != 0)
        die("task run", rc);
}

/* ---- imu ---------------------------------------------------------------- */

static nerve_chan *g_out;

static int imu_body(void *arg, const struct nerve_task_tick *tk)
{
    (void)arg;
    struct imu_msg m;
    memset(&m, 0, sizeof m);
    m.n = tk->cycle + 1;
    m.t_sample = nerve_clock_now_ns(); /* "read the sensor" */
    double ph = (double)(m.n % 2000) / 2000.0 * 6.283185307179586;
    m.tilt = (float)(0.05 * sin(ph));
    m.gyro[0] = (float)(0.05 * cos(ph));
    m.accel[2] = 9.81f;
    int rc = nerve_chan_put(g_out, &m, sizeof m, MS, NULL, 0);
    return rc == 0 ? 0 : rc;
}

static int role_imu(void)
{
    rt_setup();
    g_out = open_chan("imu", NERVE_O_WRITE);
    struct nerve_task_opts o = NERVE_TASK_OPTS_INIT;
    o.period_ns = MS;
    o.policy = NERVE_RT_FIFO; /* rate-monotonic priority from 1 ms */
    o.flags = NERVE_RT_BEST_EFFORT;
    run_task(&o, imu_body, NULL, "imu");
    rep_task("imu (1 kHz periodic task)", 1);
    struct nerve_task_stats st;
    if (nerve_task_stat(g_task, &st) == 0)
        rep("RESULT role=imu cycles=%llu overruns=%llu jitter_us=%.1f "
            "rms_us=%.1f policy=%d\n",
            (unsigned long long)st.cycles, (unsigned long long)st.overruns,
            st.abs_err.max_abs_ns / 1e3, st.abs_err.rms_ns / 1e3, st.policy);
    send_report();
    return 0;
}

/* ---- controller --------------------------------------------------------- */

struct ctl {
    nerve_chan *plan;
    struct plan_msg last_plan;
    uint64_t plans, cmds;
    struct lat wake[2]; /* IMU commit -> controller wake, per phase */
};

static int ctl_body(void *arg, const struct nerve_task_tick *tk)
{
    struct ctl *c = arg;
    struct lat *w = &c->wake[g_phase ? 1 : 0];
    if (tk->msg_status != 0)
        return 0; /* deadline passed without a sample: keep the last command */
    const struct imu_msg *imu = tk->msg;
    w->missed += tk->msg_info.missed;
    lat_add(w, tk->wake_ns - tk->release_ns);
    /* The newest plan, without waiting: a dead planner leaves the last. */
    struct plan_msg p;
    if (nerve_chan_get(c->plan, &p, sizeof p, 0, 0, NULL, NERVE_GET_NEWEST) ==
        0) {
        c->last_plan = p;
        c->plans++;
    }
    struct cmd_msg cmd;
    memset(&cmd, 0, sizeof cmd);
    cmd.n = ++c->cmds;
    cmd.imu_n = imu->n;
    cmd.t_sample = imu->t_sample;
    cmd.torque =
        40.0f * (c->last_plan.target_tilt - imu->tilt) - 2.0f * imu->gyro[0];
    cmd.plan_n = (uint32_t)c->last_plan.n;
    int rc = nerve_chan_put(g_out, &cmd, sizeof cmd, MS, NULL, 0);
    return rc == 0 ? 0 : rc;
}

static int role_controller(void)
{
    rt_setup();
    static struct ctl c;
    lat_init(&c.wake[0]);
    lat_init(&c.wake[1]);
    nerve_chan *imu = open_chan("imu", NERVE_O_READ);
    c.plan = open_chan("plan", NERVE_O_READ);
    g_out = open_chan("cmd", NERVE_O_WRITE);
    struct nerve_task_opts o = NERVE_TASK_OPTS_INIT;
    o.chan = imu;
    o.chan_which = NERVE_GET_NEWEST;
    o.deadline_ns = 5 * MS; /* a missing sample is noticed within 5 ms */
    o.period_ns = MS;       /* nominal: priority and relative error */
    o.policy = NERVE_RT_FIFO;
    o.flags = NERVE_RT_BEST_EFFORT;
    run_task(&o, ctl_body, &c, "controller");
    rep_task("controller (woken by each IMU sample)", 0);
    rep_lat("controller", "IMU commit -> controller wake-up", "before",
            &c.wake[0]);
    rep_lat("controller", "IMU commit -> controller wake-up", "after",
            &c.wake[1]);
    rep("RESULT role=controller commands=%llu plans_seen=%llu "
        "last_plan=%llu\n",
        (unsigned long long)c.cmds, (unsigned long long)c.plans,
        (unsigned long long)c.last_plan.n);
    send_report();
    return 0;
}

/* ---- actuator ----------------------------------------------------------- */

struct act {
    uint64_t last_n, got;
    struct lat e2e[2]; /* IMU sample -> actuator, per phase */
};

static int act_body(void *arg, const struct nerve_task_tick *tk)
{
    struct act *a = arg;
    if (tk->msg_status != 0)
        return 0;
    const struct cmd_msg *cmd = tk->msg;
    int64_t now = nerve_clock_now_ns(); /* "apply the torque" */
    struct lat *l = &a->e2e[g_phase ? 1 : 0];
    lat_add(l, now - cmd->t_sample);
    if (a->last_n && cmd->n > a->last_n + 1)
        l->missed += cmd->n - a->last_n - 1;
    a->last_n = cmd->n;
    a->got++;
    return 0;
}

static int role_actuator(void)
{
    rt_setup();
    static struct act a;
    lat_init(&a.e2e[0]);
    lat_init(&a.e2e[1]);
    nerve_chan *cmd = open_chan("cmd", NERVE_O_READ);
    struct nerve_task_opts o = NERVE_TASK_OPTS_INIT;
    o.chan = cmd;
    o.chan_which = NERVE_GET_NEXT; /* every command, in order */
    o.deadline_ns = 5 * MS;
    o.period_ns = MS;
    o.policy = NERVE_RT_FIFO;
    o.flags = NERVE_RT_BEST_EFFORT;
    run_task(&o, act_body, &a, "actuator");
    rep_task("actuator (consumes every command)", 0);
    rep_lat("actuator", "control loop, IMU sample -> actuator", "before",
            &a.e2e[0]);
    rep_lat("actuator", "control loop, IMU sample -> actuator", "after",
            &a.e2e[1]);
    send_report();
    return 0;
}

/* ---- planner ------------------------------------------------------------ */

static int plan_body(void *arg, const struct nerve_task_tick *tk)
{
    (void)arg;
    struct plan_msg p = {tk->cycle + 1, 0.01f * (float)((tk->cycle / 50) % 3),
                         0};
    int rc = nerve_chan_put(g_out, &p, sizeof p, MS, NULL, 0);
    return rc == 0 ? 0 : rc;
}

static int role_planner(void)
{
    rt_setup();
    g_out = open_chan("plan", NERVE_O_WRITE);
    struct nerve_task_opts o = NERVE_TASK_OPTS_INIT;
    o.period_ns = 10 * MS;
    o.policy = NERVE_RT_FIFO;
    o.flags = NERVE_RT_BEST_EFFORT;
    run_task(&o, plan_body, NULL, "planner");
    rep_task("planner (100 Hz periodic task)", 1);
    send_report();
    return 0;
}

/* ---- logger: every message of every channel ----------------------------- */

static int role_logger(void)
{
    static const char *names[3] = {"imu", "cmd", "plan"};
    uint64_t got[3] = {0}, missed[3] = {0}, gone[3] = {0};
    for (int i = 0; i < 3; i++) {
        g_wait[i] = open_chan(names[i], NERVE_O_READ);
        /* Start at the oldest message present: what was overwritten before
         * this logger started (a restarted logger's backlog) is reported
         * apart, as it is no loss of this logger's. */
        struct nerve_stats st;
        if (nerve_chan_stat(g_wait[i], &st) == 0 && st.tail_seq > 1) {
            gone[i] = st.tail_seq - 1;
            nerve_chan_seek(g_wait[i], st.tail_seq - 1);
        }
    }
    g_nwait = 3;
    send_ready("logger");
    static unsigned char buf[4096];
    while (!g_stop) {
        uint64_t ready = 0;
        int rc = nerve_chan_wait_any(g_wait, 3, 100 * MS, &ready, 0);
        if (rc == NERVE_ECANCELED)
            break;
        if (rc < 0 && rc != NERVE_ETIMEDOUT)
            die("wait_any", rc);
        for (int i = 0; i < 3; i++) {
            struct nerve_get_info info;
            while (nerve_chan_get(g_wait[i], buf, sizeof buf, 0, 0, &info,
                                  NERVE_GET_NEXT) == 0) {
                got[i]++;
                missed[i] += info.missed;
            }
        }
    }
    rep("logger (walks every message, from the oldest still present when it "
        "started; the report is the restarted logger's):\n");
    for (int i = 0; i < 3; i++)
        rep("  %-4s %8llu logged, %6llu lost while it ran (%llu were "
            "overwritten before it started)\n",
            names[i], (unsigned long long)got[i], (unsigned long long)missed[i],
            (unsigned long long)gone[i]);
    rep("RESULT role=logger imu=%llu cmd=%llu plan=%llu missed=%llu "
        "backlog=%llu\n",
        (unsigned long long)got[0], (unsigned long long)got[1],
        (unsigned long long)got[2],
        (unsigned long long)(missed[0] + missed[1] + missed[2]),
        (unsigned long long)(gone[0] + gone[1] + gone[2]));
    send_report();
    return 0;
}

/* ---- slow reader ---------------------------------------------------------- */

static int role_slow(void)
{
    g_wait[0] = open_chan("imu", NERVE_O_READ);
    g_nwait = 1;
    send_ready("slow");
    uint64_t got = 0, missed = 0;
    while (!g_stop) {
        struct imu_msg m;
        struct nerve_get_info info;
        int rc = nerve_chan_get(g_wait[0], &m, sizeof m, 0, 100 * MS, &info,
                                NERVE_GET_NEXT | NERVE_F_WAIT);
        if (rc == NERVE_ECANCELED)
            break;
        if (rc == NERVE_ETIMEDOUT)
            continue;
        if (rc != 0)
            die("slow get", rc);
        got++;
        missed += info.missed;
        struct timespec ts = {0, 20 * MS}; /* deliberately slow */
        nanosleep(&ts, NULL);
    }
    rep("slow reader (20 ms per message, ring of 256): %llu read, %llu "
        "skipped (overwritten before it got to them: by design, it cannot "
        "keep up)\n",
        (unsigned long long)got, (unsigned long long)missed);
    rep("RESULT role=slow received=%llu missed=%llu\n", (unsigned long long)got,
        (unsigned long long)missed);
    send_report();
    return 0;
}

/* ---- launcher ---------------------------------------------------------- */

enum { R_ACT, R_CTL, R_PLAN, R_LOG, R_SLOW, R_IMU, NROLES };
static const char *role_names[NROLES] = {"actuator", "controller", "planner",
                                         "logger",   "slow",       "imu"};
static pid_t pids[NROLES];
static volatile sig_atomic_t g_interrupted;

static void on_launcher_int(int sig)
{
    (void)sig;
    g_interrupted = 1;
}

static pid_t spawn_role(const char *self, int r)
{
    pid_t pid = fork();
    if (pid == 0) {
        execl(self, self, "--role", role_names[r], "--prefix", g_prefix,
              g_machine ? "--machine" : (char *)NULL, (char *)NULL);
        _exit(127);
    }
    return pid;
}

/* Sleep until an absolute time, or until Ctrl-C. */
static void nap_until(int64_t t)
{
    struct timespec ts = {(time_t)(t / 1000000000LL), (long)(t % 1000000000LL)};
    while (!g_interrupted && clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME,
                                             &ts, NULL) == EINTR) {
    }
}

static void unlink_all(void)
{
    static const char *all[] = {"imu", "cmd", "plan", "report"};
    for (int i = 0; i < 4; i++) {
        int rc = nerve_chan_unlink(chan_name(all[i]));
        if (rc != 0 && rc != NERVE_ENOENT)
            fprintf(stderr, "nerve-demo: unlink %s: %s\n", chan_name(all[i]),
                    nerve_strerror(rc));
    }
}

static int create_all(void)
{
    static const struct {
        const char *name, *type;
        uint64_t slots, size;
    } ch[] = {{"imu", "demo/Imu", 256, 64 * 1024},
              {"cmd", "demo/Command", 256, 64 * 1024},
              {"plan", "demo/Plan", 64, 16 * 1024},
              {"report", "text/plain", 64, 256 * 1024}};
    for (int i = 0; i < 4; i++) {
        struct nerve_chan_opts o = NERVE_CHAN_OPTS_INIT;
        o.slots = ch[i].slots;
        o.data_size = ch[i].size;
        o.type = ch[i].type;
        o.encoding = "raw";
        int rc = nerve_chan_create(chan_name(ch[i].name), &o);
        if (rc != 0) {
            fprintf(stderr, "nerve-demo: create %s: %s\n",
                    chan_name(ch[i].name), nerve_strerror(rc));
            unlink_all();
            return -1;
        }
    }
    return 0;
}

/* Wait for `n` READY messages on the report channel. */
static int wait_ready(nerve_chan *rep_ch, int n)
{
    char buf[256];
    int64_t deadline = nerve_clock_now_ns() + 10000 * MS;
    while (n > 0 && !g_interrupted) {
        int rc =
            nerve_chan_get(rep_ch, buf, sizeof buf, 0, deadline, NULL,
                           NERVE_GET_NEXT | NERVE_F_WAIT | NERVE_F_ABSTIME);
        if (rc == NERVE_EINTR)
            continue;
        if (rc != 0)
            return rc;
        if (strncmp(buf, "READY ", 6) == 0)
            n--;
    }
    return 0;
}

/* The number after `key=` on the RESULT line containing `tag`, or -1. */
static double result(const char *all, const char *tag, const char *key)
{
    for (const char *p = all; (p = strstr(p, "RESULT ")) != NULL; p++) {
        const char *end = strchr(p, '\n');
        const char *t = strstr(p, tag);
        if (t == NULL || (end && t > end))
            continue;
        char k[64];
        snprintf(k, sizeof k, " %s=", key);
        const char *v = strstr(p, k);
        if (v == NULL || (end && v > end))
            return -1;
        return strtod(v + strlen(k), NULL);
    }
    return -1;
}

/* The closing summary for people, from the roles' RESULT lines. */
static void summary(const char *res, double seconds, int killed,
                    double t_killed_s)
{
    printf("\nSummary\n");
    printf("  ran:     imu (1 kHz), controller, actuator, planner (100 Hz), "
           "logger and a slow reader, one process each, for %.1f s\n",
           seconds);
    if (killed)
        printf("  killed:  the logger and the planner with SIGKILL at "
               "t=%.1f s; the logger was restarted, the planner was not\n",
               t_killed_s);
    else
        printf("  killed:  nothing (--no-kill)\n");
    double b50 = result(res, "role=actuator phase=before", "p50_us");
    double b99 = result(res, "role=actuator phase=before", "p99_us");
    double a50 = result(res, "role=actuator phase=after", "p50_us");
    double a99 = result(res, "role=actuator phase=after", "p99_us");
    if (b50 >= 0 && a50 >= 0)
        printf("  control loop latency (IMU sample -> actuator): p50 %.0f "
               "us, p99 %.0f us before the kill; p50 %.0f us, p99 %.0f us "
               "after\n",
               b50, b99, a50, a99);
    double act_missed = result(res, "role=actuator phase=before", "missed") +
                        result(res, "role=actuator phase=after", "missed");
    double n_act = result(res, "role=actuator phase=before", "n") +
                   result(res, "role=actuator phase=after", "n");
    double log_missed = result(res, "role=logger", "missed");
    if (act_missed == 0 && log_missed <= 0)
        printf("  lost:    nothing: the actuator applied all %.0f commands "
               "in order and the logger lost no message while it ran (the "
               "slow reader skips samples by design)\n",
               n_act);
    else
        printf("  lost:    the actuator missed %.0f commands, the logger %.0f "
               "messages while it ran (this machine was too loaded for the "
               "rings' sizes)\n",
               act_missed, log_missed > 0 ? log_missed : 0);
}

/* Stop the producer first, then everyone; each role reports. Returns 1
 * if a role ended badly. */
static int stop_roles(void)
{
    int bad = 0;
    for (int r = NROLES - 1; r >= 0; r--) {
        if (pids[r] > 0)
            kill(pids[r], SIGTERM);
    }
    for (int r = 0; r < NROLES; r++) {
        int st;
        if (pids[r] <= 0)
            continue;
        if (waitpid(pids[r], &st, 0) == pids[r] &&
            !(WIFEXITED(st) && WEXITSTATUS(st) == 0)) {
            fprintf(stderr, "nerve-demo: %s ended badly (status 0x%x)\n",
                    role_names[r], st);
            bad = 1;
        }
    }
    return bad;
}

/* Print the roles' reports in the order they arrived, except their RESULT
 * lines, which go to results (size bytes, kept for the summary and printed
 * only with --machine). Returns the number of reports. */
static int print_reports(nerve_chan *rep_ch, char *results, size_t size)
{
    char *buf = malloc(256 * 1024);
    size_t rlen = 0;
    struct nerve_get_info info;
    int reports = 0;
    results[0] = '\0';
    while (buf && nerve_chan_get(rep_ch, buf, 256 * 1024, 0, 0, &info,
                                 NERVE_GET_NEXT) == 0) {
        if (strncmp(buf, "READY ", 6) == 0)
            continue;
        for (char *line = buf; *line;) {
            char *nl = strchr(line, '\n');
            size_t n = nl ? (size_t)(nl - line) + 1 : strlen(line);
            if (strncmp(line, "RESULT ", 7) == 0) {
                if (rlen + n < size) {
                    memcpy(results + rlen, line, n);
                    rlen += n;
                    results[rlen] = '\0';
                }
            } else {
                fwrite(line, 1, n, stdout);
            }
            line += n;
        }
        reports++;
    }
    free(buf);
    return reports;
}

static int launcher(const char *self, double seconds, int kill_mid)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_launcher_int;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    if (create_all() != 0)
        return 1;
    nerve_chan *rep_ch = open_chan("report", NERVE_O_READ);
    struct nerve_rt_caps caps;
    if (nerve_rt_probe(&caps) != 0)
        memset(&caps, 0, sizeof caps);
    printf("nerve demo: robot pipeline for %.1f s, channels %s.*\n"
           "  imu 1 kHz -> controller (newest) -> actuator (every command); "
           "planner 100 Hz;\n  logger (every message), slow reader. "
           "Real-time scheduling: %s.\n",
           seconds, g_prefix,
           caps.fifo_ok ? "SCHED_FIFO, rate-monotonic priorities"
                        : "NOT permitted, running under SCHED_OTHER");
    fflush(stdout);
    /* Consumers first, so the first samples find their readers. */
    int rc = 0;
    for (int r = 0; r < R_IMU; r++)
        pids[r] = spawn_role(self, r);
    rc = wait_ready(rep_ch, R_IMU);
    pids[R_IMU] = spawn_role(self, R_IMU);
    if (rc == 0)
        rc = wait_ready(rep_ch, 1);
    if (rc != 0 && !g_interrupted)
        fprintf(stderr, "nerve-demo: roles did not start: %s\n",
                nerve_strerror(rc));
    int64_t t0 = nerve_clock_now_ns();
    int64_t t_kill = t0 + (int64_t)(seconds * 0.5e9);
    int killed = 0;
    double t_killed_s = 0;
    if (rc == 0 && kill_mid) {
        nap_until(t_kill);
        if (!g_interrupted) {
            kill(pids[R_LOG], SIGKILL);
            kill(pids[R_PLAN], SIGKILL);
            waitpid(pids[R_LOG], NULL, 0);
            waitpid(pids[R_PLAN], NULL, 0);
            /* Tell the loop's processes that the "after" phase begins. */
            kill(pids[R_CTL], SIGUSR1);
            kill(pids[R_ACT], SIGUSR1);
            printf("  t=%.1f s: killed the logger (pid %d) and the planner "
                   "(pid %d) with SIGKILL; restarting the logger\n",
                   (nerve_clock_now_ns() - t0) / 1e9, (int)pids[R_LOG],
                   (int)pids[R_PLAN]);
            fflush(stdout);
            pids[R_PLAN] = 0;
            pids[R_LOG] = spawn_role(self, R_LOG);
            killed = 1;
            t_killed_s = (nerve_clock_now_ns() - t0) / 1e9;
        }
    }
    if (rc == 0)
        nap_until(t0 + (int64_t)(seconds * 1e9));
    int bad = stop_roles();
    printf("\n");
    static char results[16384];
    int reports = print_reports(rep_ch, results, sizeof results);
    if (killed)
        printf("planner: killed mid-run (no report); the controller kept "
               "using its last plan.\n");
    summary(results, seconds, killed, t_killed_s);
    if (g_machine) {
        fputs(results, stdout);
        printf("RESULT role=launcher killed=%s reports=%d\n",
               killed ? "logger,planner" : "none", reports);
    }
    nerve_chan_close(rep_ch);
    unlink_all();
    if (g_interrupted)
        printf("nerve-demo: interrupted; channels removed\n");
    return bad || rc != 0;
}

int main(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"role", required_argument, 0, 'r'},
        {"prefix", required_argument, 0, 'p'},
        {"seconds", required_argument, 0, 's'},
        {"no-kill", no_argument, 0, 'n'},
        {"machine", no_argument, 0, 'm'},
        {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0}};
    const char *role = NULL;
    double seconds = 5;
    int kill_mid = 1, ch;
    snprintf(g_prefix, sizeof g_prefix, "demo-%d", (int)getpid());
    while ((ch = getopt_long(argc, argv, "r:p:s:nmh", longopts, NULL)) != -1) {
        switch (ch) {
        case 'r': role = optarg; break;
        case 'p': snprintf(g_prefix, sizeof g_prefix, "%s", optarg); break;
        case 's':
            seconds = strtod(optarg, NULL);
            if (seconds <= 0) {
                fprintf(stderr, "nerve-demo: --seconds must be > 0\n");
                return 2;
            }
            break;
        case 'n': kill_mid = 0; break;
        case 'm': g_machine = 1; break;
        case 'h':
            printf("usage: nerve-demo [--seconds S] [--prefix NAME] "
                   "[--no-kill] [--machine]\n"
                   "A robot pipeline on nerve channels, one process per "
                   "role; halfway through the\nlogger and the planner are "
                   "killed with SIGKILL. --machine adds the\n"
                   "machine-readable RESULT lines to the output.\n");
            return 0;
        default: return 2;
        }
    }
    if (!role)
        return launcher("/proc/self/exe", seconds, kill_mid);
    role_signals();
    if (strcmp(role, "imu") == 0)
        return role_imu();
    if (strcmp(role, "controller") == 0)
        return role_controller();
    if (strcmp(role, "actuator") == 0)
        return role_actuator();
    if (strcmp(role, "planner") == 0)
        return role_planner();
    if (strcmp(role, "logger") == 0)
        return role_logger();
    if (strcmp(role, "slow") == 0)
        return role_slow();
    fprintf(stderr, "nerve-demo: unknown role %s\n", role);
    return 2;
}
