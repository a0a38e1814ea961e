/* A Cyclone DDS 0.10 sertype whose samples are opaque CDR bytes.
 *
 * Cyclone lets an application supply its own "sertype" (how samples of a
 * type are made from and turned into serialized data) and "serdata" (one
 * serialized sample). rmw_cyclonedds_cpp does the same to carry ROS 2
 * messages serialized by its own code; here the bytes come from a nerve
 * channel and go back into one, so a serdata is just a buffer holding the
 * message exactly as it is on the wire: the 4-byte encapsulation header
 * (00 01 00 00 for CDR little-endian) and the body. Nothing is decoded.
 *
 * ROS 2 topics have no key, so the key-related operations are trivial.
 *
 * Buffers. A serdata is freed by whichever DDS thread drops the last
 * reference (after the last acknowledgement, for a reliable writer), so
 * freed serdatas go to a pool shared by all types (mutex-protected) and
 * are taken back by the next sample: in steady state no sample allocates.
 * A buffer grows (realloc) only for a message larger than any before it
 * in that buffer. The pool keeps at most POOL_MAX serdatas and none above
 * POOL_BIG bytes, so a burst of large messages does not stay resident.
 *
 * Padding. DDSI sends a sample's serialized size rounded up to 4 bytes
 * (the CDR stream is padded; rmw_cyclonedds does the same), so a message
 * whose length is not a multiple of 4 gets zero bytes appended here. CDR
 * readers ignore bytes after the message. */
#include "rawcdr.h"

#include <dds/ddsi/q_radmin.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define POOL_MAX 256
#define POOL_BIG (8u << 20)

struct rawcdr_data {
    struct ddsi_serdata c;
    unsigned char *buf;
    size_t len; /* bytes of the sample, padded to 4 */
    size_t cap; /* bytes allocated at buf */
    struct rawcdr_data *next;
};

static pthread_mutex_t pool_lock = PTHREAD_MUTEX_INITIALIZER;
static struct rawcdr_data *pool;
static unsigned pool_n;

/* A serdata with room for `len` bytes (padded), from the pool when it has
 * one; NULL when out of memory. */
static struct rawcdr_data *data_get(const struct ddsi_sertype *type,
                                    enum ddsi_serdata_kind kind, size_t len)
{
    size_t padded = (len + 3u) & ~(size_t)3u;
    pthread_mutex_lock(&pool_lock);
    struct rawcdr_data *d = pool;
    if (d != NULL) {
        pool = d->next;
        pool_n--;
    }
    pthread_mutex_unlock(&pool_lock);
    if (d == NULL) {
        d = calloc(1, sizeof *d);
        if (d == NULL) {
            return NULL;
        }
    }
    if (d->cap < padded) {
        unsigned char *b = realloc(d->buf, padded);
        if (b == NULL) {
            free(d->buf);
            free(d);
            return NULL;
        }
        d->buf = b;
        d->cap = padded;
    }
    ddsi_serdata_init(&d->c, type, kind);
    d->c.hash = type->serdata_basehash;
    d->len = padded;
    if (padded > len) {
        memset(d->buf + len, 0, padded - len);
    }
    d->next = NULL;
    return d;
}

static void data_free(struct ddsi_serdata *dc)
{
    struct rawcdr_data *d = (struct rawcdr_data *)dc;
    pthread_mutex_lock(&pool_lock);
    if (pool_n < POOL_MAX && d->cap <= POOL_BIG) {
        d->next = pool;
        pool = d;
        pool_n++;
        d = NULL;
    }
    pthread_mutex_unlock(&pool_lock);
    if (d != NULL) {
        free(d->buf);
        free(d);
    }
}

void rawcdr_pool_fini(void)
{
    pthread_mutex_lock(&pool_lock);
    while (pool != NULL) {
        struct rawcdr_data *d = pool;
        pool = d->next;
        free(d->buf);
        free(d);
    }
    pool_n = 0;
    pthread_mutex_unlock(&pool_lock);
}

const void *rawcdr_bytes(const struct ddsi_serdata *dc, size_t *len)
{
    const struct rawcdr_data *d = (const struct rawcdr_data *)dc;
    *len = d->len;
    return d->buf;
}

/* ---- serdata operations ----------------------------------------------- */

static bool data_eqkey(const struct ddsi_serdata *a,
                       const struct ddsi_serdata *b)
{
    (void)a;
    (void)b;
    return true; /* no key: one instance */
}

static uint32_t data_size(const struct ddsi_serdata *dc)
{
    return (uint32_t)((const struct rawcdr_data *)dc)->len;
}

