/* Ach API on nerve, single process: every ach_get option combination on
 * every channel state, the status table and masks, attributes, names,
 * clocks and timeouts, ACH_OVERFLOW, flush, xget/xput, maps, and one
 * channel read and written through both APIs. Written from Ach's
 * documented behaviour (docs/ach.md). */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <ach.h>
#include <ach/experimental.h>
#include <nerve/nerve.h>

#include "nerve_test.h"

_Static_assert(sizeof(ach_channel_t) == 128, "ach_channel_t is Ach's size");
_Static_assert(sizeof(ach_attr_t) == 64, "ach_attr_t is Ach's size");
_Static_assert(sizeof(ach_create_attr_t) == 128, "ach_create_attr_t size");
_Static_assert(sizeof(ach_cancel_attr_t) == 64, "ach_cancel_attr_t size");

#define ACH_EQ(expr, want)                                                     \
    do {                                                                       \
        enum ach_status a_r_ = (expr), a_w_ = (want);                          \
        if (a_r_ != a_w_)                                                      \
            NT_FAIL("%s: got %s, want %s (%s)", #expr,                         \
                    ach_result_to_string(a_r_), ach_result_to_string(a_w_),    \
                    ach_errstr());                                             \
    } while (0)

static void put_int(ach_channel_t *c, int v)
{
    ACH_EQ(ach_put(c, &v, sizeof v), ACH_OK);
}

/* ---- the status table ------------------------------------------------------ */

static void test_statuses(void)
{
    static const struct {
        enum ach_status s;
        int v;
        const char *name;
    } t[] = {
        {ACH_OK, 0, "ACH_OK"},
        {ACH_OVERFLOW, 1, "ACH_OVERFLOW"},
        {ACH_INVALID_NAME, 2, "ACH_INVALID_NAME"},
        {ACH_BAD_SHM_FILE, 3, "ACH_BAD_SHM_FILE"},
        {ACH_FAILED_SYSCALL, 4, "ACH_FAILED_SYSCALL"},
        {ACH_STALE_FRAMES, 5, "ACH_STALE_FRAMES"},
        {ACH_MISSED_FRAME, 6, "ACH_MISSED_FRAME"},
        {ACH_TIMEOUT, 7, "ACH_TIMEOUT"},
        {ACH_EEXIST, 8, "ACH_EEXIST"},
        {ACH_ENOENT, 9, "ACH_ENOENT"},
        {ACH_CLOSED, 10, "ACH_CLOSED"},
        {ACH_BUG, 11, "ACH_BUG"},
        {ACH_EINVAL, 12, "ACH_EINVAL"},
        {ACH_CORRUPT, 13, "ACH_CORRUPT"},
        {ACH_BAD_HEADER, 14, "ACH_BAD_HEADER"},
        {ACH_EACCES, 15, "ACH_EACCES"},
        {ACH_CANCELED, 16, "ACH_CANCELED"},
        {ACH_EFAULT, 17, "ACH_EFAULT"},
        {ACH_EINTR, 18, "ACH_EINTR"},
        {ACH_ENOTSUP, 19, "ACH_ENOTSUP"},
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        NT_EQ(t[i].s, t[i].v);
        NT_EQ((int)i, t[i].v);
        NT_ASSERT(strcmp(ach_result_to_string(t[i].s), t[i].name) == 0);
        NT_EQ(ach_status_mask(t[i].s), 1 << t[i].v);
        NT_EQ(ACH_STATUS_MASK(t[i].s), 1 << t[i].v);
        NT_EQ(ach_status_match(t[i].s, ACH_MASK_ALL), 1);
        NT_EQ(ach_status_match(t[i].s, ACH_MASK_NONE), 0);
        NT_EQ(ach_status_match(t[i].s, ~(1 << t[i].v)), 0);
    }
    NT_ASSERT(strcmp(ach_result_to_string((enum ach_status)20), "UNKNOWN") ==
              0);
    NT_ASSERT(strcmp(ach_result_to_string((enum ach_status) - 1), "UNKNOWN") ==
              0);
    /* aliases */
    NT_EQ(ACH_STALE_FRAMES, ACH_EAGAIN);
    NT_EQ(ACH_LOCKED, ACH_EAGAIN);
    NT_EQ(ACH_MASK_STALE_FRAMES, ACH_MASK_EAGAIN);
    NT_EQ(ACH_MASK_LOCKED, ACH_MASK_EAGAIN);
    NT_EQ(ACH_MASK_CANCELED, 1 << 16);
    NT_EQ(ACH_MASK_ENOTSUP, 1 << 19);
    int m = ACH_MASK_OK | ACH_MASK_MISSED_FRAME;
    NT_EQ(ach_status_match(ACH_OK, m), 1);
    NT_EQ(ach_status_match(ACH_MISSED_FRAME, m), 1);
    NT_EQ(ach_status_match(ACH_STALE_FRAMES, m), 0);
    NT_EQ(ach_status_match(ACH_TIMEOUT, m), 0);
    /* options */
    NT_EQ(ACH_O_WAIT, 1);
    NT_EQ(ACH_O_LAST, 2);
    NT_EQ(ACH_O_COPY, 4);
    NT_EQ(ACH_O_RELTIME, 8);
    NT_EQ(ACH_O_NONBLOCK, 0);
    NT_EQ(ACH_O_FIRST, 0);
    NT_EQ(ACH_O_ABSTIME, 0);
    NT_EQ(ACH_MAP_DEFAULT, 0);
    NT_EQ(ACH_MAP_ANON, 1);
    NT_EQ(ACH_MAP_USER, 2);
    NT_EQ(ACH_MAP_KERNEL, 3);
    NT_EQ(ACH_CHAN_NAME_MAX, 64);
    NT_EQ(ACH_DEFAULT_CLOCK, CLOCK_MONOTONIC);
}

