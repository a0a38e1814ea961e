// GPU -> channel -> GPU across two processes, end to end.
//
// A writer process fills a frame on its GPU and sends it; a reader process
// waits for it, copies it to its GPU and verifies sampled bytes there. The
// latency of one frame runs from "frame ready on the writer's GPU" (after
// the fill kernel's stream synchronized) to "frame on the reader's GPU"
// (after the copy's stream synchronized), both read with CLOCK_MONOTONIC,
// which the two processes share. (cudaEvent timing would need the two ends
// on one device and IPC events; the clock works for any pair.)
//
// Paths, run one after the other in the same pair of processes:
//
//   direct    the nerve GPU path: the writer's ring registered
//             (cudaHostRegister), nerve::gpu::put_from_device (reserve,
//             one DMA into the reservation, commit); the reader's
//             read-only ring registered (cudaHostRegisterReadOnly where
//             supported), nerve::gpu::copy_view_to_device (view, one DMA
//             to the GPU, nerve_chan_view_check)
//   pageable  the same with the reader's ring NOT registered: what a
//             reader gets where read-only registration is unsupported
//   usual     cudaMemcpy to a pageable host buffer, nerve_chan_put,
//             nerve_chan_get into a pageable host buffer, cudaMemcpy to
//             the GPU (four copies)
//   floor     two cudaMemcpy through pinned shared memory plus a futex
//             wake-up between the processes, no channel at all
//
// The writer sends frame k+1 only after the reader acknowledged frame k
// (on a second, small channel, outside the timed span), so no frame
// queues behind another: --rate 0 sends the next frame at once
// ("back-to-back"), --rate 30 on a 30 Hz clock. Every frame is verified
// on the reader's GPU (64 sampled bytes against the frame's pattern); a
// frame that does not verify fails the run. Frames a writer overwrote
// during the reader's copy (discarded and re-read) are counted.
//
// Prints a table and writes JSON lines (--json FILE). bench/gpu/run.sh
// runs every row and writes bench/results/gpu-e2e-<host>.md.
//
// usage: nerve_gpu_e2e [--size BYTES] [--rate HZ] [--frames N]
//                      [--warmup N] [--paths direct,pageable,usual,floor]
//                      [--device N] [--json FILE]
#include <nerve/cxx/gpu.hpp>
#include <nerve/nerve.h>

#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <linux/futex.h>
#include <new>
#include <string>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

#define CUDA_OK(x)                                                             \
    do {                                                                       \
        cudaError_t e_ = (x);                                                  \
        if (e_ != cudaSuccess) {                                               \
            std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x,    \
                         cudaGetErrorString(e_));                              \
            std::exit(1);                                                      \
        }                                                                      \
    } while (0)

#define NERVE_OK(x)                                                            \
    do {                                                                       \
        int r_ = (x);                                                          \
        if (r_ < 0) {                                                          \
            std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x,    \
                         nerve_strerror(r_));                                  \
            std::exit(1);                                                      \
        }                                                                      \
    } while (0)

namespace {

constexpr int64_t kWaitNs = 10'000'000'000; // any wait longer fails the run
const char *const kPaths[] = {"direct", "pageable", "usual", "floor"};
constexpr int kNumPaths = 4;

struct options {
    size_t size = 1920 * 1080 * 3;
    double rate = 0;
    int frames = 300;
    int warmup = 20;
    int device = 0;
    bool run[kNumPaths] = {true, true, true, true};
    const char *json = nullptr;
};

// What the reader sends back for every frame.
struct ack {
    uint32_t path;
    uint32_t k;
    int64_t t_on_gpu; // CLOCK_MONOTONIC after the reader's copy synchronized
    int32_t ok;       // 1: the seq was k and the sampled bytes verified
    uint32_t discarded;
    uint64_t missed;
    int32_t reg_mode;   // the reader ring's nerve::gpu::RegMode; -1: none tried
    int32_t reserved;
    double reg_ms;      // how long the reader's registration took
};

// The floor's shared page: a futex word and the frame number it carries,
// followed (page-aligned) by the frame bytes.
struct floor_hdr {
    std::atomic<uint32_t> seq;
};

__global__ void fill(unsigned char *p, size_t n, unsigned k)
{
    for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        p[i] = (unsigned char)(i * 7 + k);
}

// 64 sampled bytes (and the last) against frame k's pattern.
__global__ void verify(const unsigned char *p, size_t n, unsigned k,
                       unsigned *bad)
{
    size_t j = threadIdx.x;
    size_t i = j == 64 ? n - 1 : j * (n / 64) + (j % 7);
    if (i >= n)
        i = n - 1;
    if (p[i] != (unsigned char)(i * 7 + k))
        atomicAdd(bad, 1u);
}

long futex(std::atomic<uint32_t> *w, int op, uint32_t val,
           const struct timespec *ts)
{
    // Shared (not FUTEX_PRIVATE): the word lives in memory both processes
    // map. The bench makes its own futex calls: the floor must not go
    // through nerve.
    return syscall(SYS_futex, reinterpret_cast<uint32_t *>(w), op, val, ts,
                   nullptr, 0);
}

double ms_since(int64_t t0) { return (double)(nerve_clock_now_ns() - t0) / 1e6; }

void sleep_until(int64_t t)
{
    struct timespec ts = {(time_t)(t / 1000000000), (long)(t % 1000000000)};
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr) ==
           EINTR) {
    }
}

