// The CUDA part of nerve/cxx/gpu.hpp on a real device: ring registration
// (writable for the writer, read-only for the read-only reader where the
// device supports it), device -> reservation -> device through two
// handles, and a view overwritten during its device copy (forced by a
// copier that wraps the CUDA copier and puts messages after the DMA):
// the copy is discarded and the retry delivers an intact message.
// Exits 77 where no CUDA device is usable.
#include <nerve/cxx/gpu.hpp>

#include "nerve_test.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#if !NERVE_CXX_HAS_CUDA
#error "tests/gpu needs <cuda_runtime.h> on the include path"
#endif

namespace gpu = nerve::gpu;

namespace {

std::string g_name;

void cleanup()
{
    if (!g_name.empty())
        (void)nerve_chan_unlink(g_name.c_str());
}

#define CHECK(cond)                                                            \
    do {                                                                       \
        if (!(cond))                                                           \
            NT_FAIL("%s", #cond);                                              \
    } while (0)

std::vector<uint8_t> pattern(uint32_t k, size_t n)
{
    std::vector<uint8_t> v(n);
    for (size_t i = 0; i < n; i++)
        v[i] = static_cast<uint8_t>(i * 7 + k * 13);
    return v;
}

} // namespace

int main()
{
    nt_watchdog(60);
    int ndev = 0;
    cudaError_t e = cudaGetDeviceCount(&ndev);
    if (e != cudaSuccess || ndev < 1)
        NT_SKIP_BECAUSE("no usable CUDA device (%s)",
                        e != cudaSuccess ? cudaGetErrorString(e) : "none");
    const size_t n = 256 * 1024, ring = 1 << 20; // 4 messages fill the ring
    g_name = nt_name("gpu");
    std::atexit(cleanup);
    nt_create(g_name.c_str(), 16, ring);
    auto w = nerve::Channel::open(g_name, nerve::Access::write);
    auto r = nerve::Channel::open(g_name, nerve::Access::read);
    CHECK(w && r);
    {
        auto rw = gpu::RingRegistration::create(*w, nerve::Access::write);
        auto rr = gpu::RingRegistration::create(*r, nerve::Access::read);
        CHECK(rw && rr);
        gpu::DeviceCaps caps = gpu::query_caps(0);
        std::printf("writer ring: %s; reader ring: %s (%s); read-only "
                    "registration supported: %d\n",
                    gpu::to_string(rw->mode()), gpu::to_string(rr->mode()),
                    cudaGetErrorString(rr->error()),
                    (int)caps.host_register_read_only_supported);
        CHECK(rw->registered() && rw->mode() == gpu::RegMode::writable);
        CHECK(rr->mode() == gpu::plan_registration(false, caps));
        CHECK(rr->registered() == (rr->mode() != gpu::RegMode::none));

        cudaStream_t st;
        CHECK(cudaStreamCreate(&st) == cudaSuccess);
        uint8_t *src = nullptr, *dst = nullptr;
        CHECK(cudaMalloc(&src, n) == cudaSuccess);
        CHECK(cudaMalloc(&dst, n) == cudaSuccess);
        std::vector<uint8_t> back(n);

        // Device -> reservation -> device.
        auto p1 = pattern(1, n);
        CHECK(cudaMemcpy(src, p1.data(), n, cudaMemcpyHostToDevice) ==
              cudaSuccess);
        auto put = gpu::put_from_device(*w, src, n, st);
        CHECK(put && put.seq() == 1);
        auto got = gpu::copy_view_to_device(*r, dst, n, st);
        CHECK(got && got.seq() == 1 && got.size() == n && got.discarded() == 0);
        CHECK(cudaMemcpy(back.data(), dst, n, cudaMemcpyDeviceToHost) ==
              cudaSuccess);
        CHECK(back == p1);

        // Overwritten during the device copy: discarded, then retried.
        auto p2 = pattern(2, n);
        CHECK(cudaMemcpy(src, p2.data(), n, cudaMemcpyHostToDevice) ==
              cudaSuccess);
        CHECK(gpu::put_from_device(*w, src, n, st));
        gpu::CudaCopier dev{st, cudaMemcpyHostToDevice, cudaSuccess};
        int calls = 0;
        auto racing = [&](void *d, const void *s, size_t len) {
            int rc = dev(d, s, len);
            if (calls++ == 0) {
                for (uint32_t k = 10; k < 15; k++) {
                    auto pk = pattern(k, n);
                    if (!w->put(pk.data(), n))
                        return 1000;
                }
            }
            return rc;
        };
        auto c = gpu::copy_view_to(*r, dst, n, racing);
        CHECK(c);
        CHECK(c.discarded() == 1 && calls == 2);
        CHECK(c.seq() > 2);
        CHECK(cudaMemcpy(back.data(), dst, n, cudaMemcpyDeviceToHost) ==
              cudaSuccess);
        // Message seq s >= 3 holds pattern 10 + (s - 3).
        CHECK(back == pattern(static_cast<uint32_t>(10 + c.seq() - 3), n));
        std::printf("overwritten copy discarded; delivered seq %llu, missed "
                    "%llu\n",
                    (unsigned long long)c.seq(),
                    (unsigned long long)c.missed());

        CHECK(cudaFree(src) == cudaSuccess);
        CHECK(cudaFree(dst) == cudaSuccess);
        CHECK(cudaStreamDestroy(st) == cudaSuccess);
        // The registrations end here, before the handles close.
    }
    std::printf("ok\n");
    return 0;
}
