/* Ach API on nerve, several processes: writers and readers exchanging
 * checksummed frames; ach_cancel() from a signal handler; writers killed
 * with SIGKILL while Ach readers run (the channel keeps working: no
 * ACH_CORRUPT, every frame delivered intact). Every wait is bounded. */
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <ach.h>

#include "nerve_test.h"

#define WRITERS 3
#define READERS 3
#define FRAMES 1500
#define MAXLEN 200

struct shared {
    atomic_int writers_done;
    atomic_int readers_ready;
};

static struct shared *g_sh;

static void die(const char *what, enum ach_status r)
{
    fprintf(stderr, "%s: %s (%s)\n", what, ach_result_to_string(r),
            ach_errstr());
    _exit(1);
}

static size_t frame_len(uint32_t id, uint64_t k)
{
    return 24 + (size_t)((id * 37 + k * 11) % (MAXLEN - 24));
}

static int writer(const char *name, uint32_t id, int frames, int pace_us)
{
    ach_channel_t c;
    enum ach_status r = ach_open(&c, name, NULL);
    if (r != ACH_OK)
        die("writer open", r);
    unsigned char buf[MAXLEN];
    for (uint64_t k = 1; frames < 0 || k <= (uint64_t)frames; k++) {
        size_t n = frame_len(id, k);
        nt_payload_fill(buf, n, id, k);
        r = ach_put(&c, buf, n);
        if (r != ACH_OK)
            die("writer put", r);
        if (pace_us)
            usleep((useconds_t)pace_us);
    }
    ach_close(&c);
    return 0;
}

/* Read until every writer's last frame was seen, or (all writers done)
 * nothing more arrives. Checks every frame's checksum and that each
 * writer's counter only grows. A reader descheduled for longer than the
 * ring lasts (a loaded CI host) may lose a writer's final frame to the
 * ring: that is allowed only when Ach told it so with ACH_MISSED_FRAME;
 * a NEXT reader that was never told must have seen every frame. */
static int reader(const char *name, int last)
{
    ach_channel_t c;
    enum ach_status r = ach_open(&c, name, NULL);
    if (r != ACH_OK)
        die("reader open", r);
    atomic_fetch_add(&g_sh->readers_ready, 1);
    uint64_t seen[WRITERS] = {0};
    unsigned char buf[MAXLEN];
    uint64_t got = 0, missed_status = 0;
    int64_t give_up = nerve_clock_now_ns() + 60 * (int64_t)1000000000;
    for (;;) {
        int finished = 1;
        for (int i = 0; i < WRITERS; i++)
            finished &= seen[i] == FRAMES;
        if (finished)
            break;
        struct timespec ts = {0, 200000000};
        size_t fs = 0;
        r = ach_get(&c, buf, sizeof buf, &fs, &ts,
                    ACH_O_WAIT | ACH_O_RELTIME | (last ? ACH_O_LAST : 0));
        if (r == ACH_TIMEOUT) {
            if (atomic_load(&g_sh->writers_done)) {
                if (last || missed_status > 0)
                    break; /* skipped frames, and was told */
                fprintf(stderr, "reader: writers done, frames lost "
                                "without ACH_MISSED_FRAME\n");
                _exit(1);
            }
            if (nerve_clock_now_ns() > give_up)
                die("reader gave up waiting", r);
            continue;
        }
        if (r == ACH_MISSED_FRAME)
            missed_status++;
        else if (r != ACH_OK)
            die("reader get", r);
        uint32_t id;
        uint64_t k;
        if (!nt_payload_check(buf, fs, &id, &k) || id >= WRITERS ||
            fs != frame_len(id, k)) {
            fprintf(stderr, "reader: bad frame (%zu bytes)\n", fs);
            _exit(1);
        }
        if (k <= seen[id]) {
            fprintf(stderr, "reader: writer %u went back %llu -> %llu\n", id,
                    (unsigned long long)seen[id], (unsigned long long)k);
            _exit(1);
        }
        seen[id] = k;
        got++;
    }
    ach_close(&c);
    if (got == 0) {
        fprintf(stderr, "reader: received nothing\n");
        _exit(1);
    }
    printf("reader(%s): %llu frames, %llu MISSED_FRAME\n",
           last ? "last" : "next", (unsigned long long)got,
           (unsigned long long)missed_status);
    return 0;
}