struct names {
    std::string data[kNumPaths], ack;
};

// Cleanup on every exit of the parent (CUDA_OK and NERVE_OK exit): stop
// the reader and remove the channels, so a failed run leaves nothing in
// /dev/shm. The reader inherits the handler and skips it.
names g_names;
pid_t g_owner = 0, g_reader = 0;

void cleanup()
{
    if (getpid() != g_owner)
        return;
    if (g_reader > 0) {
        kill(g_reader, SIGKILL);
        waitpid(g_reader, nullptr, 0);
        g_reader = 0;
    }
    for (auto &n : g_names.data)
        if (!n.empty())
            (void)nerve_chan_unlink(n.c_str());
    if (!g_names.ack.empty())
        (void)nerve_chan_unlink(g_names.ack.c_str());
}

// ---- reader process ------------------------------------------------------

int reader_main(const options &o, const names &nm, void *floor_mem)
{
    CUDA_OK(cudaSetDevice(o.device));
    cudaStream_t st;
    CUDA_OK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
    unsigned char *dst;
    unsigned *bad;
    CUDA_OK(cudaMalloc(&dst, o.size));
    CUDA_OK(cudaMalloc(&bad, sizeof(unsigned)));
    std::vector<unsigned char> host(o.size);
    auto *fh = static_cast<floor_hdr *>(floor_mem);
    unsigned char *fbuf = static_cast<unsigned char *>(floor_mem) + 4096;
    CUDA_OK(cudaHostRegister(fbuf, o.size, cudaHostRegisterDefault));

    nerve_chan *ackc;
    NERVE_OK(nerve_chan_open(nm.ack.c_str(), NERVE_O_WRITE, &ackc));
    const int total = o.warmup + o.frames;
    for (int p = 0; p < kNumPaths; p++) {
        if (!o.run[p])
            continue;
        nerve_chan *c;
        NERVE_OK(nerve_chan_open(nm.data[p].c_str(), NERVE_O_READ, &c));
        nerve::gpu::RingRegistration reg;
        int32_t reg_mode = -1;
        double reg_ms = 0;
        if (p == 0) {
            int64_t t = nerve_clock_now_ns();
            auto r = nerve::gpu::RingRegistration::create(c, nerve::Access::read);
            if (!r) {
                std::fprintf(stderr, "reader: %s\n", r.message());
                return 1;
            }
            reg = std::move(*r);
            reg_ms = ms_since(t);
            reg_mode = (int32_t)reg.mode();
            std::printf("reader ring (%zu MiB): registered %s in %.1f ms%s%s\n",
                        reg.size() >> 20, nerve::gpu::to_string(reg.mode()),
                        reg_ms, reg.registered() ? "" : ": ",
                        reg.registered() ? "" : cudaGetErrorString(reg.error()));
            std::fflush(stdout);
        }
        // Ready: the writer sends frame 1 only now, so no frame's latency
        // includes the registration.
        ack ready{};
        ready.path = (uint32_t)p;
        ready.ok = 1;
        ready.reg_mode = reg_mode;
        ready.reg_ms = reg_ms;
        NERVE_OK(nerve_chan_put(ackc, &ready, sizeof ready, NERVE_FOREVER,
                                nullptr, 0));
        nerve::gpu::CopyOptions co;
        co.wait = std::chrono::nanoseconds(kWaitNs);
        for (int k = 1; k <= total; k++) {
            ack a{};
            a.path = (uint32_t)p;
            a.k = (uint32_t)k;
            uint64_t seq = 0;
            if (p <= 1) {
                auto r = nerve::gpu::copy_view_to_device(c, dst, o.size, st, co);
                a.t_on_gpu = nerve_clock_now_ns();
                if (!r) {
                    std::fprintf(stderr, "reader: %s frame %d: %s (%s)\n",
                                 kPaths[p], k, r.message(),
                                 cudaGetErrorString((cudaError_t)r.copier_error()));
                    return 1;
                }
                seq = r.seq();
                a.discarded = r.discarded();
                a.missed = r.missed();
            } else if (p == 2) {
                struct nerve_get_info gi;
                NERVE_OK(nerve_chan_get(c, host.data(), host.size(), 0, kWaitNs,
                                        &gi, NERVE_GET_NEXT | NERVE_F_WAIT));
                CUDA_OK(cudaMemcpyAsync(dst, host.data(), o.size,
                                        cudaMemcpyHostToDevice, st));
                CUDA_OK(cudaStreamSynchronize(st));
                a.t_on_gpu = nerve_clock_now_ns();
                seq = gi.seq;
                a.missed = gi.missed;
            } else {
                // Wait for the writer's release of frame k (lost-wakeup
                // free: the wait compares the word with the value seen).
                int64_t deadline = nerve_clock_now_ns() + kWaitNs;
                uint32_t s;
                while ((s = fh->seq.load(std::memory_order_acquire)) !=
                       (uint32_t)k) {
                    if (nerve_clock_now_ns() > deadline) {
                        std::fprintf(stderr, "reader: floor frame %d never "
                                             "came\n", k);
                        return 1;
                    }
                    struct timespec ts = {1, 0};
                    futex(&fh->seq, FUTEX_WAIT, s, &ts);
                }
                CUDA_OK(cudaMemcpyAsync(dst, fbuf, o.size,
                                        cudaMemcpyHostToDevice, st));
                CUDA_OK(cudaStreamSynchronize(st));
                a.t_on_gpu = nerve_clock_now_ns();
                seq = (uint64_t)k;
            }
            // Verification, outside the timed span.
            CUDA_OK(cudaMemsetAsync(bad, 0, sizeof(unsigned), st));
            verify<<<1, 65, 0, st>>>(dst, o.size, (unsigned)k, bad);
            unsigned nbad = 1;
            CUDA_OK(cudaMemcpyAsync(&nbad, bad, sizeof nbad,
                                    cudaMemcpyDeviceToHost, st));
            CUDA_OK(cudaStreamSynchronize(st));
            a.ok = seq == (uint64_t)k && nbad == 0;
            NERVE_OK(nerve_chan_put(ackc, &a, sizeof a, NERVE_FOREVER, nullptr, 0));
            if (!a.ok) {
                std::fprintf(stderr, "reader: %s frame %d: seq %llu, %u "
                                     "sampled bytes wrong\n", kPaths[p], k,
                             (unsigned long long)seq, nbad);
                return 1;
            }
        }
        reg.reset();
        nerve_chan_close(c);
    }
    nerve_chan_close(ackc);
    CUDA_OK(cudaHostUnregister(fbuf));
    CUDA_OK(cudaFree(dst));
    CUDA_OK(cudaFree(bad));
    return 0;
}

