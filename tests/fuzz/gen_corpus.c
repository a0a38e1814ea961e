/* Generate the seed corpus of tests/fuzz/corpus/: channel files made with
 * the public API, then damaged in one known way each. The file name is
 * OPEN.CHECK.what: the nerve_err_name() that nerve_chan_open and
 * nerve_chan_check must return for it ("OK" for 0), which replay.c checks.
 *
 *   gen_corpus OUTDIR
 *
 * Run by hand when the layout changes (the corpus is committed); the
 * regression test replays the committed files. */
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <nerve/nerve.h>

#include "shm.h"

static const char *outdir;
static char name[64];

static void die(const char *what, int r)
{
    fprintf(stderr, "gen_corpus: %s: %s\n", what, r ? nerve_strerror(r) : "");
    exit(1);
}

struct file {
    unsigned char *b;
    size_t n;
};

static struct file load(void)
{
    char path[128];
    snprintf(path, sizeof path, "/dev/shm/nerve.%s", name);
    struct file f;
    int fd = open(path, O_RDONLY);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0)
        die("open channel file", 0);
    f.n = (size_t)st.st_size;
    f.b = malloc(f.n + 8192);
    if (!f.b || read(fd, f.b, f.n) != (ssize_t)f.n)
        die("read channel file", 0);
    close(fd);
    return f;
}

static void save(const struct file *f, size_t n, const char *fname)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", outdir, fname);
    FILE *o = fopen(path, "wb");
    if (!o || (n && fwrite(f->b, 1, n, o) != n) || fclose(o) != 0)
        die(path, 0);
}

static void set64(struct file *f, size_t off, uint64_t v)
{
    memcpy(f->b + off, &v, 8);
}

static void set32(struct file *f, size_t off, uint32_t v)
{
    memcpy(f->b + off, &v, 4);
}

static uint64_t get64(const struct file *f, size_t off)
{
    uint64_t v;
    memcpy(&v, f->b + off, 8);
    return v;
}

#define HDR(field) offsetof(struct nerve__shm_hdr, field)

/* Offset of the slot field of message seq. */
static size_t slot_field(const struct file *f, uint64_t seq, size_t field)
{
    uint64_t nslots = get64(f, HDR(nslots));
    return (size_t)(get64(f, HDR(index_off)) +
                    ((seq - 1) % nslots) * sizeof(struct nerve__shm_slot) +
                    field);
}

/* A channel of `slots` x `data`, with `n` messages of sizes from `sizes`
 * (cycled), and optional metadata. */
static struct file make(uint64_t slots, uint64_t data, int n,
                        const size_t *sizes, int nsizes, int meta)
{
    snprintf(name, sizeof name, "nt-%d-gen", (int)getpid());
    struct nerve_chan_opts o = NERVE_CHAN_OPTS_INIT;
    o.slots = slots;
    o.data_size = data;
    if (meta) {
        o.type = "geometry_msgs/msg/Point";
        o.encoding = "cdr";
        o.schema = "float64 x\nfloat64 y\nfloat64 z\n";
        o.schema_len = strlen(o.schema);
    }
    int r = nerve_chan_create(name, &o);
    if (r)
        die("create", r);
    nerve_chan *c;
    r = nerve_chan_open(name, NERVE_O_WRITE, &c);
    if (r)
        die("open", r);
    static unsigned char msg[1 << 16];
    for (int i = 0; i < n; i++) {
        size_t len = sizes[i % nsizes];
        for (size_t k = 0; k < len; k++)
            msg[k] = (unsigned char)(i * 31 + k);
        r = nerve_chan_put(c, msg, len, NERVE_FOREVER, NULL, 0);
        if (r)
            die("put", r);
    }
    nerve_chan_close(c);
    struct file f = load();
    r = nerve_chan_unlink(name);
    if (r)
        die("unlink", r);
    return f;
}

static const size_t small[] = {24, 100, 7, 0, 300};
static const size_t big[] = {1500, 900, 2000, 64, 1};
static const size_t whole[] = {4096};

/* Valid channels. */
static void valid_channels(void)
{
    struct file f;
    f = make(4, 4096, 0, small, 5, 0);
    save(&f, f.n, "OK.OK.empty");
    free(f.b);
    f = make(4, 4096, 3, small, 5, 0);
    save(&f, f.n, "OK.OK.three");
    free(f.b);
    f = make(4, 4096, 11, big, 5, 0);
    save(&f, f.n, "OK.OK.wrapped");
    free(f.b);
    f = make(1, 4096, 5, small, 5, 0);
    save(&f, f.n, "OK.OK.one-slot");
    free(f.b);
    f = make(4, 4096, 2, whole, 1, 0);
    save(&f, f.n, "OK.OK.whole-ring");
    free(f.b);
    f = make(8, 4096, 6, small, 5, 1);
    save(&f, f.n, "OK.OK.metadata");
    free(f.b);
}

/* g back to a copy of f (g->b holds f->n bytes). */
#define FRESH() memcpy(g->b, f->b, f->n)

/* Damaged index or ring state of f, a wrapped channel, written through g:
 * the header is fine, so open works and the check finds the damage. */
