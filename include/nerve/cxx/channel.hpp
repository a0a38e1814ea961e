// nerve C++ API: the untyped channel handle, time, and read results.
//
// nerve::Channel owns one nerve_chan handle (RAII, move-only) and is what
// the typed Publisher, Reader and Subscriber hold. Everything here is a thin
// inline layer over include/nerve/chan.h: each call states the C function it
// reaches and inherits its thread, blocking, RT and signal classes.
#ifndef NERVE_CXX_CHANNEL_HPP
#define NERVE_CXX_CHANNEL_HPP

#include <nerve/cxx/codec.hpp>
#include <nerve/cxx/result.hpp>
#include <nerve/cxx/c_api.hpp>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <utility>

namespace nerve {

/// Timeouts are std::chrono durations (any unit converts); `forever`
/// waits without bound and a zero or negative duration does not wait.
using Duration = std::chrono::nanoseconds;
inline constexpr Duration forever = Duration::max();

/// The clock of message times: CLOCK_MONOTONIC, as nerve_clock_now_ns().
struct Clock {
    using rep = int64_t;
    using period = std::nano;
    using duration = std::chrono::nanoseconds;
    using time_point = std::chrono::time_point<Clock>;
    static constexpr bool is_steady = true;
    /// Now. RT: safe (vDSO).  Signal: safe.
    static time_point now() noexcept
    {
        return time_point(duration(nerve_clock_now_ns()));
    }
};

namespace detail {

// A C timeout from a duration: NERVE_FOREVER for `forever`, 0 for
// anything not positive.
constexpr int64_t timeout_ns(Duration d) noexcept
{
    return d == forever ? NERVE_FOREVER : d.count() < 0 ? 0 : d.count();
}

// A NUL-terminated copy of a channel name in caller storage, so that no
// call allocates for a name. Returns 0 or NERVE_ENAMETOOLONG.
struct cname {
    char buf[NERVE_NAME_MAX + 1];
    int rc = 0;
    explicit cname(std::string_view n) noexcept
    {
        if (n.size() > NERVE_NAME_MAX) {
            rc = NERVE_ENAMETOOLONG;
            buf[0] = '\0';
            return;
        }
        std::memcpy(buf, n.data(), n.size());
        buf[n.size()] = '\0';
    }
};

} // namespace detail

/// What a put did: the C struct nerve_put_info (seq, time_ns, recovered),
/// which the C call fills in place (no copy on the hot path).
struct PublishInfo : nerve_put_info {
    PublishInfo() noexcept : nerve_put_info{}
    {
    }
    /// The commit time as a nerve::Clock time point.
    Clock::time_point time() const noexcept
    {
        return Clock::time_point(Duration(time_ns));
    }
};

/// What a read delivered: the C struct nerve_get_info (seq, missed,
/// time_ns, len), filled in place by the C call.
struct MsgInfo : nerve_get_info {
    MsgInfo() noexcept : nerve_get_info{}
    {
    }
    /// The commit time as a nerve::Clock time point.
    Clock::time_point time() const noexcept
    {
        return Clock::time_point(Duration(time_ns));
    }
};

template <class T> class Reader;

/// What a read did, the first thing a caller looks at.
enum class ReadStatus : uint8_t {
    data,        ///< a message (or count() messages) was delivered
    nothing_new, ///< nothing after the cursor (or no such seq / time yet)
    timeout,     ///< waited the whole timeout
    cancelled,   ///< the handle was cancelled (cancel() / Node::stop())
    error,       ///< see code(): ECORRUPT, EDECODE, EOVERWRITTEN, ...
};

/// The outcome of a Reader call; never thrown. `if (r)` is true when data
/// was delivered. Side facts come with it: the number of messages missed
/// (overwritten before this reader got to them), the last message's
/// sequence number and time, and for batch reads the count. It holds the
/// C status and info as they came; status() is derived on demand, so
/// building one on the hot path costs no more than the C call's outputs.
class [[nodiscard]] ReadResult {
public:
    ReadResult() noexcept = default;
    /// From a C status (0 or negative) and the info of the (last) message
    /// delivered.
    ReadResult(int rc, const MsgInfo &info, size_t count) noexcept
        : code_(rc > 0 ? 0 : rc), count_(count), info_(info)
    {
    }

