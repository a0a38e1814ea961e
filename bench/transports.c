/* The mechanisms `nerve bench` compares. Each does the same job: every
 * sender's messages reach every receiver, with the sender's timestamp in
 * the message. Stream and datagram baselines are point to point, so a
 * sender writes each message once per receiver (that fan-out is their real
 * cost), and their senders block when a receiver falls behind, so they
 * never miss a message. nerve and the condvar ring overwrite the oldest
 * message instead and receivers count what they missed. futex and spin
 * carry no payload: they are the floors of a blocking and of a polling
 * receiver.
 *
 * The parent calls setup() before forking and teardown() after every child
 * exited; the other calls run in the children. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <mqueue.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "bench_impl.h"

/* How long a blocked receiver sleeps before it looks at the done flag. */
#define RECV_TIMEOUT_NS 50000000LL

static int fail(char *err, size_t len, const char *what, int e)
{
    snprintf(err, len, "%s: %s", what, strerror(e));
    return -1;
}

static int nfail(char *err, size_t len, const char *what, int rc)
{
    snprintf(err, len, "%s: %s: %s", what, nerve_err_name(rc),
             nerve_strerror(rc));
    return -1;
}

static void *shared_map(size_t len)
{
    void *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
                   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

static int alloc_buf(struct bench_run *r, size_t len, char *err, size_t elen)
{
    r->buf = malloc(len);
    if (r->buf == NULL) {
        return fail(err, elen, "malloc", ENOMEM);
    }
    memset(r->buf, 0, len); /* fault the pages in before the timed loop */
    return 0;
}

/* ---- nerve --------------------------------------------------------------- */

static int nerve_setup(struct bench_run *r, char *err, size_t len)
{
    struct nerve_chan_opts o = NERVE_CHAN_OPTS_INIT;
    o.slots = r->slots;
    o.data_size = r->data_size;
    o.mode = 0600;
    int rc = nerve_chan_unlink(r->name);
    (void)rc; /* a leftover of a killed run, if any */
    rc = nerve_chan_create(r->name, &o);
    if (rc != 0) {
        return nfail(err, len, "nerve_chan_create", rc);
    }
    /* Warm the ring once around, as a channel in service is: the first
     * write of each page of a fresh file allocates and zeroes it, a cost
     * a long-lived channel pays once, not per message. Receivers start
     * after these messages (receiver_init seeks to the head). */
    nerve_chan *c;
    rc = nerve_chan_open(r->name, NERVE_O_WRITE, &c);
    if (rc != 0) {
        return nfail(err, len, "nerve_chan_open", rc);
    }
    void *warm = calloc(1, r->cfg->size);
    if (warm == NULL) {
        nerve_chan_close(c);
        return fail(err, len, "malloc", ENOMEM);
    }
    uint64_t n = r->data_size / r->cfg->size + 2;
    n = n < r->slots + 2 ? r->slots + 2 : n;
    for (uint64_t i = 0; i < n && rc == 0; i++) {
        rc = nerve_chan_put(c, warm, r->cfg->size, NERVE_FOREVER, NULL, 0);
    }
    free(warm);
    nerve_chan_close(c);
    return rc ? nfail(err, len, "nerve_chan_put (warm-up)", rc) : 0;
}

static int nerve_sender_init(struct bench_run *r, unsigned id, char *err,
                             size_t len)
{
    (void)id;
    int rc = nerve_chan_open(r->name, NERVE_O_WRITE, &r->chan);
    return rc ? nfail(err, len, "nerve_chan_open", rc) : 0;
}

static int nerve_send(struct bench_run *r, unsigned id, void *msg, char *err,
                      size_t len)
{
    (void)id;
    int rc = nerve_chan_put(r->chan, msg, r->cfg->size, NERVE_FOREVER, NULL, 0);
    return rc ? nfail(err, len, "nerve_chan_put", rc) : 0;
}

static int nerve_receiver_init(struct bench_run *r, unsigned id, char *err,
                               size_t len)
{
    (void)id;
    int rc = nerve_chan_open(r->name, NERVE_O_READ, &r->chan);
    if (rc != 0) {
        return nfail(err, len, "nerve_chan_open", rc);
    }
    struct nerve_stats st;
    rc = nerve_chan_stat(r->chan, &st);
    if (rc != 0) {
        return nfail(err, len, "nerve_chan_stat", rc);
    }
    nerve_chan_seek(r->chan, st.head_seq); /* after the warm-up messages */
    return alloc_buf(r, r->cfg->size, err, len);
}

static int nerve_recv(struct bench_run *r, unsigned id, int block,
                      struct bench_hdr *hdr, char *err, size_t len)
{
    (void)id;
    uint32_t flags = (r->cfg->newest ? NERVE_GET_NEWEST : NERVE_GET_NEXT) |
                     (block ? NERVE_F_WAIT : 0);
    int64_t timeout = block ? RECV_TIMEOUT_NS : 0;
    struct nerve_get_info info;
    int rc;
    if (r->cfg->zero_copy) {
        struct nerve_view v;
        rc = nerve_chan_view(r->chan, 0, timeout, &v, flags);
        if (rc == 0) {
            memcpy(hdr, v.data, sizeof *hdr);
            r->lib_missed += v.info.missed;
            if (nerve_chan_view_check(r->chan, &v) != 0) {
                /* Overwritten while read: not delivered. The counter gap
                 * the next message shows accounts for it. */
                r->stale++;
                return 0;
            }
            return 1;
        }
    } else {
        rc = nerve_chan_get(r->chan, r->buf, r->cfg->size, 0, timeout, &info,
                            flags);
        if (rc == 0) {
            memcpy(hdr, r->buf, sizeof *hdr);
            r->lib_missed += info.missed;
            return 1;
        }
    }
    if (rc == NERVE_EAGAIN || rc == NERVE_ETIMEDOUT) {
        return 0;
    }
    return nfail(err, len,
                 r->cfg->zero_copy ? "nerve_chan_view" : "nerve_chan_get", rc);
}

static void nerve_teardown(struct bench_run *r)
{
    int rc = nerve_chan_unlink(r->name);
    (void)rc;
}

static const struct bench_ops ops_nerve = {
    "nerve",     1,
    -1,          0,
    nerve_setup, nerve_sender_init,
    nerve_send,  nerve_receiver_init,
    nerve_recv,  nerve_teardown,
};

/* ---- pipe and unix: one descriptor pair per sender and receiver -------- */

static int *pair_fd(struct bench_run *r, unsigned s, unsigned rcv)
{
    return &r->fds[(s * r->cfg->receivers + rcv) * 2];
}

static void pairs_close(struct bench_run *r)
{
    if (r->fds == NULL) {
        return;
    }
    for (unsigned i = 0; i < r->cfg->senders * r->cfg->receivers * 2; i++) {
        if (r->fds[i] >= 0) {
            close(r->fds[i]);
        }
    }
    free(r->fds);
    r->fds = NULL;
}

static int pairs_alloc(struct bench_run *r, char *err, size_t len)
{
    size_t n = (size_t)r->cfg->senders * r->cfg->receivers * 2;
    r->fds = malloc(n * sizeof *r->fds);
    if (r->fds == NULL) {
        return fail(err, len, "malloc", ENOMEM);
    }
    for (size_t i = 0; i < n; i++) {
        r->fds[i] = -1;
    }
    return 0;
}

static int pipe_setup(struct bench_run *r, char *err, size_t len)
{
    if (pairs_alloc(r, err, len) != 0) {
        return -1;
    }
    /* Give the pipe room for two messages where the system allows it (a
     * fair baseline gets its best configuration). */
    long want = (long)(r->cfg->size * 2 > 65536 ? r->cfg->size * 2 : 65536);
    FILE *f = fopen("/proc/sys/fs/pipe-max-size", "r");
    long max = 1 << 20;
    if (f != NULL) {
        if (fscanf(f, "%ld", &max) != 1) {
            max = 1 << 20;
        }
        fclose(f);
    }
    if (want > max && geteuid() != 0) {
        want = max;
    }
    for (unsigned s = 0; s < r->cfg->senders; s++) {
        for (unsigned i = 0; i < r->cfg->receivers; i++) {
            int *fd = pair_fd(r, s, i);
            int p[2];
            if (pipe2(p, O_CLOEXEC) != 0) {
                int e = errno;
                pairs_close(r);
                return fail(err, len, "pipe", e);
            }
            fd[0] = p[0];
            fd[1] = p[1];
            if (fcntl(fd[1], F_SETPIPE_SZ, (int)want) < 0) {
                /* keep the default size */
            }
        }
    }
    return 0;
}

static int sock_setup(struct bench_run *r, char *err, size_t len)
{
    if (pairs_alloc(r, err, len) != 0) {
        return -1;
    }
    int buf = (int)(r->cfg->size * 4 + 65536);
    for (unsigned s = 0; s < r->cfg->senders; s++) {
        for (unsigned i = 0; i < r->cfg->receivers; i++) {
            int *fd = pair_fd(r, s, i);
            int sv[2];
            if (socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, sv) != 0) {
                int e = errno;
                pairs_close(r);
                return fail(err, len, "socketpair", e);
            }
            /* fd[0] receives, fd[1] sends, as for the pipe. A datagram
             * larger than the send buffer fails with EMSGSIZE, so ask for
             * room (FORCE works for root beyond wmem_max). */
            fd[0] = sv[0];
            fd[1] = sv[1];
            if (setsockopt(sv[1], SOL_SOCKET, SO_SNDBUFFORCE, &buf,
                           sizeof buf) != 0) {
                if (setsockopt(sv[1], SOL_SOCKET, SO_SNDBUF, &buf,
                               sizeof buf) != 0) {
                    /* keep the default */
                }
            }
            if (setsockopt(sv[0], SOL_SOCKET, SO_RCVBUFFORCE, &buf,
                           sizeof buf) != 0) {
                if (setsockopt(sv[0], SOL_SOCKET, SO_RCVBUF, &buf,
                               sizeof buf) != 0) {
                    /* keep the default */
                }
            }
        }
    }
    return 0;
}

