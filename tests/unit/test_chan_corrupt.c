/* Bad files: each kind of damage gets its own error code at open, a damaged
 * ring gives NERVE_ECORRUPT on read and a message from nerve_chan_check(),
 * and randomly corrupted files never crash or hang a reader. Also file
 * permissions: a reader needs only read permission. */
#include "nerve_test.h"

#include <fcntl.h>
#include <pwd.h>
#include <stddef.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* Offsets of the layout (docs/design/0001-shm-layout.md). */
#define OFF_VERSION 8
#define OFF_INCOMPAT 16
#define OFF_MUTEX_SIZE 36
#define OFF_NSLOTS 48
#define OFF_DATA_OFF 88
#define OFF_HEAD 320
#define OFF_TAIL 328
#define OFF_DESC_SEQ 336
#define OFF_DESC_OFF 344
#define OFF_DESC_LEN 352

static char path_buf[256];

static const char *path_of(const char *name)
{
    snprintf(path_buf, sizeof path_buf, "/dev/shm/nerve.%s", name);
    return path_buf;
}

static void poke(const char *name, off_t off, const void *v, size_t n)
{
    int fd = open(path_of(name), O_RDWR);
    NT_ASSERT(fd >= 0);
    NT_EQ(pwrite(fd, v, n, off), (ssize_t)n);
    close(fd);
}

static void poke64(const char *name, off_t off, uint64_t v)
{
    poke(name, off, &v, sizeof v);
}

static void poke32(const char *name, off_t off, uint32_t v)
{
    poke(name, off, &v, sizeof v);
}

static int open_rc(const char *name)
{
    nerve_chan *c;
    int r = nerve_chan_open(name, NERVE_O_READ, &c);
    if (r == 0)
        nerve_chan_close(c);
    return r;
}

static void write_file(const char *name, const void *bytes, size_t n)
{
    int fd = open(path_of(name), O_RDWR | O_CREAT | O_TRUNC, 0644);
    NT_ASSERT(fd >= 0);
    NT_EQ(write(fd, bytes, n), (ssize_t)n);
    close(fd);
}

/* test_open_errors on channel files (named n) of the wrong size: sparse,
 * truncated and grown. */
static void open_bad_sizes(const char *n)
{
    /* A sparse copy (holes where the ring's pages should be): refused,
     * because mapping it would allocate every hole. */
    nt_create(n, 8, 1 << 20);
    {
        struct stat st0;
        NT_EQ(stat(path_of(n), &st0), 0);
        char hdr[4096];
        int fd = open(path_of(n), O_RDONLY);
        NT_EQ(read(fd, hdr, sizeof hdr), (ssize_t)sizeof hdr);
        close(fd);
        NT_EQ(unlink(path_of(n)), 0);
        fd = open(path_of(n), O_RDWR | O_CREAT, 0644);
        NT_EQ(ftruncate(fd, st0.st_size), 0);
        NT_EQ(pwrite(fd, hdr, sizeof hdr, 0), (ssize_t)sizeof hdr);
        close(fd);
        NT_RC(open_rc(n), NERVE_ECORRUPT);
    }
    NT_OK(nerve_chan_unlink(n));

    /* Truncated, and grown. */
    nt_create(n, 8, 4096);
    struct stat st;
    NT_EQ(stat(path_of(n), &st), 0);
    NT_EQ(truncate(path_of(n), st.st_size - 4096), 0);
    NT_RC(open_rc(n), NERVE_ETRUNC);
    NT_EQ(truncate(path_of(n), 100), 0);
    NT_RC(open_rc(n), NERVE_ETRUNC);
    NT_EQ(truncate(path_of(n), st.st_size + 4096), 0);
    NT_RC(open_rc(n), NERVE_ECORRUPT);
    NT_OK(nerve_chan_unlink(n));
}

