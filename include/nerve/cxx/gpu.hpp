// nerve C++ API: moving messages between a channel and device memory.
//
// Included by the umbrella <nerve/nerve.hpp>; its CUDA part exists only
// where <cuda_runtime.h> is on the include path (see below).
//
// A GPU frame crosses a channel with one copy at each end when the ring is
// registered with the device (cudaHostRegister of nerve_chan_ring()):
//
//   writer: device --DMA--> reservation in the ring --commit-->
//   reader:                 view of the ring --DMA--> device, then check
//
// Two generic helpers hold the protocol and take the copy as a callable,
// so that they are tested with memcpy on machines without a GPU and run
// with cudaMemcpyAsync on machines with one:
//
//   nerve::gpu::put_from(ch, src, len, copier)      reserve, copy, commit
//   nerve::gpu::copy_view_to(ch, dst, cap, copier)  view, copy, validate
//
// A copier is any callable `int(void *dst, const void *src, size_t len)`
// that has finished copying when it returns: 0 on success, a negative
// NERVE_E* code to be returned as is, or a positive copier-specific error
// (the CUDA copier returns the cudaError_t), reported as
// gpu::copy_failed with that value in copier_error().
//
// Overwrite safety. A view lies in the ring, and a writer may overwrite it
// while the device reads it: writers never wait for readers. So
// copy_view_to() calls nerve_chan_view_check() after the copy has
// completed (the CUDA copier synchronizes its stream first) and, if a
// writer began to overwrite the message meanwhile, discards the copy:
// the destination's bytes are then unspecified and must not be used. It
// puts the cursor back and tries again (next: the oldest message still
// present, with the missed count; newest: the new newest) up to
// `attempts` times, then returns NERVE_ELAPPED. discarded() counts the
// copies thrown away. A copy that is returned as data was checked after it
// completed, so it is the message seq() exactly.
//
// The CUDA part (below, under NERVE_CXX_HAS_CUDA) is compiled only where
// <cuda_runtime.h> is on the include path (define NERVE_CXX_NO_CUDA to
// leave it out); a program that uses it links CUDA::cudart. It adds the
// ring registration (read-only for read-only handles, where the driver
// supports it) and the CUDA copier. docs/gpu.md is the guide.
#ifndef NERVE_CXX_GPU_HPP
#define NERVE_CXX_GPU_HPP

#include <nerve/cxx/channel.hpp>
#include <nerve/cxx/c_api.hpp>
#include <nerve/cxx/result.hpp>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <utility>

#if !defined(NERVE_CXX_NO_CUDA) && defined(__has_include)
#if __has_include(<cuda_runtime.h>)
#include <cuda_runtime.h>
#define NERVE_CXX_HAS_CUDA 1
#endif
#endif
#ifndef NERVE_CXX_HAS_CUDA
#define NERVE_CXX_HAS_CUDA 0
#endif

namespace nerve::gpu {

/// The code a helper returns when its copier reported a failure of its own
/// (a positive value, kept in copier_error()). The C library has no code
/// for a failed device copy; this one is -EIO and the helpers' results
/// name it "ECOPY".
inline constexpr int copy_failed = -EIO;

/// Copy with std::memcpy: the host copier, for host memory on both sides
/// (and the tests).
struct HostCopier {
    int operator()(void *dst, const void *src, size_t len) const noexcept
    {
        std::memcpy(dst, src, len);
        return 0;
    }
};

/// Which message copy_view_to() takes and how long it waits for one.
struct CopyOptions {
    /// The newest message (true) or the next after the cursor (false).
    bool newest = false;
    /// Wait up to this long for a message after the cursor; zero does not
    /// wait, nerve::forever waits without bound.
    Duration wait = Duration::zero();
    /// Copies tried before giving up with NERVE_ELAPPED when writers keep
    /// overwriting the message during the copy (at least 1).
    int attempts = 4;
};

/// The outcome of copy_view_to() and put_from(); never thrown. `if (r)` is
/// true when the bytes were delivered (copied and validated, or committed).
class [[nodiscard]] CopyResult {
public:
    CopyResult() noexcept = default;
    CopyResult(int code, const MsgInfo &info, unsigned discarded,
               int copier_error) noexcept
        : code_(code > 0 ? 0 : code), discarded_(discarded),
          copier_error_(copier_error), info_(info)
    {
    }

