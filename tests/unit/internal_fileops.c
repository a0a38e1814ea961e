/* File operations that fail: the system-call table of platform.h
 * (nerve__file) replaced by one that makes a chosen call fail with a
 * chosen errno, as internal_futex.c replaces the futex operations.
 *
 * 1. The failures a full or broken system produces, each where it occurs:
 *    ENOSPC from fallocate, EIO from linkat (and link, for named
 *    temporaries), EMFILE from open and ENOMEM from mmap, during
 *    nerve_chan_create() and nerve_chan_open(): each returns its own
 *    nerve error code, and nothing is left behind (no channel, no bell, no
 *    temporary file in /dev/shm, no open descriptor).
 * 2. A sweep: every call of every fallible operation of a create, failed
 *    one at a time with EIO, with unnamed and with named temporaries. The
 *    create either succeeds (a fallback took over) with a channel that
 *    passes nerve_chan_check(), or fails and leaves nothing. */
#include "nerve_test.h"

#include <dirent.h>
#include <errno.h>
#include <sys/mman.h>
#include <unistd.h>

#include "platform.h"

enum op {
    OP_NONE,
    OP_OPEN,
    OP_FSTAT,
    OP_LSTAT,
    OP_PREAD,
    OP_FALLOCATE,
    OP_LINK,
    OP_LINKAT,
    OP_FCHMOD,
    OP_ACCESS,
    OP_MMAP,
    OP_MSYNC,
    OP_COUNT
};
static const char *const op_names[OP_COUNT] = {
    "none", "open",   "fstat",  "lstat",  "pread", "fallocate",
    "link", "linkat", "fchmod", "access", "mmap",  "msync"};

/* The call of `fail_op` numbered fail_at (1-based) fails with fail_errno,
 * and with `fail_rest` every later one too. calls[] counts the calls. */
static enum op fail_op;
static unsigned fail_at, calls[OP_COUNT];
static int fail_errno, fail_rest;

static int failing(enum op op)
{
    unsigned n = ++calls[op];
    if (op != fail_op || n < fail_at || (n > fail_at && !fail_rest))
        return 0;
    errno = fail_errno;
    return 1;
}

static const struct nerve__file_ops *real = &nerve__file_linux;

static int f_open(const char *p, int fl, unsigned m)
{
    return failing(OP_OPEN) ? -1 : real->open(p, fl, m);
}
static int f_fstat(int fd, struct stat *st)
{
    return failing(OP_FSTAT) ? -1 : real->fstat(fd, st);
}
static int f_lstat(const char *p, struct stat *st)
{
    return failing(OP_LSTAT) ? -1 : real->lstat(p, st);
}
static ssize_t f_pread(int fd, void *b, size_t n, off_t off)
{
    return failing(OP_PREAD) ? -1 : real->pread(fd, b, n, off);
}
static int f_fallocate(int fd, off_t off, off_t len)
{
    return failing(OP_FALLOCATE) ? -1 : real->fallocate(fd, off, len);
}
static int f_link(const char *a, const char *b)
{
    return failing(OP_LINK) ? -1 : real->link(a, b);
}
static int f_linkat(int afd, const char *a, int bfd, const char *b, int fl)
{
    return failing(OP_LINKAT) ? -1 : real->linkat(afd, a, bfd, b, fl);
}
static int f_fchmod(int fd, unsigned m)
{
    return failing(OP_FCHMOD) ? -1 : real->fchmod(fd, m);
}
static int f_access(const char *p, int m)
{
    return failing(OP_ACCESS) ? -1 : real->access(p, m);
}
static size_t mmap_max; /* the longest file mapping asked for */
static void *f_mmap(void *a, size_t n, int prot, int fl, int fd, off_t off)
{
    if (fd >= 0 && n > mmap_max)
        mmap_max = n;
    return failing(OP_MMAP) ? MAP_FAILED : real->mmap(a, n, prot, fl, fd, off);
}
static int f_msync(void *a, size_t n, int fl)
{
    return failing(OP_MSYNC) ? -1 : real->msync(a, n, fl);
}

static struct nerve__file_ops faulty;

