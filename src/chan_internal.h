/* What the channel files share: the handle, and the steps of the protocol
 * (chan.c) that opening (chan_open.c) and the tools' reads (chan_info.c)
 * use. Internal: nothing here is part of the ABI. */
#ifndef NERVE_CHAN_INTERNAL_H
#define NERVE_CHAN_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#include "atomics.h"
#include "nerve/chan.h"
#include "shm.h"

#define NERVE__SHM_DIR "/dev/shm/"
#define NERVE__CHAN_PREFIX "nerve."
#define NERVE__BELL_PREFIX "nerve-bell."
/* Open nerve.NAME with `open` (as chan_file_open) and take the handle's
 * shared use lock (chan_life.c, LIFETIME); reopens a file removed while it
 * was being opened. The descriptor or an error. */
typedef int (*nerve__file_opener)(const char *name, int writable,
                                  struct stat *st, char *msg, size_t len);
/* Hold the shared use lock (LIFETIME, chan_life.c) on the channel file fd,
 * as every open handle does: a file being given a name (a growth's
 * successor, GROWTH in chan_open.c) counts as used from then on. */
int nerve__use_hold(int fd);
int nerve__use_open(const char *name, int writable, struct stat *st,
                    nerve__file_opener open, char *msg, size_t len);
/* nerve__chan_open() flag: map the header, metadata and index only (no
 * data ring; ring is NULL), read-only, for nerve_chan_stat_name(). */
#define NERVE__O_HEADER 0x80000000u
/* A read retries this many times when writers overwrite its message. */
#define NERVE__READ_RETRIES 64
/* v rounded up to a multiple of a. */
#define NERVE__ROUND_UP(v, a) (((v) + (a)-1) / (a) * (a))
/* The index ring entry of message seq (seq >= 1). */
#define NERVE__SLOT_OF(c, seq) (&(c)->slots[((seq)-1) % (c)->nslots])

struct nerve_chan {
    unsigned char *base; /* the double mapping */
    struct nerve__shm_hdr *hdr;
    struct nerve__shm_slot *slots;
    unsigned char *ring;          /* data ring; 2 * data_size mapped */
    struct nerve__shm_bell *bell; /* NULL: no bell (fall back to polling) */
    uint64_t nslots, data_size, file_size;
    uint64_t cursor;  /* last seq NEXT/NEWEST returned; at open, just
                         before the oldest message present */
    uint64_t origin;  /* head when the handle opened (0 after a seek):
                         NEWEST counts nothing up to it as missed */
    uint64_t map_len; /* NERVE__O_HEADER: bytes mapped; 0: all,
                                     the data ring twice */
    int fd;
    uint64_t ino, dev; /* the file's identity, for nerve_chan_renamed() */
    int writable;
    int lazy;          /* NERVE_O_LAZY: the mapping is not pre-faulted */
    int wake_always;   /* NERVE__COMPAT_WAKE_ALWAYS, from open */
    nerve__a32 cancel; /* private futex word; 1 = cancelled */
    /* Open reservation (writable handles): */
    int reserved;
    uint32_t res_tid; /* the reserving thread (owns the lock) */
    uint64_t res_seq, res_pos, res_len;
    uint32_t res_recovered;
    /* Metadata copies and the name. */
    char *type, *encoding, *schema;
    uint64_t schema_len;
    char name[NERVE_NAME_MAX + 1];
};

/* The layout of a channel, derived from its geometry (chan_open.c). */
struct nerve__geometry {
    uint64_t nslots, data_size, meta_len, index_off, data_off, file_size;
};

/* One message's slot, read lock-free and checked. */
struct nerve__msg {
    uint64_t seq, off, len;
    int64_t time_ns;
};

/* ---- chan.c: protocol steps ---- */

/* The oldest message that may be readable, given head and tail as loaded
 * (SYNC(pub-seq) acquire, head first): the readable range is [result,
 * head], empty when result > head. Messages older than head - nslots + 1
 * cannot be present (their slots are reused), so a tail below that bound
 * (a foreign write, or a very old load) counts as the bound; and there is
 * no message 0. The one clamp of every reader of the range: locate(),
 * locate_at(), nerve_chan_stat() and a new handle's start. */
static inline uint64_t nerve__readable_from(uint64_t head, uint64_t tail,
                                            uint64_t nslots)
{
    if (head >= nslots && tail < head - nslots + 1)
        tail = head - nslots + 1;
    return tail == 0 ? 1 : tail;
}

/* SYNC(read-validate): whether message seq was intact for everything read
 * before the call (acquire fence, then tail). */
int nerve__still_valid(const nerve_chan *c, uint64_t seq);
/* R2-R3 from the slot: 0, NERVE_EOVERWRITTEN or NERVE_ECORRUPT. */
int nerve__read_slot(const nerve_chan *c, uint64_t seq, struct nerve__msg *m);
/* R2-R3 from the descriptor (SYNC(desc-seq)): 0, NERVE_EOVERWRITTEN,
 * NERVE_ECORRUPT, or NERVE_EAGAIN (not seq's: read the slot). */
int nerve__read_desc(const nerve_chan *c, uint64_t seq, struct nerve__msg *m);
/* The handle's reservation belongs to a thread that no longer exists. */
int nerve__reservation_orphaned(const nerve_chan *c);

/* GROWTH (chan_open.c) steps in the protocol file: take c's writer lock
 * (NERVE_ESUPERSEDED if a grower came first), G3 copy c's messages into a
 * successor, G5 mark c superseded and wake its waiters (lock held), and
 * release the lock. */
int nerve__lock_for_growth(nerve_chan *c, int64_t timeout_ns);
void nerve__grow_copy(const nerve_chan *c, struct nerve__shm_hdr *nh,
                      struct nerve__shm_slot *nsl, uint64_t nslots,
                      unsigned char *nring);
void nerve__supersede(nerve_chan *c);
void nerve__unlock_writer(nerve_chan *c);

/* ---- chan_open.c: files ---- */

/* NERVE__SHM_DIR prefix name into buf. */
void nerve__path_of(char *buf, size_t len, const char *prefix,
                    const char *name);
/* Format into msg (when given) and return code. */
__attribute__((format(printf, 4, 5))) int
nerve__say(char *msg, size_t len, int code, const char *fmt, ...);
/* Validate a header read from a file of st_size bytes (see chan_open.c). */
int nerve__header_check(const struct nerve__shm_hdr *h, uint64_t st_size,
                        struct nerve__geometry *g, char *msg, size_t len);
/* nerve_chan_open() with the reason for a failure in msg. */
int nerve__chan_open(const char *name, uint32_t flags, nerve_chan **out,
                     char *msg, size_t len);
struct stat;
/* The verified bell of channel `name` (file *cst), mapped, or NULL with
 * the reason in msg. */
struct nerve__shm_bell *nerve__bell_map(const char *name,
                                        const struct stat *cst, int writable,
                                        char *msg, size_t len);

#endif
