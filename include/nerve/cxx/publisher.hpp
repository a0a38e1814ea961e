// nerve C++ API: typed publishers and zero-copy loans.
//
// Publisher<T> writes messages of type T to one channel. publish(msg)
// copies: for a raw (trivially copyable) T it is exactly one
// nerve_chan_put of sizeof(T) bytes; for a codec type it reserves
// Codec<T>::size(msg) bytes in the ring, encodes straight into them and
// commits, so a serialized message is never staged in a second buffer.
//
// Loans write in place. They are typed states over nerve_chan_reserve /
// commit / abort (as iceoryx2's publisher):
//
//   UninitLoan<T>  --write(v) / assume_init()-->  Loan<T>  --publish()-->  done
//
// pub.loan() returns a Result<Loan<T>> (a loan, or the code saying why
// there is none): a value-initialized T for raw
// types, or for a codec with a `view` (std::string, std::vector<E>, a
// LaserScan) a view of a message sized at loan time: pub.loan(n) reserves
// room for n elements. A loan that is destroyed without publish() aborts
// the reservation and publishes nothing. While a loan is open the writer
// lock of the channel is held: fill it and publish promptly, and do not
// call publish() on the same Publisher meanwhile (it returns NERVE_EBUSY).
//
// Every write is RT-safe when the codec's size() and encode() are (the raw
// codec is): no allocation, one copy, a futex call only when the writer
// lock is contended or a reader waits.
#ifndef NERVE_CXX_PUBLISHER_HPP
#define NERVE_CXX_PUBLISHER_HPP

#include <nerve/cxx/channel.hpp>
#include <nerve/cxx/codec.hpp>
#include <nerve/cxx/result.hpp>

#include <cstdint>
#include <cstring>
#include <new>
#include <string_view>
#include <type_traits>
#include <utility>