/* Arm: fail call `at` of `op` (and later ones with `rest`). */
static void arm(enum op op, unsigned at, int err, int rest)
{
    memset(calls, 0, sizeof calls);
    fail_op = op;
    fail_at = at;
    fail_errno = err;
    fail_rest = rest;
}

/* Entries in /dev/shm of this test process: its channels and bells
 * (nt-PID-...) and named temporaries (.nerve-tmp-PID-...). */
static int shm_leftovers(void)
{
    char chan[64], tmp[64];
    snprintf(chan, sizeof chan, "nt-%d-", (int)getpid());
    snprintf(tmp, sizeof tmp, ".nerve-tmp-%d-", (int)getpid());
    DIR *d = opendir("/dev/shm");
    NT_ASSERT(d != NULL);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (strstr(e->d_name, chan) ||
            strncmp(e->d_name, tmp, strlen(tmp)) == 0) {
            fprintf(stderr, "left in /dev/shm: %s\n", e->d_name);
            n++;
        }
    }
    closedir(d);
    return n;
}

static int open_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    NT_ASSERT(d != NULL);
    int n = 0;
    while (readdir(d) != NULL)
        n++;
    closedir(d);
    return n;
}

static int create(const char *name)
{
    struct nerve_chan_opts o = NERVE_CHAN_OPTS_INIT;
    o.slots = 8;
    o.data_size = 8192;
    o.type = "t";
    return nerve_chan_create(name, &o);
}

/* A create failing as armed returns `want` and leaves nothing. */
static void create_fails(enum op op, int err, int rest, int want)
{
    const char *n = nt_name(op_names[op]);
    int fds = open_fds();
    arm(op, 1, err, rest);
    nerve__file = &faulty;
    int r = create(n);
    nerve__file = &nerve__file_linux;
    if (r != want)
        NT_FAIL("create with %s failing (%s): got %s, want %s", op_names[op],
                strerror(err), nerve_strerror(r), nerve_strerror(want));
    NT_CMP(calls[op], >=, 1);
    NT_EQ(shm_leftovers(), 0);
    NT_EQ(open_fds(), fds);
    nerve_chan *c;
    NT_RC(nerve_chan_open(n, NERVE_O_READ, &c), NERVE_ENOENT);
}

/* An open failing as armed returns `want`; the channel stays usable. */
static void open_fails(enum op op, int err, int want)
{
    const char *n = nt_name(op_names[op]);
    NT_OK(create(n));
    int fds = open_fds();
    arm(op, 1, err, 1);
    nerve__file = &faulty;
    nerve_chan *c = NULL;
    int r = nerve_chan_open(n, NERVE_O_WRITE, &c);
    nerve__file = &nerve__file_linux;
    if (r != want)
        NT_FAIL("open with %s failing (%s): got %s, want %s", op_names[op],
                strerror(err), nerve_strerror(r), nerve_strerror(want));
    NT_ASSERT(c == NULL);
    NT_EQ(open_fds(), fds);
    char msg[256];
    NT_OK(nerve_chan_check(n, msg, sizeof msg));
    NT_OK(nerve_chan_unlink(n));
    NT_EQ(shm_leftovers(), 0);
}

/* Fail each call of each operation of a create in turn. Returns how many
 * creates failed. */
static int sweep(void)
{
    int failed = 0;
    for (int op = OP_OPEN; op < OP_COUNT; op++) {
        /* How often a create makes this call. */
        const char *n = nt_name("count");
        arm(OP_NONE, 0, 0, 0);
        nerve__file = &faulty;
        NT_OK(create(n));
        nerve__file = &nerve__file_linux;
        unsigned total = calls[op];
        NT_OK(nerve_chan_unlink(n));
        for (unsigned k = 1; k <= total; k++) {
            n = nt_name("sweep");
            int fds = open_fds();
            arm((enum op)op, k, EIO, 0);
            nerve__file = &faulty;
            int r = create(n);
            nerve__file = &nerve__file_linux;
            NT_EQ(open_fds(), fds);
            if (r == 0) {
                char msg[256];
                if (nerve_chan_check(n, msg, sizeof msg) != 0)
                    NT_FAIL("create survived %s call %u failing, but: %s",
                            op_names[op], k, msg);
                NT_OK(nerve_chan_unlink(n));
            } else {
                failed++;
                if (r != -EIO)
                    NT_FAIL("create with %s call %u failing (EIO): %s",
                            op_names[op], k, nerve_strerror(r));
            }
            NT_EQ(shm_leftovers(), 0);
        }
    }
    return failed;
}