static int pairs_sender_init(struct bench_run *r, unsigned id, char *err,
                             size_t len)
{
    (void)r;
    (void)id;
    (void)err;
    (void)len;
    return 0;
}

static int write_all(int fd, const char *p, size_t n)
{
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0) {
            if (errno == EINTR) {
                continue;
            }
            return -1;
        }
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

static int pipe_send(struct bench_run *r, unsigned id, void *msg, char *err,
                     size_t len)
{
    for (unsigned i = 0; i < r->cfg->receivers; i++) {
        if (write_all(pair_fd(r, id, i)[1], msg, r->cfg->size) != 0) {
            return fail(err, len, "write", errno);
        }
    }
    return 0;
}

static int sock_send(struct bench_run *r, unsigned id, void *msg, char *err,
                     size_t len)
{
    for (unsigned i = 0; i < r->cfg->receivers; i++) {
        ssize_t w;
        do {
            w = send(pair_fd(r, id, i)[1], msg, r->cfg->size, 0);
        } while (w < 0 && errno == EINTR);
        if (w != (ssize_t)r->cfg->size) {
            return fail(err, len, "send", w < 0 ? errno : EMSGSIZE);
        }
    }
    return 0;
}

static int pairs_receiver_init(struct bench_run *r, unsigned id, char *err,
                               size_t len)
{
    unsigned S = r->cfg->senders;
    r->off = calloc(S, sizeof *r->off);
    if (r->off == NULL) {
        return fail(err, len, "malloc", ENOMEM);
    }
    for (unsigned s = 0; s < S; s++) {
        int fd = pair_fd(r, s, id)[0];
        int fl = fcntl(fd, F_GETFL);
        if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) != 0) {
            return fail(err, len, "fcntl", errno);
        }
    }
    /* One assembly buffer per sender: a pipe may deliver a message in
     * pieces. */
    return alloc_buf(r, (size_t)S * r->cfg->size, err, len);
}

