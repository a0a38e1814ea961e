/* `nerve bench --pingpong`: ping-pong between two pinned processes, with
 * the floors measured in the same run.
 *
 * SHAPE
 *   The parent forks pong (on CPU B) and ping (on CPU A). Ping sends a
 *   message on a2b, pong waits for it and answers on b2a, ping waits for
 *   the answer: one round trip is two one-way hops. This is the shape of
 *   iceoryx2's benchmark-publish-subscribe and benchmark-event, and of
 *   bench/peers/ (the same shapes over iceoryx2).
 *
 *   Ping reads CLOCK_MONOTONIC once per round trip, so the round-trip
 *   samples add up exactly to the timed total. The average one-way hop is
 *   total / (2 x round trips); the per-hop percentiles are those of the
 *   round trips, halved (a one-way time needs two clocks read on two CPUs;
 *   half a round trip needs one). Warm-up round trips come first and are
 *   not timed; their count is reported. Every timed round trip is kept.
 *
 * ROWS
 *   spin       one shared cache line, both directions: ping stores 2k+1,
 *              pong spins until it sees it and stores 2k+2 (the floor of a
 *              polling reader: one line moves per hop)
 *   lines-K    K cache lines per direction, each in its own page: the
 *              writer stores lines K..2, then line 1 with release; the
 *              reader spins on line 1, then follows a dependent chain: the
 *              address of line j + 1 is read from line j, as a reader of
 *              nerve reads head, then the index slot, then the payload at
 *              the slot's offset (a model of a message that moves K lines
 *              one after the other; K = 1 is one line per direction)
 *   futex      one shared word, FUTEX_WAKE always, FUTEX_WAIT while
 *              unchanged (the floor of a blocking reader)
 *   memcpy     memcpy of the payload alone, source and destination warm in
 *              one CPU's cache, in batches (the copy floor; "hop" is one
 *              copy)
 *   memcpy-xfer  the copies of poll-copy without nerve: the writer memcpys
 *              its buffer into a plain shared mapping and stores a flag
 *              line (as spin), the reader spins on the flag and memcpys
 *              out, then answers the same way on a second region. The
 *              position advances through a region of the size of the
 *              nerve row's data ring by the payload rounded up to 64
 *              bytes, as nerve's does, so both touch the same amount of
 *              memory; the region is written once around first. This is
 *              the physical floor of a copying hop: the reader's copy
 *              reads lines modified in the other CPU's cache, the writer's
 *              copy writes lines the other CPU last read.
 *   poll-zc    nerve, polling, zero-copy: reserve + commit without touching
 *              the payload; the reader takes a view, leaves the payload
 *              unread, and checks the view
 *   poll-copy  nerve, polling: put from a buffer, get into a buffer
 *   wait-zc, wait-copy   the same with blocking reads (NERVE_F_WAIT)
 *
 *   Each nerve row uses two fresh channels (a2b, b2a) whose rings were
 *   written once around first, as a channel in service has been. A data
 *   ring holds --ring messages (default 16; at least 1 MiB), so a message
 *   lands on lines last touched --ring messages earlier; memcpy-xfer
 *   walks a region of the same size.
 *
 * ROUNDS
 *   Rounds alternate the rows so that all of them share the machine's
 *   conditions; a row's rounds are pooled (every sample of every round).
 *
 * Nothing in the timed loops allocates; every wait is bounded (a peer that
 * does not answer within PP_PEER_TIMEOUT_NS is an error, and the parent
 * kills children that outlive their plan). */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <linux/futex.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <nerve/nerve.h>

#include "report.h"
#include "pingpong.h"
#include "stats.h"

enum pp_kind { PP_SPIN, PP_LINES, PP_FUTEX, PP_MEMCPY, PP_XFER, PP_NERVE };

#define PP_PEER_TIMEOUT_NS (20LL * 1000000000)
#define PP_SLICE_NS 100000000LL
#define PP_SAMPLES_OFF 4096u
#define PP_LINE_STRIDE (4096u + 64u) /* lines-K: own page, own cache set */
#define PP_BUF_ALIGN 64u /* every payload buffer, as nerve's ring positions */

/* Shared by the parent and the two children of one row and round. */
struct pp_ctl {
    _Alignas(64) _Atomic uint32_t pong_ready;
    _Atomic uint32_t ping_ready;
    _Atomic uint32_t go;
    _Atomic uint32_t failed;
    _Alignas(64) _Atomic uint32_t stop;       /* written once, at the end */
    _Alignas(64) _Atomic uint64_t iterations; /* samples written */
    uint64_t total_ns;
    uint64_t warmup;
    char error[256];
};

/* One row of the plan and its results, pooled over the rounds. */
struct pp_row {
    int kind;
    int wait, copy;
    uint64_t size;
    unsigned lines;
    uint64_t warmup;
    unsigned per;      /* units per sample: 2 hops, or copies per batch */
    uint32_t *samples; /* pooled */
    uint64_t n, cap;
    uint64_t total_ns;
    uint64_t round_n[PP_MAX_ROUNDS];
    double round_hop[PP_MAX_ROUNDS];
    unsigned rounds_done;
    char error[300];
    /* summary */
    double hop, p50, p99, p999, max, min;
    double floor_ns;
    const char *floor_name;
    double xfer_floor_ns; /* copying rows: zc + memcpy-xfer - spin */
    int xfer_unphysical;  /* that sum came out <= 0 in this run (noise) */
};

/* What one child needs: the row, its role and its resources. */
struct pp_proc {
    const struct pp_opts *o;
    struct pp_row *row;
    struct pp_ctl *ctl;
    uint32_t *samples; /* shared, PP_MAX_SAMPLES */
    int ping;
    uint64_t cap;    /* samples this round may take */
    double duration; /* seconds this round */
    /* floors */
    unsigned char *shm;
    uint64_t k; /* round trips so far (both sides count) */
    /* nerve */
    char name_a2b[NERVE_NAME_MAX + 1], name_b2a[NERVE_NAME_MAX + 1];
    nerve_chan *out, *in;
    unsigned char *buf;
};

static volatile sig_atomic_t pp_stop;

static void pp_on_signal(int sig)
{
    (void)sig;
    pp_stop = 1;
}

/* ---- children ------------------------------------------------------------- */

static void pp_fail(struct pp_proc *p, const char *fmt, ...)
    __attribute__((format(printf, 2, 3), noreturn));

