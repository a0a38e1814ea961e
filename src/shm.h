/* The channel file format: the structures that live in shared memory.
 *
 * This header is the executable half of docs/design/0001-shm-layout.md;
 * change one, change both, and bump NERVE_LAYOUT_VERSION when any byte
 * moves. Shared structures hold fixed-width fields only (no size_t, long,
 * clockid_t or pointers: offsets instead), so that the same file means the
 * same thing to every process that maps it. Every field carries an ownership
 * tag (CONTRIBUTING.md §8):
 *   [const]    written at creation, before the file is visible; never again
 *   [W:lock]   written only by the holder of the writer lock
 *   [R:acq]    read lock-free by readers with acquire order
 *   [R:rlx]    read lock-free by readers, validated afterwards
 *   [stat]     a counter for tools; relaxed, approximate after a crash
 *   [bell]     written by waiting readers (in the bell file)
 *
 * LAYOUT of nerve.NAME (all offsets are multiples of the page size P):
 *
 *   0            +---------------------------------------------+
 *                | header (struct nerve__shm_hdr), one page     |
 *   meta_off     +---------------------------------------------+
 *                | type\0 encoding\0 schema\0, meta_len bytes   |
 *   index_off    +---------------------------------------------+
 *                | index ring: nslots x struct nerve__shm_slot  |
 *   data_off     +---------------------------------------------+
 *                | data ring: data_size bytes                   |
 *   file_size    +---------------------------------------------+
 *
 * In memory the data ring is mapped a second time directly after the first
 * mapping (at base + file_size), so ring position p % data_size followed by
 * up to data_size bytes is always one contiguous range.
 */
#ifndef NERVE_SHM_H
#define NERVE_SHM_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "atomics.h"

/* "NERVECH1" read as a little-endian u64. */
#define NERVE__MAGIC 0x314843455652454eull
/* "NERVEBL1": the bell file. */
#define NERVE__BELL_MAGIC 0x314c42455652454eull
/* Stored as written; reads back differently on a big-endian machine. */
#define NERVE__ABI_ENDIAN 0x01020304u
/* compat_flags bit: writers wake waiters on every put, because readers
 * that may not write the bell (and so cannot announce themselves) wait on
 * the futex too. Older readers may ignore it. */
#define NERVE__COMPAT_WAKE_ALWAYS 0x1ull
/* compat_flags bit: made with NERVE_C_REMOVE_UNUSED; the last user's
 * nerve_chan_remove_unused() or a sweep removes it (chan_life.c). */
#define NERVE__COMPAT_REMOVE_UNUSED 0x2ull
/* The header region is one page of this size on every supported platform
 * (the data ring needs page alignment; the header needs far less). */
#define NERVE__HDR_REGION 4096u
/* Messages start at multiples of this many bytes. */
#define NERVE__MSG_ALIGN 64u
/* Bell file size. */
#define NERVE__BELL_SIZE 4096u

/* Index ring entry, 32 bytes. Message s (s >= 1) lives in entry
 * (s - 1) % nslots. All fields are written by the writer holding the lock
 * after SYNC(tail-inval) and read by readers with relaxed loads that are
 * validated by SYNC(read-validate). */
struct nerve__shm_slot {
    nerve__a64 seq;      /* [W:lock][R:rlx] sequence number of the message */
    nerve__a64 off;      /* [W:lock][R:rlx] absolute data ring position */
    nerve__a64 len;      /* [W:lock][R:rlx] payload bytes, <= data_size */
    nerve__ai64 time_ns; /* [W:lock][R:rlx] commit time, CLOCK_MONOTONIC */
};

