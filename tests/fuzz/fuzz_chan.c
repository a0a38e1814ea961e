/* See fuzz_chan.h. The channel file is written as bytes and then read
 * through the public API only, as a reader that opened a damaged or
 * hostile file would. */
#include "fuzz_chan.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <nerve/nerve.h>

/* Largest data ring a fuzz input can describe and still match its own
 * size; reads go into a buffer this big, plus a too-small one. */
#define BUF_MAX (1u << 20)

static unsigned char buf[BUF_MAX];

static void must(int cond, const char *what)
{
    if (!cond) {
        fprintf(stderr, "nerve_fuzz: impossible result: %s\n", what);
        abort();
    }
}

/* Check what a successful get reported against the channel geometry. */
static void check_info(const struct nerve_get_info *gi, uint64_t data_size)
{
    must(gi->len <= data_size, "delivered message longer than the ring");
    must(gi->seq > 0, "delivered sequence number 0");
}

static void touch(const void *p, uint64_t n)
{
    /* Read every byte of a view, as a user would. */
    const volatile unsigned char *v = p;
    unsigned sum = 0;
    for (uint64_t i = 0; i < n; i++)
        sum += v[i];
    (void)sum;
}

/* Where nerve_chan_view_write() copies views to (the kernel's copy of
 * the file's bytes; nothing is kept). */
static int sink = -1;

/* Zero-copy views in every mode from the start (SEQ at head_seq), used,
 * copied out by the kernel, then validated. */
static void read_views(nerve_chan *c, uint64_t head_seq, uint64_t data_size)
{
    if (sink < 0)
        sink = open("/dev/null", O_WRONLY | O_CLOEXEC);
    nerve_chan_seek(c, 0);
    for (uint32_t mode = 0; mode < 4; mode++) {
        struct nerve_view v;
        int64_t arg = mode == NERVE_GET_SEQ  ? (int64_t)head_seq
                      : mode == NERVE_GET_AT ? INT64_MAX
                                             : 0;
        int r = nerve_chan_view(c, arg, 0, &v, mode);
        if (r == 0) {
            check_info(&v.info, data_size);
            touch(v.data, v.info.len);
            r = nerve_chan_view_write(c, &v, sink);
            must(r == 0 || r == NERVE_ESTALE, "view_write: unexpected error");
            r = nerve_chan_view_check(c, &v);
            must(r == 0 || r == NERVE_ESTALE, "view_check: unexpected error");
        }
    }
}