static void pp_fail(struct pp_proc *p, const char *fmt, ...)
{
    uint32_t zero = 0;
    if (atomic_compare_exchange_strong(&p->ctl->failed, &zero, 1)) {
        char msg[200];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof msg, fmt, ap);
        va_end(ap);
        snprintf(p->ctl->error, sizeof p->ctl->error, "%s: %s",
                 p->ping ? "ping" : "pong", msg);
    }
    _exit(1);
}

/* Called every few thousand spins, and after every timed-out wait: gives
 * up when the peer failed or has not answered for PP_PEER_TIMEOUT_NS. */
static void pp_check(struct pp_proc *p, int64_t *since)
{
    if (atomic_load_explicit(&p->ctl->failed, memory_order_relaxed)) {
        _exit(1);
    }
    int64_t now = bench_now();
    if (*since == 0) {
        *since = now;
    } else if (now - *since > PP_PEER_TIMEOUT_NS) {
        pp_fail(p, "no answer from the peer within %lld s",
                PP_PEER_TIMEOUT_NS / 1000000000);
    }
}

static void pp_spin_until(struct pp_proc *p, _Atomic uint32_t *w)
{
    int64_t since = 0;
    unsigned n = 0;
    while (atomic_load_explicit(w, memory_order_acquire) == 0) {
        if (++n % 4096 == 0) {
            pp_check(p, &since);
            sched_yield(); /* set-up only: the peer may share this CPU */
        }
    }
}

static void pp_handshake(struct pp_proc *p)
{
    struct pp_ctl *c = p->ctl;
    if (p->ping) {
        pp_spin_until(p, &c->pong_ready);
        atomic_store_explicit(&c->ping_ready, 1, memory_order_release);
        pp_spin_until(p, &c->go);
    } else {
        atomic_store_explicit(&c->pong_ready, 1, memory_order_release);
        pp_spin_until(p, &c->ping_ready);
        atomic_store_explicit(&c->go, 1, memory_order_release);
    }
}

static int pp_stopping(const struct pp_proc *p)
{
    return atomic_load_explicit(&p->ctl->stop, memory_order_acquire) != 0;
}

/* spin: one shared line; ping writes odd values, pong even ones. */
static void spin_ping(struct pp_proc *p, int last)
{
    _Atomic uint64_t *w = (_Atomic uint64_t *)p->shm;
    uint64_t k = p->k++;
    atomic_store_explicit(w, 2 * k + 1, memory_order_release);
    if (last) {
        return;
    }
    int64_t since = 0;
    unsigned n = 0;
    while (atomic_load_explicit(w, memory_order_acquire) != 2 * k + 2) {
        if (++n % 4096 == 0) {
            pp_check(p, &since);
        }
    }
}

static int spin_pong(struct pp_proc *p)
{
    _Atomic uint64_t *w = (_Atomic uint64_t *)p->shm;
    uint64_t k = p->k++;
    int64_t since = 0;
    unsigned n = 0;
    while (atomic_load_explicit(w, memory_order_acquire) != 2 * k + 1) {
        if (++n % 4096 == 0) {
            pp_check(p, &since);
        }
    }
    if (pp_stopping(p)) {
        return 0;
    }
    atomic_store_explicit(w, 2 * k + 2, memory_order_release);
    return 1;
}

/* lines-K: region a2b at shm, b2a at shm + half; line j at j * stride.
 * Word 0 of a line is the message value, word 1 the byte offset of the
 * next line from the region's start (written once, by the parent; it
 * travels with the line, so the reader cannot know the next address
 * before the line has arrived). */
static size_t lines_half(unsigned lines)
{
    size_t half = (size_t)lines * PP_LINE_STRIDE + 4096;
    return (half + 4095) / 4096 * 4096;
}

static _Atomic uint64_t *line_at(unsigned char *region, uint64_t off)
{
    return (_Atomic uint64_t *)(region + off);
}

static unsigned char *lines_region(struct pp_proc *p, int a2b)
{
    return p->shm + (a2b ? 0 : lines_half(p->row->lines));
}

static void lines_init(unsigned char *shm, unsigned lines)
{
    for (int r = 0; r < 2; r++) {
        unsigned char *region = shm + (r ? lines_half(lines) : 0);
        for (unsigned j = 0; j + 1 < lines; j++) {
            uint64_t *w = (uint64_t *)(region + (size_t)j * PP_LINE_STRIDE);
            w[1] = (uint64_t)(j + 1) * PP_LINE_STRIDE;
        }
    }
}

static void lines_send(struct pp_proc *p, int a2b, uint64_t v)
{
    unsigned char *region = lines_region(p, a2b);
    for (unsigned j = p->row->lines - 1; j >= 1; j--) {
        atomic_store_explicit(line_at(region, (size_t)j * PP_LINE_STRIDE), v,
                              memory_order_relaxed);
    }
    atomic_store_explicit(line_at(region, 0), v, memory_order_release);
}

static void lines_recv(struct pp_proc *p, int a2b, uint64_t v)
{
    unsigned char *region = lines_region(p, a2b);
    _Atomic uint64_t *line = line_at(region, 0);
    int64_t since = 0;
    unsigned n = 0;
    while (atomic_load_explicit(line, memory_order_acquire) != v) {
        if (++n % 4096 == 0) {
            pp_check(p, &since);
        }
    }
    for (unsigned j = 1; j < p->row->lines; j++) {
        /* The next address comes out of the line just read. */
        uint64_t next = ((volatile uint64_t *)line)[1];
        line = line_at(region, next);
        uint64_t got = atomic_load_explicit(line, memory_order_relaxed);
        if (got != v) {
            pp_fail(p, "line %u holds %" PRIu64 ", want %" PRIu64, j, got, v);
        }
    }
}

static void lines_ping(struct pp_proc *p, int last)
{
    uint64_t v = ++p->k;
    lines_send(p, 1, v);
    if (!last) {
        lines_recv(p, 0, v);
    }
}

static int lines_pong(struct pp_proc *p)
{
    uint64_t v = ++p->k;
    lines_recv(p, 1, v);
    if (pp_stopping(p)) {
        return 0;
    }
    lines_send(p, 0, v);
    return 1;
}

/* futex: one shared word; both sides always make the wake system call. */
static long sys_futex(_Atomic uint32_t *w, int op, uint32_t val,
                      const struct timespec *ts)
{
    return syscall(SYS_futex, (uint32_t *)w, op, val, ts, NULL, 0);
}