    ReadStatus status() const noexcept
    {
        switch (code_) {
        case 0: return ReadStatus::data;
        case NERVE_EAGAIN: return ReadStatus::nothing_new;
        case NERVE_ETIMEDOUT: return ReadStatus::timeout;
        case NERVE_ECANCELED: return ReadStatus::cancelled;
        default: return ReadStatus::error;
        }
    }
    explicit operator bool() const noexcept
    {
        return code_ == 0;
    }
    bool has_data() const noexcept
    {
        return code_ == 0;
    }
    bool nothing_new() const noexcept
    {
        return code_ == NERVE_EAGAIN;
    }
    bool timed_out() const noexcept
    {
        return code_ == NERVE_ETIMEDOUT;
    }
    bool cancelled() const noexcept
    {
        return code_ == NERVE_ECANCELED;
    }
    /// The channel file failed validation (NERVE_ECORRUPT).
    bool corrupt() const noexcept
    {
        return code_ == NERVE_ECORRUPT;
    }
    /// A message did not decode as T (wrong size or malformed;
    /// NERVE_EDECODE). The message was consumed and counted as missed.
    bool decode_failed() const noexcept
    {
        return code_ == NERVE_EDECODE;
    }
    /// 0 on data, else the NERVE_E* code (EAGAIN, ETIMEDOUT, ...).
    int code() const noexcept
    {
        return code_;
    }
    const char *name() const noexcept
    {
        return nerve_err_name(code_);
    }
    const char *message() const noexcept
    {
        return nerve_strerror(code_);
    }

    /// Messages missed before the delivered ones (summed over a batch).
    uint64_t missed() const noexcept
    {
        return info_.missed;
    }
    /// Messages delivered: 1 for single reads, the batch size otherwise.
    size_t count() const noexcept
    {
        return count_;
    }
    /// Facts of the (last) delivered message.
    const MsgInfo &info() const noexcept
    {
        return info_;
    }
    uint64_t seq() const noexcept
    {
        return info_.seq;
    }
    int64_t time_ns() const noexcept
    {
        return info_.time_ns;
    }

private:
    template <class> friend class Reader;
    int code_ = NERVE_EAGAIN;
    size_t count_ = 0;
    MsgInfo info_;
};

/// Geometry and permissions of a channel to create. Zero means the
/// library's default (1024 slots, 1 MiB data ring, mode 0644).
struct ChannelOptions {
    uint64_t slots = 0;     ///< index ring entries (messages kept)
    uint64_t data_size = 0; ///< data ring bytes; also the largest message
    uint32_t mode = 0;      ///< permission bits
    /// Reuse an existing channel of equal geometry and metadata instead of
    /// failing with NERVE_EEXIST. Off by default, as in C (no
    /// NERVE_C_EXIST_OK) and Python (exist_ok=False).
    bool exist_ok = false;
};

/// Metadata recorded at creation: type name, encoding and schema.
struct ChannelMeta {
    std::string type;     ///< valid UTF-8 (create: NERVE_EINVAL otherwise)
    std::string encoding; ///< valid UTF-8 (create: NERVE_EINVAL otherwise)
    std::string schema;   ///< any bytes but NUL (may be binary)
};

/// Open for reading only, or for reading and writing.
enum class Access : uint32_t { read = NERVE_O_READ, write = NERVE_O_WRITE };

/// One open channel handle; closes it on destruction. Move-only. The typed
/// classes build on it; use it directly for untyped bytes.
class Channel {
public:
    Channel() noexcept = default;
    /// Adopt a handle from nerve_chan_open().
    explicit Channel(nerve_chan *c) noexcept : c_(c)
    {
    }
    Channel(const Channel &) = delete;
    Channel &operator=(const Channel &) = delete;
    Channel(Channel &&o) noexcept : c_(std::exchange(o.c_, nullptr))
    {
    }
    Channel &operator=(Channel &&o) noexcept
    {
        if (this != &o) {
            nerve_chan_close(c_);
            c_ = std::exchange(o.c_, nullptr);
        }
        return *this;
    }
    /// nerve_chan_close(): RT not safe (munmap).
    ~Channel()
    {
        nerve_chan_close(c_);
    }