static void damaged_state(const struct file *f, struct file *g)
{
    uint64_t head = get64(f, HDR(head)), tail = get64(f, HDR(tail));
    FRESH();
    set64(g, slot_field(g, head, offsetof(struct nerve__shm_slot, seq)),
          head + 4);
    save(g, g->n, "OK.ECORRUPT.slot-seq");
    FRESH();
    set64(g, slot_field(g, head, offsetof(struct nerve__shm_slot, len)),
          1ull << 40);
    save(g, g->n, "OK.ECORRUPT.slot-len");
    FRESH();
    set64(g, slot_field(g, head, offsetof(struct nerve__shm_slot, off)),
          get64(g, slot_field(g, head - 1,
                              offsetof(struct nerve__shm_slot, off))));
    save(g, g->n, "OK.ECORRUPT.overlap");
    FRESH();
    set64(g, slot_field(g, head, offsetof(struct nerve__shm_slot, off)),
          get64(g, slot_field(g, head, offsetof(struct nerve__shm_slot, off))) +
              1);
    save(g, g->n, "OK.ECORRUPT.misaligned");
    FRESH();
    set64(g, slot_field(g, head, offsetof(struct nerve__shm_slot, time_ns)), 1);
    save(g, g->n, "OK.ECORRUPT.time-order");
    FRESH();
    set64(g, HDR(tail), head + 5);
    save(g, g->n, "OK.ECORRUPT.tail-beyond-head");
    FRESH();
    set64(g, HDR(tail), 0);
    save(g, g->n, "OK.ECORRUPT.tail-zero");
    FRESH();
    set64(g, HDR(head), 1ull << 62);
    set64(g, HDR(tail), tail);
    save(g, g->n, "OK.ECORRUPT.head-huge");
    FRESH();
    set64(g, HDR(wpos), 0);
    save(g, g->n, "OK.ECORRUPT.wpos-behind");
    FRESH();
    set64(g, HDR(head), UINT64_MAX);
    set64(g, HDR(tail), UINT64_MAX - 1);
    save(g, g->n, "OK.ECORRUPT.head-max");
    /* The newest message's descriptor on the head line (layout 2). */
    FRESH();
    set64(g, HDR(desc_seq), get64(g, HDR(head)) - 1);
    save(g, g->n, "OK.ECORRUPT.desc-seq");
    FRESH();
    set64(g, HDR(desc_len), get64(g, HDR(desc_len)) + 1);
    save(g, g->n, "OK.ECORRUPT.desc-len");
    FRESH();
    set64(g, HDR(desc_seq), 0);
    save(g, g->n, "OK.OK.desc-cleared");
}

/* Damaged headers of f, written through g: open refuses with the
 * matching error. */
static void damaged_headers(const struct file *f, struct file *g)
{
    FRESH();
    g->b[0] ^= 0xff;
    save(g, g->n, "ENOTCHAN.ENOTCHAN.bad-magic");
    FRESH();
    save(g, 0, "ENOTCHAN.ENOTCHAN.empty-file");
    FRESH();
    set32(g, HDR(layout_version), NERVE_LAYOUT_VERSION + 1);
    save(g, g->n, "EVERSION.EVERSION.layout-version");
    FRESH();
    set32(g, HDR(layout_version), 1);
    save(g, g->n, "EVERSION.EVERSION.layout-version-1");
    FRESH();
    set64(g, HDR(incompat_flags), 1);
    save(g, g->n, "EVERSION.EVERSION.incompat-flag");
    FRESH();
    set32(g, HDR(abi_endian), 0x04030201u);
    save(g, g->n, "EABI.EABI.endian");
    FRESH();
    set32(g, HDR(abi_mutex_size), 4);
    save(g, g->n, "EABI.EABI.mutex-size");
    FRESH();
    save(g, 10000, "ETRUNC.ETRUNC.truncated");
    FRESH();
    save(g, 200, "ETRUNC.ETRUNC.short-header");
    FRESH();
    g->n = f->n + 4096;
    g->b = realloc(g->b, g->n);
    memset(g->b + f->n, 0, 4096);
    save(g, g->n, "ECORRUPT.ECORRUPT.file-longer");
    g->n = f->n;
    FRESH();
    set64(g, HDR(nslots), 4096);
    save(g, g->n, "ECORRUPT.ECORRUPT.geometry");
    FRESH();
    set64(g, HDR(data_size), 0);
    save(g, g->n, "ECORRUPT.ECORRUPT.data-size-zero");
    FRESH();
    set32(g, HDR(type_len), 5000);
    save(g, g->n, "ECORRUPT.ECORRUPT.type-len");
    FRESH();
    set32(g, HDR(header_size), 100);
    save(g, g->n, "ECORRUPT.ECORRUPT.header-size");
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: gen_corpus OUTDIR\n");
        return 2;
    }
    outdir = argv[1];
    valid_channels();
    struct file f = make(4, 4096, 11, big, 5, 0);
    struct file g = {malloc(f.n), f.n};
    damaged_state(&f, &g);
    damaged_headers(&f, &g);
    free(g.b);
    free(f.b);
    return 0;
}