    explicit operator bool() const noexcept
    {
        return code_ == 0;
    }
    bool ok() const noexcept
    {
        return code_ == 0;
    }
    /// 0, or NERVE_EAGAIN (nothing new), NERVE_ETIMEDOUT, NERVE_ECANCELED,
    /// NERVE_EMSGSIZE (the destination is smaller than info().len; nothing
    /// consumed), NERVE_ELAPPED (overwritten during every attempt),
    /// gpu::copy_failed (see copier_error()), or another C error.
    int code() const noexcept
    {
        return code_;
    }
    const char *name() const noexcept
    {
        return code_ == copy_failed ? "ECOPY" : nerve_err_name(code_);
    }
    const char *message() const noexcept
    {
        return code_ == copy_failed ? "the device copy failed"
                                    : nerve_strerror(code_);
    }
    bool nothing_new() const noexcept
    {
        return code_ == NERVE_EAGAIN;
    }
    bool timed_out() const noexcept
    {
        return code_ == NERVE_ETIMEDOUT;
    }
    /// Every attempt was overwritten during its copy (NERVE_ELAPPED).
    bool lapped() const noexcept
    {
        return code_ == NERVE_ELAPPED;
    }
    /// Copies thrown away because a writer overwrote the message during
    /// them (the destination held torn bytes each time).
    unsigned discarded() const noexcept
    {
        return discarded_;
    }
    /// The copier's own positive error (a cudaError_t for the CUDA
    /// copier) when code() is gpu::copy_failed, else 0.
    int copier_error() const noexcept
    {
        return copier_error_;
    }
    /// The message: seq, missed, time_ns and len (the bytes copied). On
    /// NERVE_EMSGSIZE len is the size needed. For put_from(), seq and
    /// time_ns of the committed message.
    const MsgInfo &info() const noexcept
    {
        return info_;
    }
    uint64_t seq() const noexcept
    {
        return info_.seq;
    }
    uint64_t missed() const noexcept
    {
        return info_.missed;
    }
    size_t size() const noexcept
    {
        return static_cast<size_t>(info_.len);
    }

private:
    int code_ = NERVE_EAGAIN;
    unsigned discarded_ = 0;
    int copier_error_ = 0;
    MsgInfo info_;
};

namespace detail {

template <class Copier>
inline constexpr bool is_copier =
    std::is_invocable_r_v<int, Copier &, void *, const void *, size_t>;

// Run the copier; fold its answer into a nerve code and keep a positive
// (copier-specific) error in *copier_err.
template <class Copier>
int run_copier(Copier &copy, void *dst, const void *src, size_t len,
               int *copier_err)
{
    int rc = copy(dst, src, len);
    if (rc > 0) {
        *copier_err = rc;
        return copy_failed;
    }
    return rc;
}

} // namespace detail

/// Copy one message from channel handle `c` into dst[0..cap) with
/// `copy`, then validate it; see the file comment for the overwrite rule.
/// On anything but data the destination's bytes are unspecified and
/// nothing is consumed: the cursor is where it was.
/// Thread: one caller per handle.  Blocking: only with o.wait, and for as
/// long as the copier runs.  RT: as the copier (safe with HostCopier; no
/// allocation here).  Signal: not safe.
template <class Copier>
CopyResult copy_view_to(nerve_chan *c, void *dst, size_t cap, Copier &&copy,
                        const CopyOptions &o = {})
{
    static_assert(detail::is_copier<Copier>,
                  "a copier is callable as int(void *dst, const void *src, "
                  "size_t len)");
    uint32_t flags = o.newest ? NERVE_GET_NEWEST : NERVE_GET_NEXT;
    int64_t timeout = 0;
    if (o.wait != Duration::zero()) {
        flags |= NERVE_F_WAIT;
        timeout = nerve::detail::timeout_ns(o.wait);
    }
    const int attempts = o.attempts < 1 ? 1 : o.attempts;
    const uint64_t cursor = nerve_chan_cursor(c);
    unsigned discarded = 0;
    for (int attempt = 0; attempt < attempts; attempt++) {
        struct nerve_view v;
        int rc = nerve_chan_view(c, 0, timeout, &v, flags);
        if (rc < 0) {
            return CopyResult(rc, MsgInfo{}, discarded, 0);
        }
        MsgInfo info = nerve::detail::to_info(v.info);
        if (v.info.len > cap) {
            // Consume nothing: the caller may retry with a larger buffer.
            nerve_chan_seek(c, cursor);
            return CopyResult(NERVE_EMSGSIZE, info, discarded, 0);
        }
        int cerr = 0;
        if (v.info.len > 0) {
            rc = detail::run_copier(copy, dst, v.data,
                                    static_cast<size_t>(v.info.len), &cerr);
        }
        // The copy has completed (a copier returns only then), so a check
        // that passes now covers every byte the device read.
        const bool intact = nerve_chan_view_check(c, &v) == 0;
        if (rc < 0) {
            // The copy itself failed: nothing delivered, nothing consumed.
            nerve_chan_seek(c, cursor);
            return CopyResult(rc, info, discarded, cerr);
        }
        if (intact) {
            return CopyResult(0, info, discarded, 0);
        }
        // Overwritten during the copy: dst holds torn bytes. Put the
        // cursor back so NEXT returns the oldest message still present
        // (and counts what was lost); there is newer data now, so the
        // retry does not wait.
        discarded++;
        nerve_chan_seek(c, cursor);
        flags &= ~NERVE_F_WAIT;
        timeout = 0;
    }
    return CopyResult(NERVE_ELAPPED, MsgInfo{}, discarded, 0);
}

/// As above on a Channel.
template <class Copier>
CopyResult copy_view_to(Channel &ch, void *dst, size_t cap, Copier &&copy,
                        const CopyOptions &o = {})
{
    return copy_view_to(ch.get(), dst, cap, std::forward<Copier>(copy), o);
}

/// As above on a typed handle (Reader<T>, Subscriber's reader, ...): any
/// object with native_handle(). The bytes are copied as they are; no
/// codec runs.
template <class Handle, class Copier,
          class = decltype(std::declval<Handle &>().native_handle())>
CopyResult copy_view_to(Handle &h, void *dst, size_t cap, Copier &&copy,
                        const CopyOptions &o = {})
{
    return copy_view_to(h.native_handle(), dst, cap, std::forward<Copier>(copy),
                        o);
}

/// Publish `len` bytes from src (device or host memory, as the copier
/// takes it) on writable handle `c`: reserve them in the ring, copy them
/// with `copy` straight into the reservation, commit. A copier failure
/// aborts the reservation: nothing is published and the writer lock is
/// released. Errors as nerve_chan_reserve(), plus gpu::copy_failed.
/// Thread: one caller per handle.  Blocking: on the writer lock (up to
/// lock_timeout), then for as long as the copier runs, holding the writer
/// lock (other writers of the channel wait).  RT: as the copier.
/// Signal: not safe.
template <class Copier>
CopyResult put_from(nerve_chan *c, const void *src, size_t len, Copier &&copy,
                    Duration lock_timeout = forever)
{
    static_assert(detail::is_copier<Copier>,
                  "a copier is callable as int(void *dst, const void *src, "
                  "size_t len)");
    void *p = nullptr;
    int rc = nerve_chan_reserve(c, len, nerve::detail::timeout_ns(lock_timeout),
                                &p, 0);
    if (rc < 0) {
        return CopyResult(rc, MsgInfo{}, 0, 0);
    }
    int cerr = 0;
    if (len > 0) {
        rc = detail::run_copier(copy, p, src, len, &cerr);
    }
    if (rc < 0) {
        (void)nerve_chan_abort(c); // only fails without a reservation
        return CopyResult(rc, MsgInfo{}, 0, cerr);
    }
    PublishInfo pi;
    rc = nerve_chan_commit(c, len, &pi);
    if (rc < 0) {
        (void)nerve_chan_abort(c);
        return CopyResult(rc, MsgInfo{}, 0, 0);
    }
    MsgInfo info;
    info.seq = pi.seq;
    info.time_ns = pi.time_ns;
    info.len = len;
    return CopyResult(0, info, 0, 0);
}

/// As above on a Channel.
template <class Copier>
CopyResult put_from(Channel &ch, const void *src, size_t len, Copier &&copy,
                    Duration lock_timeout = forever)
{
    return put_from(ch.get(), src, len, std::forward<Copier>(copy),
                    lock_timeout);
}

/// As above on a typed handle (Publisher<T>): any object with
/// native_handle(). The bytes are published as they are; no codec runs,
/// so they must be what the channel's readers expect (for a raw T,
/// exactly sizeof(T) bytes of a T).
template <class Handle, class Copier,
          class = decltype(std::declval<Handle &>().native_handle())>
CopyResult put_from(Handle &h, const void *src, size_t len, Copier &&copy,
                    Duration lock_timeout = forever)
{
    return put_from(h.native_handle(), src, len, std::forward<Copier>(copy),
                    lock_timeout);
}

/// How a ring mapping gets registered with a device, decided from the
/// handle's access and the device's attributes (plan_registration()).
enum class RegMode : uint8_t {
    writable,         ///< cudaHostRegisterDefault on a writable mapping
    read_only,        ///< cudaHostRegisterReadOnly on a read-only mapping
    host_page_tables, ///< read-only mapping, registered without the flag:
                      ///< the device reads through the host's page tables
    none, ///< not registered: copies from the ring are pageable copies
};

/// What a device offers, as the CUDA attributes of the same names.
struct DeviceCaps {
    bool host_register_supported = true; // cudaDevAttrHostRegisterSupported
    bool host_register_read_only_supported =
        false; // ...HostRegisterReadOnlySupported
    bool pageable_uses_host_page_tables =
        false; // ...PageableMemoryAccessUsesHostPageTables
};

/// The registration a handle gets: a writable mapping is registered as
/// is; a read-only one needs cudaHostRegisterReadOnly (where the device
/// has it) unless the device reads pageable memory through the host's
/// page tables; otherwise it is not registered and copies from it go
/// through the driver's pageable path (it stages them in its own pinned
/// buffers: several times slower for large frames, see docs/gpu.md).
constexpr RegMode plan_registration(bool writable, const DeviceCaps &d) noexcept
{
    if (!d.host_register_supported) {
        return RegMode::none;
    }
    if (writable) {
        return RegMode::writable;
    }
    if (d.host_register_read_only_supported) {
        return RegMode::read_only;
    }
    if (d.pageable_uses_host_page_tables) {
        return RegMode::host_page_tables;
    }
    return RegMode::none;
}

/// The mode's name, for logs: "writable", "read-only", "host-page-tables"
/// or "none".
constexpr const char *to_string(RegMode m) noexcept
{
    switch (m) {
    case RegMode::writable: return "writable";
    case RegMode::read_only: return "read-only";
    case RegMode::host_page_tables: return "host-page-tables";
    case RegMode::none: break;
    }
    return "none";
}

#if NERVE_CXX_HAS_CUDA

/// Copy with cudaMemcpyAsync on `stream` and wait for it (the helpers
/// validate only completed copies). `kind` may stay cudaMemcpyDefault
/// (direction from the pointers; every 64-bit CUDA platform has unified
/// addressing). `error` keeps the last CUDA error; the copier returns it
/// (positive) on failure.
struct CudaCopier {
    cudaStream_t stream = nullptr;
    cudaMemcpyKind kind = cudaMemcpyDefault;
    cudaError_t error = cudaSuccess;