/* Wait up to RECV_TIMEOUT_NS for any of this receiver's descriptors. */
static int pairs_wait(struct bench_run *r, unsigned id, char *err, size_t len)
{
    struct pollfd pfd[BENCH_MAX_PROCS];
    unsigned S = r->cfg->senders;
    for (unsigned s = 0; s < S; s++) {
        pfd[s].fd = pair_fd(r, s, id)[0];
        pfd[s].events = POLLIN;
        pfd[s].revents = 0;
    }
    if (poll(pfd, S, (int)(RECV_TIMEOUT_NS / 1000000)) < 0 && errno != EINTR) {
        return fail(err, len, "poll", errno);
    }
    return 0;
}

static int pipe_recv(struct bench_run *r, unsigned id, int block,
                     struct bench_hdr *hdr, char *err, size_t len)
{
    unsigned S = r->cfg->senders;
    size_t size = r->cfg->size;
    for (int attempt = 0; attempt < 2; attempt++) {
        for (unsigned k = 0; k < S; k++) {
            unsigned s = (r->rr + k) % S;
            char *b = (char *)r->buf + (size_t)s * size;
            int fd = pair_fd(r, s, id)[0];
            for (;;) {
                ssize_t n = read(fd, b + r->off[s], size - r->off[s]);
                if (n < 0) {
                    if (errno == EINTR) {
                        continue;
                    }
                    if (errno != EAGAIN) {
                        return fail(err, len, "read", errno);
                    }
                    break;
                }
                if (n == 0) {
                    break;
                }
                r->off[s] += (uint64_t)n;
                if (r->off[s] == size) {
                    r->off[s] = 0;
                    r->rr = s + 1;
                    memcpy(hdr, b, sizeof *hdr);
                    return 1;
                }
            }
        }
        if (!block || attempt == 1) {
            return 0;
        }
        if (pairs_wait(r, id, err, len) != 0) {
            return -1;
        }
    }
    return 0;
}

