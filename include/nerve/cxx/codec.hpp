// nerve C++ API: serialization policy (nerve::Codec<T>) and type names.
//
// A channel carries bytes; the C++ layer maps a message type T to those
// bytes through nerve::Codec<T>, a policy class, never through a
// serialization library. Three kinds of T are covered here:
//
//   - trivially copyable types (the common case for control loops): the
//     message is the object's bytes, encoding "raw", and the typed calls go
//     straight to nerve_chan_put / nerve_chan_get with no extra copy;
//   - std::string and std::vector<E> (E trivially copyable): the message is
//     the characters or the elements back to back, encoding "raw";
//   - anything else: the user writes a `template <> struct
//     nerve::Codec<MyType>` (examples/msgs.hpp has one for a LaserScan).
//
// The channel's metadata records Codec<T>::type_name() and encoding() at
// creation; opening a channel whose recorded type or encoding differs from
// T's fails with NERVE_EMISMATCH, so a reader cannot misread a channel.
//
// A codec is a struct with these static members (docs/cxx.md has the full
// contract):
//
//   static std::string type_name();          // recorded and checked
//   static std::string_view encoding();      // recorded and checked
//   static std::string schema();             // optional; recorded only
//   static size_t size(const T &m);          // exact bytes of m's message
//   static void encode(const T &m, void *dst, size_t len);  // len == size(m)
//   static bool decode(const void *src, size_t len, T &out); // false: bad
//
// and optionally, for zero-copy loans of variable size sized at loan time:
//
//   using view = ...;                        // what the loan exposes
//   static size_t loan_size(Args...);        // bytes for these arguments,
//                                            // SIZE_MAX if that overflows
//   static view loan_init(void *dst, size_t len, Args...);
//
// decode() may be handed bytes that a writer is overwriting at that moment
// (the reader validates afterwards and retries), so it must check every
// length and count against `len` and never trust them: it may produce a
// wrong value but must not read outside [src, src + len) or allocate more
// than `len` implies.
#ifndef NERVE_CXX_CODEC_HPP
#define NERVE_CXX_CODEC_HPP

#include <nerve/cxx/c_api.hpp>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace nerve {

/// A contiguous run of T in a loan (std::span is C++20).
template <class T> class Span {
public:
    constexpr Span() noexcept = default;
    constexpr Span(T *p, size_t n) noexcept : p_(p), n_(n)
    {
    }
    constexpr T *data() const noexcept
    {
        return p_;
    }
    constexpr size_t size() const noexcept
    {
        return n_;
    }
    constexpr bool empty() const noexcept
    {
        return n_ == 0;
    }
    constexpr T &operator[](size_t i) const noexcept
    {
        return p_[i];
    }
    constexpr T *begin() const noexcept
    {
        return p_;
    }
    constexpr T *end() const noexcept
    {
        return p_ + n_;
    }

private:
    T *p_ = nullptr;
    size_t n_ = 0;
};

namespace detail {

// The compiler's spelling of T, cut out of __PRETTY_FUNCTION__:
//   GCC:   "constexpr const char* nerve::detail::pretty() [with T = Imu]"
//   Clang: "const char *nerve::detail::pretty() [T = Imu]"
// GCC and Clang agree on class names ("Imu", "ns::Imu"); they differ on
// some built-in types ("long int" vs "long") and anonymous namespaces,
// which is why fundamental types get fixed names below and why types
// shared across compilers or languages should name themselves.
template <class T> constexpr const char *pretty() noexcept
{
    return __PRETTY_FUNCTION__;
}

constexpr std::string_view pretty_type(const char *s) noexcept
{
    std::string_view v(s);
    size_t b = v.find("T = ");
    size_t e = v.rfind(']');
    if (b == std::string_view::npos || e == std::string_view::npos || e < b) {
        return v;
    }
    b += 4;
    return v.substr(b, e - b);
}

// Fixed names for fundamental types, the same from every compiler (ROS
// spells them the same way).
template <class T> constexpr std::string_view fundamental_name() noexcept
{
    if constexpr (std::is_same_v<T, bool>) {
        return "bool";
    } else if constexpr (std::is_same_v<T, char>) {
        return "char";
    } else if constexpr (std::is_integral_v<T> && std::is_signed_v<T>) {
        return sizeof(T) == 1   ? "int8"
               : sizeof(T) == 2 ? "int16"
               : sizeof(T) == 4 ? "int32"
               : sizeof(T) == 8 ? "int64"
                                : "int128";
    } else if constexpr (std::is_integral_v<T>) {
        return sizeof(T) == 1   ? "uint8"
               : sizeof(T) == 2 ? "uint16"
               : sizeof(T) == 4 ? "uint32"
               : sizeof(T) == 8 ? "uint64"
                                : "uint128";
    } else if constexpr (std::is_same_v<T, float>) {
        return "float32";
    } else if constexpr (std::is_same_v<T, double>) {
        return "float64";
    } else {
        return pretty_type(pretty<T>());
    }
}

template <class T, class = void> struct has_member_name : std::false_type {
};
template <class T>
struct has_member_name<T, std::void_t<decltype(T::nerve_type_name)>>
    : std::true_type {
};

} // namespace detail