/* ---- every option combination on every channel state ----------------------- */

enum state {
    S_EMPTY,   /* nothing ever put */
    S_UNSEEN3, /* frames 1..3, cursor 0 */
    S_SEEN1,   /* frames 1..3, cursor 1 */
    S_SEEN2,   /* frames 1..3, cursor 2 (one new frame) */
    S_SEENALL, /* frames 1..3, cursor 3 */
    S_LAPPED,  /* 4 slots, frames 1..10, cursor 0: oldest present is 7 */
    S_COUNT
};

struct expect {
    enum ach_status st;
    int value; /* frame (= its sequence number) returned, -1 for none */
    uint64_t seq_after;
};

/* Expected result of a get with `opt` (LAST, COPY bits; WAIT with an
 * expired timeout) in `s`, from Ach's documented semantics: NEXT takes
 * seq + 1 or the oldest present; LAST the newest; COPY with nothing new
 * takes the newest again with ACH_OK; MISSED_FRAME when the frame
 * returned is beyond seq + 1; nothing to take: STALE, or TIMEOUT if
 * waiting. */
static struct expect expected(enum state s, int opt)
{
    const int last = opt & ACH_O_LAST, copy = opt & ACH_O_COPY,
              wait = opt & ACH_O_WAIT;
    uint64_t cursor = 0, oldest = 1, newest = 3;
    switch (s) {
    case S_EMPTY:
        return (struct expect){wait ? ACH_TIMEOUT : ACH_STALE_FRAMES, -1, 0};
    case S_UNSEEN3: cursor = 0; break;
    case S_SEEN1: cursor = 1; break;
    case S_SEEN2: cursor = 2; break;
    case S_SEENALL: cursor = 3; break;
    case S_LAPPED:
        cursor = 0;
        oldest = 7;
        newest = 10;
        break;
    case S_COUNT: break;
    }
    if (cursor == newest) {
        if (copy)
            return (struct expect){ACH_OK, (int)newest, newest};
        return (struct expect){wait ? ACH_TIMEOUT : ACH_STALE_FRAMES, -1,
                               cursor};
    }
    uint64_t take =
        last ? newest : (cursor + 1 >= oldest ? cursor + 1 : oldest);
    return (struct expect){take > cursor + 1 ? ACH_MISSED_FRAME : ACH_OK,
                           (int)take, take};
}

static void setup_state(enum state s, const char *name, ach_channel_t *c)
{
    ach_unlink(name);
    ACH_EQ(ach_create(name, s == S_LAPPED ? 4 : 16, 16, NULL), ACH_OK);
    ACH_EQ(ach_open(c, name, NULL), ACH_OK);
    int n = s == S_EMPTY ? 0 : s == S_LAPPED ? 10 : 3;
    for (int i = 1; i <= n; i++)
        put_int(c, i);
    int v;
    size_t fs;
    int reads = s == S_SEEN1 ? 1 : s == S_SEEN2 ? 2 : s == S_SEENALL ? 3 : 0;
    for (int i = 0; i < reads; i++)
        ACH_EQ(ach_get(c, &v, sizeof v, &fs, NULL, 0), ACH_OK);
    NT_EQ(c->seq_num, (uint64_t)reads);
}

