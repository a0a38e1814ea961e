/* The bridge kernel (include/nerve/bridge.h): the shared conformance table
 * tests/bridge/cases.txt ($NERVE_BRIDGE_CASES), which the Python and Rust
 * bindings are checked against too, then what a table cannot say: NULLs,
 * names too long, a buffer too small, and the channel directory's changes
 * through inotify and through the periodic scan. */
#include "nerve_test.h"

#include <poll.h>

static int code_of(const char *word)
{
    if (strcmp(word, "0") == 0)
        return 0;
    for (int c = -1; c > -200; c--) {
        const char *n = nerve_err_name(c);
        if (strncmp(n, "NERVE_", 6) == 0 && strcmp(n + 6, word) == 0)
            return c;
        if (strcmp(n, word) == 0)
            return c;
    }
    NT_FAIL("unknown error name '%s' in the table", word);
}

static uint64_t size_of(const char *text)
{
    uint64_t v;
    if (nerve_size_parse(text, &v) != 0)
        NT_FAIL("bad size '%s' in the table", text);
    return v;
}

/* One name case: want is the result or an error name. */
static void name_case(int to_topic, const char *dom, const char *in,
                      const char *want)
{
    char out[NERVE_TOPIC_MAX + 1];
    uint32_t d = (uint32_t)strtoul(dom, NULL, 10);
    int rc = to_topic ? nerve_topic_of_channel(in, d, out, sizeof out)
                      : nerve_channel_of_topic(in, d, out, sizeof out);
    if (want[0] == '/' || !(want[0] >= 'A' && want[0] <= 'Z')) {
        if (rc != 0 || strcmp(out, want) != 0)
            NT_FAIL("%s '%s' (domain %s): rc %s, '%s'; want '%s'",
                    to_topic ? "topic of" : "channel of", in, dom,
                    nerve_err_name(rc), rc ? "" : out, want);
    } else {
        NT_RC(rc, code_of(want));
        NT_ASSERT(nerve_err_detail(rc)[0] != '\0');
    }
}

struct table {
    nerve_budget *b;
    int cases;
};

static void budget_case(struct table *t, char **f, int nf)
{
    if (strcmp(f[0], "budget") == 0 && nf == 3) {
        NT_OK(nerve_budget_close(t->b));
        NT_OK(nerve_budget_open(size_of(f[1]), size_of(f[2]), &t->b));
    } else if (strcmp(f[0], "admit") == 0 && nf == 5) {
        struct nerve_chan_opts o = NERVE_CHAN_OPTS_INIT;
        o.slots = size_of(f[2]);
        o.data_size = size_of(f[3]);
        int rc = nerve_budget_admit(t->b, f[1], &o, 0, NULL);
        if (rc != code_of(f[4]))
            NT_FAIL("admit %s %s %s: %s (%s), want %s", f[1], f[2], f[3],
                    nerve_err_name(rc), nerve_err_detail(rc), f[4]);
    } else if (strcmp(f[0], "release") == 0 && nf == 3) {
        NT_RC(nerve_budget_release(t->b, f[1]), code_of(f[2]));
    } else if (strcmp(f[0], "refused") == 0 && nf == 2) {
        struct nerve_budget_stats st;
        NT_OK(nerve_budget_stat(t->b, &st));
        NT_EQ(st.refused, strtoull(f[1], NULL, 10));
    } else {
        NT_FAIL("bad table line starting '%s'", f[0]);
    }
}

static void table_line(struct table *t, char *line)
{
    char *f[6];
    int nf = 0;
    for (char *w = strtok(line, " \t\n"); w && nf < 6;
         w = strtok(NULL, " \t\n"))
        f[nf++] = w;
    if (nf == 0 || f[0][0] == '#')
        return;
    t->cases++;
    if (strcmp(f[0], "topic") == 0 && nf == 4) {
        name_case(1, f[1], f[2], f[3]);
    } else if (strcmp(f[0], "channel") == 0 && nf == 4) {
        name_case(0, f[1], f[2], f[3]);
    } else if (strcmp(f[0], "glob") == 0 && nf == 4) {
        int want = f[3][0] == '1' ? 1 : f[3][0] == '0' ? 0 : code_of(f[3]);
        int rc = nerve_glob_match(f[1], f[2]);
        if (rc != want)
            NT_FAIL("glob '%s' on '%s': %d, want %s", f[1], f[2], rc, f[3]);
        NT_EQ(nerve_glob_check(f[1]), want < 0 ? want : 0);
    } else {
        budget_case(t, f, nf);
    }
}

static void check_table(void)
{
    const char *path = getenv("NERVE_BRIDGE_CASES");
    if (!path)
        NT_FAIL("NERVE_BRIDGE_CASES (tests/bridge/cases.txt) is not set");
    FILE *fp = fopen(path, "r");
    if (!fp)
        NT_FAIL("cannot open %s", path);
    struct table t = {NULL, 0};
    char line[512];
    while (fgets(line, sizeof line, fp))
        table_line(&t, line);
    fclose(fp);
    NT_OK(nerve_budget_close(t.b));
    NT_CMP(t.cases, >=, 50);
    printf("%d bridge cases agree\n", t.cases);
}

