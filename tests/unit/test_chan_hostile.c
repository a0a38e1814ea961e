/* Files a local user can place in /dev/shm (world-writable, sticky) must
 * not hang, crash or fool any call: a FIFO, socket, directory, device or
 * symlink at a channel's or bell's name is NERVE_ENOTCHAN (never waited
 * on); a bell planted by another user is not used and cannot make a writer
 * fault; files at the temporary names a creator used to take cannot make
 * create fail; descriptor limits, unknown errnos, bad geometry and
 * non-UTF-8 metadata get their own codes and messages. A watchdog turns a
 * regression into a failure instead of a hang. */
#include "nerve_test.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stddef.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#define NOBODY 65534
#define OTHER 65533
#define OFF_DATA_SIZE 56
#define OFF_TYPE 4096

static char path_buf[2][256];

static const char *chan_path(const char *name)
{
    snprintf(path_buf[0], sizeof path_buf[0], "/dev/shm/nerve.%s", name);
    return path_buf[0];
}

static const char *bell_path(const char *name)
{
    snprintf(path_buf[1], sizeof path_buf[1], "/dev/shm/nerve-bell.%s", name);
    return path_buf[1];
}

/* ---- special files ------------------------------------------------------ */

enum kind { FIFO, SOCK, DIRECTORY, SYMLINK_FIFO, DEVICE, NKINDS };
static const char *kind_name[] = {"FIFO", "socket", "directory",
                                  "symlink to a FIFO", "device"};

/* Place a special file of `kind` at path. Returns 0, or -1 when this user
 * cannot make one (devices need CAP_MKNOD). */
static int plant(enum kind kind, const char *path)
{
    switch (kind) {
    case FIFO: NT_EQ(mkfifo(path, 0666), 0); return 0;
    case SOCK: {
        int s = socket(AF_UNIX, SOCK_STREAM, 0);
        NT_ASSERT(s >= 0);
        struct sockaddr_un a = {.sun_family = AF_UNIX};
        snprintf(a.sun_path, sizeof a.sun_path, "%s", path);
        NT_EQ(bind(s, (struct sockaddr *)&a, sizeof a), 0);
        close(s); /* the socket file stays */
        return 0;
    }
    case DIRECTORY: NT_EQ(mkdir(path, 0777), 0); return 0;
    case SYMLINK_FIFO: {
        char target[300];
        snprintf(target, sizeof target, "%s.target", path);
        NT_EQ(mkfifo(target, 0666), 0);
        NT_EQ(symlink(target, path), 0);
        return 0;
    }
    case DEVICE:
        /* /dev/null's numbers: harmless even if something opened it. */
        return mknod(path, S_IFCHR | 0666, makedev(1, 3)) == 0 ? 0 : -1;
    default: NT_FAIL("kind %d", (int)kind);
    }
}

static void unplant(enum kind kind, const char *path)
{
    if (kind == DIRECTORY) {
        NT_EQ(rmdir(path), 0);
        return;
    }
    NT_EQ(unlink(path), 0);
    if (kind == SYMLINK_FIFO) {
        char target[300];
        snprintf(target, sizeof target, "%s.target", path);
        NT_EQ(unlink(target), 0);
    }
}

struct seen {
    const char *want;
    int found;
};

static int find_name(const char *name, void *arg)
{
    struct seen *s = arg;
    if (strcmp(name, s->want) == 0)
        s->found = 1;
    return 0;
}