// ---- writer process ------------------------------------------------------

double pct(std::vector<double> v, double q)
{
    std::sort(v.begin(), v.end());
    size_t i = (size_t)(q * (double)(v.size() - 1) + 0.5);
    return v[i];
}

struct row {
    int path;
    std::vector<double> us;
    uint64_t discarded = 0, missed = 0;
    std::string wreg = "-", rreg = "-";
    double wreg_ms = 0, rreg_ms = 0;
};

int writer_main(const options &o, const names &nm, void *floor_mem,
                pid_t reader, std::vector<row> &rows)
{
    CUDA_OK(cudaSetDevice(o.device));
    cudaStream_t st;
    CUDA_OK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
    unsigned char *src;
    CUDA_OK(cudaMalloc(&src, o.size));
    std::vector<unsigned char> host(o.size);
    auto *fh = static_cast<floor_hdr *>(floor_mem);
    unsigned char *fbuf = static_cast<unsigned char *>(floor_mem) + 4096;
    CUDA_OK(cudaHostRegister(fbuf, o.size, cudaHostRegisterDefault));
    nerve_chan *ackc;
    NERVE_OK(nerve_chan_open(nm.ack.c_str(), NERVE_O_READ, &ackc));

    const int total = o.warmup + o.frames;
    const int64_t period = o.rate > 0 ? (int64_t)(1e9 / o.rate) : 0;
    for (int p = 0; p < kNumPaths; p++) {
        if (!o.run[p])
            continue;
        row rw;
        rw.path = p;
        nerve_chan *c;
        NERVE_OK(nerve_chan_open(nm.data[p].c_str(), NERVE_O_WRITE, &c));
        nerve::gpu::RingRegistration reg;
        if (p <= 1) {
            int64_t t = nerve_clock_now_ns();
            auto r = nerve::gpu::RingRegistration::create(c, nerve::Access::write);
            if (!r) {
                std::fprintf(stderr, "writer: %s\n", r.message());
                return 1;
            }
            reg = std::move(*r);
            rw.wreg_ms = ms_since(t);
            rw.wreg = nerve::gpu::to_string(reg.mode());
            if (!reg.registered())
                std::printf("writer ring: not registered: %s\n",
                            cudaGetErrorString(reg.error()));
        }
        ack ready;
        struct nerve_get_info rgi;
        int rrc = nerve_chan_get(ackc, &ready, sizeof ready, 0, kWaitNs, &rgi,
                                 NERVE_GET_NEXT | NERVE_F_WAIT);
        if (rrc < 0 || rgi.len != sizeof ready || ready.k != 0 ||
            ready.path != (uint32_t)p) {
            std::fprintf(stderr, "writer: %s: the reader did not get ready "
                                 "(%s)\n", kPaths[p],
                         rrc < 0 ? nerve_strerror(rrc) : "bad message");
            return 1;
        }
        if (ready.reg_mode >= 0) {
            rw.rreg = nerve::gpu::to_string((nerve::gpu::RegMode)ready.reg_mode);
            rw.rreg_ms = ready.reg_ms;
        }
        int64_t next = nerve_clock_now_ns() + period;
        for (int k = 1; k <= total; k++) {
            if (period) {
                sleep_until(next);
                next += period;
            }
            fill<<<256, 256, 0, st>>>(src, o.size, (unsigned)k);
            CUDA_OK(cudaStreamSynchronize(st));
            const int64_t t0 = nerve_clock_now_ns(); // the frame is ready on the GPU
            if (p <= 1) {
                auto r = nerve::gpu::put_from_device(c, src, o.size, st);
                if (!r) {
                    std::fprintf(stderr, "writer: put: %s\n", r.message());
                    return 1;
                }
            } else if (p == 2) {
                CUDA_OK(cudaMemcpyAsync(host.data(), src, o.size,
                                        cudaMemcpyDeviceToHost, st));
                CUDA_OK(cudaStreamSynchronize(st));
                NERVE_OK(nerve_chan_put(c, host.data(), o.size, NERVE_FOREVER,
                                        nullptr, 0));
            } else {
                CUDA_OK(cudaMemcpyAsync(fbuf, src, o.size,
                                        cudaMemcpyDeviceToHost, st));
                CUDA_OK(cudaStreamSynchronize(st));
                fh->seq.store((uint32_t)k, std::memory_order_release);
                futex(&fh->seq, FUTEX_WAKE, 1, nullptr);
            }
            ack a;
            struct nerve_get_info gi;
            int rc = nerve_chan_get(ackc, &a, sizeof a, 0, kWaitNs, &gi,
                                    NERVE_GET_NEXT | NERVE_F_WAIT);
            if (rc < 0 || gi.len != sizeof a || a.k != (uint32_t)k ||
                a.path != (uint32_t)p || !a.ok) {
                int status = 0;
                bool gone = waitpid(reader, &status, WNOHANG) == reader;
                std::fprintf(stderr, "writer: %s frame %d: no valid "
                                     "acknowledgement (%s%s)\n",
                             kPaths[p], k, rc < 0 ? nerve_strerror(rc) : "bad ack",
                             gone ? ", the reader exited" : "");
                return 1;
            }
            if (k > o.warmup) {
                rw.us.push_back((double)(a.t_on_gpu - t0) / 1e3);
                rw.discarded += a.discarded;
                rw.missed += a.missed;
            }
        }
        reg.reset();
        nerve_chan_close(c);
        rows.push_back(std::move(rw));
    }
    nerve_chan_close(ackc);
    CUDA_OK(cudaHostUnregister(fbuf));
    CUDA_OK(cudaFree(src));
    return 0;
}

