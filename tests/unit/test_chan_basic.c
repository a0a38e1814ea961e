/* Channel lifecycle, names, options, metadata, and the basic put/get
 * contract of every read mode. */
#include "nerve_test.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

static void test_errors_table(void)
{
    NT_ASSERT(strcmp(nerve_err_name(NERVE_ECORRUPT), "ECORRUPT") == 0);
    NT_ASSERT(strcmp(nerve_err_name(0), "OK") == 0);
    NT_ASSERT(strcmp(nerve_err_name(12345), "UNKNOWN") == 0);
    NT_ASSERT(strcmp(nerve_strerror(NERVE_EAGAIN), "no new message") == 0);
    NT_ASSERT(strcmp(nerve_strerror(-99999), "unknown error") == 0);
    NT_EQ(NERVE_EAGAIN, -EAGAIN);
    NT_EQ(NERVE_ETIMEDOUT, -ETIMEDOUT);
    NT_CMP(NERVE_ECORRUPT, <=, -1000);
}

/* The five mistakes every binding's error test makes (tests/cxx
 * test_cxx_api.cpp, tests/python test_api.py, tests/cli test_cli.py):
 * nerve_err_detail() says what was wrong, what is accepted, what to do. */
static void has(const char *text, const char *part)
{
    if (strstr(text, part) == NULL)
        NT_FAIL("detail '%s' lacks '%s'", text, part);
}

static void test_error_details(void)
{
    const char *n = nt_name("detail");
    nerve_chan *c;
    /* 1. A name that breaks the rule. */
    NT_RC(nerve_chan_open("bad name", NERVE_O_READ, &c), NERVE_EINVAL);
    has(nerve_err_detail(NERVE_EINVAL), "a space is not allowed");
    has(nerve_err_detail(NERVE_EINVAL), "names use A-Z a-z 0-9 _ . -");
    /* 2. No such channel. */
    NT_RC(nerve_chan_open(n, NERVE_O_READ, &c), NERVE_ENOENT);
    has(nerve_err_detail(NERVE_ENOENT), "no such channel");
    /* The library describes the problem; only a tool names its own verbs
     * and flags (the nerve command adds its hint, tools/cli_err.c). */
    NT_ASSERT(strstr(nerve_err_detail(NERVE_ENOENT), "nerve ") == NULL);
    /* 3. It exists already. */
    struct nerve_chan_opts o = NERVE_CHAN_OPTS_INIT;
    o.slots = 8;
    o.data_size = 4096;
    o.type = "demo/A";
    NT_OK(nerve_chan_create(n, &o));
    NT_RC(nerve_chan_create(n, &o), NERVE_EEXIST);
    has(nerve_err_detail(NERVE_EEXIST), "exists (open it; or reuse it");
    /* 4. Another type. */
    o.type = "demo/B";
    o.flags = NERVE_C_EXIST_OK;
    NT_RC(nerve_chan_create(n, &o), NERVE_EMISMATCH);
    has(nerve_err_detail(NERVE_EMISMATCH), "type 'demo/A'");
    has(nerve_err_detail(NERVE_EMISMATCH), "asked for type 'demo/B'");
    /* 5. Larger than the ring. */
    static char big[5000];
    NT_OK(nerve_chan_open(n, NERVE_O_WRITE, &c));
    NT_RC(nerve_chan_put(c, big, sizeof big, 0, NULL, 0), NERVE_EMSGSIZE);
    has(nerve_err_detail(NERVE_EMSGSIZE),
        "a message of 5000 bytes does not fit: the channel's data ring is "
        "4096 bytes");
    /* A detail belongs to its code; others get the code's message. */
    NT_ASSERT(strcmp(nerve_err_detail(NERVE_EAGAIN),
                     nerve_strerror(NERVE_EAGAIN)) == 0);
    /* A setup call that succeeds forgets it. */
    nerve_chan_close(c);
    NT_OK(nerve_chan_open(n, NERVE_O_READ, &c));
    NT_ASSERT(strcmp(nerve_err_detail(NERVE_EINVAL),
                     nerve_strerror(NERVE_EINVAL)) == 0);
    nerve_chan_close(c);
    NT_OK(nerve_chan_unlink(n));
}