/* What the table cannot hold: NULLs, lengths, small buffers, flags. */
static void check_edges(void)
{
    char out[NERVE_TOPIC_MAX + 1], longname[NERVE_NAME_MAX + 2];
    memset(longname, 'a', sizeof longname - 1);
    longname[sizeof longname - 1] = '\0'; /* 201 bytes: one too many */
    NT_RC(nerve_topic_of_channel(NULL, 0, out, sizeof out), NERVE_EINVAL);
    NT_RC(nerve_topic_of_channel("a", 0, NULL, 4), NERVE_EINVAL);
    NT_RC(nerve_topic_of_channel(longname, 0, out, sizeof out),
          NERVE_ENAMETOOLONG);
    NT_RC(nerve_topic_of_channel("abc", 0, out, 4), NERVE_EMSGSIZE);
    NT_EQ(out[0], '\0');
    NT_OK(nerve_topic_of_channel("abc", 0, out, 5));
    longname[NERVE_NAME_MAX] = '\0'; /* the longest name has a topic */
    NT_OK(nerve_topic_of_channel(longname, 0, out, sizeof out));
    NT_EQ(strlen(out), NERVE_TOPIC_MAX);
    NT_OK(nerve_channel_of_topic(out, 0, out, sizeof out)); /* in place */
    NT_ASSERT(strcmp(out, longname) == 0);
    NT_RC(nerve_channel_of_topic(out, 7, out, sizeof out), NERVE_ENAMETOOLONG);
    NT_RC(nerve_channel_of_topic(NULL, 0, out, sizeof out), NERVE_EINVAL);
    NT_RC(nerve_channel_of_topic("/a b", 0, out, sizeof out), NERVE_EINVAL);
    NT_RC(nerve_channel_of_topic("/ab", 0, out, 2), NERVE_EMSGSIZE);
    NT_RC(nerve_glob_check(NULL), NERVE_EINVAL);
    NT_RC(nerve_glob_check(""), NERVE_EINVAL);
    NT_RC(nerve_glob_match("a*", NULL), NERVE_EINVAL);
    char longglob[NERVE_GLOB_MAX + 2];
    memset(longglob, '*', sizeof longglob - 1);
    longglob[sizeof longglob - 1] = '\0';
    NT_RC(nerve_glob_check(longglob), NERVE_ENAMETOOLONG);
    longglob[NERVE_GLOB_MAX] = '\0'; /* many stars: bounded, no recursion */
    NT_EQ(nerve_glob_match(longglob, longname), 1);
    nerve_budget *b;
    NT_RC(nerve_budget_open(0, 1, &b), NERVE_EINVAL);
    NT_RC(nerve_budget_open(1, 1, NULL), NERVE_EINVAL);
    NT_OK(nerve_budget_open(1 << 20, 1 << 30, &b));
    struct nerve_chan_opts o = NERVE_CHAN_OPTS_INIT;
    NT_RC(nerve_budget_admit(b, "a", &o, 0, NULL), NERVE_EINVAL); /* no size */
    o.slots = 8;
    o.data_size = 4096;
    NT_RC(nerve_budget_admit(NULL, "a", &o, 0, NULL), NERVE_EINVAL);
    NT_RC(nerve_budget_admit(b, NULL, &o, 0, NULL), NERVE_EINVAL);
    NT_RC(nerve_budget_admit(b, "a", NULL, 0, NULL), NERVE_EINVAL);
    NT_RC(nerve_budget_admit(b, "a", &o, 0x80, NULL), NERVE_EINVAL);
    NT_RC(nerve_budget_admit(b, ".hidden", &o, 0, NULL), NERVE_EINVAL);
    longname[NERVE_NAME_MAX] = 'a'; /* 201 bytes again */
    NT_RC(nerve_budget_admit(b, longname, &o, 0, NULL), NERVE_ENAMETOOLONG);
    uint64_t need = 0, file = 0;
    NT_OK(nerve_budget_admit(b, "a", &o, 0, &need));
    NT_OK(nerve_chan_file_size(&o, &file));
    NT_EQ(need, file); /* the library's file size, page size and all */
    o.data_size = 2 << 20;
    NT_RC(nerve_budget_admit(b, "b", &o, NERVE_BUDGET_UNCOUNTED, NULL),
          NERVE_EMSGSIZE);
    NT_ASSERT(strstr(nerve_err_detail(NERVE_EMSGSIZE), "2 MiB") != NULL);
    struct nerve_budget_stats st;
    NT_OK(nerve_budget_stat(b, &st));
    NT_EQ(st.refused, 0);
    NT_EQ(st.used, file);
    NT_EQ(st.channels, 1);
    NT_RC(nerve_budget_stat(b, NULL), NERVE_EINVAL);
    NT_RC(nerve_budget_release(b, NULL), NERVE_EINVAL);
    NT_OK(nerve_budget_close(b));
    NT_OK(nerve_budget_close(NULL));
}