static int sock_recv(struct bench_run *r, unsigned id, int block,
                     struct bench_hdr *hdr, char *err, size_t len)
{
    unsigned S = r->cfg->senders;
    for (int attempt = 0; attempt < 2; attempt++) {
        for (unsigned k = 0; k < S; k++) {
            unsigned s = (r->rr + k) % S;
            ssize_t n =
                recv(pair_fd(r, s, id)[0], r->buf, r->cfg->size, MSG_DONTWAIT);
            if (n < 0) {
                if (errno == EAGAIN || errno == EINTR) {
                    continue;
                }
                return fail(err, len, "recv", errno);
            }
            if ((size_t)n != r->cfg->size) {
                return fail(err, len, "recv (short datagram)", EPROTO);
            }
            r->rr = s + 1;
            memcpy(hdr, r->buf, sizeof *hdr);
            return 1;
        }
        if (!block || attempt == 1) {
            return 0;
        }
        if (pairs_wait(r, id, err, len) != 0) {
            return -1;
        }
    }
    return 0;
}

static void pairs_teardown(struct bench_run *r)
{
    pairs_close(r);
}

static const struct bench_ops ops_pipe = {
    "pipe",     1,
    -1,         0,
    pipe_setup, pairs_sender_init,
    pipe_send,  pairs_receiver_init,
    pipe_recv,  pairs_teardown,
};

static const struct bench_ops ops_unix = {
    "unix",     1,
    -1,         0,
    sock_setup, pairs_sender_init,
    sock_send,  pairs_receiver_init,
    sock_recv,  pairs_teardown,
};

/* ---- mq: one POSIX message queue per receiver --------------------------- */

#define MQ_DEPTH 8

static void mq_name(const struct bench_run *r, unsigned i, char *out,
                    size_t len)
{
    snprintf(out, len, "/%s-%u", r->name, i);
}

static void mq_teardown(struct bench_run *r)
{
    if (r->mqs == NULL) {
        return;
    }
    for (unsigned i = 0; i < r->cfg->receivers; i++) {
        if (r->mqs[i] >= 0) {
            char name[NERVE_NAME_MAX + 32];
            mq_name(r, i, name, sizeof name);
            mq_close(r->mqs[i]);
            mq_unlink(name);
        }
    }
    free(r->mqs);
    r->mqs = NULL;
}