    /// Create channel `name` (nerve_chan_create). With o.exist_ok an
    /// existing channel of equal geometry and metadata is reused; other
    /// geometry or metadata gives NERVE_EMISMATCH. Setup phase.
    static Result<void> create(std::string_view name,
                               const ChannelOptions &o = {},
                               const ChannelMeta &meta = {}) noexcept
    {
        detail::clear_detail();
        detail::cname n(name);
        if (n.rc != 0) {
            return fail(n.rc);
        }
        struct nerve_chan_opts co = NERVE_CHAN_OPTS_INIT;
        co.flags = o.exist_ok ? NERVE_C_EXIST_OK : 0u;
        co.slots = o.slots;
        co.data_size = o.data_size;
        co.mode = o.mode;
        co.type = meta.type.empty() ? nullptr : meta.type.c_str();
        co.encoding = meta.encoding.empty() ? nullptr : meta.encoding.c_str();
        co.schema = meta.schema.empty() ? nullptr : meta.schema.data();
        co.schema_len = meta.schema.size();
        return Result<void>::from_status(nerve_chan_create(n.buf, &co));
    }

    /// Open channel `name` (nerve_chan_open). Setup phase.
    static Result<Channel> open(std::string_view name,
                                Access a = Access::read) noexcept
    {
        detail::clear_detail();
        detail::cname n(name);
        if (n.rc != 0) {
            return fail(n.rc);
        }
        nerve_chan *c = nullptr;
        int rc = nerve_chan_open(n.buf, static_cast<uint32_t>(a), &c);
        if (rc < 0) {
            return fail(rc);
        }
        return Channel(c);
    }

    /// Remove channel `name` (nerve_chan_unlink); open handles keep working.
    static Result<void> unlink(std::string_view name) noexcept
    {
        detail::cname n(name);
        if (n.rc != 0) {
            return fail(n.rc);
        }
        return Result<void>::from_status(nerve_chan_unlink(n.buf));
    }

#if NERVE_CXX_EXCEPTIONS
    /// As open(), throwing nerve::Error on failure.
    static Channel open_or_throw(std::string_view name, Access a = Access::read)
    {
        auto r = open(name, a);
        if (!r) {
            detail::raise(
                r.code(),
                ("nerve::Channel::open(" + std::string(name) + ")").c_str());
        }
        return std::move(*r);
    }
#endif

    /// The C handle (still owned by this object), or nullptr when empty.
    nerve_chan *get() const noexcept
    {
        return c_;
    }
    explicit operator bool() const noexcept
    {
        return c_ != nullptr;
    }
    /// Give up ownership of the C handle.
    nerve_chan *release() noexcept
    {
        return std::exchange(c_, nullptr);
    }

    /// The channel name. RT: safe.
    std::string_view name() const noexcept
    {
        return c_ ? std::string_view(nerve_chan_name(c_)) : std::string_view();
    }

    /// A copy of the recorded metadata. Allocates: setup phase.
    Result<ChannelMeta> meta() const
    {
        struct nerve_meta m;
        int rc = nerve_chan_meta(c_, &m);
        if (rc < 0) {
            return fail(rc);
        }
        ChannelMeta out;
        out.type = m.type ? m.type : "";
        out.encoding = m.encoding ? m.encoding : "";
        if (m.schema) {
            out.schema.assign(m.schema, static_cast<size_t>(m.schema_len));
        }
        return out;
    }