static void test_open_errors(void)
{
    const char *n = nt_name("bad");
    /* Not a channel: empty, short, garbage. */
    write_file(n, "", 0);
    NT_RC(open_rc(n), NERVE_ENOTCHAN);
    write_file(n, "hello", 5);
    NT_RC(open_rc(n), NERVE_ENOTCHAN);
    char junk[8192];
    memset(junk, 0x5a, sizeof junk);
    write_file(n, junk, sizeof junk);
    NT_RC(open_rc(n), NERVE_ENOTCHAN);
    char msg[256];
    NT_RC(nerve_chan_check(n, msg, sizeof msg), NERVE_ENOTCHAN);
    NT_ASSERT(strstr(msg, "not a nerve channel") != NULL);
    NT_EQ(unlink(path_of(n)), 0);

    /* A symlink under a channel's name is not followed. */
    {
        const char *real = nt_name("real");
        nt_create(real, 8, 4096);
        char target[256];
        snprintf(target, sizeof target, "/dev/shm/nerve.%s", real);
        NT_EQ(symlink(target, path_of(n)), 0);
        NT_RC(open_rc(n), NERVE_ENOTCHAN);
        NT_EQ(unlink(path_of(n)), 0);
        NT_OK(nerve_chan_unlink(real));
    }

    /* Other layout version, unknown incompatible flag, other ABI. */
    nt_create(n, 8, 4096);
    poke32(n, OFF_VERSION, 99);
    NT_RC(open_rc(n), NERVE_EVERSION);
    /* A file of layout version 1 (before the descriptor on the head
     * line): refused, and the message says how to get a usable one. */
    poke32(n, OFF_VERSION, 1);
    NT_RC(open_rc(n), NERVE_EVERSION);
    NT_RC(nerve_chan_check(n, msg, sizeof msg), NERVE_EVERSION);
    NT_ASSERT(strstr(msg, "layout_version 1") != NULL);
    NT_ASSERT(strstr(msg, "recreate the channel") != NULL);
    {
        nerve_chan *w1;
        NT_RC(nerve_chan_open(n, NERVE_O_WRITE, &w1), NERVE_EVERSION);
    }
    poke32(n, OFF_VERSION, NERVE_LAYOUT_VERSION);
    NT_OK(open_rc(n));
    poke64(n, OFF_INCOMPAT, 1);
    NT_RC(open_rc(n), NERVE_EVERSION);
    poke64(n, OFF_INCOMPAT, 0);
    poke32(n, OFF_MUTEX_SIZE, 7);
    NT_RC(open_rc(n), NERVE_EABI);
    poke32(n, OFF_MUTEX_SIZE, sizeof(pthread_mutex_t));
    NT_OK(open_rc(n));

    /* Inconsistent geometry. */
    poke64(n, OFF_DATA_OFF, 12345);
    NT_RC(open_rc(n), NERVE_ECORRUPT);
    NT_RC(nerve_chan_check(n, msg, sizeof msg), NERVE_ECORRUPT);
    NT_OK(nerve_chan_unlink(n));
    nt_create(n, 8, 4096);
    poke64(n, OFF_NSLOTS, 0);
    NT_RC(open_rc(n), NERVE_ECORRUPT);
    NT_OK(nerve_chan_unlink(n));

    open_bad_sizes(n);
}

static void test_damaged_ring(void)
{
    const char *n = nt_name("ring");
    nt_create(n, 8, 4096);
    nerve_chan *w, *r;
    NT_OK(nerve_chan_open(n, NERVE_O_WRITE, &w));
    for (int i = 0; i < 5; i++)
        NT_OK(nerve_chan_put(w, "abcdef", 6, 0, NULL, 0));
    char msg[256];
    NT_OK(nerve_chan_check(n, msg, sizeof msg));
    NT_ASSERT(strcmp(msg, "ok; writer lock: free") == 0);
    NT_OK(nerve_chan_open(n, NERVE_O_READ, &r));
    /* The slot of message 3 claims another sequence number. */
    struct stat st;
    NT_EQ(stat(path_of(n), &st), 0);
    off_t index_off = 4096 + 4096; /* header page + one metadata page */
    poke64(n, index_off + 2 * 32, 77);
    char b[64];
    struct nerve_get_info gi;
    NT_RC(nerve_chan_get(r, b, sizeof b, 3, 0, &gi, NERVE_GET_SEQ),
          NERVE_ECORRUPT);
    NT_RC(nerve_chan_check(n, msg, sizeof msg), NERVE_ECORRUPT);
    NT_ASSERT(strstr(msg, "slot 2") != NULL);
    /* A length beyond the ring. */
    poke64(n, index_off + 2 * 32, 3);
    poke64(n, index_off + 2 * 32 + 16, 1u << 30);
    NT_RC(nerve_chan_get(r, b, sizeof b, 3, 0, &gi, NERVE_GET_SEQ),
          NERVE_ECORRUPT);
    poke64(n, index_off + 2 * 32 + 16, 6);
    NT_OK(nerve_chan_get(r, b, sizeof b, 3, 0, &gi, NERVE_GET_SEQ));
    /* Tail beyond head + 1: readers see nothing, check explains, a writer
     * refuses to write on it rather than trusting it. */
    poke64(n, OFF_TAIL, 100);
    NT_RC(nerve_chan_check(n, msg, sizeof msg), NERVE_ECORRUPT);
    NT_ASSERT(strstr(msg, "beyond head") != NULL);
    NT_RC(nerve_chan_put(w, "x", 1, 0, NULL, 0), NERVE_ECORRUPT);
    /* Repaired by hand, it works again. */
    poke64(n, OFF_TAIL, 1);
    NT_OK(nerve_chan_put(w, "x", 1, 0, NULL, 0));
    NT_OK(nerve_chan_check(n, msg, sizeof msg));
    /* A write position moved back over readable messages is repaired at
     * the next lock: the next put goes after them, not over them. */
    NT_OK(nerve_chan_get(r, b, sizeof b, 2, 0, &gi, NERVE_GET_SEQ));
    poke64(n, 256 /* wpos */, 0);
    NT_OK(nerve_chan_put(w, "zzzzzz", 6, 0, NULL, 0));
    NT_OK(nerve_chan_get(r, b, sizeof b, 2, 0, &gi, NERVE_GET_SEQ));
    NT_ASSERT(memcmp(b, "abcdef", 6) == 0);
    NT_OK(nerve_chan_check(n, msg, sizeof msg));
    /* A huge head does not make a reader loop or read out of bounds. */
    poke64(n, OFF_HEAD, UINT64_MAX - 5);
    nerve_chan_seek(r, 0);
    NT_RC(nerve_chan_get(r, b, sizeof b, 0, 0, &gi, NERVE_GET_NEXT),
          NERVE_ECORRUPT);
    NT_RC(nerve_chan_get(r, b, sizeof b, INT64_MAX, 0, &gi, NERVE_GET_AT),
          NERVE_ECORRUPT);
    nerve_chan_close(w);
    nerve_chan_close(r);
    NT_OK(nerve_chan_unlink(n));
}