static int wait_all(pid_t *p, int n)
{
    int bad = 0;
    for (int i = 0; i < n; i++) {
        int st;
        if (waitpid(p[i], &st, 0) != p[i] || !WIFEXITED(st) ||
            WEXITSTATUS(st) != 0)
            bad = 1;
    }
    return bad;
}

static void test_many(void)
{
    const char *name = nt_name("many");
    NT_EQ(ach_create(name, 16, 64, NULL), ACH_OK);
    memset(g_sh, 0, sizeof *g_sh);
    pid_t rp[READERS + 1], wp[WRITERS];
    for (int i = 0; i <= READERS; i++) {
        rp[i] = fork();
        NT_ASSERT(rp[i] >= 0);
        if (rp[i] == 0)
            _exit(reader(name, i == READERS));
    }
    int64_t limit = nerve_clock_now_ns() + 20 * (int64_t)1000000000;
    while (atomic_load(&g_sh->readers_ready) < READERS + 1 &&
           nerve_clock_now_ns() < limit)
        usleep(1000);
    for (int i = 0; i < WRITERS; i++) {
        wp[i] = fork();
        NT_ASSERT(wp[i] >= 0);
        if (wp[i] == 0)
            _exit(writer(name, (uint32_t)i, FRAMES, 200));
    }
    NT_EQ(wait_all(wp, WRITERS), 0);
    atomic_store(&g_sh->writers_done, 1);
    NT_EQ(wait_all(rp, READERS + 1), 0);
    NT_EQ(ach_unlink(name), ACH_OK);
}

/* ---- cancel from a signal handler ---------------------------------------- */

static ach_channel_t g_cancel_chan;

static void on_alarm(int sig)
{
    (void)sig;
    if (ach_cancel(&g_cancel_chan, NULL) != ACH_OK)
        _exit(3);
}

static int cancel_child(const char *name)
{
    enum ach_status r = ach_open(&g_cancel_chan, name, NULL);
    if (r != ACH_OK)
        die("cancel open", r);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_alarm; /* no SA_RESTART: any EINTR must be absorbed */
    sigaction(SIGALRM, &sa, NULL);
    for (int round = 0; round < 3; round++) {
        g_cancel_chan.cancel = 0;
        struct itimerval it = {{0, 0}, {0, 30000 + 20000 * round}};
        setitimer(ITIMER_REAL, &it, NULL);
        r = ach_get(&g_cancel_chan, NULL, 0, NULL, NULL, ACH_O_WAIT);
        if (r != ACH_CANCELED) {
            fprintf(stderr, "round %d: got %s, want ACH_CANCELED\n", round,
                    ach_result_to_string(r));
            return 1;
        }
    }
    /* still cancelled: returns at once */
    r = ach_get(&g_cancel_chan, NULL, 0, NULL, NULL, ACH_O_WAIT | ACH_O_LAST);
    if (r != ACH_CANCELED)
        return 1;
    ach_close(&g_cancel_chan);
    return 0;
}

static void test_cancel_signal(void)
{
    const char *name = nt_name("sigcancel");
    NT_EQ(ach_create(name, 4, 16, NULL), ACH_OK);
    pid_t p = fork();
    NT_ASSERT(p >= 0);
    if (p == 0)
        _exit(cancel_child(name));
    NT_EQ(wait_all(&p, 1), 0);
    NT_EQ(ach_unlink(name), ACH_OK);
}

/* ---- kill -9 of writers while Ach readers run ----------------------------- */

static int kill_reader(const char *name, uint32_t end_id)
{
    ach_channel_t c;
    enum ach_status r = ach_open(&c, name, NULL);
    if (r != ACH_OK)
        die("kill reader open", r);
    atomic_fetch_add(&g_sh->readers_ready, 1);
    unsigned char buf[MAXLEN];
    uint64_t got = 0;
    int64_t give_up = nerve_clock_now_ns() + 90 * (int64_t)1000000000;
    for (;;) {
        struct timespec ts = {0, 100000000};
        size_t fs = 0;
        r = ach_get(&c, buf, sizeof buf, &fs, &ts, ACH_O_WAIT | ACH_O_RELTIME);
        if (r == ACH_TIMEOUT) {
            if (nerve_clock_now_ns() > give_up)
                die("kill reader: no end frame", r);
            continue;
        }
        if (r != ACH_OK && r != ACH_MISSED_FRAME)
            die("kill reader get", r); /* ACH_CORRUPT would end here */
        uint32_t id;
        uint64_t k;
        if (!nt_payload_check(buf, fs, &id, &k)) {
            fprintf(stderr, "kill reader: torn frame delivered\n");
            _exit(1);
        }
        got++;
        if (id == end_id)
            break;
    }
    ach_close(&c);
    printf("kill reader: %llu intact frames\n", (unsigned long long)got);
    return got > 1 ? 0 : 1;
}