static void test_option_table(void)
{
    const char *name = nt_name("opts");
    const int opts[] = {0, ACH_O_LAST, ACH_O_COPY, ACH_O_LAST | ACH_O_COPY};
    int checked = 0;
    for (int s = 0; s < S_COUNT; s++) {
        for (size_t k = 0; k < 4; k++) {
            for (int w = 0; w < 3; w++) {
                ach_channel_t c;
                setup_state((enum state)s, name, &c);
                int opt = opts[k];
                struct timespec ts;
                const struct timespec *tp = NULL;
                if (w == 1) { /* wait, relative timeout 0 */
                    opt |= ACH_O_WAIT | ACH_O_RELTIME;
                    ts = (struct timespec){0, 0};
                    tp = &ts;
                } else if (w == 2) { /* wait, absolute deadline in the past */
                    opt |= ACH_O_WAIT;
                    clock_gettime(CLOCK_MONOTONIC, &ts);
                    ts.tv_sec -= 1;
                    tp = &ts;
                }
                struct expect e = expected((enum state)s, opt);
                int v = -1;
                size_t fs = 0;
                enum ach_status r = ach_get(&c, &v, sizeof v, &fs, tp, opt);
                if (r != e.st ||
                    (e.value >= 0 && (v != e.value || fs != sizeof v)) ||
                    c.seq_num != e.seq_after)
                    NT_FAIL("state %d opt 0x%x: got %s frame %d seq %llu, "
                            "want %s frame %d seq %llu",
                            s, opt, ach_result_to_string(r), v,
                            (unsigned long long)c.seq_num,
                            ach_result_to_string(e.st), e.value,
                            (unsigned long long)e.seq_after);
                checked++;
                ACH_EQ(ach_close(&c), ACH_OK);
            }
        }
    }
    ACH_EQ(ach_unlink(name), ACH_OK);
    NT_EQ(checked, S_COUNT * 4 * 3);
}

/* test_sequence's channel c (32 frames of 64 bytes) on frames larger
 * than the buffer or the channel, empty ones, and a flush. */
static void test_overflow_and_flush(ach_channel_t *c)
{
    int v;
    size_t fs;
    /* OVERFLOW: the size is reported and the frame is not consumed. */
    char big[40];
    memset(big, 7, sizeof big);
    ACH_EQ(ach_put(c, big, sizeof big), ACH_OK);
    uint64_t before = c->seq_num;
    fs = 0;
    ACH_EQ(ach_get(c, &v, sizeof v, &fs, NULL, 0), ACH_OVERFLOW);
    NT_EQ(fs, sizeof big);
    NT_EQ(c->seq_num, before);
    ACH_EQ(ach_get(c, NULL, 0, &fs, NULL, ACH_O_WAIT), ACH_OVERFLOW);
    NT_EQ(fs, sizeof big);
    char back[64];
    ACH_EQ(ach_get(c, back, sizeof back, &fs, NULL, 0), ACH_OK);
    NT_EQ(fs, sizeof big);
    NT_ASSERT(memcmp(back, big, sizeof big) == 0);

    /* puts: empty frames and frames larger than the channel */
    ACH_EQ(ach_put(c, big, 0), ACH_EINVAL);
    ACH_EQ(ach_put(c, NULL, 4), ACH_EINVAL);
    size_t cap = 32 * 64;
    char *huge = calloc(1, cap + 4096 * 2);
    NT_ASSERT(huge != NULL);
    ACH_EQ(ach_put(c, huge, cap), ACH_OK); /* Ach's largest frame fits */
    ACH_EQ(ach_put(c, huge, cap + 4096 * 2), ACH_OVERFLOW);
    free(huge);

    /* flush: everything now in the channel counts as seen */
    put_int(c, 1);
    put_int(c, 2);
    ACH_EQ(ach_flush(c), ACH_OK);
    ACH_EQ(ach_get(c, &v, sizeof v, &fs, NULL, 0), ACH_STALE_FRAMES);
    put_int(c, 3);
    ACH_EQ(ach_get(c, &v, sizeof v, &fs, NULL, 0), ACH_OK);
    NT_EQ(v, 3);
}