static void futex_post(struct pp_proc *p, _Atomic uint32_t *w, uint32_t v)
{
    atomic_store_explicit(w, v, memory_order_release);
    if (sys_futex(w, FUTEX_WAKE, INT_MAX, NULL) < 0) {
        pp_fail(p, "futex wake: %s", strerror(errno));
    }
}

static void futex_await(struct pp_proc *p, _Atomic uint32_t *w, uint32_t v)
{
    int64_t since = 0;
    uint32_t cur;
    while ((cur = atomic_load_explicit(w, memory_order_acquire)) != v) {
        struct timespec ts = {0, PP_SLICE_NS};
        if (sys_futex(w, FUTEX_WAIT, cur, &ts) < 0 && errno != EAGAIN &&
            errno != EINTR && errno != ETIMEDOUT) {
            pp_fail(p, "futex wait: %s", strerror(errno));
        }
        if (atomic_load_explicit(w, memory_order_relaxed) == cur) {
            pp_check(p, &since);
        }
    }
}

static void futex_ping(struct pp_proc *p, int last)
{
    _Atomic uint32_t *w = (_Atomic uint32_t *)p->shm;
    uint32_t k = (uint32_t)p->k++;
    futex_post(p, w, 2 * k + 1);
    if (!last) {
        futex_await(p, w, 2 * k + 2);
    }
}

static int futex_pong(struct pp_proc *p)
{
    _Atomic uint32_t *w = (_Atomic uint32_t *)p->shm;
    uint32_t k = (uint32_t)p->k++;
    futex_await(p, w, 2 * k + 1);
    if (pp_stopping(p)) {
        return 0;
    }
    futex_post(p, w, 2 * k + 2);
    return 1;
}

/* memcpy-xfer: the flag line at shm, region a2b at shm + 4096, b2a after
 * it; each region is xfer_ring(size) + size bytes (the tail stands in for
 * nerve's double mapping: a copy that crosses the ring's end stays one
 * memcpy). */
static uint64_t round64(uint64_t n)
{
    return (n + 63) / 64 * 64;
}

/* The data ring of the nerve rows' channels: --ring messages of SIZE
 * plus room for alignment, at least 1 MiB, in pages (creation rounds the
 * same way). */
static uint64_t pp_ring(uint64_t size, unsigned ring)
{
    uint64_t ds = (uint64_t)ring * (size + 256);
    if (ds < (1u << 20)) {
        ds = 1u << 20;
    }
    return (ds + 4095) / 4096 * 4096;
}

static size_t xfer_region(uint64_t size, unsigned ring)
{
    return (size_t)((pp_ring(size, ring) + size + 4095) / 4096 * 4096);
}

static size_t xfer_len(uint64_t size, unsigned ring)
{
    return 4096 + 2 * xfer_region(size, ring);
}

static unsigned char *xfer_at(struct pp_proc *p, int a2b, uint64_t k)
{
    uint64_t size = p->row->size;
    uint64_t off = k * round64(size) % pp_ring(size, p->o->ring);
    return p->shm + 4096 + (a2b ? 0 : xfer_region(size, p->o->ring)) + off;
}

static void xfer_await(struct pp_proc *p, uint64_t v)
{
    _Atomic uint64_t *w = (_Atomic uint64_t *)p->shm;
    int64_t since = 0;
    unsigned n = 0;
    while (atomic_load_explicit(w, memory_order_acquire) != v) {
        if (++n % 4096 == 0) {
            pp_check(p, &since);
        }
    }
}

static void xfer_ping(struct pp_proc *p, int last)
{
    _Atomic uint64_t *w = (_Atomic uint64_t *)p->shm;
    uint64_t k = p->k++;
    memcpy(xfer_at(p, 1, k), p->buf, p->row->size);
    atomic_store_explicit(w, 2 * k + 1, memory_order_release);
    if (last) {
        return;
    }
    xfer_await(p, 2 * k + 2);
    memcpy(p->buf, xfer_at(p, 0, k), p->row->size);
    __asm__ volatile("" : : "r"(p->buf) : "memory"); /* keep the copy */
}

static int xfer_pong(struct pp_proc *p)
{
    _Atomic uint64_t *w = (_Atomic uint64_t *)p->shm;
    uint64_t k = p->k++;
    xfer_await(p, 2 * k + 1);
    memcpy(p->buf, xfer_at(p, 1, k), p->row->size);
    __asm__ volatile("" : : "r"(p->buf) : "memory");
    if (pp_stopping(p)) {
        return 0;
    }
    memcpy(xfer_at(p, 0, k), p->buf, p->row->size);
    atomic_store_explicit(w, 2 * k + 2, memory_order_release);
    return 1;
}

/* A payload buffer of SIZE, 64-byte aligned (the alignment of nerve's ring
 * positions, so that no row's copy is misaligned against the other's),
 * written once so that its pages exist. */
static unsigned char *pp_buf(uint64_t size, int fill)
{
    void *b = NULL;
    size_t len = (size_t)round64(size ? size : 1);
    if (posix_memalign(&b, PP_BUF_ALIGN, len) != 0) {
        return NULL;
    }
    memset(b, fill, len);
    return b;
}

/* nerve */
static void nerve_send(struct pp_proc *p)
{
    const struct pp_row *r = p->row;
    int rc;
    if (r->copy) {
        rc = nerve_chan_put(p->out, p->buf, r->size, 1000000000, NULL, 0);
        if (rc != 0) {
            pp_fail(p, "nerve_chan_put: %s", nerve_strerror(rc));
        }
        return;
    }
    void *dst;
    rc = nerve_chan_reserve(p->out, r->size, 1000000000, &dst, 0);
    if (rc != 0) {
        pp_fail(p, "nerve_chan_reserve: %s", nerve_strerror(rc));
    }
    /* Zero-copy: the payload is not touched. */
    rc = nerve_chan_commit(p->out, r->size, NULL);
    if (rc != 0) {
        pp_fail(p, "nerve_chan_commit: %s", nerve_strerror(rc));
    }
}

