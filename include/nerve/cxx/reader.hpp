// nerve C++ API: typed readers.
//
// Reader<T> reads messages of type T from one channel at the times the
// caller chooses (the fuRom (K. Irie, RSJ 2017: shared-memory pub/sub with a ROS-like API) ShmReader): the newest message, every message
// not yet read, the message nearest a time, or a given sequence number.
// Each call returns a nerve::ReadResult that says what happened (data,
// nothing new, timeout, cancelled, or an error such as ECORRUPT) with the
// number of messages missed; none throws on its own (a codec's decode()
// may, e.g. std::bad_alloc from std::string, and is let through).
//
// How a message reaches T:
//   - raw T: nerve_chan_get() copies the message straight into the
//     caller's T: one memcpy, validated by the core before it returns;
//   - codec T: nerve_chan_view() gives the message's bytes in the ring,
//     Codec<T>::decode() builds the T from them, and
//     nerve_chan_view_check() then tells whether a writer overwrote the
//     bytes meanwhile. If it did, the decoded T is discarded, the cursor is
//     put back and the read is retried (at most 4 times, then
//     NERVE_ELAPPED), so a torn message is never delivered.
//
// A message of the wrong size for a raw T, or one that decode() rejects,
// is consumed, counted as missed and reported as NERVE_EDECODE; the
// reader never sticks on it. On any result but data, `out` is unspecified
// if the result is an error and untouched otherwise.
//
// The Reader opens its channel read-only: it needs only read permission
// and can neither block nor corrupt a writer.
#ifndef NERVE_CXX_READER_HPP
#define NERVE_CXX_READER_HPP

#include <nerve/cxx/channel.hpp>
#include <nerve/cxx/codec.hpp>
#include <nerve/cxx/result.hpp>

#include <cstdint>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

namespace nerve {

/// How a wait for a message waits: Reader<T>::set_wait_policy(),
/// SubscribeOptions::wait (Node), and ros1::read_view() through its
/// Reader. Opt-in busy polling for cores given to one reader.
///
/// spin == 0 (the default): a wait blocks at once in the futex wait. No
/// CPU is used while waiting; a put wakes the reader through the kernel,
/// which costs a scheduler wake-up (a few µs on bare metal, 10-30 µs on
/// a VM whose idle vCPU must be woken by the host).
///
/// spin > 0: the wait first polls the ring with non-blocking reads (a few
/// atomic loads each, no system call, a CPU pause hint between tries) for
/// up to `spin` (never past the wait's own timeout), then blocks for the
/// rest of the timeout as above. A message that arrives while polling is
/// taken without any wake-up, and a writer that sees no sleeping reader
/// makes no futex call either. The cost: the reader's thread keeps its
/// core 100% busy for up to `spin` per wait, and only a message that
/// arrives within `spin` of the wait's start benefits, so for a periodic
/// topic choose spin above the period (a core busy-polling all the time,
/// as iceoryx2's and eCAL's busy-polling users do on isolated cores), or
/// use `lead`.
///
/// lead > 0 (with spin > 0; Reader waits and read_view, not Node): for
/// periodic topics. The reader learns the channel's period from the
/// commit times of the messages it reads; a wait that starts more than
/// `lead` before the next message is due first blocks (futex wait: an
/// early message wakes it as usual) until `lead` before it, then polls
/// for up to `spin`, then blocks for the rest. The reader is awake and
/// polling when the message comes, at a CPU cost of about lead + the
/// writer's jitter per message instead of the whole period. Choose lead
/// above the wake-up latency of a timer (tens of µs on a VM) and spin
/// above lead plus the writer's jitter.
///
/// cancel() (sticky) is seen when the spin ends, so it may take up to
/// `spin` to end a wait; Node::stop() is seen at once. On a loaded
/// machine a busy poller loses its core for whole time slices when other
/// threads want it, while a blocked waiter is woken with priority: poll
/// only on cores that are yours.
struct WaitPolicy {
    Duration spin{0};
    Duration lead{0};
};

namespace detail {

// A hint to the CPU that this is a busy-wait loop (lets a sibling
// hyperthread run, saves power); nothing on other architectures.
inline void cpu_relax() noexcept
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__) ||                                                  \
    (defined(__arm__) && defined(__ARM_ARCH) && __ARM_ARCH >= 7)
    __asm__ __volatile__("yield");
#endif
}

} // namespace detail