static void test_names(void)
{
    NT_OK(nerve_chan_name_check("imu"));
    NT_OK(nerve_chan_name_check("robot.arm-left_2"));
    NT_RC(nerve_chan_name_check(""), NERVE_EINVAL);
    NT_RC(nerve_chan_name_check(NULL), NERVE_EINVAL);
    NT_RC(nerve_chan_name_check(".hidden"), NERVE_EINVAL);
    NT_RC(nerve_chan_name_check("a/b"), NERVE_EINVAL);
    NT_RC(nerve_chan_name_check("sp ace"), NERVE_EINVAL);
    char longname[NERVE_NAME_MAX + 2];
    memset(longname, 'x', sizeof longname);
    longname[NERVE_NAME_MAX] = 0;
    NT_OK(nerve_chan_name_check(longname));
    longname[NERVE_NAME_MAX] = 'x';
    longname[NERVE_NAME_MAX + 1] = 0;
    NT_RC(nerve_chan_name_check(longname), NERVE_ENAMETOOLONG);
    /* The limit is stated once and as the one enforced (it said "longer
     * than 200 bytes (... at most 255 bytes)"). */
    NT_ASSERT(strcmp(nerve_err_detail(NERVE_ENAMETOOLONG),
                     "channel name longer than 200 bytes") == 0);
    NT_RC(nerve_chan_name_check("sp ace"), NERVE_EINVAL);
    NT_ASSERT(strstr(nerve_err_detail(NERVE_EINVAL), "at most 200 bytes"));
    NT_ASSERT(!strstr(nerve_err_detail(NERVE_EINVAL), "255"));
    /* A ROS topic is told its channel. */
    NT_RC(nerve_chan_name_check("/camera/image"), NERVE_EINVAL);
    NT_ASSERT(strstr(nerve_err_detail(NERVE_EINVAL),
                     "the ROS topic /camera/image is the channel "
                     "camera.image"));
    NT_RC(nerve_chan_name_check("/a/#"), NERVE_EINVAL);
    NT_ASSERT(strstr(nerve_err_detail(NERVE_EINVAL),
                     "'/' is not allowed in a channel name (names use"));
    nerve_chan *c;
    NT_RC(nerve_chan_create("bad/name", NULL), NERVE_EINVAL);
    NT_RC(nerve_chan_open(longname, NERVE_O_READ, &c), NERVE_ENAMETOOLONG);
    NT_RC(nerve_chan_unlink("bad name"), NERVE_EINVAL);
}

static void test_create_open(void)
{
    const char *n = nt_name("life");
    nerve_chan *c;
    NT_RC(nerve_chan_open(n, NERVE_O_READ, &c), NERVE_ENOENT);
    NT_RC(nerve_chan_unlink(n), NERVE_ENOENT);
    NT_OK(nerve_chan_create(n, NULL));
    NT_RC(nerve_chan_create(n, NULL), NERVE_EEXIST);

    /* Reuse: same geometry is fine, another is a mismatch. */
    struct nerve_chan_opts o = NERVE_CHAN_OPTS_INIT;
    o.flags = NERVE_C_EXIST_OK;
    NT_OK(nerve_chan_create(n, &o));
    o.slots = 7;
    NT_RC(nerve_chan_create(n, &o), NERVE_EMISMATCH);

    NT_OK(nerve_chan_open(n, NERVE_O_READ, &c));
    NT_ASSERT(strcmp(nerve_chan_name(c), n) == 0);
    struct nerve_stats st;
    NT_OK(nerve_chan_stat(c, &st));
    NT_EQ(st.slots, 1024);
    NT_EQ(st.data_size, 1 << 20);
    NT_EQ(st.head_seq, 0);
    NT_EQ(st.tail_seq, 1);
    NT_EQ(st.mode, 0644);
    NT_EQ(st.layout_version, NERVE_LAYOUT_VERSION);
    NT_EQ(st.creator_version, NERVE_VERSION_NUMBER);
    NT_CMP(st.created_ns, >, 0);
    /* A read-only handle cannot write. */
    NT_RC(nerve_chan_put(c, "x", 1, NERVE_FOREVER, NULL, 0), NERVE_EROFS);
    void *p;
    NT_RC(nerve_chan_reserve(c, 1, NERVE_FOREVER, &p, 0), NERVE_EROFS);
    nerve_chan_close(c);
    NT_RC(nerve_chan_open(n, 0x80, &c), NERVE_EINVAL);
    NT_RC(nerve_chan_open(n, NERVE_O_READ, NULL), NERVE_EINVAL);
    NT_OK(nerve_chan_stat_name(n, &st));
    NT_OK(nerve_chan_unlink(n));
    NT_RC(nerve_chan_stat_name(n, &st), NERVE_ENOENT);
}