static int mq_setup(struct bench_run *r, char *err, size_t len)
{
    unsigned R = r->cfg->receivers;
    r->mqs = malloc(R * sizeof *r->mqs);
    if (r->mqs == NULL) {
        return fail(err, len, "malloc", ENOMEM);
    }
    for (unsigned i = 0; i < R; i++) {
        r->mqs[i] = -1;
    }
    /* The per-user queue memory limit is small (800 KiB); raise it where
     * permitted so that large messages can be measured at all. */
    struct rlimit rl;
    rlim_t need = (rlim_t)R * MQ_DEPTH * (r->cfg->size + 256) + (1u << 20);
    if (getrlimit(RLIMIT_MSGQUEUE, &rl) == 0 && rl.rlim_cur < need) {
        rl.rlim_cur = need;
        if (rl.rlim_max < need) {
            rl.rlim_max = need;
        }
        if (setrlimit(RLIMIT_MSGQUEUE, &rl) != 0) {
            /* measured as far as the limit allows */
        }
    }
    for (unsigned i = 0; i < R; i++) {
        char name[NERVE_NAME_MAX + 32];
        mq_name(r, i, name, sizeof name);
        mq_unlink(name);
        struct mq_attr a;
        memset(&a, 0, sizeof a);
        a.mq_maxmsg = MQ_DEPTH;
        a.mq_msgsize = (long)r->cfg->size;
        mqd_t q =
            mq_open(name, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600, &a);
        if (q == (mqd_t)-1) {
            int e = errno;
            mq_teardown(r);
            snprintf(err, len,
                     "mq_open: %s (message size %llu; see "
                     "/proc/sys/fs/mqueue/msgsize_max and RLIMIT_MSGQUEUE)",
                     strerror(e), (unsigned long long)r->cfg->size);
            return -1;
        }
        r->mqs[i] = q;
    }
    return 0;
}

static int mq_sender_init(struct bench_run *r, unsigned id, char *err,
                          size_t len)
{
    (void)id;
    unsigned R = r->cfg->receivers;
    r->mqw = malloc(R * sizeof *r->mqw);
    if (r->mqw == NULL) {
        return fail(err, len, "malloc", ENOMEM);
    }
    for (unsigned i = 0; i < R; i++) {
        char name[NERVE_NAME_MAX + 32];
        mq_name(r, i, name, sizeof name);
        r->mqw[i] = mq_open(name, O_WRONLY | O_CLOEXEC);
        if (r->mqw[i] == (mqd_t)-1) {
            return fail(err, len, "mq_open", errno);
        }
    }
    return 0;
}

static int mq_send_all(struct bench_run *r, unsigned id, void *msg, char *err,
                       size_t len)
{
    (void)id;
    for (unsigned i = 0; i < r->cfg->receivers; i++) {
        int rc;
        do {
            rc = mq_send(r->mqw[i], msg, r->cfg->size, 0);
        } while (rc != 0 && errno == EINTR);
        if (rc != 0) {
            return fail(err, len, "mq_send", errno);
        }
    }
    return 0;
}

static int mq_receiver_init(struct bench_run *r, unsigned id, char *err,
                            size_t len)
{
    char name[NERVE_NAME_MAX + 32];
    mq_name(r, id, name, sizeof name);
    /* A descriptor of its own: O_NONBLOCK belongs to the open queue
     * description, which the forked senders share otherwise. */
    r->mq =
        mq_open(name, O_RDONLY | O_CLOEXEC | (r->cfg->wait ? 0 : O_NONBLOCK));
    if (r->mq == (mqd_t)-1) {
        return fail(err, len, "mq_open", errno);
    }
    return alloc_buf(r, r->cfg->size, err, len);
}