/* The writer lock, 128 bytes at header offset 128. */
struct nerve__shm_lock {
    nerve__a32 word; /* PI futex: TID | FUTEX_WAITERS | FUTEX_OWNER_DIED
                             of the owner (mutex.c, THE WORD) */
    uint32_t reserved0;
    uint8_t robust[56]; /* [W:lock] the owner's robust-list entry at
                             word - futex_offset (process-local pointers) */
    nerve__a64 pidns;   /* writers' PID namespace (nsfs inode of
                             /proc/self/ns/pid); 0 until the first writer
                             opens (CAS); changed only by a takeover with
                             no writer handle open (claim.c, WRITERS'
                             NAMESPACE). SYNC(ns-claim) */
    uint8_t reserved1[56];
};
_Static_assert(sizeof(struct nerve__shm_lock) == 128, "layout");
_Static_assert(offsetof(struct nerve__shm_lock, pidns) == 64, "layout");
/* Bytes of the channel file used only as names in the kernel's table of
 * OFD byte-range locks, never read or written (claim.c, WRITERS'
 * NAMESPACE): every writer handle holds a shared lock on CLAIM_BYTE for
 * its life, a takeover an exclusive one; openers take CLAIM_GATE
 * exclusively while they decide. Both lie in the lock's reserved1 bytes
 * (header offset 128 + 72 and + 73). Nothing else may lock a range that
 * covers them. */
#define NERVE__CLAIM_BYTE 200u
#define NERVE__CLAIM_GATE 201u
/* Byte 202 (lock reserved1 + 74), also only a name in the OFD lock table
 * (chan_life.c, LIFETIME): every open handle of any channel holds a shared
 * lock on it for its life; nerve_chan_remove_unused() removes a channel
 * only while it holds it exclusively. */
#define NERVE__USE_BYTE 202u

struct nerve__shm_hdr {
    /* Identity: lets an opener reject a file before trusting anything. */
    uint64_t magic;           /* [const] NERVE__MAGIC, written last */
    uint32_t layout_version;  /* [const] NERVE_LAYOUT_VERSION */
    uint32_t header_size;     /* [const] sizeof(struct nerve__shm_hdr) */
    uint64_t incompat_flags;  /* [const] unknown bit: refuse (EVERSION) */
    uint64_t compat_flags;    /* [const] unknown bit: ignore */
    uint32_t abi_endian;      /* [const] NERVE__ABI_ENDIAN */
    uint32_t abi_mutex_size;  /* [const] sizeof(pthread_mutex_t) */
    uint32_t creator_version; /* [const] NERVE_VERSION_NUMBER */
    uint32_t page_size;       /* [const] page size at creation */

    /* Geometry. */
    uint64_t nslots;       /* [const] index ring entries, >= 1 */
    uint64_t data_size;    /* [const] data ring bytes, multiple of P */
    uint64_t meta_off;     /* [const] = NERVE__HDR_REGION */
    uint64_t meta_len;     /* [const] metadata region bytes, mult. of P */
    uint64_t index_off;    /* [const] = meta_off + meta_len */
    uint64_t data_off;     /* [const] = index_off + index bytes (mult. P) */
    uint64_t file_size;    /* [const] = data_off + data_size */
    uint32_t type_len;     /* [const] bytes of type name, no NUL */
    uint32_t encoding_len; /* [const] bytes of encoding, no NUL */
    uint64_t schema_len;   /* [const] bytes of schema, no NUL */
    int64_t created_ns;    /* [const] CLOCK_REALTIME at creation */

    /* The writer lock: robust, process-shared, priority-inheritance, on a
     * PI futex (src/platform/linux/mutex.c). Files made by nerve 0.x
     * before it initialised a pthread_mutex_t here, whose lock word is the
     * same PI futex word at the same offset, so they stay compatible. */
    union {
        pthread_mutex_t m;        /* abi_mutex_size, kept for the ABI tag */
        struct nerve__shm_lock l; /* see CRASH RECOVERY in chan.c */
        uint8_t pad[128];
    } lock;

    /* Writer-only state, on its own cache line. */
    nerve__a64 wpos;        /* [W:lock] absolute position of the next
                                 message; relaxed (no reader uses it;
                                 atomic so nerve check may read it) */
    nerve__a64 bytes_total; /* [stat] payload bytes committed; on this
                                 writer-only line so that updating it does
                                 not pull the line readers poll */
    uint8_t reserved1[64 - 16];