/* The sequence a reader sees over time (Ach's documented example). */
static void test_sequence(void)
{
    const char *name = nt_name("seq");
    ach_channel_t c;
    int v;
    size_t fs;
    struct timespec ts;
    ACH_EQ(ach_create(name, 32, 64, NULL), ACH_OK);
    ACH_EQ(ach_create(name, 32, 64, NULL), ACH_EEXIST);
    ACH_EQ(ach_open(&c, name, NULL), ACH_OK);
    ACH_EQ(ach_get(&c, &v, sizeof v, &fs, NULL, ACH_O_LAST), ACH_STALE_FRAMES);
    ACH_EQ(ach_get(&c, &v, sizeof v, &fs, NULL, 0), ACH_STALE_FRAMES);
    put_int(&c, 42);
    ACH_EQ(ach_get(&c, &v, sizeof v, &fs, NULL, 0), ACH_OK);
    NT_EQ(v, 42);
    NT_EQ(fs, sizeof v);
    put_int(&c, 43);
    put_int(&c, 44);
    ACH_EQ(ach_get(&c, &v, sizeof v, &fs, NULL, ACH_O_LAST), ACH_MISSED_FRAME);
    NT_EQ(v, 44);
    put_int(&c, 45);
    clock_gettime(ACH_DEFAULT_CLOCK, &ts);
    ts.tv_sec += 30;
    ACH_EQ(ach_get(&c, &v, sizeof v, &fs, &ts, ACH_O_LAST | ACH_O_WAIT),
           ACH_OK);
    NT_EQ(v, 45);
    ACH_EQ(ach_get(&c, &v, sizeof v, &fs, NULL, ACH_O_LAST), ACH_STALE_FRAMES);
    v = 0;
    ACH_EQ(ach_get(&c, &v, sizeof v, &fs, NULL, ACH_O_LAST | ACH_O_COPY),
           ACH_OK);
    NT_EQ(v, 45);
    v = 0;
    ACH_EQ(ach_get(&c, &v, sizeof v, &fs, NULL, ACH_O_COPY), ACH_OK);
    NT_EQ(v, 45);
    for (int i = 0; i < 100; i++)
        put_int(&c, 100 + i);
    ACH_EQ(ach_get(&c, &v, sizeof v, &fs, NULL, ACH_O_LAST), ACH_MISSED_FRAME);
    NT_EQ(v, 199);

    test_overflow_and_flush(&c);

    /* bad handles and arguments */
    ACH_EQ(ach_get(&c, NULL, 4, &fs, NULL, 0), ACH_EINVAL);
    ACH_EQ(ach_close(&c), ACH_OK);
    ACH_EQ(ach_close(&c), ACH_EINVAL);
    ACH_EQ(ach_put(&c, &v, sizeof v), ACH_EINVAL);
    ACH_EQ(ach_get(&c, &v, sizeof v, &fs, NULL, 0), ACH_EINVAL);
    ACH_EQ(ach_put(NULL, &v, sizeof v), ACH_EINVAL);
    ACH_EQ(ach_flush(NULL), ACH_EINVAL);
    ACH_EQ(ach_cancel(NULL, NULL), ACH_EINVAL);
    ACH_EQ(ach_unlink(name), ACH_OK);
    ACH_EQ(ach_unlink(name), ACH_ENOENT);
    ACH_EQ(ach_open(&c, name, NULL), ACH_ENOENT);
}

/* ---- names, attributes, maps ---------------------------------------------- */