/* nerve_chan_stat_name() maps the header, metadata and index, never the
 * data ring, and reports what a handle's nerve_chan_stat() does. */
static void stat_name_maps_header(void)
{
    const char *n = nt_name("stat");
    nt_create(n, 16, 1 << 20);
    nerve_chan *c;
    NT_OK(nerve_chan_open(n, NERVE_O_WRITE, &c));
    for (int i = 0; i < 20; i++)
        NT_OK(nerve_chan_put(c, "abc", 3, 0, NULL, 0));
    struct nerve_stats a, b;
    NT_OK(nerve_chan_stat(c, &a));
    arm(OP_NONE, 0, 0, 0);
    mmap_max = 0;
    nerve__file = &faulty;
    NT_OK(nerve_chan_stat_name(n, &b));
    nerve__file = &nerve__file_linux;
    NT_CMP(calls[OP_MMAP], >=, 1);
    NT_CMP(mmap_max, <, (size_t)a.data_size);
    NT_CMP(mmap_max, <, (size_t)a.file_size);
    NT_EQ(b.head_seq, a.head_seq);
    NT_EQ(b.tail_seq, a.tail_seq);
    NT_EQ(b.head_seq, 20);
    NT_EQ(b.newest_time_ns, a.newest_time_ns);
    NT_EQ(b.slots, a.slots);
    NT_EQ(b.data_size, a.data_size);
    NT_EQ(b.file_size, a.file_size);
    NT_EQ(b.bytes_total, 60);
    NT_EQ(b.mode, a.mode);
    NT_EQ(b.created_ns, a.created_ns);
    /* The internal flag is not part of the API. */
    nerve_chan *d = NULL;
    NT_RC(nerve_chan_open(n, 0x80000000u, &d), NERVE_EINVAL);
    NT_OK(nerve_chan_close(c));
    NT_OK(nerve_chan_unlink(n));
}

int main(void)
{
    nt_watchdog(120);
    faulty = nerve__file_linux;
    faulty.open = f_open;
    faulty.fstat = f_fstat;
    faulty.lstat = f_lstat;
    faulty.pread = f_pread;
    faulty.fallocate = f_fallocate;
    faulty.link = f_link;
    faulty.linkat = f_linkat;
    faulty.fchmod = f_fchmod;
    faulty.access = f_access;
    faulty.mmap = f_mmap;
    faulty.msync = f_msync;
    NT_EQ(shm_leftovers(), 0);

    for (int named = 0; named <= 1; named++) {
        /* Named temporaries: the path without O_TMPFILE or /proc. */
        nerve__shm_force_named_tmp = named;
        create_fails(OP_FALLOCATE, ENOSPC, 0, NERVE_ENOSPC);
        create_fails(named ? OP_LINK : OP_LINKAT, EIO, 1, -EIO);
        create_fails(OP_OPEN, EMFILE, 1, NERVE_EMFILE);
        create_fails(OP_MMAP, ENOMEM, 1, NERVE_ENOMEM);
        create_fails(OP_FCHMOD, EPERM, 1, NERVE_EACCES);
        int failed = sweep();
        /* Failing a step without a fallback fails the create. */
        NT_CMP(failed, >=, 5);
        printf("%s temporaries: %d of the swept calls failed the create, "
               "the rest fell back; nothing left behind\n",
               named ? "named" : "unnamed", failed);
    }
    nerve__shm_force_named_tmp = 0;

    open_fails(OP_OPEN, EMFILE, NERVE_EMFILE);
    open_fails(OP_MMAP, ENOMEM, NERVE_ENOMEM);
    open_fails(OP_PREAD, EIO, -EIO);
    open_fails(OP_FSTAT, EIO, -EIO);

    stat_name_maps_header();
    NT_EQ(shm_leftovers(), 0);
    printf("ok\n");
    return 0;
}