/* The next event within a generous bound, polled on the watcher's fd. */
static void expect(nerve_dir *d, uint32_t kind, const char *name)
{
    struct nerve_dir_event ev;
    for (int tries = 0; tries < 100; tries++) { /* 100 x 200 ms at most */
        int rc = nerve_dir_next(d, &ev);
        if (rc == 0) {
            if (ev.kind != kind || strcmp(ev.name, name) != 0)
                NT_FAIL("event %u '%s', want %u '%s'", ev.kind, ev.name, kind,
                        name);
            return;
        }
        NT_RC(rc, NERVE_EAGAIN);
        struct pollfd p = {nerve_dir_fd(d), POLLIN, 0};
        (void)poll(&p, 1, 200);
    }
    NT_FAIL("no event %u '%s' within 20 s", kind, name);
}

/* After the watcher looked again (woken by the change, or by its timer),
 * nothing is reported. */
static void expect_quiet(nerve_dir *d)
{
    struct pollfd p = {nerve_dir_fd(d), POLLIN, 0};
    NT_EQ(poll(&p, 1, 20000), 1); /* a generous bound: a tick is 500 ms */
    struct nerve_dir_event ev;
    int rc = nerve_dir_next(d, &ev);
    if (rc == 0)
        NT_FAIL("unexpected event %u '%s'", ev.kind, ev.name);
    NT_RC(rc, NERVE_EAGAIN);
}

static void check_dir(uint32_t flags)
{
    const char *pre = nt_name("dir");
    char glob[128], a[128], b[128], other[128];
    snprintf(glob, sizeof glob, "%s.*", pre);
    snprintf(a, sizeof a, "%s.a", pre);
    snprintf(b, sizeof b, "%s.b", pre);
    snprintf(other, sizeof other, "%s-other", pre);
    nt_create(a, 8, 4096);
    const char *globs[] = {glob};
    nerve_dir *d;
    NT_OK(nerve_dir_open(globs, 1, flags, &d));
    if (flags & NERVE_DIR_SCAN)
        NT_EQ(nerve_dir_inotify(d), 0);
    else if (nerve_dir_inotify(d) != 1)
        printf("note: no inotify here: the fallback scan is tested twice\n");
    NT_CMP(nerve_dir_fd(d), >=, 0);
    expect(d, NERVE_DIR_CREATED, a); /* there at the start */
    nt_create(other, 8, 4096);       /* matches no glob: never reported */
    nt_create(b, 8, 4096);
    expect(d, NERVE_DIR_CREATED, b);
    /* Grown: a successor under the name, the same channel: no event. */
    nerve_chan *w;
    NT_OK(nerve_chan_open(b, NERVE_O_WRITE, &w));
    NT_OK(nerve_chan_grow(&w, 8192, 0));
    NT_OK(nerve_chan_close(w));
    expect_quiet(d);
    NT_OK(nerve_chan_unlink(a));
    expect(d, NERVE_DIR_REMOVED, a);
    /* Replaced between two looks: reported as gone, then as new. */
    NT_OK(nerve_chan_unlink(b));
    nt_create(b, 8, 4096);
    expect(d, NERVE_DIR_REMOVED, b);
    expect(d, NERVE_DIR_CREATED, b);
    NT_OK(nerve_chan_unlink(b));
    NT_OK(nerve_chan_unlink(other));
    expect(d, NERVE_DIR_REMOVED, b);
    struct nerve_dir_event ev;
    NT_RC(nerve_dir_next(d, &ev), NERVE_EAGAIN);
    NT_OK(nerve_dir_close(d));
}

static void check_dir_args(void)
{
    nerve_dir *d;
    const char *bad[] = {"ok.*", "no/slash"};
    NT_RC(nerve_dir_open(bad, 2, 0, &d), NERVE_EINVAL);
    NT_ASSERT(strstr(nerve_err_detail(NERVE_EINVAL), "no/slash") != NULL);
    NT_RC(nerve_dir_open(NULL, 1, 0, &d), NERVE_EINVAL);
    NT_RC(nerve_dir_open(NULL, 0, 0, NULL), NERVE_EINVAL);
    NT_RC(nerve_dir_open(NULL, 0, 0x100, &d), NERVE_EINVAL);
    NT_RC(nerve_dir_fd(NULL), NERVE_EINVAL);
    NT_RC(nerve_dir_next(NULL, NULL), NERVE_EINVAL);
    NT_OK(nerve_dir_close(NULL));
}

int main(void)
{
    nt_watchdog(120);
    check_table();
    check_edges();
    check_dir_args();
    check_dir(0);
    check_dir(NERVE_DIR_SCAN);
    printf("bridge kernel: names, globs, budget and directory agree\n");
    return 0;
}