static void nerve_recv(struct pp_proc *p)
{
    const struct pp_row *r = p->row;
    uint32_t flags = NERVE_GET_NEXT | (r->wait ? NERVE_F_WAIT : 0);
    int64_t timeout = r->wait ? PP_SLICE_NS : 0;
    int64_t since = 0;
    unsigned n = 0;
    for (;;) {
        struct nerve_get_info info;
        struct nerve_view v;
        int rc;
        if (r->copy) {
            rc = nerve_chan_get(p->in, p->buf, r->size, 0, timeout, &info,
                                flags);
        } else {
            rc = nerve_chan_view(p->in, 0, timeout, &v, flags);
            info = v.info;
        }
        if (rc == 0) {
            if (info.len != r->size || info.missed != 0) {
                pp_fail(p,
                        "message %" PRIu64 ": %" PRIu64 " bytes, %" PRIu64
                        " missed (want %" PRIu64 ", 0)",
                        info.seq, info.len, info.missed, r->size);
            }
            if (!r->copy && (rc = nerve_chan_view_check(p->in, &v)) != 0) {
                pp_fail(p, "nerve_chan_view_check: %s", nerve_strerror(rc));
            }
            return;
        }
        if (rc != NERVE_EAGAIN && rc != NERVE_ETIMEDOUT) {
            pp_fail(p, "%s: %s", r->copy ? "nerve_chan_get" : "nerve_chan_view",
                    nerve_strerror(rc));
        }
        if (r->wait || ++n % 4096 == 0) {
            pp_check(p, &since);
        }
    }
}

static void nerve_ping(struct pp_proc *p, int last)
{
    nerve_send(p);
    if (!last) {
        nerve_recv(p);
    }
}

static int nerve_pong(struct pp_proc *p)
{
    nerve_recv(p);
    if (pp_stopping(p)) {
        return 0;
    }
    nerve_send(p);
    return 1;
}

static void nerve_open_pair(struct pp_proc *p)
{
    const char *out = p->ping ? p->name_a2b : p->name_b2a;
    const char *in = p->ping ? p->name_b2a : p->name_a2b;
    int rc = nerve_chan_open(out, NERVE_O_WRITE, &p->out);
    if (rc == 0) {
        rc = nerve_chan_open(in, NERVE_O_READ, &p->in);
    }
    if (rc != 0) {
        pp_fail(p, "nerve_chan_open: %s", nerve_strerror(rc));
    }
    struct nerve_stats st;
    rc = nerve_chan_stat(p->in, &st);
    if (rc != 0) {
        pp_fail(p, "nerve_chan_stat: %s", nerve_strerror(rc));
    }
    nerve_chan_seek(p->in, st.head_seq); /* after the warm-up messages */
    p->buf = pp_buf(p->row->size, 0x5a);
    if (p->buf == NULL) {
        pp_fail(p, "out of memory");
    }
}

static void pp_round_trip(struct pp_proc *p, int last)
{
    switch (p->row->kind) {
    case PP_SPIN: spin_ping(p, last); break;
    case PP_LINES: lines_ping(p, last); break;
    case PP_FUTEX: futex_ping(p, last); break;
    case PP_XFER: xfer_ping(p, last); break;
    default: nerve_ping(p, last); break;
    }
}

static int pp_serve(struct pp_proc *p)
{
    switch (p->row->kind) {
    case PP_SPIN: return spin_pong(p);
    case PP_LINES: return lines_pong(p);
    case PP_FUTEX: return futex_pong(p);
    case PP_XFER: return xfer_pong(p);
    default: return nerve_pong(p);
    }
}

/* Ping's timed loop: warm-up, then one clock read per round trip. */
static void ping_main(struct pp_proc *p)
{
    for (uint64_t i = 0; i < p->row->warmup; i++) {
        pp_round_trip(p, 0);
    }
    int64_t limit = (int64_t)(p->duration * 1e9);
    int64_t t0 = bench_now(), prev = t0;
    uint64_t n = 0;
    while (n < p->cap) {
        pp_round_trip(p, 0);
        int64_t now = bench_now();
        int64_t d = now - prev;
        p->samples[n++] = d > UINT32_MAX ? UINT32_MAX : (uint32_t)d;
        prev = now;
        if (p->o->iterations == 0 && now - t0 >= limit) {
            break;
        }
    }
    p->ctl->total_ns = (uint64_t)(prev - t0);
    p->ctl->warmup = p->row->warmup;
    /* The last message tells pong to stop; it does not answer it. */
    atomic_store_explicit(&p->ctl->stop, 1, memory_order_release);
    pp_round_trip(p, 1);
    atomic_store_explicit(&p->ctl->iterations, n, memory_order_release);
}

/* The copy floor, in one process on CPU A: batches of `per` copies. */
static void memcpy_main(struct pp_proc *p)
{
    uint64_t size = p->row->size;
    unsigned per = p->row->per;
    unsigned char *a = pp_buf(size, 1), *b = pp_buf(size, 2);
    if (a == NULL || b == NULL) {
        pp_fail(p, "out of memory");
    }
    for (uint64_t i = 0; i < p->row->warmup; i++) {
        memcpy(b, a, size);
        __asm__ volatile("" : : "r"(b) : "memory");
    }
    int64_t limit = (int64_t)(p->duration * 1e9);
    int64_t t0 = bench_now(), prev = t0;
    uint64_t n = 0;
    while (n < p->cap) {
        for (unsigned j = 0; j < per; j++) {
            memcpy(b, a, size);
            __asm__ volatile("" : : "r"(b) : "memory"); /* keep each copy */
        }
        int64_t now = bench_now();
        int64_t d = now - prev;
        p->samples[n++] = d > UINT32_MAX ? UINT32_MAX : (uint32_t)d;
        prev = now;
        a[n % size] ^= 1;
        if (p->o->iterations == 0 && now - t0 >= limit) {
            break;
        }
    }
    p->ctl->total_ns = (uint64_t)(prev - t0);
    p->ctl->warmup = p->row->warmup;
    atomic_store_explicit(&p->ctl->iterations, n, memory_order_release);
    free(a);
    free(b);
}

static void child_main(struct pp_proc *p, int cpu)
{
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    if (cpu >= 0) {
        cpu_set_t set;
        CPU_ZERO(&set);
        CPU_SET(cpu, &set);
        if (sched_setaffinity(0, sizeof set, &set) != 0) {
            pp_fail(p, "sched_setaffinity(cpu %d): %s", cpu, strerror(errno));
        }
    }
    if (p->o->fifo > 0) {
        struct sched_param sp = {.sched_priority = p->o->fifo};
        if (sched_setscheduler(0, SCHED_FIFO, &sp) != 0) {
            /* reported by the parent's own probe */
        }
        if (mlockall(MCL_CURRENT | MCL_FUTURE) != 0) {
            /* best effort */
        }
    }
    /* Fault in the sample array this process writes. */
    if (p->ping) {
        memset(p->samples, 0, p->cap * sizeof *p->samples);
    }
    if (p->row->kind == PP_MEMCPY) {
        memcpy_main(p);
        _exit(0);
    }
    if (p->row->kind == PP_NERVE) {
        nerve_open_pair(p);
    } else if (p->row->kind == PP_XFER) {
        p->buf = pp_buf(p->row->size, 0x5a);
        if (p->buf == NULL) {
            pp_fail(p, "out of memory");
        }
    }
    pp_handshake(p);
    if (p->ping) {
        ping_main(p);
    } else {
        while (pp_serve(p)) {
        }
    }
    if (p->row->kind == PP_NERVE) {
        nerve_chan_close(p->out);
        nerve_chan_close(p->in);
    }
    free(p->buf);
    _exit(0);
}