/* A sample as received: the fragments of the DATA(_FRAG) submessages, in
 * order of their byte offsets (they may overlap; copy each byte once). */
static struct ddsi_serdata *data_from_ser(const struct ddsi_sertype *type,
                                          enum ddsi_serdata_kind kind,
                                          const struct nn_rdata *frag,
                                          size_t size)
{
    struct rawcdr_data *d = data_get(type, kind, size);
    if (d == NULL) {
        return NULL;
    }
    uint32_t off = 0;
    for (; frag != NULL; frag = frag->nextfrag) {
        if (frag->maxp1 <= off) {
            continue;
        }
        if (frag->min > off || frag->maxp1 > size) {
            /* A hole or an overrun: never delivered by DDSI, but do not
             * trust it blindly. */
            data_free(&d->c);
            return NULL;
        }
        const unsigned char *p =
            NN_RMSG_PAYLOADOFF(frag->rmsg, NN_RDATA_PAYLOAD_OFF(frag));
        memcpy(d->buf + off, p + (off - frag->min), frag->maxp1 - off);
        off = frag->maxp1;
    }
    if (off != size) {
        data_free(&d->c);
        return NULL;
    }
    return &d->c;
}

static struct ddsi_serdata *data_from_ser_iov(const struct ddsi_sertype *type,
                                              enum ddsi_serdata_kind kind,
                                              ddsrt_msg_iovlen_t niov,
                                              const ddsrt_iovec_t *iov,
                                              size_t size)
{
    struct rawcdr_data *d = data_get(type, kind, size);
    if (d == NULL) {
        return NULL;
    }
    size_t off = 0;
    for (ddsrt_msg_iovlen_t i = 0; i < niov; i++) {
        size_t n = iov[i].iov_len;
        if (n > size - off) {
            n = size - off;
        }
        memcpy(d->buf + off, iov[i].iov_base, n);
        off += n;
    }
    return &d->c;
}

static struct ddsi_serdata *data_from_keyhash(const struct ddsi_sertype *type,
                                              const struct ddsi_keyhash *kh)
{
    (void)kh;
    struct rawcdr_data *d = data_get(type, SDK_KEY, 0);
    return d != NULL ? &d->c : NULL;
}

/* The one copy of the nerve -> DDS path: the channel's bytes (a view into
 * its ring) into the DDS sample; then the view is validated, so a message
 * overwritten meanwhile is never sent. */
static struct ddsi_serdata *data_from_sample(const struct ddsi_sertype *type,
                                             enum ddsi_serdata_kind kind,
                                             const void *sample)
{
    const struct rawcdr_sample *s = sample;
    if (kind != SDK_DATA) {
        struct rawcdr_data *d = data_get(type, kind, 0);
        return d != NULL ? &d->c : NULL;
    }
    struct rawcdr_data *d = data_get(type, kind, s->len);
    if (d == NULL) {
        return NULL;
    }
    memcpy(d->buf, s->data, s->len);
    if (s->check != NULL && s->check(s->check_arg) != 0) {
        if (s->stale != NULL) {
            *s->stale = 1;
        }
        data_free(&d->c);
        return NULL;
    }
    return &d->c;
}

static void data_to_ser(const struct ddsi_serdata *dc, size_t off, size_t sz,
                        void *buf)
{
    const struct rawcdr_data *d = (const struct rawcdr_data *)dc;
    memcpy(buf, d->buf + off, sz);
}

static struct ddsi_serdata *data_to_ser_ref(const struct ddsi_serdata *dc,
                                            size_t off, size_t sz,
                                            ddsrt_iovec_t *ref)
{
    const struct rawcdr_data *d = (const struct rawcdr_data *)dc;
    ref->iov_base = d->buf + off;
    ref->iov_len = (ddsrt_iov_len_t)sz;
    return ddsi_serdata_ref(dc);
}

static void data_to_ser_unref(struct ddsi_serdata *dc, const ddsrt_iovec_t *ref)
{
    (void)ref;
    ddsi_serdata_unref(dc);
}

/* Samples are only taken with dds_takecdr(): there is no typed form. */
static bool data_to_sample(const struct ddsi_serdata *dc, void *sample,
                           void **bufptr, void *buflim)
{
    (void)dc;
    (void)sample;
    (void)bufptr;
    (void)buflim;
    return false;
}

static struct ddsi_serdata *data_to_untyped(const struct ddsi_serdata *dc)
{
    struct rawcdr_data *d = data_get(dc->type, SDK_KEY, 0);
    if (d == NULL) {
        return NULL;
    }
    d->c.type = NULL;
    return &d->c;
}

