/* nerve-hotpath: the put/get hot path in one process, for instruction
 * counts (bench/callgrind.sh runs it under valgrind --tool=callgrind) and
 * for a single-CPU time per operation (no cache line crosses CPUs, so it
 * is the software cost alone).
 *
 *   usage: nerve-hotpath [--size BYTES] [--count N] [--zero-copy] [--name P]
 *
 * Creates a channel, writes its ring once around (as a channel in service
 * has been), then runs `count` iterations of one message written and read:
 *   copy:       nerve_chan_put() from a buffer, nerve_chan_get() into one
 *   --zero-copy: nerve_chan_reserve() + nerve_chan_commit() without
 *               touching the payload, nerve_chan_view() +
 *               nerve_chan_view_check() without reading it
 * The iterations run inside hot_loop(), which callgrind.sh collects alone
 * (--toggle-collect=hot_loop), so set-up and warm-up do not count. Prints
 * ns per iteration (meaningless under valgrind). Exit 0, 1 on failure, 2 on
 * usage errors; removes its channel. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <nerve/nerve.h>

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int check(int rc, const char *what)
{
    if (rc != 0) {
        fprintf(stderr, "nerve-hotpath: %s: %s\n", what, nerve_strerror(rc));
    }
    return rc;
}

static inline int one(nerve_chan *w, nerve_chan *r, void *buf, size_t size,
                      int zero_copy)
{
    if (zero_copy) {
        void *p;
        struct nerve_view v;
        return check(nerve_chan_reserve(w, size, 0, &p, 0), "reserve") ||
               check(nerve_chan_commit(w, size, NULL), "commit") ||
               check(nerve_chan_view(r, 0, 0, &v, NERVE_GET_NEXT), "view") ||
               check(nerve_chan_view_check(r, &v), "view_check");
    }
    struct nerve_get_info info;
    return check(nerve_chan_put(w, buf, size, 0, NULL, 0), "put") ||
           check(nerve_chan_get(r, buf, size, 0, 0, &info, NERVE_GET_NEXT),
                 "get");
}

/* Not inlined: callgrind collects inside hot_loop only; warm_loop runs the
 * same operations uncounted. */
__attribute__((noinline)) int warm_loop(nerve_chan *w, nerve_chan *r, void *buf,
                                        size_t size, uint64_t count,
                                        int zero_copy)
{
    for (uint64_t i = 0; i < count; i++) {
        if (one(w, r, buf, size, zero_copy)) {
            return -1;
        }
    }
    return 0;
}

__attribute__((noinline)) int hot_loop(nerve_chan *w, nerve_chan *r, void *buf,
                                       size_t size, uint64_t count,
                                       int zero_copy)
{
    for (uint64_t i = 0; i < count; i++) {
        if (one(w, r, buf, size, zero_copy)) {
            return -1;
        }
    }
    return 0;
}

struct opts {
    size_t size;
    uint64_t count;
    int zero_copy;
    const char *prefix;
};

/* The command line into `o`: 0, or 2 (the exit status) with the error
 * said. */
static int parse_args(int argc, char **argv, struct opts *o)
{
    for (int i = 1; i < argc; i++) {
        char *end = NULL;
        if (strcmp(argv[i], "--size") == 0 && i + 1 < argc) {
            unsigned long long v = strtoull(argv[++i], &end, 10);
            if (*end || v < 1 || v > (64u << 20)) {
                fprintf(stderr, "nerve-hotpath: bad --size (1 to 64M)\n");
                return 2;
            }
            o->size = (size_t)v;
        } else if (strcmp(argv[i], "--count") == 0 && i + 1 < argc) {
            unsigned long long v = strtoull(argv[++i], &end, 10);
            if (*end || v < 1 || v > 1000000000ull) {
                fprintf(stderr, "nerve-hotpath: bad --count\n");
                return 2;
            }
            o->count = v;
        } else if (strcmp(argv[i], "--zero-copy") == 0) {
            o->zero_copy = 1;
        } else if (strcmp(argv[i], "--name") == 0 && i + 1 < argc) {
            o->prefix = argv[++i];
        } else {
            fprintf(stderr, "usage: nerve-hotpath [--size BYTES] [--count N] "
                            "[--zero-copy] [--name PREFIX]\n");
            return 2;
        }
    }
    return 0;
}

/* Creates channel `name` for messages of `size` bytes, opens writer `*w`
 * and reader `*r`, writes the ring once around from `buf` (as a channel
 * in service has been) and puts the reader at the head. 0 or the first
 * error (said); what was opened is left in `*w` and `*r` to close. */
static int setup(const char *name, size_t size, void *buf, nerve_chan **w,
                 nerve_chan **r)
{
    struct nerve_chan_opts o = NERVE_CHAN_OPTS_INIT;
    o.slots = 1024;
    o.data_size =
        16 * (size + 256) < (1u << 20) ? (1u << 20) : 16 * (size + 256);
    o.mode = 0600;
    int rc = check(nerve_chan_create(name, &o), "create");
    if (!rc)
        rc = check(nerve_chan_open(name, NERVE_O_WRITE, w), "open");
    if (!rc)
        rc = check(nerve_chan_open(name, NERVE_O_READ, r), "open");
    /* The ring once around, then the reader at the head. */
    uint64_t warm = o.data_size / size + o.slots + 2;
    for (uint64_t i = 0; i < warm && !rc; i++)
        rc = check(nerve_chan_put(*w, buf, size, 0, NULL, 0), "put");
    struct nerve_stats st;
    if (!rc && !(rc = check(nerve_chan_stat(*r, &st), "stat")))
        nerve_chan_seek(*r, st.head_seq);
    return rc;
}

int main(int argc, char **argv)
{
    struct opts a = {64, 100000, 0, "nerve-hotpath"};
    char name[NERVE_NAME_MAX + 1];
    int rc = parse_args(argc, argv, &a);
    if (rc != 0)
        return rc;
    snprintf(name, sizeof name, "%.100s-%ld", a.prefix, (long)getpid());
    if (nerve_chan_name_check(name) != 0) {
        fprintf(stderr, "nerve-hotpath: bad --name '%s'\n", a.prefix);
        return 2;
    }
    nerve_chan *w = NULL, *r = NULL;
    void *buf = calloc(1, a.size);
    rc = buf ? setup(name, a.size, buf, &w, &r) : NERVE_ENOMEM;
    /* A few rounds untimed, so the measured ones start warm. */
    if (!rc)
        rc = warm_loop(w, r, buf, a.size, 1000, a.zero_copy);
    int64_t t0 = now_ns();
    if (!rc)
        rc = hot_loop(w, r, buf, a.size, a.count, a.zero_copy);
    int64_t t1 = now_ns();
    if (w)
        nerve_chan_close(w);
    if (r)
        nerve_chan_close(r);
    if (nerve_chan_unlink(name) != 0 && !rc) {
        fprintf(stderr, "nerve-hotpath: could not remove %s\n", name);
    }
    free(buf);
    if (rc)
        return 1;
    printf("size %zu %s: %" PRIu64 " iterations, %.1f ns per write + read\n",
           a.size, a.zero_copy ? "zero-copy" : "copy", a.count,
           (double)(t1 - t0) / (double)a.count);
    return 0;
}