/* ---- parent ------------------------------------------------------------------ */

static int make_channel(const char *name, uint64_t size, unsigned ring,
                        char *err, size_t len)
{
    struct nerve_chan_opts co = NERVE_CHAN_OPTS_INIT;
    co.slots = 1024;
    co.data_size = pp_ring(size, ring);
    co.mode = 0600;
    int rc = nerve_chan_unlink(name);
    (void)rc; /* a leftover of a killed run, if any */
    rc = nerve_chan_create(name, &co);
    nerve_chan *c = NULL;
    if (rc == 0) {
        rc = nerve_chan_open(name, NERVE_O_WRITE, &c);
    }
    if (rc != 0) {
        snprintf(err, len, "%s: %s", name, nerve_strerror(rc));
        return -1;
    }
    /* Write the ring once around, as a channel in service has been: the
     * first write of each page of a fresh file allocates it. */
    void *warm = calloc(1, size ? size : 1);
    uint64_t n = co.data_size / (size ? size : 1) + 2;
    n = n < co.slots + 2 ? co.slots + 2 : n;
    for (uint64_t i = 0; i < n && rc == 0 && warm; i++) {
        rc = nerve_chan_put(c, warm, size, NERVE_FOREVER, NULL, 0);
    }
    free(warm);
    nerve_chan_close(c);
    if (rc != 0 || warm == NULL) {
        snprintf(err, len, "%s: warm-up: %s", name,
                 warm ? nerve_strerror(rc) : "out of memory");
        return -1;
    }
    return 0;
}

static int reap_all(pid_t *pids, unsigned n, struct pp_ctl *ctl,
                    int64_t deadline)
{
    int bad = 0;
    for (unsigned i = 0; i < n; i++) {
        if (pids[i] <= 0) {
            continue;
        }
        int st;
        for (;;) {
            pid_t w = waitpid(pids[i], &st, WNOHANG);
            if (w == pids[i]) {
                break;
            }
            int give_up = (w < 0 && errno != EINTR) || pp_stop ||
                          bench_now() > deadline || atomic_load(&ctl->failed);
            if (give_up && !(atomic_load(&ctl->failed) && i == 0)) {
                kill(pids[i], SIGKILL);
                while (waitpid(pids[i], &st, 0) < 0 && errno == EINTR) {
                }
                if (!atomic_load(&ctl->failed)) {
                    snprintf(ctl->error, sizeof ctl->error, "%s",
                             pp_stop ? "interrupted"
                                     : "a process did not finish in time");
                }
                bad = 1;
                break;
            }
            struct timespec ts = {0, 1000000};
            nanosleep(&ts, NULL);
        }
        pids[i] = 0;
        if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
            bad = 1;
        }
    }
    return bad ? -1 : 0;
}

/* What a row's children share besides the control block: the floors'
 * mapping (*shm_len bytes), or the nerve rows' two channels. 0, or -1
 * with the row's error set. */
static int row_acquire(const struct pp_opts *o, struct pp_row *r,
                       struct pp_proc *p, size_t *shm_len)
{
    char err[256] = "";
    int flags = MAP_SHARED | MAP_ANONYMOUS;
    if (r->kind == PP_SPIN || r->kind == PP_FUTEX || r->kind == PP_LINES) {
        *shm_len = 2 * ((size_t)r->lines * PP_LINE_STRIDE + 8192);
    } else if (r->kind == PP_XFER) {
        /* Populated and written once around, as the nerve rows' rings. */
        *shm_len = xfer_len(r->size, o->ring);
        flags |= MAP_POPULATE;
    } else if (r->kind == PP_NERVE) {
        snprintf(p->name_a2b, sizeof p->name_a2b, "%s-%ld-pp-a2b", o->prefix,
                 (long)getpid());
        snprintf(p->name_b2a, sizeof p->name_b2a, "%s-%ld-pp-b2a", o->prefix,
                 (long)getpid());
        if (make_channel(p->name_a2b, r->size, o->ring, err, sizeof err) != 0 ||
            make_channel(p->name_b2a, r->size, o->ring, err, sizeof err) != 0) {
            snprintf(r->error, sizeof r->error, "%s", err);
            int rc = nerve_chan_unlink(p->name_a2b);
            rc = nerve_chan_unlink(p->name_b2a);
            (void)rc;
            return -1;
        }
    }
    if (*shm_len == 0) {
        return 0;
    }
    p->shm = mmap(NULL, *shm_len, PROT_READ | PROT_WRITE, flags, -1, 0);
    if (p->shm == MAP_FAILED) {
        p->shm = NULL;
        snprintf(r->error, sizeof r->error, "mmap: %s", strerror(errno));
        return -1;
    }
    if (r->kind == PP_LINES) {
        lines_init(p->shm, r->lines);
    } else if (r->kind == PP_XFER) {
        memset(p->shm, 0, *shm_len);
    }
    return 0;
}

static void row_release(const struct pp_row *r, struct pp_proc *p,
                        size_t shm_len)
{
    if (p->shm != NULL) {
        munmap(p->shm, shm_len);
    }
    if (r->kind == PP_NERVE) {
        int rc = nerve_chan_unlink(p->name_a2b);
        rc = nerve_chan_unlink(p->name_b2a);
        (void)rc;
    }
}

/* Add one round's n samples to the row's pool. */
static void row_pool(struct pp_row *r, const struct pp_proc *p, uint64_t n,
                     unsigned round)
{
    if (r->n + n > r->cap) {
        uint64_t cap = r->n + n + r->cap;
        uint32_t *s = realloc(r->samples, cap * sizeof *s);
        if (s == NULL) {
            snprintf(r->error, sizeof r->error, "out of memory");
            return;
        }
        r->samples = s;
        r->cap = cap;
    }
    memcpy(r->samples + r->n, p->samples, n * sizeof *p->samples);
    r->n += n;
    r->total_ns += p->ctl->total_ns;
    r->warmup = p->ctl->warmup;
    r->round_n[round] = n;
    r->round_hop[round] = (double)p->ctl->total_ns / ((double)r->per * n);
    r->rounds_done = round + 1;
}