static int mq_recv(struct bench_run *r, unsigned id, int block,
                   struct bench_hdr *hdr, char *err, size_t len)
{
    (void)id;
    ssize_t n;
    if (block) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts); /* mq timeouts use this clock */
        ts.tv_nsec += RECV_TIMEOUT_NS;
        ts.tv_sec += ts.tv_nsec / 1000000000;
        ts.tv_nsec %= 1000000000;
        n = mq_timedreceive(r->mq, r->buf, r->cfg->size, NULL, &ts);
    } else if (r->cfg->wait) {
        /* A blocking descriptor: a deadline in the past polls once. */
        struct timespec past = {0, 0};
        n = mq_timedreceive(r->mq, r->buf, r->cfg->size, NULL, &past);
    } else {
        n = mq_receive(r->mq, r->buf, r->cfg->size, NULL);
    }
    if (n < 0) {
        if (errno == EAGAIN || errno == ETIMEDOUT || errno == EINTR) {
            return 0;
        }
        return fail(err, len, "mq_receive", errno);
    }
    memcpy(hdr, r->buf, sizeof *hdr);
    return 1;
}

static const struct bench_ops ops_mq = {
    "mq",        1,
    -1,          0,
    mq_setup,    mq_sender_init,
    mq_send_all, mq_receiver_init,
    mq_recv,     mq_teardown,
};

/* ---- futex and spin: the floors ----------------------------------------- */

/* One shared line: a generation word (the futex) and one 64-bit slot per
 * sender holding the low 40 bits of its send time and the low 24 bits of
 * its counter, so that one atomic store publishes both. With one sender
 * both words lie in the same 64-byte cache line. The receiver rebuilds the
 * full counter from the 24-bit difference (it never falls 16 million
 * messages behind between two looks) and the latency from the 40-bit time
 * difference (exact below 18 minutes). */
struct floor_line {
    _Alignas(64) _Atomic uint32_t gen;
    uint32_t pad;
    _Atomic uint64_t slot[BENCH_MAX_PROCS];
};

#define MASK40 ((UINT64_C(1) << 40) - 1)
#define MASK24 ((UINT64_C(1) << 24) - 1)

static int floor_setup(struct bench_run *r, char *err, size_t len)
{
    r->shm_len = 4096;
    r->shm = shared_map(r->shm_len);
    if (r->shm == NULL) {
        return fail(err, len, "mmap", errno);
    }
    return 0;
}

static int floor_sender_init(struct bench_run *r, unsigned id, char *err,
                             size_t len)
{
    (void)r;
    (void)id;
    (void)err;
    (void)len;
    return 0;
}

static void floor_publish(struct bench_run *r, unsigned id, const void *msg)
{
    struct floor_line *l = r->shm;
    struct bench_hdr h;
    memcpy(&h, msg, sizeof h);
    uint64_t w = ((uint64_t)h.t_send & MASK40) | ((h.counter & MASK24) << 40);
    /* The slot is published before the generation moves: a receiver that
     * sees the new generation (acquire) sees the slot. */
    atomic_store_explicit(&l->slot[id], w, memory_order_release);
    atomic_fetch_add_explicit(&l->gen, 1, memory_order_release);
}

static int futex_send(struct bench_run *r, unsigned id, void *msg, char *err,
                      size_t len)
{
    floor_publish(r, id, msg);
    struct floor_line *l = r->shm;
    /* A bare wake-up: always the system call, waking every waiter. */
    if (syscall(SYS_futex, &l->gen, FUTEX_WAKE, INT_MAX, NULL, NULL, 0) < 0) {
        return fail(err, len, "futex wake", errno);
    }
    return 0;
}

static int spin_send(struct bench_run *r, unsigned id, void *msg, char *err,
                     size_t len)
{
    (void)err;
    (void)len;
    floor_publish(r, id, msg);
    return 0;
}

static int floor_receiver_init(struct bench_run *r, unsigned id, char *err,
                               size_t len)
{
    (void)id;
    r->last_word = calloc(r->cfg->senders, sizeof *r->last_word);
    if (r->last_word == NULL) {
        return fail(err, len, "malloc", ENOMEM);
    }
    r->off = calloc(r->cfg->senders, sizeof *r->off); /* full counters */
    return r->off ? 0 : fail(err, len, "malloc", ENOMEM);
}