/// The type name recorded in a channel's metadata for a raw (trivially
/// copyable) T. In order of preference: a specialization of this template
/// (NERVE_TYPE_NAME(T, "pkg/Name") writes one), a static member
/// `static constexpr const char *nerve_type_name = "pkg/Name";` in T, a
/// fixed name for fundamental types ("int32", "float64", ...), or the
/// compiler's spelling of T ("Imu", "robot::Imu"). Give a name to every
/// type that C programs, Python or another compiler also use.
template <class T> struct TypeName {
    static constexpr std::string_view value = [] {
        if constexpr (detail::has_member_name<T>::value) {
            return std::string_view(T::nerve_type_name);
        } else {
            return detail::fundamental_name<T>();
        }
    }();
};

/// Name a type for the channel metadata; use at global scope:
/// `NERVE_TYPE_NAME(robot::Imu, "robot/Imu");`
#define NERVE_TYPE_NAME(T, NAME)                                               \
    template <> struct nerve::TypeName<T> {                                    \
        static constexpr std::string_view value = NAME;                        \
    }

/// The serialization policy of T. There is no definition for a type that
/// is neither trivially copyable nor given a specialization, so using such
/// a type is a compile-time error naming nerve::Codec<T>.
template <class T, class Enable = void> struct Codec;

namespace detail {
/// Hook for families of types that bring their own codec (ros1.hpp: ROS 1
/// messages) even when trivially copyable: specialized true_type for them,
/// it keeps them off the raw codec below.
template <class T, class = void> struct external_codec : std::false_type {
};
} // namespace detail

/// Trivially copyable types: the message is the object's bytes.
template <class T>
struct Codec<T, std::enable_if_t<std::is_trivially_copyable_v<T> &&
                                 !std::is_pointer_v<T> &&
                                 !detail::external_codec<T>::value>> {
    /// Raw codecs take the direct path: put/get copy into and out of the
    /// ring once, with no view and no retry.
    static constexpr bool raw = true;
    static std::string type_name()
    {
        return std::string(nerve::TypeName<T>::value);
    }
    static constexpr std::string_view encoding() noexcept
    {
        return "raw";
    }
    static constexpr size_t size(const T &) noexcept
    {
        return sizeof(T);
    }
    static void encode(const T &m, void *dst, size_t) noexcept
    {
        std::memcpy(dst, &m, sizeof(T));
    }
    static bool decode(const void *src, size_t len, T &out) noexcept
    {
        if (len != sizeof(T)) {
            return false;
        }
        std::memcpy(&out, src, sizeof(T));
        return true;
    }
};