    int operator()(void *dst, const void *src, size_t len) noexcept
    {
        error = cudaMemcpyAsync(dst, src, len, kind, stream);
        if (error == cudaSuccess) {
            error = cudaStreamSynchronize(stream);
        }
        return error == cudaSuccess ? 0 : static_cast<int>(error);
    }
};

/// The attributes of device `device` that plan_registration() reads; a
/// query that fails counts as "not supported".
inline DeviceCaps query_caps(int device) noexcept
{
    DeviceCaps d;
    int v = 0;
    d.host_register_supported =
        cudaDeviceGetAttribute(&v, cudaDevAttrHostRegisterSupported, device) ==
            cudaSuccess &&
        v != 0;
    v = 0;
    d.host_register_read_only_supported =
        cudaDeviceGetAttribute(&v, cudaDevAttrHostRegisterReadOnlySupported,
                               device) == cudaSuccess &&
        v != 0;
    v = 0;
    d.pageable_uses_host_page_tables =
        cudaDeviceGetAttribute(
            &v, cudaDevAttrPageableMemoryAccessUsesHostPageTables, device) ==
            cudaSuccess &&
        v != 0;
    (void)cudaGetLastError(); // a failed query is not the caller's error
    return d;
}

/// A channel's ring mapping registered with CUDA (cudaHostRegister) for
/// the life of this object: copies between the device and reservations
/// or views are then single DMA transfers. Register once per handle, in
/// the setup phase (it pins 2 x data_size bytes of pages), and destroy
/// this object before closing the handle: unregistering an unmapped range
/// fails. Move-only.
class RingRegistration {
public:
    RingRegistration() noexcept = default;
    RingRegistration(const RingRegistration &) = delete;
    RingRegistration &operator=(const RingRegistration &) = delete;
    RingRegistration(RingRegistration &&o) noexcept
        : base_(std::exchange(o.base_, nullptr)), len_(o.len_),
          mode_(std::exchange(o.mode_, RegMode::none)), error_(o.error_)
    {
    }
    RingRegistration &operator=(RingRegistration &&o) noexcept
    {
        if (this != &o) {
            reset();
            base_ = std::exchange(o.base_, nullptr);
            len_ = o.len_;
            mode_ = std::exchange(o.mode_, RegMode::none);
            error_ = o.error_;
        }
        return *this;
    }
    /// cudaHostUnregister(). RT: not safe.
    ~RingRegistration()
    {
        reset();
    }