/* The newest message's descriptor on the head line (layout version 2):
 * readers fall back to the slot when it does not name the message they
 * want, and nerve check verifies it. */
static void test_damaged_desc(void)
{
    const char *n = nt_name("desc");
    nt_create(n, 8, 4096);
    nerve_chan *w, *r;
    NT_OK(nerve_chan_open(n, NERVE_O_WRITE, &w));
    NT_OK(nerve_chan_open(n, NERVE_O_READ, &r));
    char msg[256], b[64];
    struct nerve_get_info gi;
    for (int i = 0; i < 3; i++)
        NT_OK(nerve_chan_put(w, "abcdef", 6, 0, NULL, 0));
    NT_OK(nerve_chan_check(n, msg, sizeof msg));
    /* desc_seq 0 (a writer killed between D1 and D3): readers use the
     * slot; check accepts it. */
    poke64(n, OFF_DESC_SEQ, 0);
    NT_OK(nerve_chan_check(n, msg, sizeof msg));
    NT_OK(nerve_chan_get(r, b, sizeof b, 0, 0, &gi, NERVE_GET_NEWEST));
    NT_EQ(gi.seq, 3);
    NT_EQ(gi.len, 6);
    NT_ASSERT(memcmp(b, "abcdef", 6) == 0);
    /* head + 1 (killed between D3 and W6): accepted, not used. */
    poke64(n, OFF_DESC_SEQ, 4);
    NT_OK(nerve_chan_check(n, msg, sizeof msg));
    NT_OK(nerve_chan_get(r, b, sizeof b, 0, 0, &gi,
                         NERVE_GET_NEWEST | NERVE_F_REPEAT));
    NT_EQ(gi.len, 6);
    /* Any other message: corrupt. */
    poke64(n, OFF_DESC_SEQ, 2);
    NT_RC(nerve_chan_check(n, msg, sizeof msg), NERVE_ECORRUPT);
    NT_ASSERT(strstr(msg, "descriptor names message 2") != NULL);
    /* Naming head but differing from its slot: corrupt. */
    poke64(n, OFF_DESC_SEQ, 3);
    NT_OK(nerve_chan_check(n, msg, sizeof msg));
    poke64(n, OFF_DESC_LEN, 5);
    NT_RC(nerve_chan_check(n, msg, sizeof msg), NERVE_ECORRUPT);
    NT_ASSERT(strstr(msg, "differs from its slot") != NULL);
    /* A length beyond the ring: check says so, and a reader that takes
     * the descriptor (caught up: NEWEST) reports it, never reads past
     * the ring. */
    poke64(n, OFF_DESC_LEN, 1ull << 40);
    NT_RC(nerve_chan_check(n, msg, sizeof msg), NERVE_ECORRUPT);
    NT_ASSERT(strstr(msg, "more than the ring") != NULL);
    NT_RC(nerve_chan_get(r, b, sizeof b, 0, 0, &gi,
                         NERVE_GET_NEWEST | NERVE_F_REPEAT),
          NERVE_ECORRUPT);
    struct nerve_view v;
    NT_RC(nerve_chan_view(r, 0, 0, &v, NERVE_GET_NEWEST | NERVE_F_REPEAT),
          NERVE_ECORRUPT);
    /* A reader that lags reads the slot and is not affected. */
    NT_OK(nerve_chan_get(r, b, sizeof b, 2, 0, &gi, NERVE_GET_SEQ));
    NT_EQ(gi.len, 6);
    /* The next put rewrites the descriptor: consistent again. */
    poke64(n, OFF_DESC_OFF, 12345);
    NT_OK(nerve_chan_put(w, "xyz", 3, 0, NULL, 0));
    NT_OK(nerve_chan_check(n, msg, sizeof msg));
    NT_OK(nerve_chan_get(r, b, sizeof b, 0, 0, &gi, NERVE_GET_NEXT));
    NT_EQ(gi.seq, 4);
    NT_EQ(gi.len, 3);
    NT_ASSERT(memcmp(b, "xyz", 3) == 0);
    nerve_chan_close(w);
    nerve_chan_close(r);
    NT_OK(nerve_chan_unlink(n));
}