struct list_ctx {
    const char *want;
    int found;
};

static int list_cb(const char *name, void *arg)
{
    struct list_ctx *l = arg;
    if (strcmp(name, l->want) == 0)
        l->found++;
    return 0;
}

static int list_stop(const char *name, void *arg)
{
    (void)name;
    (void)arg;
    return 42;
}

static void test_list(void)
{
    const char *n = nt_name("list");
    NT_OK(nerve_chan_create(n, NULL));
    struct list_ctx l = {n, 0};
    NT_OK(nerve_chan_list(list_cb, &l));
    NT_EQ(l.found, 1);
    NT_EQ(nerve_chan_list(list_stop, NULL), 42);
    NT_RC(nerve_chan_list(NULL, NULL), NERVE_EINVAL);
    NT_OK(nerve_chan_unlink(n));
    l.found = 0;
    NT_OK(nerve_chan_list(list_cb, &l));
    NT_EQ(l.found, 0);
}

static void test_options(void)
{
    const char *n = nt_name("opts");
    struct nerve_chan_opts o = NERVE_CHAN_OPTS_INIT;
    o.mode = 01777;
    NT_RC(nerve_chan_create(n, &o), NERVE_EINVAL);
    o.mode = 0;
    o.flags = 0x100;
    NT_RC(nerve_chan_create(n, &o), NERVE_EINVAL);
    o.flags = 0;
    o.reserved0 = 1;
    NT_RC(nerve_chan_create(n, &o), NERVE_EINVAL);
    o.reserved0 = 0;
    o.slots = (1ull << 40);
    NT_RC(nerve_chan_create(n, &o), NERVE_EINVAL);
    o.slots = 0;
    o.schema = "abc";
    o.schema_len = NERVE_SCHEMA_MAX + 1;
    NT_RC(nerve_chan_create(n, &o), NERVE_EINVAL);
    o.schema = NULL;
    o.schema_len = 3;
    NT_RC(nerve_chan_create(n, &o), NERVE_EINVAL);
    o.schema_len = 0;
    /* Options that grew: an unknown non-zero tail is refused, a zero tail
     * is accepted. */
    struct {
        struct nerve_chan_opts o;
        uint64_t future;
    } big;
    memset(&big, 0, sizeof big);
    big.o.size = sizeof big;
    big.future = 1;
    NT_RC(nerve_chan_create(n, &big.o), NERVE_EINVAL);
    big.future = 0;
    NT_OK(nerve_chan_create(n, &big.o));
    NT_OK(nerve_chan_unlink(n));
    /* An older, shorter options struct: only its fields are read. */
    struct nerve_chan_opts small = NERVE_CHAN_OPTS_INIT;
    small.size = 8;
    small.slots = 3; /* beyond size: ignored, default used */
    NT_OK(nerve_chan_create(n, &small));
    struct nerve_stats st;
    NT_OK(nerve_chan_stat_name(n, &st));
    NT_EQ(st.slots, 1024);
    NT_OK(nerve_chan_unlink(n));
    small.size = 2;
    NT_RC(nerve_chan_create(n, &small), NERVE_EINVAL);
}

