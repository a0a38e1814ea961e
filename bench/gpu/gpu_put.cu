// GPU -> channel: how a perception process gets an image from device memory
// into a nerve channel, measured side by side in one run.
//
//   staging        cudaMemcpy to a pageable host buffer, then nerve_chan_put
//                  (two copies: the usual way)
//   direct         nerve_chan_reserve, cudaMemcpy straight into the
//                  reservation, nerve_chan_commit (one copy)
//   direct-pinned  the same after cudaHostRegister() of the ring mapping
//                  (nerve_chan_ring()), so the copy is one DMA transfer
//   floor          cudaMemcpy into cudaMallocHost memory (no channel at all)
//
// Every iteration a kernel writes a new pattern on the GPU; after each put a
// reader handle takes the message and checks sampled bytes, so no mode can
// win by skipping work. Prints a table and JSON lines (--json FILE).
//
// usage: nerve_gpu_bench [--size BYTES] [--iters N] [--json FILE]
#include <nerve/nerve.h>

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <unistd.h>
#include <vector>

#define CUDA_OK(x)                                                             \
    do {                                                                       \
        cudaError_t e_ = (x);                                                  \
        if (e_ != cudaSuccess) {                                               \
            std::fprintf(stderr, "%s: %s\n", #x, cudaGetErrorString(e_));     \
            std::exit(1);                                                      \
        }                                                                      \
    } while (0)

#define NERVE_OK(x)                                                            \
    do {                                                                       \
        int r_ = (x);                                                          \
        if (r_ != 0) {                                                         \
            std::fprintf(stderr, "%s: %s\n", #x, nerve_strerror(r_));         \
            std::exit(1);                                                      \
        }                                                                      \
    } while (0)

__global__ void fill(unsigned char *p, size_t n, unsigned iter)
{
    for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        p[i] = (unsigned char)(i * 7 + iter);
}

static bool check(const unsigned char *p, size_t n, unsigned iter)
{
    for (size_t k = 0; k < 64; k++) {
        size_t i = k * (n / 64) + (k % 7);
        if (i >= n)
            i = n - 1;
        if (p[i] != (unsigned char)(i * 7 + iter))
            return false;
    }
    return true;
}

struct result {
    std::string mode;
    std::vector<double> us;
};

static double pct(std::vector<double> v, double q)
{
    std::sort(v.begin(), v.end());
    size_t i = (size_t)(q * (double)(v.size() - 1) + 0.5);
    return v[i];
}

int main(int argc, char **argv)
{
    size_t size = 1920 * 1080 * 3;
    int iters = 500;
    const char *json = nullptr;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!std::strcmp(argv[i], "--size"))
            size = std::strtoull(argv[i + 1], nullptr, 0);
        else if (!std::strcmp(argv[i], "--iters"))
            iters = std::atoi(argv[i + 1]);
        else if (!std::strcmp(argv[i], "--json"))
            json = argv[i + 1];
    }
    char name[64];
    std::snprintf(name, sizeof name, "nt-%d-gpu", (int)getpid());
    nerve_chan_opts o = NERVE_CHAN_OPTS_INIT;
    o.slots = 8;
    o.data_size = 4 * size;
    NERVE_OK(nerve_chan_create(name, &o));
    nerve_chan *w, *r;
    NERVE_OK(nerve_chan_open(name, NERVE_O_WRITE, &w));
    NERVE_OK(nerve_chan_open(name, NERVE_O_READ, &r));

    unsigned char *dev, *pinned;
    CUDA_OK(cudaMalloc(&dev, size));
    CUDA_OK(cudaMallocHost(&pinned, size));
    std::vector<unsigned char> staging(size), in(size);
    cudaEvent_t ev;
    CUDA_OK(cudaEventCreate(&ev));

    const char *modes[] = {"staging", "direct", "direct-pinned", "floor"};
    std::vector<result> res;
    unsigned iter = 0;
    bool registered = false;
    for (const char *mode : modes) {
        result rs{mode, {}};
        if (!std::strcmp(mode, "direct-pinned")) {
            void *base;
            uint64_t len;
            NERVE_OK(nerve_chan_ring(w, &base, &len));
            cudaError_t e = cudaHostRegister(base, len, cudaHostRegisterDefault);
            if (e != cudaSuccess) {
                std::printf("direct-pinned: cudaHostRegister of the ring "
                            "failed (%s); skipped\n", cudaGetErrorString(e));
                continue;
            }
            registered = true;
        }
        for (int k = 0; k < iters + 20; k++) {
            iter++;
            fill<<<256, 256>>>(dev, size, iter);
            CUDA_OK(cudaDeviceSynchronize());
            int64_t t0 = nerve_clock_now_ns();
            if (!std::strcmp(mode, "staging")) {
                CUDA_OK(cudaMemcpy(staging.data(), dev, size,
                                   cudaMemcpyDeviceToHost));
                NERVE_OK(nerve_chan_put(w, staging.data(), size, NERVE_FOREVER,
                                        nullptr, 0));
            } else if (!std::strcmp(mode, "floor")) {
                CUDA_OK(cudaMemcpy(pinned, dev, size, cudaMemcpyDeviceToHost));
            } else {
                void *p;
                NERVE_OK(nerve_chan_reserve(w, size, NERVE_FOREVER, &p, 0));
                CUDA_OK(cudaMemcpy(p, dev, size, cudaMemcpyDeviceToHost));
                NERVE_OK(nerve_chan_commit(w, size, nullptr));
            }
            int64_t t1 = nerve_clock_now_ns();
            if (k >= 20)
                rs.us.push_back((double)(t1 - t0) / 1e3);
            const unsigned char *got = pinned;
            nerve_view v;
            if (std::strcmp(mode, "floor")) {
                NERVE_OK(nerve_chan_view(r, 0, 0, &v, NERVE_GET_NEWEST));
                got = (const unsigned char *)v.data;
            }
            if (!check(got, size, iter) ||
                (std::strcmp(mode, "floor") && nerve_chan_view_check(r, &v))) {
                std::fprintf(stderr, "%s: message %u does not verify\n", mode,
                             iter);
                return 1;
            }
        }
        res.push_back(rs);
    }
    if (registered) {
        void *base;
        uint64_t len;
        NERVE_OK(nerve_chan_ring(w, &base, &len));
        CUDA_OK(cudaHostUnregister(base));
    }

    cudaDeviceProp prop;
    CUDA_OK(cudaGetDeviceProperties(&prop, 0));
    std::printf("GPU -> channel, %zu bytes, %d iterations each, %s\n", size,
                iters, prop.name);
    std::printf("%-14s %10s %10s %10s %10s %8s\n", "mode", "p50(us)",
                "p99(us)", "max(us)", "GB/s@p50", "n");
    FILE *jf = json ? std::fopen(json, "w") : nullptr;
    for (auto &rs : res) {
        double p50 = pct(rs.us, 0.5), p99 = pct(rs.us, 0.99),
               mx = pct(rs.us, 1.0);
        std::printf("%-14s %10.1f %10.1f %10.1f %10.2f %8zu\n", rs.mode.c_str(),
                    p50, p99, mx, (double)size / p50 / 1e3, rs.us.size());
        if (jf)
            std::fprintf(jf,
                         "{\"bench\":\"gpu_put\",\"mode\":\"%s\",\"size\":%zu,"
                         "\"n\":%zu,\"p50_ns\":%.0f,\"p99_ns\":%.0f,"
                         "\"max_ns\":%.0f,\"gpu\":\"%s\"}\n",
                         rs.mode.c_str(), size, rs.us.size(), p50 * 1e3,
                         p99 * 1e3, mx * 1e3, prop.name);
    }
    if (jf)
        std::fclose(jf);
    nerve_chan_close(w);
    nerve_chan_close(r);
    CUDA_OK(cudaFree(dev));
    CUDA_OK(cudaFreeHost(pinned));
    return nerve_chan_unlink(name) == 0 ? 0 : 1;
}