/// std::string: the characters, without a terminating NUL. A loan of n
/// characters exposes a Span<char>.
template <> struct Codec<std::string> {
    using view = Span<char>;
    static std::string type_name()
    {
        return "string";
    }
    static constexpr std::string_view encoding() noexcept
    {
        return "raw";
    }
    static size_t size(const std::string &m) noexcept
    {
        return m.size();
    }
    static void encode(const std::string &m, void *dst, size_t len) noexcept
    {
        std::memcpy(dst, m.data(), len);
    }
    /// Allocates when `out` has less capacity than the message.
    static bool decode(const void *src, size_t len, std::string &out)
    {
        out.assign(static_cast<const char *>(src), len);
        return true;
    }
    static constexpr size_t loan_size(size_t n) noexcept
    {
        return n;
    }
    static view loan_init(void *dst, size_t, size_t n) noexcept
    {
        return view(static_cast<char *>(dst), n);
    }
};

/// std::vector<E> of trivially copyable E: the elements back to back (the
/// count is the message size / sizeof(E)). A loan of n elements exposes a
/// Span<E> placed in the ring (ring space is 64-byte aligned).
template <class E, class A> struct Codec<std::vector<E, A>> {
    static_assert(std::is_trivially_copyable_v<E>,
                  "nerve::Codec<std::vector<E>> needs a trivially copyable E");
    static_assert(alignof(E) <= 64, "ring space is 64-byte aligned");
    static_assert(!std::is_same_v<E, bool>,
                  "std::vector<bool> packs bits and has no data(): use "
                  "std::vector<uint8_t>");
    using view = Span<E>;
    static std::string type_name()
    {
        return "vector<" + std::string(nerve::TypeName<E>::value) + ">";
    }
    static constexpr std::string_view encoding() noexcept
    {
        return "raw";
    }
    static size_t size(const std::vector<E, A> &m) noexcept
    {
        return m.size() * sizeof(E);
    }
    static void encode(const std::vector<E, A> &m, void *dst,
                       size_t len) noexcept
    {
        if (len != 0) {
            std::memcpy(dst, m.data(), len);
        }
    }
    /// Allocates when `out` has less capacity than the message.
    static bool decode(const void *src, size_t len, std::vector<E, A> &out)
    {
        if (len % sizeof(E) != 0) {
            return false;
        }
        out.resize(len / sizeof(E));
        if (len != 0) {
            std::memcpy(out.data(), src, len);
        }
        return true;
    }
    /// SIZE_MAX (no ring holds it: loan() fails with NERVE_EMSGSIZE)
    /// when n * sizeof(E) does not fit in a size_t.
    static constexpr size_t loan_size(size_t n) noexcept
    {
        return n > SIZE_MAX / sizeof(E) ? SIZE_MAX : n * sizeof(E);
    }
    static view loan_init(void *dst, size_t, size_t n) noexcept
    {
        return view(static_cast<E *>(dst), n);
    }
};

namespace detail {

template <class T, class = void> struct is_raw : std::false_type {
};
template <class T>
struct is_raw<T, std::enable_if_t<Codec<T>::raw>> : std::true_type {
};

template <class T, class = void> struct has_codec : std::false_type {
};
template <class T>
struct has_codec<T, std::void_t<decltype(sizeof(Codec<T>))>> : std::true_type {
};

template <class T, class = void> struct has_schema : std::false_type {
};
template <class T>
struct has_schema<T, std::void_t<decltype(Codec<T>::schema())>>
    : std::true_type {
};

template <class T, class = void> struct has_view : std::false_type {
};
template <class T>
struct has_view<T, std::void_t<typename Codec<T>::view>> : std::true_type {
};

template <class T> std::string schema_of()
{
    if constexpr (has_schema<T>::value) {
        return std::string(Codec<T>::schema());
    } else {
        return std::string();
    }
}

template <class T>
inline constexpr bool nothrow_decode = noexcept(Codec<T>::decode(
    static_cast<const void *>(nullptr), size_t{0}, std::declval<T &>()));

template <class T>
inline constexpr bool nothrow_encode =
    noexcept(Codec<T>::size(std::declval<const T &>())) &&noexcept(
        Codec<T>::encode(std::declval<const T &>(),
                         static_cast<void *>(nullptr), size_t{0}));

template <class T> constexpr void require_codec() noexcept
{
    static_assert(has_codec<T>::value,
                  "T is not trivially copyable and has no nerve::Codec<T> "
                  "specialization (see nerve/cxx/codec.hpp)");
}

} // namespace detail

} // namespace nerve

#endif