static int floor_scan(struct bench_run *r, struct bench_hdr *hdr)
{
    struct floor_line *l = r->shm;
    unsigned S = r->cfg->senders;
    for (unsigned k = 0; k < S; k++) {
        unsigned s = (r->rr + k) % S;
        uint64_t w = atomic_load_explicit(&l->slot[s], memory_order_acquire);
        if (w != r->last_word[s]) {
            r->last_word[s] = w;
            uint64_t delta = ((w >> 40) - r->off[s]) & MASK24;
            r->off[s] += delta;
            hdr->t_send = (int64_t)(w & MASK40);
            hdr->counter = r->off[s];
            hdr->sender = s;
            hdr->magic = BENCH_MAGIC;
            r->rr = s + 1;
            return 1;
        }
    }
    return 0;
}

static int futex_recv(struct bench_run *r, unsigned id, int block,
                      struct bench_hdr *hdr, char *err, size_t len)
{
    (void)id;
    struct floor_line *l = r->shm;
    /* Lost-wakeup argument: the generation is read before the slots, and a
     * sender moves it after its slot store, so a message this scan missed
     * has changed the word and FUTEX_WAIT returns at once. */
    uint32_t g = atomic_load_explicit(&l->gen, memory_order_acquire);
    if (floor_scan(r, hdr)) {
        return 1;
    }
    if (!block) {
        return 0;
    }
    struct timespec ts = {0, RECV_TIMEOUT_NS};
    if (syscall(SYS_futex, &l->gen, FUTEX_WAIT, g, &ts, NULL, 0) < 0 &&
        errno != EAGAIN && errno != ETIMEDOUT && errno != EINTR) {
        return fail(err, len, "futex wait", errno);
    }
    return floor_scan(r, hdr);
}

static int spin_recv(struct bench_run *r, unsigned id, int block,
                     struct bench_hdr *hdr, char *err, size_t len)
{
    (void)id;
    (void)block;
    (void)err;
    (void)len;
    return floor_scan(r, hdr);
}

static void floor_teardown(struct bench_run *r)
{
    if (r->shm != NULL) {
        munmap(r->shm, r->shm_len);
        r->shm = NULL;
    }
}

static const struct bench_ops ops_futex = {
    "futex",     0,
    1,           1,
    floor_setup, floor_sender_init,
    futex_send,  floor_receiver_init,
    futex_recv,  floor_teardown,
};

static const struct bench_ops ops_spin = {
    "spin",      0,
    0,           1,
    floor_setup, floor_sender_init,
    spin_send,   floor_receiver_init,
    spin_recv,   floor_teardown,
};

/* ---- condvar: an Ach-style channel --------------------------------------- */

/* A ring of fixed-size slots under one process-shared, robust,
 * priority-inheriting mutex (as Ach sets it up), with a condition variable
 * that writers broadcast. Readers take the mutex to look and to copy, so
 * they serialise against each other and against writers: the cost nerve's
 * lock-free readers avoid. */
struct cv_ring {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    uint64_t head; /* sequence number of the newest message (0: none) */
    uint64_t nslots;
    uint64_t size;
    _Alignas(64) unsigned char data[];
};