static void run_row_round(const struct pp_opts *o, struct pp_row *r,
                          unsigned round, void *map)
{
    struct pp_ctl *ctl = map;
    memset(ctl, 0, sizeof *ctl);
    struct pp_proc p;
    memset(&p, 0, sizeof p);
    p.o = o;
    p.row = r;
    p.ctl = ctl;
    p.samples = (uint32_t *)((unsigned char *)map + PP_SAMPLES_OFF);
    p.cap = o->iterations ? o->iterations : PP_MAX_SAMPLES;
    p.duration = o->duration / o->rounds;
    size_t shm_len = 0;
    if (row_acquire(o, r, &p, &shm_len) != 0) {
        return;
    }
    pid_t pids[2] = {0, 0}; /* ping, pong */
    fflush(NULL);
    if (r->kind != PP_MEMCPY) {
        pids[1] = fork();
        if (pids[1] == 0) {
            p.ping = 0;
            child_main(&p, o->pinned ? o->cpus[1] : -1);
        }
    }
    if (pids[1] >= 0) {
        pids[0] = fork();
        if (pids[0] == 0) {
            p.ping = 1;
            child_main(&p, o->pinned ? o->cpus[0] : -1);
        }
    }
    int64_t deadline = bench_now() + (int64_t)(p.duration * 4e9) +
                       (o->iterations ? 600 : 60) * 1000000000LL;
    int bad = pids[0] < 0 || pids[1] < 0;
    if (bad) {
        snprintf(ctl->error, sizeof ctl->error, "fork: %s", strerror(errno));
        atomic_store(&ctl->failed, 1);
    }
    if (reap_all(pids, 2, ctl, deadline) != 0) {
        bad = 1;
    }
    row_release(r, &p, shm_len);
    uint64_t n = atomic_load(&ctl->iterations);
    if (bad || n == 0) {
        snprintf(r->error, sizeof r->error, "%s",
                 ctl->error[0] ? ctl->error : "a process failed");
        return;
    }
    row_pool(r, &p, n, round);
}

static void summarise(struct pp_row *r)
{
    if (r->error[0] || r->n == 0) {
        return;
    }
    sort_u32(r->samples, r->n);
    double per = r->per;
    r->hop = (double)r->total_ns / (per * (double)r->n);
    r->p50 = pct_sorted(r->samples, r->n, 50) / per;
    r->p99 = pct_sorted(r->samples, r->n, 99) / per;
    r->p999 = pct_sorted(r->samples, r->n, 99.9) / per;
    r->max = r->samples[r->n - 1] / per;
    r->min = r->samples[0] / per;
}

static const char *row_name(const struct pp_row *r, char *buf, size_t len)
{
    switch (r->kind) {
    case PP_SPIN: return "spin";
    case PP_FUTEX: return "futex";
    case PP_MEMCPY: return "memcpy";
    case PP_XFER: return "memcpy-xfer";
    case PP_LINES: snprintf(buf, len, "lines-%u", r->lines); return buf;
    default:
        snprintf(buf, len, "%s-%s", r->wait ? "wait" : "poll",
                 r->copy ? "copy" : "zc");
        return buf;
    }
}

static const struct pp_row *find_row(const struct pp_row *rows, unsigned n,
                                     int kind, int wait, int copy,
                                     uint64_t size)
{
    for (unsigned i = 0; i < n; i++) {
        const struct pp_row *r = &rows[i];
        if (r->kind == kind && !r->error[0] && r->n &&
            (kind != PP_NERVE || (r->wait == wait && r->copy == copy)) &&
            (kind != PP_NERVE && kind != PP_MEMCPY && kind != PP_XFER
                 ? 1
                 : r->size == size)) {
            return r;
        }
    }
    return NULL;
}

/* The floor each row is compared with: spin for polling rows, futex for
 * blocking ones, and for a copying row its zero-copy row plus two copies
 * of the payload (one in, one out); memcpy-xfer against spin plus two
 * copies. A copying row has a second floor: its zero-copy row plus what
 * the copies add to a bare hop between the same two CPUs (memcpy-xfer -
 * spin). */
static void floors(struct pp_row *rows, unsigned n)
{
    const struct pp_row *spin = find_row(rows, n, PP_SPIN, 0, 0, 0);
    for (unsigned i = 0; i < n; i++) {
        struct pp_row *r = &rows[i];
        const struct pp_row *f = NULL, *zc, *mc, *xf;
        r->floor_name = NULL;
        r->xfer_floor_ns = 0;
        if (r->error[0] || r->n == 0) {
            continue;
        }
        switch (r->kind) {
        case PP_SPIN:
        case PP_LINES:
            f = find_row(rows, n, PP_SPIN, 0, 0, 0);
            r->floor_name = "spin";
            break;
        case PP_FUTEX:
            f = r;
            r->floor_name = "futex";
            break;
        case PP_XFER:
            mc = find_row(rows, n, PP_MEMCPY, 0, 0, r->size);
            if (spin && mc) {
                r->floor_ns = spin->hop + 2 * mc->hop;
                r->floor_name = "spin+2memcpy";
            }
            continue;
        case PP_NERVE:
            if (!r->copy) {
                f = find_row(rows, n, r->wait ? PP_FUTEX : PP_SPIN, 0, 0, 0);
                r->floor_name = r->wait ? "futex" : "spin";
                break;
            }
            zc = find_row(rows, n, PP_NERVE, r->wait, 0, r->size);
            mc = find_row(rows, n, PP_MEMCPY, 0, 0, r->size);
            xf = find_row(rows, n, PP_XFER, 0, 0, r->size);
            if (zc && xf && spin) {
                r->xfer_floor_ns = zc->hop + xf->hop - spin->hop;
                /* On a busy machine spin can measure slower than zc +
                 * xfer: the floor is then not physical. The report says
                 * so (no ratio) rather than a test failing on the clock. */
                r->xfer_unphysical = r->xfer_floor_ns <= 0;
            }
            if (zc && mc) {
                r->floor_ns = zc->hop + 2 * mc->hop;
                r->floor_name = "zc+2memcpy";
            } else {
                r->floor_name = NULL;
            }
            continue;
        default: break;
        }
        if (f == NULL) {
            r->floor_name = NULL;
        } else {
            r->floor_ns = f->hop;
        }
    }
}