// The two parts of a WaitPolicy a binding that waits its own way needs
// too (the Python binding keeps one WaitRhythm per handle and spins in
// slices with spin_wait so that signals are seen): public, so that no
// binding reaches into nerve::detail.

/// The spin of a WaitPolicy: call try_once() (a non-blocking read that
/// returns 0 or a NERVE_E* code) until it returns anything but
/// NERVE_EAGAIN, for at most spin_ns and never past *timeout_ns (a C
/// relative timeout; NERVE_FOREVER: none). Returns try_once()'s result,
/// or NERVE_EAGAIN when the time ran out, with *timeout_ns reduced by the
/// time spent so the blocking wait that follows keeps the caller's
/// deadline. Always calls try_once() at least once.
/// Thread: the waiting thread.  Blocking: busy (no system call).  RT: safe.
template <class F>
int spin_wait(F &&try_once, int64_t spin_ns, int64_t *timeout_ns)
{
    const int64_t start = nerve_clock_now_ns();
    int64_t limit = spin_ns;
    if (*timeout_ns != NERVE_FOREVER && *timeout_ns < limit) {
        limit = *timeout_ns;
    }
    for (;;) {
        int rc = try_once();
        if (rc != NERVE_EAGAIN) {
            return rc;
        }
        const int64_t spent = nerve_clock_now_ns() - start;
        if (spent >= limit) {
            if (*timeout_ns != NERVE_FOREVER) {
                *timeout_ns = *timeout_ns > spent ? *timeout_ns - spent : 0;
            }
            return NERVE_EAGAIN;
        }
        detail::cpu_relax();
    }
}

/// What WaitPolicy::lead needs: the commit time and sequence number of
/// the last message read, and the period learnt from them (a moving
/// average over message pairs; 0 until two messages were read). note()
/// each message read.
struct WaitRhythm {
    uint64_t last_seq = 0;
    int64_t last_ns = 0;
    int64_t period_ns = 0;

    void note(const nerve_get_info &i) noexcept
    {
        if (last_seq != 0 && i.seq > last_seq && i.time_ns > last_ns) {
            const int64_t d =
                (i.time_ns - last_ns) / static_cast<int64_t>(i.seq - last_seq);
            period_ns = period_ns > 0 ? (3 * period_ns + d) / 4 : d;
        }
        last_seq = i.seq;
        last_ns = i.time_ns;
    }
};

