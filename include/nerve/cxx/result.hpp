// nerve C++ API: error codes, nerve::Result<T> and the optional exception.
//
// Every fallible call of the C++ layer returns a value that says what
// happened, as the C API does: nerve::Result<T> for setup and writes (a T or
// a negative NERVE_E* code) and nerve::ReadResult (in channel.hpp) for
// reads. Nothing on the hot path throws. Setup calls also come in an
// `_or_throw` form that throws nerve::Error, for code that prefers
// exceptions; those forms exist only when exceptions are enabled, so the
// header builds with -fno-exceptions.
#ifndef NERVE_CXX_RESULT_HPP
#define NERVE_CXX_RESULT_HPP

#include <nerve/cxx/c_api.hpp>

#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <system_error>
#include <type_traits>
#include <utility>

#if defined(__cpp_exceptions) || defined(__EXCEPTIONS)
#define NERVE_CXX_EXCEPTIONS 1
#else
#define NERVE_CXX_EXCEPTIONS 0
#endif

namespace nerve {

/// The error category of nerve codes, for std::error_code interop. A
/// std::error_code holds the positive value -code (0 stays success), so
/// std::error_code(-NERVE_EAGAIN, nerve::error_category()) prints "no new
/// message". The category is the one place this layer overrides virtual
/// functions: std::error_category requires it.
inline const std::error_category &error_category() noexcept
{
    struct category final : std::error_category {
        const char *name() const noexcept override
        {
            return "nerve";
        }
        std::string message(int ev) const override
        {
            return nerve_strerror(-ev);
        }
    };
    static const category cat;
    return cat;
}

/// The std::error_code of a nerve code (0 or a negative NERVE_E* value).
inline std::error_code make_error_code(int code) noexcept
{
    return std::error_code(-code, error_category());
}

/// Marks a failed result: `return nerve::fail(NERVE_EINVAL);` converts to
/// any nerve::Result<T>. `code` must be negative.
struct Failure {
    int code;
};

/// A failure with the given negative NERVE_E* code.
constexpr Failure fail(int code) noexcept
{
    return Failure{code};
}

#if NERVE_CXX_EXCEPTIONS
/// The exception thrown by the `_or_throw` setup calls and by
/// Result<T>::value() on a failed result. code() is the NERVE_E* value;
/// what() names the call, the channel and the error.
class Error : public std::system_error {
public:
    Error(int code, const std::string &what)
        : std::system_error(make_error_code(code), what), code_(code)
    {
    }
    /// The negative NERVE_E* code.
    int code() const noexcept
    {
        return code_;
    }

private:
    int code_;
};
#endif

namespace detail {

// The detail of a failure found by this layer itself (a typed open whose
// channel carries another type), kept per thread beside the C library's
// nerve_err_detail() and shown the same way. Setup calls clear it.
struct LastDetail {
    int code = 0;
    char text[384] = "";
};
inline LastDetail &last_detail() noexcept
{
    thread_local LastDetail d;
    return d;
}
inline void clear_detail() noexcept
{
    last_detail().code = 0;
}
inline int set_detail(int code, const std::string &text) noexcept
{
    LastDetail &d = last_detail();
    std::snprintf(d.text, sizeof d.text, "%s", text.c_str());
    d.code = code;
    return code;
}
// The detail of `code`: this layer's, else the C library's (which is
// nerve_strerror(code) when it recorded none).
inline const char *detail_of(int code) noexcept
{
    const LastDetail &d = last_detail();
    if (code != 0 && d.code == code && d.text[0]) {
        return d.text;
    }
    return nerve_err_detail(code);
}

// Throw nerve::Error, or print and abort where exceptions are disabled
// (the only place the layer can end the process, and only on misuse or in
// an _or_throw call, never from a hot-path status).
[[noreturn]] inline void raise(int code, const char *what)
{
#if NERVE_CXX_EXCEPTIONS
    throw Error(code, std::string(what) + ": " + nerve_err_name(code) + ": " +
                          detail_of(code));
#else
    std::fprintf(stderr, "nerve: %s: %s: %s\n", what, nerve_err_name(code),
                 detail_of(code));
    std::abort();
#endif
}

// The code half of every Result: 0 on success, else a negative NERVE_E*
// code, and the ways to read it.
class ResultCode {
public:
    /// True when the result holds a value (or, for Result<void>, succeeded).
    bool ok() const noexcept
    {
        return code_ == 0;
    }
    explicit operator bool() const noexcept
    {
        return ok();
    }