static uint64_t rnd(void)
{
    static uint64_t x = 0x2545F4914F6CDD1Dull;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return x;
}

/* Random damage to header, metadata and index (the data ring's bytes are
 * payload and cannot be "corrupt"). Whatever the result code, a reader
 * returns, and every code is one of the documented ones. */
static void test_random_corruption(void)
{
    const char *n = nt_name("fuzz");
    struct nerve_chan_opts o = NERVE_CHAN_OPTS_INIT;
    o.slots = 16;
    o.data_size = 4096;
    o.type = "t";
    o.encoding = "raw";
    NT_OK(nerve_chan_create(n, &o));
    nerve_chan *w;
    NT_OK(nerve_chan_open(n, NERVE_O_WRITE, &w));
    for (int i = 0; i < 40; i++)
        NT_OK(nerve_chan_put(w, "payload", 7, 0, NULL, 0));
    nerve_chan_close(w);
    struct stat st;
    NT_EQ(stat(path_of(n), &st), 0);
    size_t size = (size_t)st.st_size;
    unsigned char *orig = malloc(size), *copy = malloc(size);
    int fd = open(path_of(n), O_RDONLY);
    NT_EQ(read(fd, orig, size), (ssize_t)size);
    close(fd);
    size_t hot = 4096 * 3; /* header, metadata, index */
    unsigned counts[2] = {0, 0};
    for (int iter = 0; iter < 3000; iter++) {
        memcpy(copy, orig, size);
        int flips = 1 + (int)(rnd() % 8);
        for (int k = 0; k < flips; k++) {
            size_t at = rnd() % 4 == 0 ? 320 + rnd() % 24 : rnd() % hot;
            copy[at] = (unsigned char)rnd();
        }
        size_t wsize = size;
        if (rnd() % 16 == 0)
            wsize = (size_t)(rnd() % size);
        write_file(n, copy, wsize);
        nerve_chan *c;
        int r = nerve_chan_open(n, NERVE_O_READ, &c);
        counts[r == 0]++;
        if (r == 0) {
            char b[4096];
            struct nerve_get_info gi;
            struct nerve_view v;
            for (uint32_t mode = 0; mode < 4; mode++) {
                for (int k = 0; k < 3; k++) {
                    r = nerve_chan_get(c, b, sizeof b, (int64_t)(rnd() % 64), 0,
                                       &gi, mode);
                    /* A flipped superseded word (header 368) reads as
                     * a growth: ESUPERSEDED, then the name is followed. */
                    NT_ASSERT(r == 0 || r == NERVE_EAGAIN ||
                              r == NERVE_ECORRUPT || r == NERVE_EOVERWRITTEN ||
                              r == NERVE_EINVAL || r == NERVE_EMSGSIZE ||
                              r == NERVE_ESUPERSEDED);
                }
                if (nerve_chan_view(c, 5, 0, &v, mode) == 0) {
                    r = nerve_chan_view_check(c, &v);
                    NT_ASSERT(r == 0 || r == NERVE_ESTALE);
                }
            }
            struct nerve_stats s2;
            r = nerve_chan_stat(c, &s2);
            NT_ASSERT(r == 0 || r == NERVE_ECORRUPT);
            nerve_chan_close(c);
        } else {
            NT_ASSERT(r == NERVE_ENOTCHAN || r == NERVE_EVERSION ||
                      r == NERVE_ETRUNC || r == NERVE_ECORRUPT ||
                      r == NERVE_EABI);
        }
        char msg[256];
        r = nerve_chan_check(n, msg, sizeof msg);
        NT_ASSERT(r <= 0 && msg[0] != 0);
    }
    printf("random corruption: %u opened, %u refused\n", counts[1], counts[0]);
    NT_CMP(counts[0], >, 0);
    NT_CMP(counts[1], >, 0);
    free(orig);
    free(copy);
    NT_OK(nerve_chan_unlink(n));
}