static void read_all(nerve_chan *c)
{
    struct nerve_stats st;
    memset(&st, 0, sizeof st);
    uint64_t data_size = 0;
    int r = nerve_chan_stat(c, &st);
    if (r == 0) {
        data_size = st.data_size;
        must(st.tail_seq >= 1, "stat tail 0");
    } else {
        must(r == NERVE_ECORRUPT, "stat: unexpected error");
        /* Still exercise the reads: they must cope on their own. */
        data_size = BUF_MAX;
    }
    struct nerve_get_info gi;
    /* NEXT until nothing new (bounded), NEWEST, and the copies with a
     * buffer that is too small. */
    for (int i = 0; i < 8; i++) {
        r = nerve_chan_get(c, buf, sizeof buf, 0, 0, &gi, NERVE_GET_NEXT);
        if (r != 0)
            break;
        check_info(&gi, data_size);
    }
    if (nerve_chan_get(c, buf, sizeof buf, 0, 0, &gi, NERVE_GET_NEWEST) == 0)
        check_info(&gi, data_size);
    if (nerve_chan_get(c, buf, sizeof buf, 0, 0, &gi,
                       NERVE_GET_NEWEST | NERVE_F_REPEAT) == 0)
        check_info(&gi, data_size);
    r = nerve_chan_get(c, buf, 1, 0, 0, &gi, NERVE_GET_NEWEST | NERVE_F_REPEAT);
    must(r != 0 || gi.len <= 1, "too-small buffer accepted");
    /* SEQ around head and tail, and a few absurd ones. */
    if (nerve_chan_stat(c, &st) == 0) {
        int64_t seqs[] = {(int64_t)st.tail_seq, (int64_t)st.head_seq,
                          (int64_t)st.head_seq - 1, (int64_t)st.tail_seq + 1,
                          (int64_t)st.head_seq + 1};
        for (size_t i = 0; i < sizeof seqs / sizeof seqs[0]; i++) {
            if (nerve_chan_get(c, buf, sizeof buf, seqs[i], 0, &gi,
                               NERVE_GET_SEQ) == 0)
                check_info(&gi, data_size);
        }
    }
    int64_t odd[] = {1, 2, INT64_MAX, -1, 0};
    for (size_t i = 0; i < sizeof odd / sizeof odd[0]; i++) {
        if (nerve_chan_get(c, buf, sizeof buf, odd[i], 0, &gi, NERVE_GET_SEQ) ==
            0)
            check_info(&gi, data_size);
    }
    /* AT: before everything, now, the end of time, and a middle. */
    int64_t times[] = {INT64_MIN, 0, nerve_clock_now_ns(), INT64_MAX,
                       st.newest_time_ns};
    for (size_t i = 0; i < sizeof times / sizeof times[0]; i++) {
        if (nerve_chan_get(c, buf, sizeof buf, times[i], 0, &gi,
                           NERVE_GET_AT) == 0)
            check_info(&gi, data_size);
    }
    read_views(c, st.head_seq, data_size);
    /* Waiting with a zero timeout must not block. */
    r = nerve_chan_get(c, buf, sizeof buf, 0, 0, &gi,
                       NERVE_GET_NEXT | NERVE_F_WAIT);
    if (r == 0)
        check_info(&gi, data_size);
    uint64_t ready = 0;
    r = nerve_chan_wait_any(&c, 1, 0, &ready, 0);
    must(r == NERVE_ETIMEDOUT || r == 1, "wait_any with timeout 0");
    struct nerve_meta m;
    if (nerve_chan_meta(c, &m) == 0) {
        must(strlen(m.schema) == m.schema_len, "schema length");
        (void)strlen(m.type);
        (void)strlen(m.encoding);
    }
}

int nerve_fuzz_one(const uint8_t *data, size_t size)
{
    char name[64], path[128];
    snprintf(name, sizeof name, "nt-fuzz-%d", (int)getpid());
    snprintf(path, sizeof path, "/dev/shm/nerve.%s", name);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) {
        perror(path);
        abort();
    }
    size_t done = 0;
    while (done < size) {
        ssize_t n = write(fd, data + done, size - done);
        if (n <= 0) {
            perror("write");
            abort();
        }
        done += (size_t)n;
    }
    close(fd);

    /* Half the inputs are read through a mapping that is not pre-faulted
     * (NERVE_O_LAZY): the same reads, faulted in as they touch. */
    nerve_chan *c = NULL;
    int r =
        nerve_chan_open(name, NERVE_O_READ | (size & 1 ? NERVE_O_LAZY : 0), &c);
    if (r == 0) {
        read_all(c);
        nerve_chan_close(c);
    } else {
        must(c == NULL, "failed open left a handle");
    }
    /* nerve_chan_check opens on its own and must agree with open. */
    char msg[512];
    msg[sizeof msg - 1] = 'x';
    int cr = nerve_chan_check(name, msg, sizeof msg);
    must(memchr(msg, 0, sizeof msg) != NULL, "check message not terminated");
    must(r != 0 || cr == 0 || cr == NERVE_ECORRUPT || cr == NERVE_ELAPPED,
         "check: unexpected error on an openable file");
    must(r == 0 || cr == r, "check and open disagree");
    struct nerve_stats st;
    int sr = nerve_chan_stat_name(name, &st);
    must(r != 0 || sr == 0 || sr == NERVE_ECORRUPT, "nerve_chan_stat_name");
    unlink(path);
    return r;
}