    /// 0 on success, else the negative NERVE_E* code.
    int code() const noexcept
    {
        return code_;
    }
    /// The code's name ("EAGAIN") and message; "OK" / "success" on success.
    /// The message is the library's detail of the failure (what was wrong,
    /// what would have been accepted, what to do: nerve_err_detail()) when
    /// read before this thread's next nerve call, else the code's message.
    const char *name() const noexcept
    {
        return nerve_err_name(code_);
    }
    const char *message() const noexcept
    {
        return detail_of(code_);
    }
    /// The code as a std::error_code.
    std::error_code error_code() const noexcept
    {
        return make_error_code(code_);
    }

protected:
    ResultCode() noexcept = default;
    explicit ResultCode(Failure f) noexcept
        : code_(f.code < 0 ? f.code : NERVE_EINVAL)
    {
    }
    // Raise nerve::Error on a failure (abort without exceptions).
    void check() const
    {
        if (!ok()) {
            raise(code_, "nerve::Result::value()");
        }
    }

private:
    int code_ = 0;
};

} // namespace detail

/// Either a T or a negative NERVE_E* code; never both. Returned by setup
/// calls (open, create) and writes (publish, loan). Test it with `if (r)` or
/// r.ok(); read the value with *r, r->, or r.value() (which raises
/// nerve::Error on a failure, so use it only where an exception is wanted).
template <class T> class [[nodiscard]] Result : public detail::ResultCode {
public:
    using value_type = T;

    /// A successful result holding v.
    Result(const T &v) noexcept(std::is_nothrow_copy_constructible_v<T>) : v_(v)
    {
    }
    Result(T &&v) noexcept(std::is_nothrow_move_constructible_v<T>)
        : v_(std::move(v))
    {
    }
    /// A failed result.
    Result(Failure f) noexcept : detail::ResultCode(f)
    {
    }

    /// The value. Precondition: ok() (unchecked; use value() to check).
    T &operator*() &noexcept
    {
        return *v_;
    }
    const T &operator*() const &noexcept
    {
        return *v_;
    }
    T &&operator*() &&noexcept
    {
        return std::move(*v_);
    }
    T *operator->() noexcept
    {
        return &*v_;
    }
    const T *operator->() const noexcept
    {
        return &*v_;
    }

    /// The value, or nerve::Error raised (abort without exceptions).
    T &value() &
    {
        check();
        return *v_;
    }
    const T &value() const &
    {
        check();
        return *v_;
    }
    T &&value() &&
    {
        check();
        return std::move(*v_);
    }

    /// The value, or `other` on a failure.
    template <class U> T value_or(U &&other) &&
    {
        return ok() ? std::move(*v_) : static_cast<T>(std::forward<U>(other));
    }

private:
    std::optional<T> v_;
};

/// A result that carries only success or a code.
template <> class [[nodiscard]] Result<void> : public detail::ResultCode {
public:
    Result() noexcept = default;
    Result(Failure f) noexcept : detail::ResultCode(f)
    {
    }
    /// From a C status: 0 (or a count) is success, negative a failure.
    static Result from_status(int rc) noexcept
    {
        return rc < 0 ? Result(fail(rc)) : Result();
    }
    /// Raise nerve::Error on a failure (abort without exceptions).
    void value() const
    {
        check();
    }
};

} // namespace nerve

#endif