static void test_metadata(void)
{
    const char *n = nt_name("meta");
    struct nerve_chan_opts o = NERVE_CHAN_OPTS_INIT;
    o.type = "sensor_msgs/msg/Imu";
    o.encoding = "cdr";
    o.schema = "float64 x\nfloat64 y\n";
    o.schema_len = strlen(o.schema);
    o.mode = 0600;
    NT_OK(nerve_chan_create(n, &o));
    nerve_chan *c;
    NT_OK(nerve_chan_open(n, NERVE_O_READ, &c));
    struct nerve_meta m;
    NT_OK(nerve_chan_meta(c, &m));
    NT_ASSERT(strcmp(m.type, "sensor_msgs/msg/Imu") == 0);
    NT_ASSERT(strcmp(m.encoding, "cdr") == 0);
    NT_EQ(m.schema_len, strlen(o.schema));
    NT_ASSERT(memcmp(m.schema, o.schema, m.schema_len) == 0);
    struct nerve_stats st;
    NT_OK(nerve_chan_stat(c, &st));
    NT_EQ(st.mode, 0600);
    nerve_chan_close(c);
    /* EXIST_OK compares metadata too. */
    o.flags = NERVE_C_EXIST_OK;
    NT_OK(nerve_chan_create(n, &o));
    o.type = "other";
    NT_RC(nerve_chan_create(n, &o), NERVE_EMISMATCH);
    NT_OK(nerve_chan_unlink(n));
    /* Too-long type and encoding. */
    char t[NERVE_TYPE_MAX + 2];
    memset(t, 'a', sizeof t);
    t[sizeof t - 1] = 0;
    struct nerve_chan_opts o2 = NERVE_CHAN_OPTS_INIT;
    o2.type = t;
    NT_RC(nerve_chan_create(n, &o2), NERVE_EINVAL);
    o2.type = NULL;
    o2.encoding = t;
    NT_RC(nerve_chan_create(n, &o2), NERVE_EINVAL);
    /* Empty metadata reads back as empty strings. */
    NT_OK(nerve_chan_create(n, NULL));
    NT_OK(nerve_chan_open(n, NERVE_O_READ, &c));
    NT_OK(nerve_chan_meta(c, &m));
    NT_ASSERT(m.type[0] == 0 && m.encoding[0] == 0 && m.schema_len == 0);
    nerve_chan_close(c);
    NT_OK(nerve_chan_unlink(n));
}

/* test_put_get's channel (8 slots, 4096 bytes), messages 1 to 3 written:
 * bad arguments, and a message that takes the whole ring. */
static void put_get_bad_and_whole_ring(nerve_chan *w, nerve_chan *r)
{
    char buf[64];
    struct nerve_get_info gi;
    struct nerve_put_info pi;
    /* Bad flags and arguments. */
    NT_RC(nerve_chan_get(r, buf, sizeof buf, 0, 0, &gi, 0x1000), NERVE_EINVAL);
    NT_RC(nerve_chan_get(r, NULL, 5, 0, 0, &gi, 0), NERVE_EINVAL);
    NT_RC(nerve_chan_get(r, buf, sizeof buf, 0, 0, &gi,
                         NERVE_GET_AT | NERVE_F_WAIT),
          NERVE_EINVAL);
    NT_RC(nerve_chan_put(w, NULL, 5, 0, NULL, 0), NERVE_EINVAL);
    NT_RC(nerve_chan_put(w, "x", 1, 0, NULL, NERVE_F_WAIT), NERVE_EINVAL);
    /* Larger than the ring. */
    static char big[8192];
    NT_RC(nerve_chan_put(w, big, sizeof big, 0, NULL, 0), NERVE_EMSGSIZE);
    /* Exactly the ring. */
    NT_OK(nerve_chan_put(w, big, 4096, 0, &pi, 0));
    NT_EQ(pi.seq, 4);

    struct nerve_stats st;
    NT_OK(nerve_chan_stat(r, &st));
    NT_EQ(st.head_seq, 4);
    /* The full-ring message destroyed the others, except the empty message
     * 3, which occupies no byte. */
    NT_EQ(st.tail_seq, 3);
    NT_EQ(st.bytes_total, 5 + 6 + 0 + 4096);
    NT_EQ(st.newest_time_ns, pi.time_ns);
    static char big2[4096];
    NT_RC(nerve_chan_get(r, buf, sizeof buf, 0, 0, &gi, NERVE_GET_NEXT),
          NERVE_EMSGSIZE);
    NT_EQ(gi.len, 4096);
    NT_OK(nerve_chan_get(r, big2, sizeof big2, 0, 0, &gi, NERVE_GET_NEXT));
    NT_EQ(gi.seq, 4);
    NT_EQ(gi.missed, 0);
    /* Messages destroyed by it are reported as overwritten. */
    NT_RC(nerve_chan_get(r, buf, sizeof buf, 2, 0, &gi, NERVE_GET_SEQ),
          NERVE_EOVERWRITTEN);
    /* A reader starting late gets the oldest present and the missed count. */
    nerve_chan_seek(r, 0);
    NT_OK(nerve_chan_get(r, big2, sizeof big2, 0, 0, &gi, NERVE_GET_NEXT));
    NT_EQ(gi.seq, 3);
    NT_EQ(gi.missed, 2);
}

