#include "nerve_test.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

static void on_alarm(int sig)
{
    (void)sig;
    static const char msg[] = "FAIL: watchdog expired (deadlock?)\n";
    if (write(2, msg, sizeof msg - 1) < 0) {
        /* nothing more to do in a signal handler */
    }
    _exit(1);
}

void nt_watchdog(unsigned seconds)
{
    signal(SIGALRM, on_alarm);
    alarm(seconds);
}

const char *nt_name(const char *tag)
{
    static char bufs[8][128];
    static unsigned n;
    char *b = bufs[n % 8];
    snprintf(b, sizeof bufs[0], "nt-%d-%u-%s", (int)getpid(), n, tag);
    n++;
    return b;
}

void nt_create(const char *name, uint64_t slots, uint64_t data_size)
{
    struct nerve_chan_opts o = NERVE_CHAN_OPTS_INIT;
    o.slots = slots;
    o.data_size = data_size;
    int r = nerve_chan_create(name, &o);
    if (r != 0)
        NT_FAIL("create %s: %s", name, nerve_strerror(r));
}

void *nt_map_header(const char *name)
{
    char path[512];
    snprintf(path, sizeof path, "/dev/shm/nerve.%s", name);
    int fd = open(path, O_RDWR);
    if (fd < 0)
        NT_FAIL("open %s failed", path);
    void *m = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (m == MAP_FAILED)
        NT_FAIL("mmap %s failed", path);
    return m;
}

/* FNV-1a over the bytes after the 24-byte prefix (id, counter, sum). */
static uint64_t sum_bytes(const unsigned char *p, size_t n)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++) {
        h ^= p[i];
        h *= 1099511628211ull;
    }
    return h;
}

void nt_payload_fill(void *buf, size_t len, uint32_t id, uint64_t counter)
{
    unsigned char *p = buf;
    uint64_t x = ((uint64_t)id << 40) ^ counter ^ 0x9e3779b97f4a7c15ull;
    for (size_t i = 24; i < len; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        p[i] = (unsigned char)x;
    }
    uint64_t id64 = id;
    memcpy(p, &id64, 8);
    memcpy(p + 8, &counter, 8);
    uint64_t s = sum_bytes(p + 24, len - 24) ^ id64 ^ (counter * 31);
    memcpy(p + 16, &s, 8);
}

int nt_payload_check(const void *buf, size_t len, uint32_t *id,
                     uint64_t *counter)
{
    const unsigned char *p = buf;
    if (len < 24)
        return 0;
    uint64_t id64, c, s;
    memcpy(&id64, p, 8);
    memcpy(&c, p + 8, 8);
    memcpy(&s, p + 16, 8);
    if (s != (sum_bytes(p + 24, len - 24) ^ id64 ^ (c * 31)))
        return 0;
    if (id)
        *id = (uint32_t)id64;
    if (counter)
        *counter = c;
    return 1;
}