static void test_names_attrs(void)
{
    ach_channel_t c;
    char longname[ACH_CHAN_NAME_MAX + 1];
    memset(longname, 'a', ACH_CHAN_NAME_MAX);
    longname[ACH_CHAN_NAME_MAX] = '\0';
    ACH_EQ(ach_create(longname, 4, 4, NULL), ACH_INVALID_NAME);
    ACH_EQ(ach_create("", 4, 4, NULL), ACH_INVALID_NAME);
    ACH_EQ(ach_create(".hidden", 4, 4, NULL), ACH_INVALID_NAME);
    ACH_EQ(ach_create("a/b", 4, 4, NULL), ACH_INVALID_NAME);
    ACH_EQ(ach_create("sp ace", 4, 4, NULL), ACH_INVALID_NAME);
    ACH_EQ(ach_create(NULL, 4, 4, NULL), ACH_EINVAL);
    ACH_EQ(ach_open(&c, "a/b", NULL), ACH_INVALID_NAME);
    ACH_EQ(ach_unlink("../x"), ACH_INVALID_NAME);
    ACH_EQ(ach_open(NULL, "x", NULL), ACH_EINVAL);

    ach_create_attr_t ca;
    ach_create_attr_init(&ca);
    NT_EQ(ca.clock, ACH_DEFAULT_CLOCK);
    NT_EQ(ca.truncate, 0);
    ACH_EQ(ach_create_attr_set_clock(&ca, (clockid_t)9999), ACH_EINVAL);
    ACH_EQ(ach_create_attr_set_map(&ca, (enum ach_map)7), ACH_EINVAL);

    /* ANON is refused with a clear status; KERNEL is the shm channel. */
    const char *name = nt_name("map");
    ACH_EQ(ach_create_attr_set_map(&ca, ACH_MAP_ANON), ACH_OK);
    ACH_EQ(ach_create(name, 4, 4, &ca), ACH_ENOTSUP);
    NT_ASSERT(strstr(ach_errstr(), "ANON") != NULL);
    ach_attr_t oa;
    ach_attr_init(&oa);
    ACH_EQ(ach_attr_set_shm(&oa, NULL), ACH_OK);
    NT_EQ(oa.map, ACH_MAP_ANON);
    ACH_EQ(ach_open(&c, name, &oa), ACH_ENOTSUP);
    ACH_EQ(ach_create_attr_set_map(&ca, ACH_MAP_KERNEL), ACH_OK);
    ACH_EQ(ach_create(name, 0, 0, &ca), ACH_OK); /* 0, 0: the defaults */
    ACH_EQ(ach_open(&c, name, NULL), ACH_OK);
    enum ach_map map = ACH_MAP_DEFAULT;
    ACH_EQ(ach_channel_map(&c, &map), ACH_OK);
    NT_EQ(map, ACH_MAP_USER);
    struct nerve_stats st;
    NT_OK(nerve_chan_stat_name(name, &st));
    NT_EQ(st.slots, ACH_DEFAULT_FRAME_COUNT);
    NT_CMP(st.data_size, >=,
           (uint64_t)ACH_DEFAULT_FRAME_COUNT * ACH_DEFAULT_FRAME_SIZE);
    int fd = -1;
    ACH_EQ(ach_channel_fd(&c, &fd), ACH_OK);
    struct stat sb;
    NT_EQ(fstat(fd, &sb), 0);
    NT_EQ((uint64_t)sb.st_size, st.file_size);
    NT_EQ(c.len, st.file_size);

    /* chmod */
    ACH_EQ(ach_chmod(&c, 0600), ACH_OK);
    NT_OK(nerve_chan_stat_name(name, &st));
    NT_EQ(st.mode, 0600);
    ACH_EQ(ach_chmod(&c, 01777), ACH_EINVAL);
    ACH_EQ(ach_close(&c), ACH_OK);

    /* truncate: remove and re-create with the new geometry */
    ach_create_attr_init(&ca);
    ACH_EQ(ach_create(name, 8, 8, &ca), ACH_EEXIST);
    ACH_EQ(ach_create_attr_set_truncate(&ca, 1), ACH_OK);
    ACH_EQ(ach_create(name, 8, 8, &ca), ACH_OK);
    NT_OK(nerve_chan_stat_name(name, &st));
    NT_EQ(st.slots, 8);
    struct ach_header *shm = (struct ach_header *)&ca;
    ACH_EQ(ach_create_attr_get_shm(&ca, &shm), ACH_OK);
    NT_ASSERT(shm == NULL);
    ACH_EQ(ach_unlink(name), ACH_OK);

    ach_cancel_attr_t xa;
    memset(&xa, 0xff, sizeof xa);
    ach_cancel_attr_init(&xa);
    NT_EQ(xa.async_unsafe, 0);
}

/* ---- clocks and timeouts ------------------------------------------------------- */

static void test_clocks(void)
{
    const clockid_t clocks[] = {CLOCK_MONOTONIC, CLOCK_REALTIME};
    for (size_t i = 0; i < 2; i++) {
        const char *name = nt_name("clock");
        ach_create_attr_t ca;
        ach_create_attr_init(&ca);
        ACH_EQ(ach_create_attr_set_clock(&ca, clocks[i]), ACH_OK);
        ACH_EQ(ach_create(name, 4, 16, &ca), ACH_OK);
        ach_channel_t c;
        ACH_EQ(ach_open(&c, name, NULL), ACH_OK);
        clockid_t got = (clockid_t)-1;
        ACH_EQ(ach_channel_clock(&c, &got), ACH_OK);
        NT_EQ(got, clocks[i]);
        NT_EQ(c.clock, clocks[i]);
        int v;
        size_t fs;
        struct timespec ts;
        /* absolute, on the channel's clock: 20 ms from now */
        clock_gettime(clocks[i], &ts);
        ts.tv_nsec += 20000000;
        if (ts.tv_nsec >= 1000000000) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000;
        }
        ACH_EQ(ach_get(&c, &v, sizeof v, &fs, &ts, ACH_O_WAIT), ACH_TIMEOUT);
        ACH_EQ(ach_get(&c, &v, sizeof v, &fs, &ts, ACH_O_WAIT | ACH_O_LAST),
               ACH_TIMEOUT);
        /* absolute, already past */
        clock_gettime(clocks[i], &ts);
        ts.tv_sec -= 10;
        ACH_EQ(ach_get(&c, &v, sizeof v, &fs, &ts, ACH_O_WAIT), ACH_TIMEOUT);
        /* relative */
        ts = (struct timespec){0, 20000000};
        ACH_EQ(ach_get(&c, &v, sizeof v, &fs, &ts, ACH_O_WAIT | ACH_O_RELTIME),
               ACH_TIMEOUT);
        ts = (struct timespec){-5, 0};
        ACH_EQ(ach_get(&c, &v, sizeof v, &fs, &ts, ACH_O_WAIT | ACH_O_RELTIME),
               ACH_TIMEOUT);
        /* a frame present is returned, whatever the timeout */
        put_int(&c, 7);
        ACH_EQ(ach_get(&c, &v, sizeof v, &fs, &ts, ACH_O_WAIT | ACH_O_RELTIME),
               ACH_OK);
        NT_EQ(v, 7);
        ACH_EQ(ach_close(&c), ACH_OK);
        ACH_EQ(ach_unlink(name), ACH_OK);
    }
}