namespace detail {

// One read under wait policy p: read(timeout_ns, flags) makes one C read
// (get or view) and fills `info`. Without a spin, or without
// NERVE_F_WAIT, or with a zero timeout, that is the only call. Otherwise:
// with a lead and a learnt period, a blocking read until `lead` before
// the next message is due; then the spin; then a blocking read for what
// is left of the timeout. A successful read is noted in `rh`.
template <class Read>
int policy_read(const WaitPolicy &p, WaitRhythm &rh, uint32_t flags,
                int64_t timeout, const nerve_get_info &info, Read &&read)
{
    const int64_t spin = p.spin.count(), lead = p.lead.count();
    int rc = NERVE_EAGAIN;
    if ((flags & NERVE_F_WAIT) && spin > 0 && timeout != 0) {
        if (lead > 0 && rh.period_ns > 0) {
            const int64_t now = nerve_clock_now_ns();
            const int64_t nap = rh.last_ns + rh.period_ns - lead - now;
            if (nap > 0 && (timeout == NERVE_FOREVER || nap < timeout)) {
                rc = read(nap, flags);
                if (rc != NERVE_ETIMEDOUT) {
                    if (rc == 0) {
                        rh.note(info);
                    }
                    return rc;
                }
                rc = NERVE_EAGAIN;
                if (timeout != NERVE_FOREVER) {
                    const int64_t spent = nerve_clock_now_ns() - now;
                    timeout = timeout > spent ? timeout - spent : 0;
                }
            }
        }
        rc = spin_wait([&] { return read(0, flags & ~NERVE_F_WAIT); }, spin,
                       &timeout);
    }
    if (rc == NERVE_EAGAIN) {
        rc = read(timeout, flags);
    }
    if (rc == 0) {
        rh.note(info);
    }
    return rc;
}

// Read one message of T into `out` with the C flags (which message, wait),
// filling `info`. Returns 0 or a NERVE_E* code. RT: safe for raw T and
// for codecs whose decode() does not allocate. The loop bound and the
// seek-back are explained in the file comment.
template <class T>
int read_one(nerve_chan *c, T &out, int64_t arg, int64_t timeout,
             uint32_t flags, MsgInfo &info) noexcept(nothrow_decode<T>)
{
    if (c == nullptr) {
        return NERVE_EBADF; // an empty Reader; the C cursor calls need a handle
    }
    const uint32_t sel = flags & NERVE_GET_MASK;
    const bool moves_cursor = sel == NERVE_GET_NEXT || sel == NERVE_GET_NEWEST;
    if constexpr (is_raw<T>::value) {
        int rc = nerve_chan_get(c, &out, sizeof(T), arg, timeout, &info, flags);
        if (rc == 0) {
            return info.len == sizeof(T) ? 0 : NERVE_EDECODE;
        }
        if (rc != NERVE_EMSGSIZE) {
            return rc;
        }
        // Larger than T. The cursor did not move, but the core said which
        // message it was (info.seq): step over exactly that one, so the
        // next read returns the message after it. Re-reading NEWEST/NEXT
        // here could land on a newer, valid message and drop it unread.
        if (moves_cursor) {
            nerve_chan_seek(c, info.seq);
        } else {
            info.missed = 0;
        }
        return NERVE_EDECODE;
    } else {
        const uint64_t cursor = nerve_chan_cursor(c);
        for (int attempt = 0; attempt < 4; attempt++) {
            struct nerve_view v;
            int rc = nerve_chan_view(c, arg, timeout, &v, flags);
            if (rc < 0) {
                return rc;
            }
            info = to_info(v.info);
            const bool decoded =
                Codec<T>::decode(v.data, static_cast<size_t>(v.info.len), out);
            if (nerve_chan_view_check(c, &v) == 0) {
                return decoded ? 0 : NERVE_EDECODE;
            }
            // Overwritten while decoding: what decode() saw may be torn.
            // Put the cursor back so NEXT returns the oldest message still
            // present (with the missed count) instead of skipping; there
            // is newer data now, so the retry need not wait.
            if (moves_cursor) {
                nerve_chan_seek(c, cursor);
            }
            flags &= ~NERVE_F_WAIT;
            timeout = 0;
        }
        // The cursor is back where it was, so the retry reports the same
        // losses again: report none here, or they would count twice.
        info = MsgInfo{};
        return NERVE_ELAPPED;
    }
}

} // namespace detail

/// Whether get_newest() returns a message this reader already returned.
enum class Repeat : uint8_t {
    no, ///< nothing_new when the newest message was already read
    yes ///< always the newest message (fuRom's get_newest)
};