/* Every call on a name whose channel file is not a regular file. */
static void special_at_channel(enum kind kind)
{
    const char *n = nt_name("special");
    char path[256];
    snprintf(path, sizeof path, "%s", chan_path(n));
    if (plant(kind, path) != 0) {
        printf("note: cannot make a %s here (needs CAP_MKNOD); skipped\n",
               kind_name[kind]);
        return;
    }
    nerve_chan *c = NULL;
    NT_RC(nerve_chan_open(n, NERVE_O_READ, &c), NERVE_ENOTCHAN);
    NT_RC(nerve_chan_open(n, NERVE_O_WRITE, &c), NERVE_ENOTCHAN);
    NT_ASSERT(c == NULL);
    struct nerve_stats st;
    NT_RC(nerve_chan_stat_name(n, &st), NERVE_ENOTCHAN);
    char msg[256] = "";
    NT_RC(nerve_chan_check(n, msg, sizeof msg), NERVE_ENOTCHAN);
    NT_ASSERT(strstr(msg, "not a regular file") != NULL);
    struct nerve_chan_opts o = NERVE_CHAN_OPTS_INIT;
    NT_RC(nerve_chan_create(n, &o), NERVE_EEXIST);
    o.flags = NERVE_C_EXIST_OK;
    NT_RC(nerve_chan_create(n, &o), NERVE_ENOTCHAN);
    NT_RC(nerve_chan_chmod(n, 0600), NERVE_ENOTCHAN);
    /* Listed (tools show it as not a channel), never opened by the list. */
    struct seen s = {n, 0};
    NT_OK(nerve_chan_list(find_name, &s));
    NT_ASSERT(s.found);
    /* unlink removes only channels: the planted thing stays. */
    NT_RC(nerve_chan_unlink(n), NERVE_ENOTCHAN);
    struct stat ls;
    NT_EQ(lstat(path, &ls), 0);
    unplant(kind, path);
    NT_RC(nerve_chan_unlink(n), NERVE_ENOENT);
}

/* A special file at the bell's name: the channel works without a bell. */
static void special_at_bell(enum kind kind)
{
    const char *n = nt_name("sbell");
    nt_create(n, 8, 4096);
    char path[256];
    snprintf(path, sizeof path, "%s", bell_path(n));
    NT_EQ(unlink(path), 0);
    if (plant(kind, path) != 0) {
        NT_OK(nerve_chan_unlink(n));
        return;
    }
    nerve_chan *w, *r;
    NT_OK(nerve_chan_open(n, NERVE_O_WRITE, &w));
    NT_OK(nerve_chan_open(n, NERVE_O_READ, &r));
    NT_OK(nerve_chan_put(w, "x", 1, 0, NULL, 0));
    char b[8];
    struct nerve_get_info gi;
    NT_OK(nerve_chan_get(r, b, sizeof b, 0, 0, &gi, NERVE_F_WAIT));
    /* A wait without a bell polls: it still times out (bounded). */
    NT_RC(nerve_chan_get(r, b, sizeof b, 0, 2000000, &gi, NERVE_F_WAIT),
          NERVE_ETIMEDOUT);
    struct nerve_stats st;
    NT_OK(nerve_chan_stat(w, &st));
    NT_EQ(st.waiters, 0);
    nerve_chan_close(r);
    nerve_chan_close(w);
    char msg[256];
    NT_OK(nerve_chan_check(n, msg, sizeof msg));
    NT_ASSERT(strstr(msg, "bell is not a regular file") != NULL);
    NT_OK(nerve_chan_unlink(n));
    if (kind == DIRECTORY) {
        unplant(kind, path); /* unlink does not remove a directory */
    } else {
        /* The name is removed with the channel (a symlink, not its
         * target). */
        struct stat ls;
        NT_ASSERT(lstat(path, &ls) != 0);
        if (kind == SYMLINK_FIFO) {
            char target[300];
            snprintf(target, sizeof target, "%s.target", path);
            NT_EQ(unlink(target), 0);
        }
    }
}

/* The same with a fresh create: a special file planted at the bell's name
 * before the channel exists does not make create fail. */