static void test_put_get(void)
{
    const char *n = nt_name("pg");
    nt_create(n, 8, 4096);
    nerve_chan *w, *r;
    NT_OK(nerve_chan_open(n, NERVE_O_WRITE, &w));
    NT_OK(nerve_chan_open(n, NERVE_O_READ, &r));
    char buf[64];
    struct nerve_get_info gi;
    NT_RC(nerve_chan_get(r, buf, sizeof buf, 0, 0, &gi, NERVE_GET_NEXT),
          NERVE_EAGAIN);
    NT_RC(nerve_chan_get(r, buf, sizeof buf, 0, 0, &gi, NERVE_GET_NEWEST),
          NERVE_EAGAIN);
    struct nerve_put_info pi;
    int64_t before = nerve_clock_now_ns();
    NT_OK(nerve_chan_put(w, "hello", 5, NERVE_FOREVER, &pi, 0));
    NT_EQ(pi.seq, 1);
    NT_CMP(pi.time_ns, >=, before);
    NT_EQ(pi.recovered, 0);
    NT_OK(nerve_chan_put(w, "world!", 6, NERVE_FOREVER, &pi, 0));
    NT_EQ(pi.seq, 2);
    NT_OK(nerve_chan_put(w, NULL, 0, 0, &pi, 0)); /* empty message */
    NT_EQ(pi.seq, 3);

    NT_OK(nerve_chan_get(r, buf, sizeof buf, 0, 0, &gi, NERVE_GET_NEXT));
    NT_EQ(gi.seq, 1);
    NT_EQ(gi.len, 5);
    NT_EQ(gi.missed, 0);
    NT_ASSERT(memcmp(buf, "hello", 5) == 0);
    NT_EQ(nerve_chan_cursor(r), 1);
    /* Too small: size reported, cursor unmoved. */
    NT_RC(nerve_chan_get(r, buf, 3, 0, 0, &gi, NERVE_GET_NEXT), NERVE_EMSGSIZE);
    NT_EQ(gi.len, 6);
    NT_EQ(nerve_chan_cursor(r), 1);
    NT_OK(nerve_chan_get(r, buf, sizeof buf, 0, 0, &gi, NERVE_GET_NEXT));
    NT_EQ(gi.seq, 2);
    NT_ASSERT(memcmp(buf, "world!", 6) == 0);
    NT_OK(nerve_chan_get(r, NULL, 0, 0, 0, &gi, NERVE_GET_NEXT));
    NT_EQ(gi.seq, 3);
    NT_EQ(gi.len, 0);
    NT_RC(nerve_chan_get(r, buf, sizeof buf, 0, 0, &gi, NERVE_GET_NEXT),
          NERVE_EAGAIN);

    /* Newest: once, then EAGAIN unless REPEAT. */
    nerve_chan_seek(r, 0);
    NT_OK(nerve_chan_get(r, buf, sizeof buf, 0, 0, &gi, NERVE_GET_NEWEST));
    NT_EQ(gi.seq, 3);
    NT_EQ(gi.missed, 2);
    NT_RC(nerve_chan_get(r, buf, sizeof buf, 0, 0, &gi, NERVE_GET_NEWEST),
          NERVE_EAGAIN);
    NT_OK(nerve_chan_get(r, buf, sizeof buf, 0, 0, &gi,
                         NERVE_GET_NEWEST | NERVE_F_REPEAT));
    NT_EQ(gi.seq, 3);
    NT_EQ(gi.missed, 0);

    /* By sequence number: cursor untouched. */
    NT_OK(nerve_chan_get(r, buf, sizeof buf, 2, 0, &gi, NERVE_GET_SEQ));
    NT_EQ(gi.seq, 2);
    NT_ASSERT(memcmp(buf, "world!", 6) == 0);
    NT_EQ(nerve_chan_cursor(r), 3);
    NT_RC(nerve_chan_get(r, buf, sizeof buf, 4, 0, &gi, NERVE_GET_SEQ),
          NERVE_EAGAIN);
    NT_RC(nerve_chan_get(r, buf, sizeof buf, 0, 0, &gi, NERVE_GET_SEQ),
          NERVE_EINVAL);

    put_get_bad_and_whole_ring(w, r);
    nerve_chan_close(w);
    nerve_chan_close(r);
    NT_OK(nerve_chan_unlink(n));
}

int main(void)
{
    nt_watchdog(60);
    test_errors_table();
    test_error_details();
    test_names();
    test_create_open();
    test_list();
    test_options();
    test_metadata();
    test_put_get();
    printf("ok\n");
    return 0;
}