    /// Register the ring of `c`, opened with access `a`, with the current
    /// device (cudaGetDevice), as plan_registration() decides. (The C API
    /// does not tell a handle's access, so the caller says it; a wrong
    /// answer makes the registration fail, with the error kept.) Never
    /// fails for lack of support: mode() is then RegMode::none and
    /// error() says why (the CUDA error of a registration the driver
    /// refused, or cudaErrorNotSupported when the plan was not to try),
    /// and copies take the pageable path. Returns an error only for a
    /// handle without a ring (NERVE_EINVAL).
    /// Setup phase: pins memory, system calls.
    static Result<RingRegistration> create(const nerve_chan *c, Access a)
    {
        void *base = nullptr;
        uint64_t len = 0;
        int rc = nerve_chan_ring(c, &base, &len);
        if (rc < 0) {
            return fail(rc);
        }
        RingRegistration r;
        r.len_ = static_cast<size_t>(len);
        int dev = 0;
        cudaError_t e = cudaGetDevice(&dev);
        if (e != cudaSuccess) {
            (void)cudaGetLastError();
            r.error_ = e;
            return r;
        }
        const RegMode m =
            plan_registration(a == Access::write, query_caps(dev));
        if (m == RegMode::none) {
            r.error_ = cudaErrorNotSupported;
            return r;
        }
        e = cudaHostRegister(base, r.len_,
                             m == RegMode::read_only ? cudaHostRegisterReadOnly
                                                     : cudaHostRegisterDefault);
        if (e != cudaSuccess) {
            (void)cudaGetLastError(); // not sticky; keep it out of later calls
            r.error_ = e;
            return r;
        }
        r.base_ = base;
        r.mode_ = m;
        return r;
    }
    static Result<RingRegistration> create(const Channel &ch, Access a)
    {
        return create(ch.get(), a);
    }