static void table_header(FILE *f)
{
    fprintf(f, "%-9s %-11s %8s %9s %10s %9s %9s %9s %10s %7s %-12s %s\n",
            "IMPL", "ROW", "SIZE", "ITERS", "HOP(ns)", "P50(ns)", "P99(ns)",
            "P99.9(ns)", "MAX(ns)", "xFLOOR", "FLOOR", "xXFER");
}

static void table_row(FILE *f, const struct pp_row *r)
{
    char name[32], size[24];
    if (r->kind == PP_NERVE || r->kind == PP_MEMCPY || r->kind == PP_XFER) {
        snprintf(size, sizeof size, "%" PRIu64, r->size);
    } else {
        snprintf(size, sizeof size, "-");
    }
    fprintf(f, "%-9s %-11s %8s ", r->kind == PP_NERVE ? "nerve" : "floor",
            row_name(r, name, sizeof name), size);
    if (r->error[0]) {
        fprintf(f, "error: %s\n", r->error);
        return;
    }
    fprintf(f, "%9" PRIu64 " %10.1f %9.1f %9.1f %9.1f %10.1f ", r->n, r->hop,
            r->p50, r->p99, r->p999, r->max);
    if (r->floor_name) {
        fprintf(f, "%7.2f %-12s", r->hop / r->floor_ns, r->floor_name);
    } else {
        fprintf(f, "%7s %-12s", "-", "-");
    }
    if (r->xfer_floor_ns > 0) {
        fprintf(f, " %.2f\n", r->hop / r->xfer_floor_ns);
    } else if (r->xfer_unphysical) {
        fprintf(f, " - (zc + xfer - spin <= 0 this run: noise)\n");
    } else {
        fprintf(f, " -\n");
    }
}

/* The JSON fields that say what a row measured, and how. */
static void json_shape(FILE *f, const struct pp_opts *o, const struct pp_row *r,
                       const char *started)
{
    char name[32];
    fprintf(f, "{\"bench\":\"pingpong\",\"impl\":\"%s\",\"row\":\"%s\"",
            r->kind == PP_NERVE ? "nerve" : "floor",
            row_name(r, name, sizeof name));
    if (r->kind == PP_NERVE) {
        fprintf(f, ",\"mode\":\"%s\",\"copy\":%s", r->wait ? "wait" : "poll",
                r->copy ? "true" : "false");
    } else {
        fprintf(f, ",\"mode\":%s,\"copy\":null",
                r->kind == PP_FUTEX    ? "\"wait\""
                : r->kind == PP_MEMCPY ? "null"
                                       : "\"poll\"");
    }
    if (r->kind == PP_NERVE || r->kind == PP_MEMCPY || r->kind == PP_XFER) {
        fprintf(f, ",\"size\":%" PRIu64, r->size);
    } else {
        fputs(",\"size\":null", f);
    }
    if (r->kind == PP_LINES) {
        fprintf(f, ",\"lines\":%u", r->lines);
    } else {
        fputs(",\"lines\":null", f);
    }
    if (r->kind == PP_NERVE || r->kind == PP_XFER) {
        fprintf(f, ",\"ring_bytes\":%" PRIu64, pp_ring(r->size, o->ring));
    } else {
        fputs(",\"ring_bytes\":null", f);
    }
    fprintf(f, ",\"unit\":\"%s\",\"per_sample\":%u,\"rounds\":%u",
            r->kind == PP_MEMCPY ? "copy" : "hop", r->per, o->rounds);
    fputs(",\"cpus\":", f);
    if (o->pinned) {
        json_str(f, o->cpus_text, strlen(o->cpus_text));
    } else {
        fputs("null", f);
    }
    fprintf(f, ",\"fifo\":%d,\"started\":\"%s\"", o->fifo, started);
}

/* The JSON fields of a row's numbers, and its floors. */
static void json_numbers(FILE *f, const struct pp_row *r)
{
    fprintf(f,
            ",\"iterations\":%" PRIu64 ",\"warmup\":%" PRIu64
            ",\"total_ns\":%" PRIu64 ",\"hop_ns\":%.1f"
            ",\"p50_ns\":%.1f,\"p99_ns\":%.1f,\"p999_ns\":%.1f"
            ",\"max_ns\":%.1f,\"min_ns\":%.1f,\"samples\":%" PRIu64,
            r->n, r->warmup, r->total_ns, r->hop, r->p50, r->p99, r->p999,
            r->max, r->min, r->n);
    fputs(",\"round_iterations\":[", f);
    for (unsigned k = 0; k < r->rounds_done; k++) {
        fprintf(f, "%s%" PRIu64, k ? "," : "", r->round_n[k]);
    }
    fputs("],\"round_hop_ns\":[", f);
    for (unsigned k = 0; k < r->rounds_done; k++) {
        fprintf(f, "%s%.1f", k ? "," : "", r->round_hop[k]);
    }
    fputc(']', f);
    if (r->floor_name) {
        fprintf(f, ",\"floor\":\"%s\",\"floor_ns\":%.1f,\"x_floor\":%.3f",
                r->floor_name, r->floor_ns, r->hop / r->floor_ns);
    } else {
        fputs(",\"floor\":null,\"floor_ns\":null,\"x_floor\":null", f);
    }
    if (r->xfer_floor_ns > 0) {
        fprintf(f, ",\"xfer_floor_ns\":%.1f,\"x_xfer_floor\":%.3f",
                r->xfer_floor_ns, r->hop / r->xfer_floor_ns);
    } else {
        fputs(",\"xfer_floor_ns\":null,\"x_xfer_floor\":null", f);
    }
    if (r->xfer_unphysical) {
        fprintf(f,
                ",\"xfer_floor_note\":\"zc + memcpy-xfer - spin = %.1f "
                "ns <= 0 in this run: measurement noise, no floor\"",
                r->xfer_floor_ns);
    }
}

static void json_row(FILE *f, const struct pp_opts *o, const struct pp_row *r,
                     const struct host *h, const char *started)
{
    json_shape(f, o, r, started);
    if (r->error[0]) {
        fputs(",\"error\":", f);
        json_str(f, r->error, strlen(r->error));
    } else {
        json_numbers(f, r);
    }
    fputs(",\"host\":", f);
    host_json(f, h);
    fputs("}\n", f);
}