bool parse(int argc, char **argv, options &o)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : nullptr;
        if (!v) {
            std::fprintf(stderr, "nerve_gpu_e2e: %s needs a value\n", a);
            return false;
        }
        i++;
        char *end = nullptr;
        if (!std::strcmp(a, "--size"))
            o.size = std::strtoull(v, &end, 0);
        else if (!std::strcmp(a, "--rate"))
            o.rate = std::strtod(v, &end);
        else if (!std::strcmp(a, "--frames"))
            o.frames = (int)std::strtol(v, &end, 0);
        else if (!std::strcmp(a, "--warmup"))
            o.warmup = (int)std::strtol(v, &end, 0);
        else if (!std::strcmp(a, "--device"))
            o.device = (int)std::strtol(v, &end, 0);
        else if (!std::strcmp(a, "--json"))
            o.json = v;
        else if (!std::strcmp(a, "--paths")) {
            std::fill(o.run, o.run + kNumPaths, false);
            std::string s = v;
            size_t pos = 0;
            while (pos <= s.size()) {
                size_t e = s.find(',', pos);
                std::string w = s.substr(pos, e == std::string::npos ? e : e - pos);
                int found = -1;
                for (int p = 0; p < kNumPaths; p++)
                    if (w == kPaths[p])
                        found = p;
                if (found < 0) {
                    std::fprintf(stderr, "nerve_gpu_e2e: unknown path '%s' "
                                         "(direct, pageable, usual, floor)\n",
                                 w.c_str());
                    return false;
                }
                o.run[found] = true;
                if (e == std::string::npos)
                    break;
                pos = e + 1;
            }
        } else {
            std::fprintf(stderr, "nerve_gpu_e2e: unknown option %s\n", a);
            return false;
        }
        if (end && *end) {
            std::fprintf(stderr, "nerve_gpu_e2e: bad value for %s: %s\n", a, v);
            return false;
        }
    }
    if (o.size < 64 || o.frames < 1 || o.warmup < 0 || o.rate < 0 ||
        o.rate > 100000) {
        std::fprintf(stderr, "nerve_gpu_e2e: need --size >= 64, --frames >= 1, "
                             "--warmup >= 0, 0 <= --rate <= 100000\n");
        return false;
    }
    return true;
}

} // namespace