namespace nerve {

template <class T> class Publisher;

namespace detail {

// What a loan of T exposes: the object itself (as T*) for raw types, the
// codec's view type otherwise.
template <class T, class = void> struct loan_view {
    using type = T *;
};
template <class T>
struct loan_view<T, std::enable_if_t<!is_raw<T>::value && has_view<T>::value>> {
    using type = typename Codec<T>::view;
};

} // namespace detail

/// A reservation in the ring holding a message of type T under
/// construction. Move-only; publish() commits it, destruction without
/// publish() aborts it. Publisher::loan() returns a Result<Loan<T>>, so a
/// Loan always held a reservation; it is empty only once published,
/// discarded or moved from, and publish() on an empty loan returns
/// NERVE_EBADF.
template <class T> class [[nodiscard]] Loan {
    using view_type = typename detail::loan_view<T>::type;
    static constexpr bool raw_view = std::is_pointer_v<view_type>;

public:
    Loan(const Loan &) = delete;
    Loan &operator=(const Loan &) = delete;
    Loan(Loan &&o) noexcept
        : c_(std::exchange(o.c_, nullptr)), v_(o.v_), len_(o.len_),
          data_(o.data_)
    {
    }
    Loan &operator=(Loan &&o) noexcept
    {
        if (this != &o) {
            discard();
            c_ = std::exchange(o.c_, nullptr);
            v_ = o.v_;
            len_ = o.len_;
            data_ = o.data_;
        }
        return *this;
    }
    /// Aborts an unpublished reservation (nothing is published).
    ~Loan()
    {
        discard();
    }

    /// True while the loan holds a reservation.
    bool ok() const noexcept
    {
        return c_ != nullptr;
    }
    explicit operator bool() const noexcept
    {
        return ok();
    }

    /// The message: T& for raw types, the codec's view otherwise (e.g. a
    /// Span<float> for std::vector<float>). Precondition: ok().
    decltype(auto) operator*() noexcept
    {
        if constexpr (raw_view) {
            return *v_;
        } else {
            return (v_);
        }
    }
    auto operator->() noexcept
    {
        if constexpr (raw_view) {
            return v_;
        } else {
            return &v_;
        }
    }
    /// The reserved bytes and their number.
    void *data() const noexcept
    {
        return data_;
    }
    size_t size() const noexcept
    {
        return len_;
    }

    /// Commit the message and release the writer lock. The loan is empty
    /// afterwards. RT: safe (futex wake only when a reader waits).
    Result<PublishInfo> publish() noexcept
    {
        if (!c_) {
            return fail(NERVE_EBADF);
        }
        PublishInfo pi;
        int rc = nerve_chan_commit(c_, len_, &pi);
        if (rc < 0) {
            return fail(rc);
        }
        c_ = nullptr;
        return pi;
    }

    /// Abort the reservation now (also done by the destructor).
    void discard() noexcept
    {
        if (c_) {
            // Only fails when no reservation is open, which ok() rules out.
            (void)nerve_chan_abort(c_);
            c_ = nullptr;
        }
    }

private:
    friend class Publisher<T>;
    template <class> friend class UninitLoan;
    Loan(nerve_chan *c, void *data, view_type v, size_t len) noexcept
        : c_(c), v_(v), len_(len), data_(data)
    {
    }

    nerve_chan *c_ = nullptr;
    view_type v_{};
    size_t len_ = 0;
    void *data_ = nullptr;
};

/// A reservation of sizeof(T) bytes for a raw T that holds no object yet.
/// Give it one with write(v) or, after filling ptr() by other means (a
/// DMA, a GPU copy), assume_init(); either yields the Loan<T> to publish.
template <class T> class [[nodiscard]] UninitLoan {
    static_assert(detail::is_raw<T>::value,
                  "UninitLoan is for trivially copyable (raw) types");
    static_assert(alignof(T) <= 64,
                  "a reservation is only 64-byte aligned: no loans of T "
                  "with alignof(T) > 64 (publish() copies it instead)");

public:
    UninitLoan(const UninitLoan &) = delete;
    UninitLoan &operator=(const UninitLoan &) = delete;
    UninitLoan(UninitLoan &&o) noexcept : l_(std::move(o.l_))
    {
    }
    UninitLoan &operator=(UninitLoan &&o) noexcept
    {
        l_ = std::move(o.l_);
        return *this;
    }

    bool ok() const noexcept
    {
        return l_.ok();
    }
    explicit operator bool() const noexcept
    {
        return ok();
    }

    /// The uninitialized storage (sizeof(T) bytes, 64-byte aligned).
    void *ptr() const noexcept
    {
        return l_.data();
    }

    /// Copy v into the ring; the result is ready to publish.
    Loan<T> write(const T &v) &&noexcept
    {
        if (l_.ok()) {
            std::memcpy(l_.data(), &v, sizeof(T));
        }
        return std::move(l_);
    }
    /// Declare ptr() filled with a valid T.
    Loan<T> assume_init() &&noexcept
    {
        return std::move(l_);
    }

private:
    friend class Publisher<T>;
    explicit UninitLoan(Loan<T> &&l) noexcept : l_(std::move(l))
    {
    }
    Loan<T> l_;
};

/// Writes messages of type T to one channel. Move-only; closes its handle
/// on destruction. A default-constructed Publisher is empty: only
/// assignment and destruction are allowed on it.
template <class T> class Publisher {
    static_assert(!std::is_reference_v<T> && !std::is_const_v<T> &&
                      !std::is_volatile_v<T>,
                  "Publisher<T> needs a plain object type");

public:
    Publisher() noexcept = default;

    /// Create channel `name` for T (recording T's type name, encoding and
    /// schema) and open it for writing. NERVE_EEXIST when it exists, unless
    /// o.exist_ok: then an existing one of equal geometry and metadata is
    /// reused (what a program that restarts wants), and NERVE_EMISMATCH
    /// is the answer when it has another type or geometry. Setup phase
    /// (allocates, system calls).
    static Result<Publisher> create(std::string_view name,
                                    const ChannelOptions &o = {})
    {
        auto made = Channel::create(name, o, detail::meta_of<T>());
        if (!made) {
            return fail(made.code());
        }
        return open(name);
    }

    /// Open existing channel `name` for writing; NERVE_EMISMATCH when it
    /// does not carry T. Setup phase.
    static Result<Publisher> open(std::string_view name)
    {
        detail::require_codec<T>();
        auto ch = detail::open_typed<T>(name, Access::write);
        if (!ch) {
            return fail(ch.code());
        }
        return Publisher(std::move(*ch));
    }

#if NERVE_CXX_EXCEPTIONS
    /// As create() / open(), throwing nerve::Error on failure.
    static Publisher create_or_throw(std::string_view name,
                                     const ChannelOptions &o = {})
    {
        auto r = create(name, o);
        if (!r) {
            detail::raise_on(r.code(), "nerve::Publisher::create", name);
        }
        return std::move(*r);
    }
    static Publisher open_or_throw(std::string_view name)
    {
        auto r = open(name);
        if (!r) {
            detail::raise_on(r.code(), "nerve::Publisher::open", name);
        }
        return std::move(*r);
    }
#endif

    /// Publish a copy of m. Waits for the writer lock at most the lock
    /// timeout (set_lock_timeout(); forever by default). Returns the
    /// message's sequence number and time, or NERVE_ETIMEDOUT,
    /// NERVE_EMSGSIZE (larger than the data ring), NERVE_EBUSY (a loan of
    /// this publisher is open), NERVE_ECORRUPT.
    /// Thread: one caller per Publisher.  RT: safe for raw T.
    Result<PublishInfo> publish(const T &m) noexcept(detail::nothrow_encode<T>)
    {
        return publish(m, lock_timeout_);
    }
    Result<PublishInfo>
    publish(const T &m,
            Duration lock_timeout) noexcept(detail::nothrow_encode<T>)
    {
        PublishInfo pi;
        const int64_t to = detail::timeout_ns(lock_timeout);
        if constexpr (detail::is_raw<T>::value) {
            int rc = nerve_chan_put(ch_.get(), &m, sizeof(T), to, &pi, 0);
            if (rc < 0) {
                return fail(rc);
            }
        } else {
            const size_t n = Codec<T>::size(m);
            void *p = nullptr;
            int rc = nerve_chan_reserve(ch_.get(), n, to, &p, 0);
            if (rc < 0) {
                return fail(rc);
            }
            // Abort the reservation if encode() throws, so the handle
            // does not stay busy.
            struct abort_guard {
                nerve_chan *c;
                ~abort_guard()
                {
                    if (c) {
                        (void)nerve_chan_abort(c);
                    }
                }
            } guard{ch_.get()};
            Codec<T>::encode(m, p, n);
            guard.c = nullptr;
            rc = nerve_chan_commit(ch_.get(), n, &pi);
            if (rc < 0) {
                (void)nerve_chan_abort(ch_.get());
                return fail(rc);
            }
        }
        return pi;
    }

    /// A loan of sizeof(T) uninitialized bytes for a raw T, or the reason
    /// there is none (errors as publish()).
    Result<UninitLoan<T>> loan_uninit() noexcept
    {
        static_assert(detail::is_raw<T>::value,
                      "loan_uninit() is for trivially copyable (raw) types");
        static_assert(alignof(T) <= 64,
                      "a reservation is only 64-byte aligned: no loans of T "
                      "with alignof(T) > 64 (publish() copies it instead)");
        auto l = reserve_raw();
        if (!l) {
            return fail(l.code());
        }
        return UninitLoan<T>(std::move(*l));
    }

    /// A loan holding a value-initialized T in the ring (raw T), or, with
    /// arguments, a loan sized by Codec<T>::loan_size(args...) whose view
    /// Codec<T>::loan_init() prepared (e.g. pub.loan(n) for n elements of
    /// a std::vector<E>); or the reason there is none (errors as publish(),
    /// NERVE_EMSGSIZE when loan_size() overflows).
    template <class... A> Result<Loan<T>> loan(A &&...args) noexcept
    {
        if constexpr (detail::is_raw<T>::value) {
            static_assert(sizeof...(A) == 0,
                          "a loan of a raw type takes no size arguments");
            static_assert(std::is_nothrow_default_constructible_v<T>,
                          "loan() value-initializes T; use loan_uninit()");
            static_assert(alignof(T) <= 64,
                          "a reservation is only 64-byte aligned: no loans "
                          "of T with alignof(T) > 64 (use publish())");
            auto l = reserve_raw();
            if (l) {
                l->v_ = ::new (l->data()) T();
            }
            return l;
        } else {
            static_assert(detail::has_view<T>::value,
                          "nerve::Codec<T> has no view type: no loans for T");
            const size_t n = Codec<T>::loan_size(args...);
            if (n == SIZE_MAX) {
                // loan_size() says the size overflowed: no ring holds it.
                return fail(NERVE_EMSGSIZE);
            }
            void *p = nullptr;
            int rc = nerve_chan_reserve(
                ch_.get(), n, detail::timeout_ns(lock_timeout_), &p, 0);
            if (rc < 0) {
                return fail(rc);
            }
            auto v = Codec<T>::loan_init(p, n, std::forward<A>(args)...);
            return Loan<T>(ch_.get(), p, v, n);
        }
    }

    /// How long publish() and loan() wait for the writer lock.
    void set_lock_timeout(Duration d) noexcept
    {
        lock_timeout_ = d;
    }

    /// The channel handle and name.
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

private:
    explicit Publisher(Channel &&ch) noexcept : ch_(std::move(ch))
    {
    }

    Result<Loan<T>> reserve_raw() noexcept
    {
        void *p = nullptr;
        int rc = nerve_chan_reserve(ch_.get(), sizeof(T),
                                    detail::timeout_ns(lock_timeout_), &p, 0);
        if (rc < 0) {
            return fail(rc);
        }
        return Loan<T>(ch_.get(), p, static_cast<T *>(p), sizeof(T));
    }

    Channel ch_;
    Duration lock_timeout_ = forever;
};

} // namespace nerve

#endif