static void test_kill_writers(void)
{
    const char *name = nt_name("kill");
    NT_EQ(ach_create(name, 8, 64, NULL), ACH_OK);
    memset(g_sh, 0, sizeof *g_sh);
    pid_t rp[2];
    for (int i = 0; i < 2; i++) {
        rp[i] = fork();
        NT_ASSERT(rp[i] >= 0);
        if (rp[i] == 0)
            _exit(kill_reader(name, 99));
    }
    int64_t limit = nerve_clock_now_ns() + 20 * (int64_t)1000000000;
    while (atomic_load(&g_sh->readers_ready) < 2 &&
           nerve_clock_now_ns() < limit)
        usleep(1000);
    srand(12345);
    for (int kill_no = 0; kill_no < 20; kill_no++) {
        pid_t w[2];
        for (int i = 0; i < 2; i++) {
            w[i] = fork();
            NT_ASSERT(w[i] >= 0);
            if (w[i] == 0)
                _exit(writer(name, (uint32_t)i, -1, 0)); /* until killed */
        }
        usleep((useconds_t)(2000 + rand() % 8000));
        for (int i = 0; i < 2; i++) {
            kill(w[i], SIGKILL);
            int st;
            NT_EQ(waitpid(w[i], &st, 0), w[i]);
            NT_ASSERT(WIFSIGNALED(st));
        }
    }
    /* A writer after all the kills: the readers get its frame. */
    pid_t last = fork();
    NT_ASSERT(last >= 0);
    if (last == 0)
        _exit(writer(name, 99, 1, 0));
    NT_EQ(wait_all(&last, 1), 0);
    NT_EQ(wait_all(rp, 2), 0);
    /* and the channel is still usable by a new Ach handle */
    ach_channel_t c;
    NT_EQ(ach_open(&c, name, NULL), ACH_OK);
    int v = 5;
    NT_EQ(ach_put(&c, &v, sizeof v), ACH_OK);
    size_t fs;
    NT_EQ(ach_get(&c, &v, sizeof v, &fs, NULL, ACH_O_LAST), ACH_MISSED_FRAME);
    NT_EQ(v, 5);
    NT_EQ(ach_close(&c), ACH_OK);
    NT_EQ(ach_unlink(name), ACH_OK);
}

/* A handle opened before fork() works in both processes (Ach's benchmark
 * and examples rely on it). */
static void test_fork_handle(void)
{
    const char *name = nt_name("fork");
    ach_channel_t c;
    NT_EQ(ach_create(name, 8, 16, NULL), ACH_OK);
    NT_EQ(ach_open(&c, name, NULL), ACH_OK);
    pid_t p = fork();
    NT_ASSERT(p >= 0);
    if (p == 0) {
        int v = 77;
        _exit(ach_put(&c, &v, sizeof v) == ACH_OK ? 0 : 1);
    }
    int v = 0;
    size_t fs;
    struct timespec ts = {10, 0};
    NT_EQ(ach_get(&c, &v, sizeof v, &fs, &ts, ACH_O_WAIT | ACH_O_RELTIME),
          ACH_OK);
    NT_EQ(v, 77);
    NT_EQ(wait_all(&p, 1), 0);
    NT_EQ(ach_close(&c), ACH_OK);
    NT_EQ(ach_unlink(name), ACH_OK);
}

int main(void)
{
    nt_watchdog(240);
    g_sh = mmap(NULL, sizeof *g_sh, PROT_READ | PROT_WRITE,
                MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    NT_ASSERT(g_sh != MAP_FAILED);
    setvbuf(stdout, NULL, _IOLBF, 0);
    test_fork_handle();
    test_many();
    test_cancel_signal();
    test_kill_writers();
    printf("test_ach_mp: ok\n");
    return 0;
}