unsigned pingpong_row_bits(const char *s, size_t len)
{
    static const struct {
        const char *name;
        unsigned bits;
    } names[] = {
        {"spin", PP_ROW_SPIN},
        {"futex", PP_ROW_FUTEX},
        {"memcpy", PP_ROW_MEMCPY},
        {"memcpy-xfer", PP_ROW_XFER},
        {"poll-zc", PP_ROW_POLL_ZC},
        {"poll-copy", PP_ROW_POLL_COPY},
        {"wait-zc", PP_ROW_WAIT_ZC},
        {"wait-copy", PP_ROW_WAIT_COPY},
        {"floors", PP_ROW_SPIN | PP_ROW_FUTEX | PP_ROW_MEMCPY | PP_ROW_XFER},
        {"nerve",
         PP_ROW_POLL_ZC | PP_ROW_POLL_COPY | PP_ROW_WAIT_ZC | PP_ROW_WAIT_COPY},
    };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        if (strlen(names[i].name) == len &&
            strncmp(names[i].name, s, len) == 0) {
            return names[i].bits;
        }
    }
    return 0;
}

/* The rows of the plan, in the order they run and are reported: the
 * floors, then the nerve rows, each for every size. Returns how many. */
static unsigned plan_rows(const struct pp_opts *o, struct pp_row *rows)
{
    unsigned n = 0;
    memset(rows, 0, PP_MAX_ROWS * sizeof *rows);
    uint64_t warm_poll = o->warmup >= 0 ? (uint64_t)o->warmup : 1000;
    uint64_t warm_wait = o->warmup >= 0 ? (uint64_t)o->warmup : 100;
#define ADD(...)                                                               \
    do {                                                                       \
        if (n < PP_MAX_ROWS) {                                                 \
            rows[n++] = (struct pp_row){__VA_ARGS__};                          \
        }                                                                      \
    } while (0)
    if (o->rows & PP_ROW_SPIN) {
        ADD(.kind = PP_SPIN, .lines = 1, .per = 2, .warmup = warm_poll);
    }
    for (unsigned i = 0; i < o->nlines; i++) {
        ADD(.kind = PP_LINES, .lines = o->lines[i], .per = 2,
            .warmup = warm_poll);
    }
    if (o->rows & PP_ROW_FUTEX) {
        ADD(.kind = PP_FUTEX, .lines = 1, .per = 2, .warmup = warm_wait);
    }
    if (o->rows & PP_ROW_MEMCPY) {
        for (unsigned s = 0; s < o->nsizes; s++) {
            uint64_t size = o->sizes[s];
            unsigned per = size >= 8192 ? 1 : (unsigned)(8192 / size);
            ADD(.kind = PP_MEMCPY, .size = size, .per = per,
                .warmup = warm_poll);
        }
    }
    if (o->rows & PP_ROW_XFER) {
        for (unsigned s = 0; s < o->nsizes; s++) {
            ADD(.kind = PP_XFER, .size = o->sizes[s], .per = 2,
                .warmup = warm_poll);
        }
    }
    static const struct {
        unsigned bit;
        int wait, copy;
    } nr[] = {{PP_ROW_POLL_ZC, 0, 0},
              {PP_ROW_POLL_COPY, 0, 1},
              {PP_ROW_WAIT_ZC, 1, 0},
              {PP_ROW_WAIT_COPY, 1, 1}};
    for (unsigned k = 0; k < 4; k++) {
        if (!(o->rows & nr[k].bit)) {
            continue;
        }
        for (unsigned s = 0; s < o->nsizes; s++) {
            ADD(.kind = PP_NERVE, .wait = nr[k].wait, .copy = nr[k].copy,
                .size = o->sizes[s], .per = 2,
                .warmup = nr[k].wait ? warm_wait : warm_poll);
        }
    }
#undef ADD
    return n;
}

/* Run every row in alternating rounds (Ctrl-C stops). 0, or 1 when the
 * samples' mapping failed. */
static int run_rounds(const struct pp_opts *o, struct pp_row *rows, unsigned n)
{
    size_t map_len = PP_SAMPLES_OFF +
                     (size_t)(o->iterations ? o->iterations : PP_MAX_SAMPLES) *
                         sizeof(uint32_t);
    void *map = mmap(NULL, map_len, PROT_READ | PROT_WRITE,
                     MAP_SHARED | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (map == MAP_FAILED) {
        fprintf(stderr, "nerve bench: mmap: %s\n", strerror(errno));
        return 1;
    }
    struct sigaction sa, old_int, old_term;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = pp_on_signal;
    sigaction(SIGINT, &sa, &old_int);
    sigaction(SIGTERM, &sa, &old_term);
    for (unsigned k = 0; k < o->rounds && !pp_stop; k++) {
        for (unsigned i = 0; i < n && !pp_stop; i++) {
            if (rows[i].error[0] == '\0') {
                run_row_round(o, &rows[i], k, map);
            }
        }
    }
    munmap(map, map_len);
    sigaction(SIGINT, &old_int, NULL);
    sigaction(SIGTERM, &old_term, NULL);
    return 0;
}

/* Summaries, floors, table and JSON lines of the rows; 1 when a row
 * failed, else 0. */
static int report(const struct pp_opts *o, const struct host *h,
                  struct pp_row *rows, unsigned n, const char *started)
{
    int status = 0;
    for (unsigned i = 0; i < n; i++) {
        if (pp_stop && rows[i].error[0] == '\0' &&
            rows[i].rounds_done < o->rounds) {
            snprintf(rows[i].error, sizeof rows[i].error, "interrupted");
        }
        summarise(&rows[i]);
        if (rows[i].error[0]) {
            status = 1;
        }
    }
    floors(rows, n);
    if (o->table) {
        table_header(o->table);
        for (unsigned i = 0; i < n; i++) {
            table_row(o->table, &rows[i]);
        }
        fflush(o->table);
    }
    if (o->json) {
        for (unsigned i = 0; i < n; i++) {
            json_row(o->json, o, &rows[i], h, started);
        }
        fflush(o->json);
    }
    return status;
}

int pingpong_run(const struct pp_opts *o, const struct host *h)
{
    static struct pp_row rows[PP_MAX_ROWS];
    unsigned n = plan_rows(o, rows);
    if (n == 0) {
        fprintf(stderr, "nerve bench: --pingpong: no rows selected\n");
        return 2;
    }
    char started[64];
    iso8601_now(started, sizeof started);
    if (run_rounds(o, rows, n) != 0) {
        return 1;
    }
    int status = report(o, h, rows, n, started);
    for (unsigned i = 0; i < n; i++) {
        free(rows[i].samples);
    }
    if (pp_stop) {
        fprintf(stderr, "nerve bench: interrupted\n");
        return 1;
    }
    return status;
}