static void special_bell_before_create(void)
{
    const char *n = nt_name("pre");
    char path[256];
    snprintf(path, sizeof path, "%s", bell_path(n));
    NT_EQ(mkfifo(path, 0666), 0);
    nt_create(n, 8, 4096);
    /* This user's own FIFO was replaced by the real bell. */
    char msg[256];
    NT_OK(nerve_chan_check(n, msg, sizeof msg));
    NT_ASSERT(strcmp(msg, "ok; writer lock: free") == 0);
    NT_OK(nerve_chan_unlink(n));
    NT_ASSERT(access(path, F_OK) != 0);
}

/* ---- bells that are not the creator's ----------------------------------- */

static void write_bell(const char *path, mode_t mode, size_t size)
{
    int fd = open(path, O_RDWR | O_CREAT | O_EXCL, mode);
    NT_ASSERT(fd >= 0);
    NT_EQ(fchmod(fd, mode), 0);
    unsigned char b[4096] = {0};
    uint64_t magic = 0x314c42455652454eull; /* a perfect forgery */
    uint32_t version = NERVE_LAYOUT_VERSION;
    memcpy(b, &magic, 8);
    memcpy(b + 8, &version, 4);
    NT_EQ(write(fd, b, size < sizeof b ? size : sizeof b),
          (ssize_t)(size < sizeof b ? size : sizeof b));
    close(fd);
}

/* Same user, but the bell does not match the channel: wrong mode, short,
 * hard-linked. It is not used (no SIGBUS on a short one) and check says
 * why. */
static void mismatched_bell(void)
{
    const char *n = nt_name("mism");
    char msg[256];
    struct {
        const char *why;
        int how;
    } cases[] = {
        {"mode 0666 differs", 0}, {"bell is 100 bytes", 1}, {"2 links", 2}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        nt_create(n, 8, 4096);
        char bp[256], other[300];
        snprintf(bp, sizeof bp, "%s", bell_path(n));
        snprintf(other, sizeof other, "%s.link", bp);
        if (cases[i].how == 0)
            NT_EQ(chmod(bp, 0666), 0);
        else if (cases[i].how == 1)
            NT_EQ(truncate(bp, 100), 0);
        else
            NT_EQ(link(bp, other), 0);
        nerve_chan *w;
        NT_OK(nerve_chan_open(n, NERVE_O_WRITE, &w));
        NT_OK(nerve_chan_put(w, "abc", 3, 0, NULL, 0)); /* no SIGBUS */
        nerve_chan_close(w);
        NT_OK(nerve_chan_check(n, msg, sizeof msg));
        if (strstr(msg, cases[i].why) == NULL)
            NT_FAIL("check says '%s', want '%s'", msg, cases[i].why);
        NT_OK(nerve_chan_unlink(n));
        if (cases[i].how == 2)
            NT_EQ(unlink(other), 0);
    }
}

/* Run fn(name) in a child with uid/gid `uid`; returns its exit status, or
 * -1 when this process may not switch users. */
static int as_user(uid_t uid, void (*fn)(const char *), const char *name)
{
    if (geteuid() != 0)
        return -1;
    pid_t pid = fork();
    NT_ASSERT(pid >= 0);
    if (pid == 0) {
        if (setresgid(uid, uid, uid) != 0 || setresuid(uid, uid, uid) != 0)
            _exit(3);
        fn(name);
        _exit(0);
    }
    int status;
    NT_EQ(waitpid(pid, &status, 0), pid);
    if (WIFSIGNALED(status))
        NT_FAIL("child as uid %u died of signal %d", (unsigned)uid,
                WTERMSIG(status));
    return WEXITSTATUS(status);
}

static void plant_bell(const char *name)
{
    write_bell(bell_path(name), 0644, 4096);
}

static void truncate_bell(const char *name)
{
    NT_EQ(truncate(bell_path(name), 0), 0);
}

/* As another user: create the channel whose bell `nobody` planted. */
static void victim_create(const char *name)
{
    nt_create(name, 8, 4096);
    char msg[256];
    NT_OK(nerve_chan_check(name, msg, sizeof msg));
    if (strstr(msg, "owned by uid 65534") == NULL)
        NT_FAIL("check: '%s'", msg);
}