/* ---- deadlines at the ends of time_t (issue 28, item 5) ------------------------ */

/* Run ach_get(..., ACH_O_WAIT | extra) with *ts on an empty channel in a
 * child whose alarm ends it after 20 s: a wait that treated the time as
 * "no bound" would never return. Returns the child's status, or -SIGALRM
 * if the alarm ended it. */
static int get_in_child(const char *name, const struct timespec *ts, int extra)
{
    pid_t pid = fork();
    NT_ASSERT(pid >= 0);
    if (pid == 0) {
        alarm(20);
        ach_channel_t c;
        if (ach_open(&c, name, NULL) != ACH_OK)
            _exit(100);
        int v;
        size_t fs;
        enum ach_status s =
            ach_get(&c, &v, sizeof v, &fs, ts, ACH_O_WAIT | extra);
        (void)ach_close(&c);
        _exit((int)s);
    }
    int st;
    NT_EQ(waitpid(pid, &st, 0), pid);
    if (WIFSIGNALED(st))
        return -WTERMSIG(st);
    return WEXITSTATUS(st);
}

/* An event handler that ends the loop at once (never reached when the
 * period is refused). */
static enum ach_status ev_stop(void *cx, ach_channel_t *ch)
{
    (void)cx;
    (void)ch;
    return ACH_CANCELED;
}

static void test_deadlines(void)
{
    const clockid_t clocks[] = {CLOCK_MONOTONIC, CLOCK_REALTIME};
    /* tv_sec * 1e9 overflows int64 below -9223372036 s and above
     * 9223372036 s; INT64_MIN and -1 bracket the rest. */
    const time_t past[] = {
        -9223372037LL, -9223372036LL, INT64_MIN, INT64_MIN + 1, -1, 0};
    for (size_t i = 0; i < 2; i++) {
        const char *name = nt_name("deadline");
        ach_create_attr_t ca;
        ach_create_attr_init(&ca);
        ACH_EQ(ach_create_attr_set_clock(&ca, clocks[i]), ACH_OK);
        ACH_EQ(ach_create(name, 4, 16, &ca), ACH_OK);
        for (size_t k = 0; k < sizeof past / sizeof past[0]; k++) {
            struct timespec ts = {past[k], 0};
            int st = get_in_child(name, &ts, 0);
            if (st != ACH_TIMEOUT)
                NT_FAIL("clock %d, absolute tv_sec %lld: status %d, want "
                        "ACH_TIMEOUT (%d; -%d is the alarm: it waited)",
                        (int)clocks[i], (long long)past[k], st, ACH_TIMEOUT,
                        SIGALRM);
            /* relative: any time <= 0 has passed */
            st = get_in_child(name, &ts, ACH_O_RELTIME);
            if (st != ACH_TIMEOUT)
                NT_FAIL("clock %d, relative tv_sec %lld: status %d, want "
                        "ACH_TIMEOUT",
                        (int)clocks[i], (long long)past[k], st);
        }
        ach_channel_t c;
        ACH_EQ(ach_open(&c, name, NULL), ACH_OK);
        int v;
        size_t fs;
        /* tv_nsec outside [0, 1e9): refused, whatever else is asked */
        const long bad_nsec[] = {-1, 1000000000L, -1000000000L, 0x7fffffffL};
        for (size_t k = 0; k < sizeof bad_nsec / sizeof bad_nsec[0]; k++) {
            struct timespec ts = {0, bad_nsec[k]};
            ACH_EQ(ach_get(&c, &v, sizeof v, &fs, &ts, ACH_O_WAIT), ACH_EINVAL);
            ACH_EQ(
                ach_get(&c, &v, sizeof v, &fs, &ts, ACH_O_WAIT | ACH_O_RELTIME),
                ACH_EINVAL);
            ts.tv_sec = -9223372037LL;
            ACH_EQ(ach_get(&c, &v, sizeof v, &fs, &ts, ACH_O_WAIT), ACH_EINVAL);
            struct ach_evhandler h = {&c, NULL, ev_stop};
            ACH_EQ(ach_evhandle(&h, 1, &ts, NULL, NULL, 0), ACH_EINVAL);
        }
        /* far in the future, either sign of overflow: a frame present is
         * returned at once (and nothing overflowed into the past) */
        put_int(&c, 9);
        struct timespec far = {INT64_MAX, 999999999};
        ACH_EQ(ach_get(&c, &v, sizeof v, &fs, &far, ACH_O_WAIT), ACH_OK);
        NT_EQ(v, 9);
        put_int(&c, 10);
        ACH_EQ(ach_get(&c, &v, sizeof v, &fs, &far, ACH_O_WAIT | ACH_O_RELTIME),
               ACH_OK);
        NT_EQ(v, 10);
        ACH_EQ(ach_close(&c), ACH_OK);
        ACH_EQ(ach_unlink(name), ACH_OK);
    }
}

