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

namespace detail {

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
            const bool decoded = Codec<T>::decode(
                v.data, static_cast<size_t>(v.info.len), out);
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
    ReadResult get_newest(T &out, Repeat r = Repeat::no) noexcept(
        detail::nothrow_decode<T>)
    {
        return one(out, 0, 0,
                   NERVE_GET_NEWEST |
                       (r == Repeat::yes ? NERVE_F_REPEAT : 0u));
    }

    /// As get_newest(), waiting up to `timeout` for a message newer than
    /// the cursor. Blocking: futex wait.
    ReadResult wait_newest(T &out, Duration timeout) noexcept(
        detail::nothrow_decode<T>)
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
    ReadResult wait_next(T &out, Duration timeout) noexcept(
        detail::nothrow_decode<T>)
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
    ReadResult get_by_timestamp(T &out, int64_t time_ns) noexcept(
        detail::nothrow_decode<T>)
    {
        return one(out, time_ns, 0, NERVE_GET_AT);
    }
    ReadResult get_by_timestamp(T &out, Clock::time_point t) noexcept(
        detail::nothrow_decode<T>)
    {
        return get_by_timestamp(out, t.time_since_epoch().count());
    }

    /// The message with sequence number `seq`. nothing_new when it is not
    /// yet published; error NERVE_EOVERWRITTEN when it is gone. Does not
    /// move the cursor.
    ReadResult get_seq(T &out, uint64_t seq) noexcept(
        detail::nothrow_decode<T>)
    {
        return one(out, static_cast<int64_t>(seq), 0, NERVE_GET_SEQ);
    }

    /// The cursor: the last sequence number get_next/get_newest returned.
    uint64_t cursor() const noexcept { return ch_.cursor(); }
    /// Set the cursor so the next get_next() returns seq + 1.
    void seek(uint64_t seq) noexcept { ch_.seek(seq); }
    /// Wake every wait on this reader with "cancelled", now and until
    /// cancel_clear(). Thread: any.  Signal: safe.
    void cancel() noexcept { ch_.cancel(); }
    void cancel_clear() noexcept { ch_.cancel_clear(); }

    Channel &channel() noexcept { return ch_; }
    std::string_view name() const noexcept { return ch_.name(); }
    nerve_chan *native_handle() const noexcept { return ch_.get(); }
    explicit operator bool() const noexcept { return bool(ch_); }
    /// Most messages one read_unread() returns (the ring's slot count).
    uint64_t batch_max() const noexcept { return slots_; }

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
        int rc = detail::read_one(ch_.get(), out, arg, timeout, flags, r.info_);
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

    ReadResult drain(std::vector<T> &out, uint32_t first_flags,
                      int64_t timeout)
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
            int rc = detail::read_one(ch_.get(), out[n], 0,
                                      first ? timeout : 0,
                                      first ? first_flags : NERVE_GET_NEXT,
                                      info);
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
        if (bad > 0 && (stop_rc == NERVE_EAGAIN || stop_rc == NERVE_ETIMEDOUT)) {
            stop_rc = NERVE_EDECODE;
        }
        return ReadResult(stop_rc, info, 0);
    }

    Channel ch_;
    uint64_t slots_ = 1024;
};

} // namespace nerve

#endif