static void victim_use(const char *name)
{
    nerve_chan *w, *r;
    NT_OK(nerve_chan_open(name, NERVE_O_WRITE, &w));
    NT_OK(nerve_chan_open(name, NERVE_O_READ, &r));
    for (int i = 0; i < 3; i++)
        NT_OK(nerve_chan_put(w, "v", 1, 0, NULL, 0)); /* never SIGBUS */
    char b[8];
    struct nerve_get_info gi;
    NT_OK(nerve_chan_get(r, b, sizeof b, 0, 0, &gi, NERVE_GET_NEWEST));
    NT_EQ(gi.seq % 3, 0); /* 3 puts per call */
    NT_RC(nerve_chan_get(r, b, sizeof b, 0, 2000000, &gi, NERVE_F_WAIT),
          NERVE_ETIMEDOUT);
    nerve_chan_close(r);
    nerve_chan_close(w);
}

static void victim_unlink(const char *name)
{
    NT_OK(nerve_chan_unlink(name));
}

/* As a user without CAP_DAC_OVERRIDE: chmod reaches a file its owner may
 * not read (mode 0200) through O_PATH, never through the name. */
static void chmod_unreadable(const char *name)
{
    struct nerve_chan_opts o = NERVE_CHAN_OPTS_INIT;
    o.mode = 0200;
    NT_OK(nerve_chan_create(name, &o));
    NT_OK(nerve_chan_chmod(name, 0640));
    struct stat st;
    NT_EQ(stat(chan_path(name), &st), 0);
    NT_EQ(st.st_mode & 0777, 0640);
    NT_EQ(stat(bell_path(name), &st), 0);
    NT_EQ(st.st_mode & 0777, 0640);
    char msg[256];
    NT_OK(nerve_chan_check(name, msg, sizeof msg));
    NT_ASSERT(strcmp(msg, "ok; writer lock: free") == 0);
    NT_OK(nerve_chan_unlink(name));
}

static void foreign_bell(void)
{
    if (geteuid() != 0) {
        printf("note: planted-bell tests need root to act as two users; "
               "skipped\n");
        return;
    }
    const char *n = nt_name("foreign");
    char bp[256];
    NT_EQ(as_user(NOBODY, plant_bell, n), 0);
    snprintf(bp, sizeof bp, "%s", bell_path(n));
    struct stat before;
    NT_EQ(stat(bp, &before), 0);
    /* Another user creates the channel: the planted bell is not adopted. */
    NT_EQ(as_user(OTHER, victim_create, n), 0);
    NT_EQ(as_user(OTHER, victim_use, n), 0);
    /* The owner of the planted bell truncates it: nobody maps it, so no
     * writer faults. */
    NT_EQ(as_user(NOBODY, truncate_bell, n), 0);
    NT_EQ(as_user(OTHER, victim_use, n), 0);
    /* The planted bell was never written (waiters stayed 0, size 0). */
    struct stat after;
    NT_EQ(stat(bp, &after), 0);
    NT_EQ(after.st_uid, NOBODY);
    NT_EQ(after.st_size, 0);
    NT_EQ(as_user(OTHER, victim_unlink, n), 0);
    NT_ASSERT(access(chan_path(n), F_OK) != 0);
    NT_EQ(unlink(bp), 0); /* the sticky directory kept it from OTHER */

    NT_EQ(as_user(OTHER, chmod_unreadable, nt_name("chmod")), 0);

    /* Root creating over a planted bell removes it (root may). */
    NT_EQ(as_user(NOBODY, plant_bell, n), 0);
    nt_create(n, 8, 4096);
    NT_EQ(stat(bp, &after), 0);
    NT_EQ(after.st_uid, 0);
    char msg[256];
    NT_OK(nerve_chan_check(n, msg, sizeof msg));
    NT_ASSERT(strcmp(msg, "ok; writer lock: free") == 0);
    NT_OK(nerve_chan_unlink(n));
    NT_ASSERT(access(bp, F_OK) != 0);
}