static int cv_setup(struct bench_run *r, char *err, size_t len)
{
    uint64_t k = r->data_size / r->cfg->size;
    if (k > r->slots) {
        k = r->slots;
    }
    if (k < 2) {
        k = 2;
    }
    r->shm_len = sizeof(struct cv_ring) + k * r->cfg->size;
    r->shm = shared_map(r->shm_len);
    if (r->shm == NULL) {
        return fail(err, len, "mmap", errno);
    }
    struct cv_ring *c = r->shm;
    pthread_mutexattr_t ma;
    pthread_condattr_t ca;
    pthread_mutexattr_init(&ma);
    pthread_mutexattr_setpshared(&ma, PTHREAD_PROCESS_SHARED);
    pthread_mutexattr_setrobust(&ma, PTHREAD_MUTEX_ROBUST);
    pthread_mutexattr_setprotocol(&ma, PTHREAD_PRIO_INHERIT);
    int e = pthread_mutex_init(&c->lock, &ma);
    pthread_mutexattr_destroy(&ma);
    if (e != 0) {
        return fail(err, len, "pthread_mutex_init", e);
    }
    pthread_condattr_init(&ca);
    pthread_condattr_setpshared(&ca, PTHREAD_PROCESS_SHARED);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    e = pthread_cond_init(&c->cond, &ca);
    pthread_condattr_destroy(&ca);
    if (e != 0) {
        return fail(err, len, "pthread_cond_init", e);
    }
    c->nslots = k;
    c->size = r->cfg->size;
    memset(c->data, 0, k * r->cfg->size); /* warm, as for nerve */
    return 0;
}

static int cv_sender_init(struct bench_run *r, unsigned id, char *err,
                          size_t len)
{
    (void)r;
    (void)id;
    (void)err;
    (void)len;
    return 0;
}

static int cv_send(struct bench_run *r, unsigned id, void *msg, char *err,
                   size_t len)
{
    (void)id;
    struct cv_ring *c = r->shm;
    int e = pthread_mutex_lock(&c->lock);
    if (e != 0) {
        return fail(err, len, "pthread_mutex_lock", e);
    }
    uint64_t seq = c->head + 1;
    memcpy(c->data + ((seq - 1) % c->nslots) * c->size, msg, c->size);
    c->head = seq;
    pthread_cond_broadcast(&c->cond);
    pthread_mutex_unlock(&c->lock);
    return 0;
}

static int cv_receiver_init(struct bench_run *r, unsigned id, char *err,
                            size_t len)
{
    (void)id;
    r->next = 1;
    return alloc_buf(r, r->cfg->size, err, len);
}

static int cv_recv(struct bench_run *r, unsigned id, int block,
                   struct bench_hdr *hdr, char *err, size_t len)
{
    (void)id;
    struct cv_ring *c = r->shm;
    int e = pthread_mutex_lock(&c->lock);
    if (e != 0) {
        return fail(err, len, "pthread_mutex_lock", e);
    }
    if (block && c->head < r->next) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        ts.tv_nsec += RECV_TIMEOUT_NS;
        ts.tv_sec += ts.tv_nsec / 1000000000;
        ts.tv_nsec %= 1000000000;
        while (c->head < r->next && e == 0) {
            e = pthread_cond_timedwait(&c->cond, &c->lock, &ts);
        }
    }
    int got = 0;
    if (c->head >= r->next) {
        if (r->cfg->newest) {
            r->next = c->head;
        } else if (c->head - r->next >= c->nslots) {
            r->next = c->head - c->nslots + 1; /* overwritten: skip on */
        }
        memcpy(r->buf, c->data + ((r->next - 1) % c->nslots) * c->size,
               c->size);
        r->next++;
        got = 1;
    }
    pthread_mutex_unlock(&c->lock);
    if (got) {
        memcpy(hdr, r->buf, sizeof *hdr);
    }
    return got;
}

static void cv_teardown(struct bench_run *r)
{
    if (r->shm != NULL) {
        struct cv_ring *c = r->shm;
        pthread_cond_destroy(&c->cond);
        pthread_mutex_destroy(&c->lock);
        munmap(r->shm, r->shm_len);
        r->shm = NULL;
    }
}

static const struct bench_ops ops_condvar = {
    "condvar", 1,
    -1,        0,
    cv_setup,  cv_sender_init,
    cv_send,   cv_receiver_init,
    cv_recv,   cv_teardown,
};

const struct bench_ops *const bench_transports[BT_COUNT] = {
    [BT_NERVE] = &ops_nerve,     [BT_PIPE] = &ops_pipe,   [BT_UNIX] = &ops_unix,
    [BT_MQ] = &ops_mq,           [BT_FUTEX] = &ops_futex, [BT_SPIN] = &ops_spin,
    [BT_CONDVAR] = &ops_condvar,
};