    /// How the ring is registered (RegMode::none: not at all).
    RegMode mode() const noexcept
    {
        return mode_;
    }
    bool registered() const noexcept
    {
        return base_ != nullptr;
    }
    /// Why it is not registered (cudaSuccess when it is).
    cudaError_t error() const noexcept
    {
        return error_;
    }
    /// The registered range.
    void *base() const noexcept
    {
        return base_;
    }
    size_t size() const noexcept
    {
        return len_;
    }

    /// Unregister now (also done by the destructor).
    void reset() noexcept
    {
        if (base_ != nullptr) {
            (void)cudaHostUnregister(base_);
            base_ = nullptr;
            mode_ = RegMode::none;
        }
    }

private:
    void *base_ = nullptr;
    size_t len_ = 0;
    RegMode mode_ = RegMode::none;
    cudaError_t error_ = cudaSuccess;
};

/// copy_view_to() into device memory dev[0..cap) on `stream`: a message
/// of the channel lands on the GPU, checked after the copy completed.
/// With the ring registered this is one DMA transfer.
inline CopyResult copy_view_to_device(nerve_chan *c, void *dev, size_t cap,
                                      cudaStream_t stream,
                                      const CopyOptions &o = {})
{
    return copy_view_to(c, dev, cap,
                        CudaCopier{stream, cudaMemcpyHostToDevice, cudaSuccess},
                        o);
}
inline CopyResult copy_view_to_device(Channel &ch, void *dev, size_t cap,
                                      cudaStream_t stream,
                                      const CopyOptions &o = {})
{
    return copy_view_to_device(ch.get(), dev, cap, stream, o);
}
template <class Handle,
          class = decltype(std::declval<Handle &>().native_handle())>
CopyResult copy_view_to_device(Handle &h, void *dev, size_t cap,
                               cudaStream_t stream, const CopyOptions &o = {})
{
    return copy_view_to_device(h.native_handle(), dev, cap, stream, o);
}

/// put_from() device memory dev[0..len) on `stream`: reserve, one DMA
/// into the reservation (with the ring registered), commit.
inline CopyResult put_from_device(nerve_chan *c, const void *dev, size_t len,
                                  cudaStream_t stream,
                                  Duration lock_timeout = forever)
{
    return put_from(c, dev, len,
                    CudaCopier{stream, cudaMemcpyDeviceToHost, cudaSuccess},
                    lock_timeout);
}
inline CopyResult put_from_device(Channel &ch, const void *dev, size_t len,
                                  cudaStream_t stream,
                                  Duration lock_timeout = forever)
{
    return put_from_device(ch.get(), dev, len, stream, lock_timeout);
}
template <class Handle,
          class = decltype(std::declval<Handle &>().native_handle())>
CopyResult put_from_device(Handle &h, const void *dev, size_t len,
                           cudaStream_t stream, Duration lock_timeout = forever)
{
    return put_from_device(h.native_handle(), dev, len, stream, lock_timeout);
}

#endif // NERVE_CXX_HAS_CUDA

} // namespace nerve::gpu

#endif