/* ---- temporary names ---------------------------------------------------- */

/* Files at the names earlier versions used for their temporaries
 * (.nerve-tmp-KIND-PID-N.NAME), and any other .nerve-tmp name: create does
 * not trip over them and leaves no temporary of its own. */
static int count_tmp(pid_t pid)
{
    DIR *d = opendir("/dev/shm");
    NT_ASSERT(d != NULL);
    char tag[64];
    snprintf(tag, sizeof tag, "-%d-", (int)pid);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (strncmp(e->d_name, ".nerve-tmp-", 11) == 0 &&
            strstr(e->d_name, tag) != NULL)
            n++;
    }
    closedir(d);
    return n;
}

static void planted_temp_names(void)
{
    const char *n = nt_name("tmpn");
    char planted[16][300];
    int k = 0;
    for (unsigned i = 0; i < 8; i++) {
        snprintf(planted[k], sizeof planted[k],
                 "/dev/shm/.nerve-tmp-chan-%d-%u.%s", (int)getpid(), i, n);
        write_bell(planted[k++], 0600, 16);
        snprintf(planted[k], sizeof planted[k],
                 "/dev/shm/.nerve-tmp-bell-%d-%u.%s", (int)getpid(), i, n);
        write_bell(planted[k++], 0600, 16);
    }
    int before = count_tmp(getpid());
    NT_EQ(before, k);
    nt_create(n, 8, 4096);
    NT_EQ(count_tmp(getpid()), k); /* none of ours left, the plants kept */
    char msg[256];
    NT_OK(nerve_chan_check(n, msg, sizeof msg));
    NT_ASSERT(strcmp(msg, "ok; writer lock: free") == 0);
    NT_OK(nerve_chan_unlink(n));
    for (int i = 0; i < k; i++)
        NT_EQ(unlink(planted[i]), 0);
}

/* ---- error codes -------------------------------------------------------- */

static int count_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    if (!d)
        return -1;
    int n = 0;
    while (readdir(d) != NULL)
        n++;
    closedir(d);
    return n - 3; /* ".", ".." and the directory's own descriptor */
}

static void descriptor_limits(void)
{
    const char *n = nt_name("fds");
    nt_create(n, 8, 4096);
    /* Documented: an open handle holds one descriptor. */
    int base = count_fds();
    if (base >= 0) {
        nerve_chan *c;
        NT_OK(nerve_chan_open(n, NERVE_O_WRITE, &c));
        NT_EQ(count_fds(), base + 1);
        nerve_chan_close(c);
        NT_EQ(count_fds(), base);
    }
    struct rlimit old, lim;
    NT_EQ(getrlimit(RLIMIT_NOFILE, &old), 0);
    lim = old;
    lim.rlim_cur = 64;
    NT_EQ(setrlimit(RLIMIT_NOFILE, &lim), 0);
    int fds[64], nf = 0;
    for (;;) {
        int fd = dup(0);
        if (fd < 0) {
            NT_EQ(errno, EMFILE);
            break;
        }
        NT_ASSERT(nf < 64);
        fds[nf++] = fd;
    }
    nerve_chan *c = NULL;
    NT_RC(nerve_chan_open(n, NERVE_O_READ, &c), NERVE_EMFILE);
    struct nerve_stats st;
    NT_RC(nerve_chan_stat_name(n, &st), NERVE_EMFILE);
    NT_RC(nerve_chan_create(nt_name("fds2"), NULL), NERVE_EMFILE);
    NT_ASSERT(strstr(nerve_strerror(NERVE_EMFILE), "too many open files"));
    NT_ASSERT(strcmp(nerve_err_name(NERVE_EMFILE), "EMFILE") == 0);
    while (nf > 0)
        close(fds[--nf]);
    NT_EQ(setrlimit(RLIMIT_NOFILE, &old), 0);
    NT_OK(nerve_chan_unlink(n));
    NT_ASSERT(strcmp(nerve_err_name(NERVE_ENFILE), "ENFILE") == 0);
}