/* ---- cancel (same thread; the signal-handler case is in test_ach_mp) -------- */

static void test_cancel(void)
{
    const char *name = nt_name("cancel");
    ach_channel_t c;
    ACH_EQ(ach_create(name, 4, 16, NULL), ACH_OK);
    ACH_EQ(ach_open(&c, name, NULL), ACH_OK);
    ach_cancel_attr_t xa;
    ach_cancel_attr_init(&xa);
    xa.async_unsafe = 1;
    ACH_EQ(ach_cancel(&c, &xa), ACH_OK);
    NT_EQ(c.cancel, 1);
    ACH_EQ(ach_get(&c, NULL, 0, NULL, NULL, ACH_O_WAIT), ACH_CANCELED);
    /* sticky until the program clears chan->cancel */
    ACH_EQ(ach_get(&c, NULL, 0, NULL, NULL, ACH_O_WAIT), ACH_CANCELED);
    c.cancel = 0;
    struct timespec ts = {0, 10000000};
    ACH_EQ(ach_get(&c, NULL, 0, NULL, &ts, ACH_O_WAIT | ACH_O_RELTIME),
           ACH_TIMEOUT);
    /* a cancelled handle still returns frames that are there */
    ACH_EQ(ach_cancel(&c, NULL), ACH_OK);
    put_int(&c, 5);
    int v = 0;
    size_t fs;
    ACH_EQ(ach_get(&c, &v, sizeof v, &fs, NULL, ACH_O_WAIT), ACH_OK);
    NT_EQ(v, 5);
    ACH_EQ(ach_close(&c), ACH_OK);
    ACH_EQ(ach_unlink(name), ACH_OK);
}

/* ---- xget / xput / evhandle ------------------------------------------------- */

static enum ach_status xput_copy(void *cx, void *dst, const void *obj)
{
    memcpy(dst, obj, *(size_t *)cx);
    return ACH_OK;
}

static enum ach_status xput_fail(void *cx, void *dst, const void *obj)
{
    (void)cx, (void)dst, (void)obj;
    return ACH_EFAULT;
}

static enum ach_status xget_copy(void *cx, void **obj, const void *src,
                                 size_t n)
{
    if (*(size_t *)cx < n)
        return ACH_OVERFLOW;
    memcpy(*obj, src, n);
    return ACH_OK;
}

static int g_ev_seen;
static enum ach_status ev_handler(void *cx, ach_channel_t *ch)
{
    int v;
    size_t fs;
    enum ach_status r = ach_get(ch, &v, sizeof v, &fs, NULL, 0);
    if (r == ACH_OK || r == ACH_MISSED_FRAME) {
        g_ev_seen += v;
        return *(int *)cx == v ? ACH_CANCELED : ACH_OK; /* stop at the last */
    }
    return r;
}