/// Reads messages of type T from one channel. Move-only; closes its handle
/// on destruction. Thread: one caller per Reader (the cursor lives in it);
/// cancel() from any thread or a signal handler.
template <class T> class Reader {
    static_assert(!std::is_reference_v<T> && !std::is_const_v<T> &&
                      !std::is_volatile_v<T>,
                  "Reader<T> needs a plain object type");

public:
    Reader() noexcept = default;

    /// Open existing channel `name` read-only; NERVE_EMISMATCH when it does
    /// not carry T, NERVE_ENOENT when it does not exist. Setup phase.
    static Result<Reader> open(std::string_view name)
    {
        detail::require_codec<T>();
        auto ch = detail::open_typed<T>(name, Access::read);
        if (!ch) {
            return fail(ch.code());
        }
        return Reader(std::move(*ch));
    }

    /// Open channel `name`, creating it for T with `o` first if it does
    /// not exist (so a reader may start before its writer). An existing
    /// channel is opened whatever its geometry. Setup phase.
    static Result<Reader> open_or_create(std::string_view name,
                                         const ChannelOptions &o = {})
    {
        auto r = open(name);
        if (r || r.code() != NERVE_ENOENT) {
            return r;
        }
        // Another process may create it between the two calls: reuse it.
        ChannelOptions reuse = o;
        reuse.exist_ok = true;
        auto made = Channel::create(name, reuse, detail::meta_of<T>());
        if (!made) {
            return fail(made.code());
        }
        return open(name);
    }

#if NERVE_CXX_EXCEPTIONS
    /// As open() / open_or_create(), throwing nerve::Error on failure.
    static Reader open_or_throw(std::string_view name)
    {
        auto r = open(name);
        if (!r) {
            detail::raise_on(r.code(), "nerve::Reader::open", name);
        }
        return std::move(*r);
    }
    static Reader open_or_create_or_throw(std::string_view name,
                                          const ChannelOptions &o = {})
    {
        auto r = open_or_create(name, o);
        if (!r) {
            detail::raise_on(r.code(), "nerve::Reader::open_or_create", name);
        }
        return std::move(*r);
    }
#endif

    /// The newest message, if this reader has not returned it yet (or with
    /// Repeat::yes, in any case). Moves the cursor to it; missed() counts
    /// the messages skipped. RT: safe (raw T).
    ReadResult
    get_newest(T &out,
               Repeat r = Repeat::no) noexcept(detail::nothrow_decode<T>)
    {
        return one(out, 0, 0,
                   NERVE_GET_NEWEST | (r == Repeat::yes ? NERVE_F_REPEAT : 0u));
    }

    /// As get_newest(), waiting up to `timeout` for a message newer than
    /// the cursor. Blocking: futex wait (after a busy poll, with a
    /// WaitPolicy that spins).
    ReadResult wait_newest(T &out,
                           Duration timeout) noexcept(detail::nothrow_decode<T>)
    {
        return one(out, 0, detail::timeout_ns(timeout),
                   NERVE_GET_NEWEST | NERVE_F_WAIT);
    }

    /// The next message after the cursor (or the oldest still present if
    /// it was overwritten; missed() says how many were lost).
    ReadResult get_next(T &out) noexcept(detail::nothrow_decode<T>)
    {
        return one(out, 0, 0, NERVE_GET_NEXT);
    }
    ReadResult wait_next(T &out,
                         Duration timeout) noexcept(detail::nothrow_decode<T>)
    {
        return one(out, 0, detail::timeout_ns(timeout),
                   NERVE_GET_NEXT | NERVE_F_WAIT);
    }

    /// Every message not yet read, oldest first, into `out` (resized to
    /// count(); its elements are reused, so a vector with capacity does
    /// not allocate). At most one ring's worth (the slot count) per call,
    /// so a fast writer cannot keep it busy forever. count() is the number
    /// read, missed() the total lost to overwriting before them.
    ReadResult read_unread(std::vector<T> &out)
    {
        return drain(out, NERVE_GET_NEXT, 0);
    }

    /// As read_unread(), but when nothing is unread wait up to `timeout`
    /// for a message first (fuRom's wait_unread).
    ReadResult wait_unread(std::vector<T> &out, Duration timeout)
    {
        return drain(out, NERVE_GET_NEXT | NERVE_F_WAIT,
                     detail::timeout_ns(timeout));
    }

    /// The newest message committed at or before `time_ns`
    /// (CLOCK_MONOTONIC): for aligning two sensors. nothing_new when every
    /// message still present is newer. Does not move the cursor; never
    /// waits. RT: safe (raw T; a binary search over the index ring).
    ReadResult
    get_by_timestamp(T &out,
                     int64_t time_ns) noexcept(detail::nothrow_decode<T>)
    {
        return one(out, time_ns, 0, NERVE_GET_AT);
    }
    ReadResult
    get_by_timestamp(T &out,
                     Clock::time_point t) noexcept(detail::nothrow_decode<T>)
    {
        return get_by_timestamp(out, t.time_since_epoch().count());
    }

    /// The message with sequence number `seq`. nothing_new when it is not
    /// yet published; error NERVE_EOVERWRITTEN when it is gone. Does not
    /// move the cursor.
    ReadResult get_seq(T &out, uint64_t seq) noexcept(detail::nothrow_decode<T>)
    {
        return one(out, static_cast<int64_t>(seq), 0, NERVE_GET_SEQ);
    }

    /// The cursor: the last sequence number get_next/get_newest returned.
    uint64_t cursor() const noexcept
    {
        return ch_.cursor();
    }
    /// Set the cursor so the next get_next() returns seq + 1.
    void seek(uint64_t seq) noexcept
    {
        ch_.seek(seq);
    }
    /// Wake every wait on this reader with "cancelled", now and until
    /// cancel_clear(). Thread: any.  Signal: safe.
    void cancel() noexcept
    {
        ch_.cancel();
    }
    void cancel_clear() noexcept
    {
        ch_.cancel_clear();
    }

    /// How wait_newest(), wait_next() and wait_unread() wait (see
    /// WaitPolicy; default: block at once). Setting it forgets nothing
    /// learnt for a lead. Thread: the reading thread.  RT: safe.
    void set_wait_policy(const WaitPolicy &p) noexcept
    {
        wait_ = p;
    }
    const WaitPolicy &get_wait_policy() const noexcept
    {
        return wait_;
    }

    /// For zero-copy reads (ros1::read_view): run read(timeout_ns, flags),
    /// one C read (nerve_chan_view or get on native_handle()) that fills
    /// `info`, under this reader's wait policy, as the typed reads do.
    /// Returns read()'s result. Thread: the reading thread.  Blocking: as
    /// the policy says.  RT: safe when read() is.
    template <class Read>
    int read_with_policy(uint32_t flags, int64_t timeout_ns,
                         const nerve_get_info &info, Read &&read)
    {
        return detail::policy_read(wait_, rhythm_, flags, timeout_ns, info,
                                   std::forward<Read>(read));
    }

    Channel &channel() noexcept
    {
        return ch_;
    }
    std::string_view name() const noexcept
    {
        return ch_.name();
    }
    nerve_chan *native_handle() const noexcept
    {
        return ch_.get();
    }
    explicit operator bool() const noexcept
    {
        return bool(ch_);
    }
    /// Most messages one read_unread() returns (the ring's slot count).
    uint64_t batch_max() const noexcept
    {
        return slots_;
    }

private:
    explicit Reader(Channel &&ch) noexcept : ch_(std::move(ch))
    {
        auto st = ch_.stat();
        slots_ = st && st->slots > 0 ? st->slots : 1024;
    }

    // One message; the C call fills the result's info in place.
    ReadResult one(T &out, int64_t arg, int64_t timeout,
                   uint32_t flags) noexcept(detail::nothrow_decode<T>)
    {
        ReadResult r;
        int rc = read_waiting(out, arg, timeout, flags, r.info_);
        r.code_ = rc;
        r.count_ = rc == 0 ? 1 : 0;
        const uint32_t sel = flags & NERVE_GET_MASK;
        if (rc == NERVE_EDECODE &&
            (sel == NERVE_GET_NEXT || sel == NERVE_GET_NEWEST)) {
            // The bad message was consumed (the cursor went past it) and
            // not delivered. get_seq / get_by_timestamp consume nothing.
            r.info_.missed += 1;
        }
        return r;
    }

    ReadResult drain(std::vector<T> &out, uint32_t first_flags, int64_t timeout)
    {
        size_t n = 0, bad = 0;
        uint64_t missed = 0;
        MsgInfo last, info;
        int stop_rc = NERVE_EAGAIN;
        for (uint64_t i = 0; i < slots_; i++) {
            if (n == out.size()) {
                out.emplace_back();
            }
            const bool first = i == 0;
            int rc = first ? read_waiting(out[n], 0, timeout, first_flags, info)
                           : detail::read_one(ch_.get(), out[n], 0, 0,
                                              NERVE_GET_NEXT, info);
            if (rc == 0) {
                missed += info.missed;
                last = info;
                n++;
            } else if (rc == NERVE_EDECODE) {
                missed += info.missed + 1;
                bad++;
            } else {
                stop_rc = rc;
                break;
            }
        }
        out.erase(out.begin() + static_cast<std::ptrdiff_t>(n), out.end());
        if (n > 0) {
            last.missed = missed;
            return ReadResult(0, last, n);
        }
        info.missed = missed;
        if (bad > 0 &&
            (stop_rc == NERVE_EAGAIN || stop_rc == NERVE_ETIMEDOUT)) {
            stop_rc = NERVE_EDECODE;
        }
        return ReadResult(stop_rc, info, 0);
    }

    // read_one() under the wait policy.
    int read_waiting(T &out, int64_t arg, int64_t timeout, uint32_t flags,
                     MsgInfo &info) noexcept(detail::nothrow_decode<T>)
    {
        return detail::policy_read(
            wait_, rhythm_, flags, timeout, info, [&](int64_t to, uint32_t fl) {
                return detail::read_one(ch_.get(), out, arg, to, fl, info);
            });
    }

    Channel ch_;
    uint64_t slots_ = 1024;
    WaitPolicy wait_;
    WaitRhythm rhythm_;
};

} // namespace nerve

#endif