static void poke(const char *name, off_t off, const void *v, size_t len)
{
    int fd = open(chan_path(name), O_RDWR);
    NT_ASSERT(fd >= 0);
    NT_EQ(pwrite(fd, v, len, off), (ssize_t)len);
    close(fd);
}

static void error_codes(void)
{
    /* An errno nerve gives no meaning keeps its value and its text. */
    NT_ASSERT(strcmp(nerve_err_name(-EIO), "EIO") == 0);
    NT_ASSERT(strcmp(nerve_strerror(-EIO), "Input/output error") == 0);
    NT_ASSERT(strcmp(nerve_strerror(-99999), "unknown error") == 0);
    NT_ASSERT(strcmp(nerve_err_name(5), "UNKNOWN") == 0);

    /* Geometry and size problems name the field. */
    const char *n = nt_name("geom");
    char msg[256];
    nt_create(n, 8, 8192);
    uint64_t v = 12345;
    poke(n, OFF_DATA_SIZE, &v, 8);
    NT_RC(nerve_chan_check(n, msg, sizeof msg), NERVE_ECORRUPT);
    if (strstr(msg, "data_size 12345 is not a multiple of the page size") ==
        NULL)
        NT_FAIL("check: '%s'", msg);
    v = 8192;
    poke(n, OFF_DATA_SIZE, &v, 8);
    NT_OK(nerve_chan_check(n, msg, sizeof msg));
    struct stat st;
    NT_EQ(stat(chan_path(n), &st), 0);
    NT_EQ(truncate(chan_path(n), 8192), 0);
    NT_RC(nerve_chan_check(n, msg, sizeof msg), NERVE_ETRUNC);
    char want[128];
    snprintf(want, sizeof want, "file is 8192 bytes, header says %lld",
             (long long)st.st_size);
    if (strstr(msg, want) == NULL)
        NT_FAIL("check: '%s', want '%s'", msg, want);
    /* Sparse: the right size, but the pages were never allocated. */
    NT_EQ(truncate(chan_path(n), st.st_size), 0);
    NT_RC(nerve_chan_check(n, msg, sizeof msg), NERVE_ECORRUPT);
    if (strstr(msg, "sparse") == NULL)
        NT_FAIL("check: '%s'", msg);
    NT_OK(nerve_chan_unlink(n));
}

/* ---- metadata ------------------------------------------------------------ */