    /// Channel facts (nerve_chan_stat). RT: safe.
    Result<struct nerve_stats> stat() const noexcept
    {
        struct nerve_stats st;
        int rc = nerve_chan_stat(c_, &st);
        if (rc < 0) {
            return fail(rc);
        }
        return st;
    }

    /// Wake every wait on this handle with "cancelled", now and until
    /// cancel_clear(). Thread: any.  Signal: safe.
    /// On an empty handle these do nothing (cursor() is 0).
    void cancel() noexcept
    {
        if (c_ != nullptr) {
            nerve_chan_cancel(c_);
        }
    }
    void cancel_clear() noexcept
    {
        if (c_ != nullptr) {
            nerve_chan_cancel_clear(c_);
        }
    }

    /// The read cursor (nerve_chan_cursor / nerve_chan_seek).
    uint64_t cursor() const noexcept
    {
        return c_ != nullptr ? nerve_chan_cursor(c_) : 0;
    }
    void seek(uint64_t seq) noexcept
    {
        if (c_ != nullptr) {
            nerve_chan_seek(c_, seq);
        }
    }

    /// Append a copy of bytes (nerve_chan_put). RT: safe.
    Result<PublishInfo> put(const void *data, size_t len,
                            Duration lock_timeout = forever) noexcept
    {
        PublishInfo pi;
        int rc = nerve_chan_put(c_, data, len, detail::timeout_ns(lock_timeout),
                                &pi, 0);
        if (rc < 0) {
            return fail(rc);
        }
        return pi;
    }

private:
    nerve_chan *c_ = nullptr;
};

namespace detail {

// The metadata a typed channel of T records. Allocates: setup phase.
template <class T> ChannelMeta meta_of()
{
    require_codec<T>();
    return ChannelMeta{Codec<T>::type_name(), std::string(Codec<T>::encoding()),
                       schema_of<T>()};
}

// 0 when the channel's recorded type and encoding are T's, else
// NERVE_EMISMATCH. An untyped channel (no type recorded) is a mismatch
// too: a typed handle only opens channels made for its type. Setup phase.
template <class T> int check_type(const nerve_chan *c)
{
    struct nerve_meta m;
    int rc = nerve_chan_meta(c, &m);
    if (rc < 0) {
        return rc;
    }
    const std::string type = Codec<T>::type_name();
    const std::string_view enc = Codec<T>::encoding();
    if (type != std::string_view(m.type ? m.type : "") ||
        enc != std::string_view(m.encoding ? m.encoding : "")) {
        return set_detail(
            NERVE_EMISMATCH,
            "the channel carries type '" + std::string(m.type ? m.type : "") +
                "' (encoding '" + std::string(m.encoding ? m.encoding : "") +
                "'), not '" + type + "' (encoding '" + std::string(enc) +
                "') (open it with its own type, or use another channel)");
    }
    return 0;
}

// Open `name` with access `a` and check that it carries T.
template <class T> Result<Channel> open_typed(std::string_view name, Access a)
{
    auto ch = Channel::open(name, a);
    if (!ch) {
        return ch;
    }
    int rc = check_type<T>(ch->get());
    if (rc < 0) {
        return fail(rc);
    }
    return ch;
}

inline MsgInfo to_info(const struct nerve_get_info &gi) noexcept
{
    MsgInfo i;
    static_cast<struct nerve_get_info &>(i) = gi;
    return i;
}

// Raise nerve::Error for a failed setup call on channel `name`.
[[noreturn]] inline void raise_on(int code, const char *call,
                                  std::string_view name)
{
    raise(code, (std::string(call) + "(" + std::string(name) + ")").c_str());
}

} // namespace detail

} // namespace nerve

#endif
