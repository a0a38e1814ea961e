/* The one seam for atomics and fences.
 *
 * Every atomic access to shared memory and every fence in nerve goes through
 * these wrappers, so that the memory orders are visible in one place, a
 * model-checking shim or TSan annotations can hook in here, and grep finds
 * them all. Callers name the order in the function (acq, rel, rlx, sc) and
 * write a SYNC(tag) comment at every non-relaxed use (CONTRIBUTING.md §8).
 *
 * Shared atomics must be lock-free: a lock-based atomic would live in
 * process-private memory and would not synchronise across processes. C11
 * only recommends that lock-free atomics be address-free; GCC and Clang on
 * Linux make them so, which is what placing them in a shared mapping relies
 * on. */
#ifndef NERVE_ATOMICS_H
#define NERVE_ATOMICS_H

#include <stdatomic.h>
#include <stdint.h>

_Static_assert(ATOMIC_LLONG_LOCK_FREE == 2, "64-bit atomics must be lock-free");
_Static_assert(ATOMIC_INT_LOCK_FREE == 2, "32-bit atomics must be lock-free");

typedef _Atomic uint64_t nerve__a64;
typedef _Atomic uint32_t nerve__a32;
typedef _Atomic int64_t nerve__ai64;

/* 64-bit loads and stores. */
static inline uint64_t nerve__load_acq(const nerve__a64 *p)
{
    return atomic_load_explicit((nerve__a64 *)p, memory_order_acquire);
}
static inline uint64_t nerve__load_rlx(const nerve__a64 *p)
{
    return atomic_load_explicit((nerve__a64 *)p, memory_order_relaxed);
}
static inline uint64_t nerve__load_sc(const nerve__a64 *p)
{
    return atomic_load_explicit((nerve__a64 *)p, memory_order_seq_cst);
}
static inline void nerve__store_rel(nerve__a64 *p, uint64_t v)
{
    atomic_store_explicit(p, v, memory_order_release);
}
static inline void nerve__store_sc(nerve__a64 *p, uint64_t v)
{
    atomic_store_explicit(p, v, memory_order_seq_cst);
}
static inline void nerve__store_rlx(nerve__a64 *p, uint64_t v)
{
    atomic_store_explicit(p, v, memory_order_relaxed);
}
static inline uint64_t nerve__add_rlx(nerve__a64 *p, uint64_t v)
{
    return atomic_fetch_add_explicit(p, v, memory_order_relaxed);
}

/* Signed 64-bit (times). */
static inline int64_t nerve__loadi_rlx(const nerve__ai64 *p)
{
    return atomic_load_explicit((nerve__ai64 *)p, memory_order_relaxed);
}
static inline void nerve__storei_rlx(nerve__ai64 *p, int64_t v)
{
    atomic_store_explicit(p, v, memory_order_relaxed);
}

/* 32-bit (waiter count, cancel word). */
static inline uint32_t nerve__load32_acq(const nerve__a32 *p)
{
    return atomic_load_explicit((nerve__a32 *)p, memory_order_acquire);
}
static inline uint32_t nerve__load32_rlx(const nerve__a32 *p)
{
    return atomic_load_explicit((nerve__a32 *)p, memory_order_relaxed);
}
static inline void nerve__store32_rel(nerve__a32 *p, uint32_t v)
{
    atomic_store_explicit(p, v, memory_order_release);
}
static inline uint32_t nerve__load32_sc(const nerve__a32 *p)
{
    return atomic_load_explicit((nerve__a32 *)p, memory_order_seq_cst);
}
static inline void nerve__store32_sc(nerve__a32 *p, uint32_t v)
{
    atomic_store_explicit(p, v, memory_order_seq_cst);
}
static inline uint32_t nerve__add32_sc(nerve__a32 *p, uint32_t v)
{
    return atomic_fetch_add_explicit(p, v, memory_order_seq_cst);
}
static inline uint32_t nerve__sub32_sc(nerve__a32 *p, uint32_t v)
{
    return atomic_fetch_sub_explicit(p, v, memory_order_seq_cst);
}