    /* The ring state readers poll, on its own cache line. */
    nerve__a64 head; /* [W:lock][R:acq] newest committed seq, 0 = none;
                                 its low 32 bits are the futex word.
                                 SYNC(pub-seq) */
    nerve__a64 tail; /* [W:lock][R:acq] oldest valid seq;
                                 > head means none. SYNC(tail-inval) */
    /* The newest message's descriptor (layout version 2): a copy of its
     * slot on the line readers already poll, so that a caught-up reader
     * does not load the slot. A seqlock whose version is the sequence
     * number: D1 desc_seq = 0, release fence; D2 off, len, time_ns; D3
     * desc_seq = s with release; then W6. desc_seq is 0 (a writer is, or
     * died, between D1 and D3), head, or head + 1 (a writer is, or died,
     * between D3 and W6). The slot stays authoritative: a reader that
     * finds desc_seq != the message it wants reads the slot.
     * SYNC(desc-seq) */
    nerve__a64 desc_seq; /* [W:lock][R:acq] seq the fields describe; 0 none */
    nerve__a64 desc_off; /* [W:lock][R:rlx] as slot.off */
    nerve__a64 desc_len; /* [W:lock][R:rlx] as slot.len */
    nerve__ai64 desc_time_ns; /* [W:lock][R:rlx] as slot.time_ns */
    /* GROWTH (chan_open.c): 1 once a writer made a larger successor and
     * renamed it over the channel's name; set after the last commit, and
     * never again cleared. Writers that lock afterwards refuse to commit;
     * readers that have read every message follow the name. On the line
     * readers poll, so looking at it costs no cache line. Zero in files
     * made before it (and older readers ignore it: they stay on the old
     * channel). SYNC(supersede) */
    nerve__a64 superseded; /* [W:lock][R:acq] 0, or 1: superseded */
    uint8_t reserved2[64 - 56];
};

_Static_assert(sizeof(pthread_mutex_t) <= 128, "mutex does not fit its slot");
_Static_assert(offsetof(struct nerve__shm_hdr, layout_version) == 8, "layout");
_Static_assert(offsetof(struct nerve__shm_hdr, nslots) == 48, "layout");
_Static_assert(offsetof(struct nerve__shm_hdr, created_ns) == 120, "layout");
_Static_assert(offsetof(struct nerve__shm_hdr, lock) == 128, "layout");
_Static_assert(offsetof(struct nerve__shm_hdr, wpos) == 256, "layout");
_Static_assert(offsetof(struct nerve__shm_hdr, head) == 320, "layout");
_Static_assert(offsetof(struct nerve__shm_hdr, tail) == 328, "layout");
_Static_assert(offsetof(struct nerve__shm_hdr, bytes_total) == 264, "layout");
_Static_assert(offsetof(struct nerve__shm_hdr, desc_seq) == 336, "layout");
_Static_assert(offsetof(struct nerve__shm_hdr, desc_off) == 344, "layout");
_Static_assert(offsetof(struct nerve__shm_hdr, desc_len) == 352, "layout");
_Static_assert(offsetof(struct nerve__shm_hdr, desc_time_ns) == 360, "layout");
_Static_assert(offsetof(struct nerve__shm_hdr, superseded) == 368, "layout");
_Static_assert(sizeof(struct nerve__shm_hdr) == 384, "layout");
_Static_assert(sizeof(struct nerve__shm_hdr) <= NERVE__HDR_REGION, "layout");
_Static_assert(sizeof(struct nerve__shm_slot) == 32, "layout");
_Static_assert(_Alignof(struct nerve__shm_slot) == 8, "layout");
#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "nerve: the futex word is the low half of head; little-endian only"
#endif

/* The bell file nerve-bell.NAME: the only shared memory a reader writes. */
struct nerve__shm_bell {
    uint64_t magic;   /* [const] NERVE__BELL_MAGIC */
    uint32_t version; /* [const] NERVE_LAYOUT_VERSION */
    uint32_t reserved0;
    nerve__a32 waiters; /* [bell] readers inside a wait; for tools, and
                             for V5 (a woken reader passes the wake on
                             only if more than one batch was inside); a
                             killed reader leaves it raised (harmless) */
    uint32_t reserved1;
    nerve__ai64 wake_until; /* [bell] wake lease: the latest CLOCK_MONOTONIC
                             time until which a registered reader may sleep,
                             plus NERVE__LEASE_GRACE_NS; writers wake only
                             while now < wake_until. SYNC(wait-announce).
                             0 in bells made before it: no lease. */
};
_Static_assert(offsetof(struct nerve__shm_bell, waiters) == 16, "layout");
_Static_assert(offsetof(struct nerve__shm_bell, wake_until) == 24, "layout");

#endif