static void metadata_utf8(void)
{
    const char *n = nt_name("utf8");
    struct nerve_chan_opts o = NERVE_CHAN_OPTS_INIT;
    const char *bad[] = {"caf\xe9",          "\xc0\xaf", "\xed\xa0\x80",
                         "\xf4\x90\x80\x80", "\xe2\x82", "ok\xff"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        o.type = bad[i];
        o.encoding = NULL;
        NT_RC(nerve_chan_create(n, &o), NERVE_EINVAL);
        o.type = NULL;
        o.encoding = bad[i];
        NT_RC(nerve_chan_create(n, &o), NERVE_EINVAL);
    }
    NT_ASSERT(access(chan_path(n), F_OK) != 0);
    /* Valid UTF-8 of every length, and a binary schema. */
    o.type = "caf\xc3\xa9/\xce\xa9\xf0\x9f\x98\x80";
    o.encoding = "cafe";
    const char schema[] = {'\x80', '\xff', '\xfe', 'x'};
    o.schema = schema;
    o.schema_len = sizeof schema;
    NT_OK(nerve_chan_create(n, &o));
    nerve_chan *c;
    struct nerve_meta m;
    NT_OK(nerve_chan_open(n, NERVE_O_READ, &c));
    NT_OK(nerve_chan_meta(c, &m));
    NT_ASSERT(strcmp(m.type, o.type) == 0);
    NT_EQ(m.schema_len, sizeof schema);
    NT_ASSERT(memcmp(m.schema, schema, sizeof schema) == 0);
    nerve_chan_close(c);
    /* A file whose type or encoding is not UTF-8 (planted, or by an old
     * version) is corrupt, and check names the field. */
    char msg[256];
    poke(n, OFF_TYPE + 3, "\xe9", 1); /* "caf\xe9\xa9/..." */
    NT_RC(nerve_chan_open(n, NERVE_O_READ, &c), NERVE_ECORRUPT);
    struct nerve_stats st;
    NT_RC(nerve_chan_stat_name(n, &st), NERVE_ECORRUPT);
    NT_RC(nerve_chan_check(n, msg, sizeof msg), NERVE_ECORRUPT);
    NT_ASSERT(strstr(msg, "type is not valid UTF-8") != NULL);
    poke(n, OFF_TYPE + 3, "\xc3", 1);
    NT_OK(nerve_chan_check(n, msg, sizeof msg));
    size_t tlen = strlen(o.type);
    poke(n, OFF_TYPE + (off_t)tlen + 1, "\xff", 1);
    NT_RC(nerve_chan_check(n, msg, sizeof msg), NERVE_ECORRUPT);
    NT_ASSERT(strstr(msg, "encoding is not valid UTF-8") != NULL);
    NT_OK(nerve_chan_unlink(n));
}

/* Types and encodings are printable text: a control character (C0, DEL,
 * C1) is an escape sequence for whoever prints the name, so create refuses
 * it (issue 28, item 3). A file planted with one still opens: its bytes are
 * valid UTF-8, and the tools escape what they print. */
static void metadata_control(void)
{
    const char *n = nt_name("ctl");
    struct nerve_chan_opts o = NERVE_CHAN_OPTS_INIT;
    const char *bad[] = {"evil/\033]2;PWNED\007\033[31m",
                         "a\tb",
                         "a\nb",
                         "\x01",
                         "x\x1f",
                         "del\x7f",
                         "csi\xc2\x9b"
                         "31m",
                         "c1\xc2\x80",
                         "c1\xc2\x9f"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        o.type = bad[i];
        o.encoding = NULL;
        NT_RC(nerve_chan_create(n, &o), NERVE_EINVAL);
        o.type = NULL;
        o.encoding = bad[i];
        NT_RC(nerve_chan_create(n, &o), NERVE_EINVAL);
    }
    NT_ASSERT(access(chan_path(n), F_OK) != 0);
    /* The neighbours of the refused ranges are text: space, '~', U+00A0
     * (0xc2 0xa0) and U+00FF. */
    o.type = " ~\xc2\xa0\xc3\xbf";
    o.encoding = "json";
    NT_OK(nerve_chan_create(n, &o));
    /* Planted: the same length of bytes with ESC and BEL opens. */
    poke(n, OFF_TYPE, "\033\007\033\033\033\033", 6);
    nerve_chan *c;
    struct nerve_meta m;
    NT_OK(nerve_chan_open(n, NERVE_O_READ, &c));
    NT_OK(nerve_chan_meta(c, &m));
    NT_ASSERT(m.type[0] == '\033');
    nerve_chan_close(c);
    NT_OK(nerve_chan_unlink(n));
}

int main(void)
{
    nt_watchdog(60);
    for (int k = 0; k < NKINDS; k++) {
        special_at_channel((enum kind)k);
        special_at_bell((enum kind)k);
    }
    special_bell_before_create();
    mismatched_bell();
    foreign_bell();
    planted_temp_names();
    descriptor_limits();
    error_codes();
    metadata_utf8();
    metadata_control();
    printf("ok\n");
    return 0;
}