static void test_xfer(void)
{
    const char *name = nt_name("xfer");
    ach_channel_t c;
    ACH_EQ(ach_create(name, 8, 32, NULL), ACH_OK);
    ACH_EQ(ach_open(&c, name, NULL), ACH_OK);
    char msg[] = "hello, ach";
    size_t n = sizeof msg;
    ACH_EQ(ach_xput(&c, xput_copy, &n, msg, n), ACH_OK);
    ACH_EQ(ach_xput(&c, xput_fail, &n, msg, n), ACH_EFAULT);
    ACH_EQ(ach_xput(&c, xput_copy, &n, msg, 0), ACH_EINVAL);
    char buf[64] = {0};
    void *p = buf;
    size_t cap = 4, fs = 0;
    ACH_EQ(ach_xget(&c, xget_copy, &cap, &p, &fs, NULL, 0), ACH_OVERFLOW);
    NT_EQ(fs, n);
    cap = sizeof buf;
    ACH_EQ(ach_xget(&c, xget_copy, &cap, &p, &fs, NULL, 0), ACH_OK);
    NT_EQ(fs, n);
    NT_ASSERT(strcmp(buf, msg) == 0);
    ACH_EQ(ach_xget(&c, xget_copy, &cap, &p, &fs, NULL, 0), ACH_STALE_FRAMES);

    /* event loop: a handler per channel, stopped by its own status */
    put_int(&c, 1);
    put_int(&c, 2);
    int stop_at = 2;
    struct ach_evhandler h = {&c, &stop_at, ev_handler};
    struct timespec period = {1, 0};
    g_ev_seen = 0;
    ACH_EQ(ach_evhandle(&h, 1, &period, NULL, NULL, 0), ACH_CANCELED);
    NT_EQ(g_ev_seen, 3);
    ACH_EQ(ach_evhandle(&h, 0, &period, NULL, NULL, 0), ACH_EINVAL);
    ACH_EQ(ach_close(&c), ACH_OK);
    ACH_EQ(ach_unlink(name), ACH_OK);
}

/* ---- one channel, two APIs ------------------------------------------------------ */

static void test_two_apis(void)
{
    /* Ach writes, nerve reads. */
    const char *name = nt_name("both");
    ach_channel_t c;
    ACH_EQ(ach_create(name, 8, 64, NULL), ACH_OK);
    ACH_EQ(ach_open(&c, name, NULL), ACH_OK);
    nerve_chan *n = NULL;
    NT_OK(nerve_chan_open(name, NERVE_O_WRITE, &n));
    put_int(&c, 11);
    put_int(&c, 12);
    int v = 0;
    struct nerve_get_info gi;
    NT_OK(nerve_chan_get(n, &v, sizeof v, 0, 0, &gi, NERVE_GET_NEXT));
    NT_EQ(v, 11);
    NT_EQ(gi.seq, 1);
    NT_OK(nerve_chan_get(n, &v, sizeof v, 0, 0, &gi, NERVE_GET_NEXT));
    NT_EQ(v, 12);
    /* nerve writes, Ach reads (after what it wrote itself) */
    size_t fs;
    ACH_EQ(ach_flush(&c), ACH_OK);
    int w = 13;
    NT_OK(nerve_chan_put(n, &w, sizeof w, NERVE_FOREVER, NULL, 0));
    ACH_EQ(ach_get(&c, &v, sizeof v, &fs, NULL, 0), ACH_OK);
    NT_EQ(v, 13);
    NT_EQ(c.seq_num, 3);
    nerve_chan_close(n);
    ACH_EQ(ach_close(&c), ACH_OK);
    ACH_EQ(ach_unlink(name), ACH_OK);

    /* A channel nerve created (with metadata) opens through Ach. */
    name = nt_name("native");
    struct nerve_chan_opts o = NERVE_CHAN_OPTS_INIT;
    o.slots = 4;
    o.data_size = 4096;
    o.type = "demo/Int";
    o.encoding = "raw";
    NT_OK(nerve_chan_create(name, &o));
    ACH_EQ(ach_open(&c, name, NULL), ACH_OK);
    clockid_t clk;
    ACH_EQ(ach_channel_clock(&c, &clk), ACH_OK);
    NT_EQ(clk, CLOCK_MONOTONIC);
    NT_OK(nerve_chan_open(name, NERVE_O_READ, &n));
    put_int(&c, 21);
    NT_OK(nerve_chan_get(n, &v, sizeof v, 0, 0, &gi, NERVE_GET_NEWEST));
    NT_EQ(v, 21);
    nerve_chan_close(n);
    ACH_EQ(ach_close(&c), ACH_OK);
    ACH_EQ(ach_unlink(name), ACH_OK);

    /* Not a channel: a clear status, no crash. */
    name = nt_name("junk");
    char path[256];
    snprintf(path, sizeof path, "/dev/shm/nerve.%s", name);
    int fd = open(path, O_CREAT | O_WRONLY | O_TRUNC, 0644);
    NT_ASSERT(fd >= 0);
    NT_EQ(write(fd, "not a channel, just some bytes", 30), 30);
    close(fd);
    enum ach_status r = ach_open(&c, name, NULL);
    NT_ASSERT(r == ACH_BAD_SHM_FILE || r == ACH_CORRUPT);
    unlink(path);
}

int main(void)
{
    nt_watchdog(60);
    test_statuses();
    test_option_table();
    test_sequence();
    test_names_attrs();
    test_clocks();
    test_deadlines();
    test_cancel();
    test_xfer();
    test_two_apis();
    printf("test_ach_api: ok\n");
    return 0;
}