static bool data_untyped_to_sample(const struct ddsi_sertype *type,
                                   const struct ddsi_serdata *d, void *sample,
                                   void **bufptr, void *buflim)
{
    (void)type;
    (void)d;
    (void)sample;
    (void)bufptr;
    (void)buflim;
    return true; /* no key fields to fill */
}

static size_t data_print(const struct ddsi_sertype *type,
                         const struct ddsi_serdata *dc, char *buf, size_t size)
{
    (void)type;
    int n = snprintf(buf, size, "(%zu CDR bytes)",
                     ((const struct rawcdr_data *)dc)->len);
    return n < 0 ? 0 : (size_t)n;
}

static void data_get_keyhash(const struct ddsi_serdata *d,
                             struct ddsi_keyhash *buf, bool force_md5)
{
    (void)d;
    (void)force_md5;
    memset(buf, 0, sizeof *buf);
}

static const struct ddsi_serdata_ops data_ops = {
    .eqkey = data_eqkey,
    .get_size = data_size,
    .from_ser = data_from_ser,
    .from_ser_iov = data_from_ser_iov,
    .from_keyhash = data_from_keyhash,
    .from_sample = data_from_sample,
    .to_ser = data_to_ser,
    .to_ser_ref = data_to_ser_ref,
    .to_ser_unref = data_to_ser_unref,
    .to_sample = data_to_sample,
    .to_untyped = data_to_untyped,
    .untyped_to_sample = data_untyped_to_sample,
    .free = data_free,
    .print = data_print,
    .get_keyhash = data_get_keyhash,
};

/* ---- sertype operations ----------------------------------------------- */

static void type_free(struct ddsi_sertype *t)
{
    ddsi_sertype_fini(t);
    free(t);
}

static void type_zero_samples(const struct ddsi_sertype *t, void *s, size_t n)
{
    (void)t;
    (void)s;
    (void)n;
}

/* Loans, instance handles and content filters are not used on these
 * topics, so no sample is ever (re)allocated or freed by DDS. */
static void type_realloc_samples(void **ptrs, const struct ddsi_sertype *t,
                                 void *old, size_t oldcount, size_t count)
{
    (void)t;
    (void)old;
    (void)oldcount;
    for (size_t i = 0; i < count; i++) {
        ptrs[i] = NULL;
    }
}

static void type_free_samples(const struct ddsi_sertype *t, void **ptrs,
                              size_t n, dds_free_op_t op)
{
    (void)t;
    (void)ptrs;
    (void)n;
    (void)op;
}

/* Two raw types are equal when their names are (ddsi_sertype_equal has
 * compared the names and operations already). */
static bool type_equal(const struct ddsi_sertype *a,
                       const struct ddsi_sertype *b)
{
    (void)a;
    (void)b;
    return true;
}

static uint32_t type_hash(const struct ddsi_sertype *t)
{
    (void)t;
    return 0x6e657276u;
}

static size_t type_serialized_size(const struct ddsi_sertype *t,
                                   const void *sample)
{
    (void)t;
    return ((const struct rawcdr_sample *)sample)->len;
}

static bool type_serialize_into(const struct ddsi_sertype *t,
                                const void *sample, void *dst, size_t size)
{
    (void)t;
    const struct rawcdr_sample *s = sample;
    if (size < s->len) {
        return false;
    }
    memcpy(dst, s->data, s->len);
    return true;
}

static const struct ddsi_sertype_ops type_ops = {
    .version = ddsi_sertype_v0,
    .arg = NULL,
    .free = type_free,
    .zero_samples = type_zero_samples,
    .realloc_samples = type_realloc_samples,
    .free_samples = type_free_samples,
    .equal = type_equal,
    .hash = type_hash,
    .type_id = NULL,
    .type_map = NULL,
    .type_info = NULL,
    .derive_sertype = NULL,
    .get_serialized_size = type_serialized_size,
    .serialize_into = type_serialize_into,
};

struct ddsi_sertype *rawcdr_type_new(const char *type_name)
{
    struct ddsi_sertype *t = calloc(1, sizeof *t);
    if (t == NULL) {
        return NULL;
    }
    ddsi_sertype_init(t, type_name, &type_ops, &data_ops, true);
    /* ROS 2 messages are plain CDR (XCDR1), as rmw_fastrtps and
     * rmw_cyclonedds send them. */
    t->allowed_data_representation = DDS_DATA_REPRESENTATION_FLAG_XCDR1;
    return t;
}