int main(int argc, char **argv)
{
    options o;
    if (!parse(argc, argv, o)) {
        std::fprintf(stderr, "usage: nerve_gpu_e2e [--size BYTES] [--rate HZ] "
                             "[--frames N] [--warmup N] [--paths LIST] "
                             "[--device N] [--json FILE]\n");
        return 2;
    }
    // Everything shared is made before fork(), and no CUDA call happens
    // before it: a CUDA context does not survive fork.
    g_owner = getpid();
    std::atexit(cleanup);
    names &nm = g_names;
    const std::string pre = "nt-" + std::to_string(getpid()) + "-gpue2e-";
    nerve_chan_opts co = NERVE_CHAN_OPTS_INIT;
    co.slots = 4;
    co.data_size = 2 * o.size;
    for (int p = 0; p < kNumPaths; p++) {
        if (o.run[p]) {
            NERVE_OK(nerve_chan_create((pre + kPaths[p]).c_str(), &co));
            nm.data[p] = pre + kPaths[p];
        }
    }
    nerve_chan_opts ao = NERVE_CHAN_OPTS_INIT;
    ao.slots = 64;
    ao.data_size = 4096;
    NERVE_OK(nerve_chan_create((pre + "ack").c_str(), &ao));
    nm.ack = pre + "ack";
    const size_t floor_len = 4096 + ((o.size + 4095) & ~(size_t)4095);
    void *floor_mem = mmap(nullptr, floor_len, PROT_READ | PROT_WRITE,
                           MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (floor_mem == MAP_FAILED) {
        std::perror("mmap");
        return 1;
    }
    new (floor_mem) floor_hdr{};
    std::fflush(stdout);

    pid_t pid = fork();
    if (pid < 0) {
        std::perror("fork");
        return 1;
    }
    if (pid == 0) {
        int r = reader_main(o, nm, floor_mem);
        std::fflush(stdout);
        _exit(r);
    }
    g_reader = pid;

    std::vector<row> rows;
    int rc = writer_main(o, nm, floor_mem, pid, rows);
    if (rc != 0)
        return rc; // cleanup() stops the reader
    int status = 0;
    waitpid(pid, &status, 0);
    g_reader = 0;
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        std::fprintf(stderr, "nerve_gpu_e2e: the reader failed\n");
        return 1;
    }

    cudaDeviceProp prop;
    CUDA_OK(cudaGetDeviceProperties(&prop, o.device));
    int drv = 0, rtv = 0;
    CUDA_OK(cudaDriverGetVersion(&drv));
    CUDA_OK(cudaRuntimeGetVersion(&rtv));
    struct utsname un;
    uname(&un);
    char rate[32];
    if (o.rate > 0)
        std::snprintf(rate, sizeof rate, "%g Hz", o.rate);
    else
        std::snprintf(rate, sizeof rate, "back-to-back");
    std::printf("GPU -> channel -> GPU, 2 processes, %zu bytes, %s, %d frames "
                "(+%d warm-up) per path, %s, driver %d, runtime %d\n",
                o.size, rate, o.frames, o.warmup, prop.name, drv, rtv);
    double floor50 = 0;
    for (auto &r : rows)
        if (r.path == 3)
            floor50 = pct(r.us, 0.5);
    std::printf("%-9s %10s %10s %10s %10s %9s %9s %6s\n", "path", "p50(us)",
                "p99(us)", "p99.9(us)", "max(us)", "p50/floor", "discarded",
                "n");
    FILE *jf = o.json ? std::fopen(o.json, "a") : nullptr;
    if (o.json && !jf) {
        std::perror(o.json);
        return 1;
    }
    for (auto &r : rows) {
        const double p50 = pct(r.us, 0.5), p99 = pct(r.us, 0.99),
                     p999 = pct(r.us, 0.999), mx = pct(r.us, 1.0);
        const double ratio = floor50 > 0 ? p50 / floor50 : 0;
        std::printf("%-9s %10.1f %10.1f %10.1f %10.1f %9.2f %9llu %6zu\n",
                    kPaths[r.path], p50, p99, p999, mx, ratio,
                    (unsigned long long)r.discarded, r.us.size());
        if (jf)
            std::fprintf(jf,
                         "{\"bench\":\"gpu_e2e\",\"path\":\"%s\",\"size\":%zu,"
                         "\"rate_hz\":%g,\"n\":%zu,\"p50_ns\":%.0f,"
                         "\"p99_ns\":%.0f,\"p999_ns\":%.0f,\"max_ns\":%.0f,"
                         "\"p50_over_floor\":%.3f,\"discarded\":%llu,"
                         "\"missed\":%llu,\"writer_reg\":\"%s\","
                         "\"writer_reg_ms\":%.2f,\"reader_reg\":\"%s\","
                         "\"reader_reg_ms\":%.2f,\"gpu\":\"%s\","
                         "\"driver\":%d,\"runtime\":%d,\"host\":\"%s\","
                         "\"kernel\":\"%s\"}\n",
                         kPaths[r.path], o.size, o.rate, r.us.size(), p50 * 1e3,
                         p99 * 1e3, p999 * 1e3, mx * 1e3, ratio,
                         (unsigned long long)r.discarded,
                         (unsigned long long)r.missed, r.wreg.c_str(),
                         r.wreg_ms, r.rreg.c_str(), r.rreg_ms, prop.name, drv,
                         rtv, un.nodename,
                         un.release);
    }
    for (auto &r : rows)
        if (r.path == 0)
            std::printf("rings: writer registered %s in %.1f ms, reader "
                        "%s in %.1f ms\n", r.wreg.c_str(), r.wreg_ms,
                        r.rreg.c_str(), r.rreg_ms);
    if (jf)
        std::fclose(jf);
    munmap(floor_mem, floor_len);
    return 0;
}