/* Run fn in a child process as user `nobody`; returns its exit status or
 * -1 if this process cannot switch users. */
static int as_nobody(void (*fn)(const char *), const char *name)
{
    struct passwd *pw = getpwnam("nobody");
    if (getuid() != 0 || !pw)
        return -1;
    pid_t pid = fork();
    if (pid == 0) {
        if (setgid(pw->pw_gid) != 0 || setuid(pw->pw_uid) != 0)
            _exit(3);
        fn(name);
        _exit(0);
    }
    int status;
    waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 2;
}

static void reader_only(const char *name)
{
    nerve_chan *c;
    /* Read permission only: reading works, waiting works (by polling: the
     * bell has the channel's mode, so this reader may not write it),
     * writing is refused. */
    NT_RC(nerve_chan_open(name, NERVE_O_WRITE, &c), NERVE_EACCES);
    NT_OK(nerve_chan_open(name, NERVE_O_READ, &c));
    char b[16];
    struct nerve_get_info gi;
    NT_OK(nerve_chan_get(c, b, sizeof b, 0, 0, &gi, NERVE_GET_NEWEST));
    NT_ASSERT(memcmp(b, "secret", 6) == 0);
    NT_RC(nerve_chan_get(c, b, sizeof b, 0, 1000000, &gi, NERVE_F_WAIT),
          NERVE_ETIMEDOUT);
    NT_RC(nerve_chan_put(c, "x", 1, 0, NULL, 0), NERVE_EROFS);
    struct nerve_stats st;
    NT_OK(nerve_chan_stat(c, &st));
    NT_EQ(st.waiters, 0);
    nerve_chan_close(c);
    NT_RC(nerve_chan_unlink(name), NERVE_EACCES);
}

static void no_access(const char *name)
{
    nerve_chan *c;
    NT_RC(nerve_chan_open(name, NERVE_O_READ, &c), NERVE_EACCES);
    char msg[128];
    NT_RC(nerve_chan_check(name, msg, sizeof msg), NERVE_EACCES);
}

static void test_permissions(void)
{
    const char *n = nt_name("perm");
    struct nerve_chan_opts o = NERVE_CHAN_OPTS_INIT;
    o.mode = 0644;
    NT_OK(nerve_chan_create(n, &o));
    nerve_chan *w;
    NT_OK(nerve_chan_open(n, NERVE_O_WRITE, &w));
    NT_OK(nerve_chan_put(w, "secret", 6, 0, NULL, 0));
    nerve_chan_close(w);
    int r = as_nobody(reader_only, n);
    if (r == -1) {
        printf("note: permission checks need root to switch to 'nobody'; "
               "checked as this user only\n");
    } else {
        NT_EQ(r, 0);
        NT_OK(nerve_chan_unlink(n));
        o.mode = 0600;
        NT_OK(nerve_chan_create(n, &o));
        NT_EQ(as_nobody(no_access, n), 0);
        /* Granting read later lets the same user read and wait. */
        NT_OK(nerve_chan_chmod(n, 0644));
        NT_OK(nerve_chan_open(n, NERVE_O_WRITE, &w));
        NT_OK(nerve_chan_put(w, "secret", 6, 0, NULL, 0));
        nerve_chan_close(w);
        NT_EQ(as_nobody(reader_only, n), 0);
        NT_RC(nerve_chan_chmod(n, 01777), NERVE_EINVAL);
    }
    NT_OK(nerve_chan_unlink(n));
    NT_RC(nerve_chan_chmod(n, 0644), NERVE_ENOENT);
}

int main(void)
{
    nt_watchdog(120);
    test_open_errors();
    test_damaged_ring();
    test_damaged_desc();
    test_random_corruption();
    test_permissions();
    printf("ok\n");
    return 0;
}