static inline int nerve__cas_rlx(nerve__a64 *p, uint64_t *expect, uint64_t v)
{
    return atomic_compare_exchange_strong_explicit(
        p, expect, v, memory_order_relaxed, memory_order_relaxed);
}

/* The writer lock word (mutex.c). */
static inline int nerve__cas32_acq(nerve__a32 *p, uint32_t *expect, uint32_t v)
{
    return atomic_compare_exchange_strong_explicit(
        p, expect, v, memory_order_acquire, memory_order_relaxed);
}
static inline int nerve__cas32_rel(nerve__a32 *p, uint32_t *expect, uint32_t v)
{
    return atomic_compare_exchange_strong_explicit(
        p, expect, v, memory_order_release, memory_order_relaxed);
}
static inline uint32_t nerve__and32_rel(nerve__a32 *p, uint32_t v)
{
    return atomic_fetch_and_explicit(p, v, memory_order_release);
}
static inline uint32_t nerve__or32_rel(nerve__a32 *p, uint32_t v)
{
    return atomic_fetch_or_explicit(p, v, memory_order_release);
}

/* The bell's wake lease (chan.c SYNC(wait-announce)): raise to at least v. */
static inline void nerve__maxi_sc(nerve__ai64 *p, int64_t v)
{
    int64_t cur = atomic_load_explicit(p, memory_order_relaxed);
    while (cur < v &&
           !atomic_compare_exchange_weak_explicit(
               p, &cur, v, memory_order_seq_cst, memory_order_relaxed))
        ;
    /* Even when no store was needed, the caller's following loads must not
     * move before this point (Dekker with SYNC(wake-check)). */
    atomic_thread_fence(memory_order_seq_cst);
}
static inline int64_t nerve__loadi_sc(const nerve__ai64 *p)
{
    return atomic_load_explicit((nerve__ai64 *)p, memory_order_seq_cst);
}

/* Fences. */
static inline void nerve__fence_acq(void)
{
    atomic_thread_fence(memory_order_acquire);
}
static inline void nerve__fence_rel(void)
{
    atomic_thread_fence(memory_order_release);
}
static inline void nerve__fence_sc(void)
{
    atomic_thread_fence(memory_order_seq_cst);
}

/* Copy bytes that a writer may be overwriting at the same time (the
 * seqlock-style read of a message). The copy may be torn; the caller
 * validates afterwards (SYNC(read-validate)) and discards a torn copy. This
 * is the one audited place where such a racy read happens, so it is the
 * place TSan is told to ignore: the race is by design and is resolved by
 * the validation, not by the copy. */
#if defined(NERVE_TSAN)
__attribute__((no_sanitize("thread")))
#endif
static inline void
nerve__racy_copy(void *dst, const void *src, uint64_t n)
{
    const unsigned char *s = src;
    unsigned char *d = dst;
    if (n == 0)
        return; /* dst may be NULL for an empty message */
#if defined(NERVE_TSAN)
    /* TSan intercepts memcpy even inside a no_sanitize function. */
    for (uint64_t i = 0; i < n; i++)
        d[i] = s[i];
#else
    __builtin_memcpy(d, s, n);
#endif
}

/* Writer side of the same race: bytes written into the ring while readers
 * may be copying them. Published later by SYNC(pub-seq). */
#if defined(NERVE_TSAN)
__attribute__((no_sanitize("thread")))
#endif
static inline void
nerve__racy_write(void *dst, const void *src, uint64_t n)
{
#if defined(NERVE_TSAN)
    unsigned char *d = dst;
    const unsigned char *s = src;
    for (uint64_t i = 0; i < n; i++)
        d[i] = s[i];
#else
    __builtin_memcpy(dst, src, n);
#endif
}

#endif
