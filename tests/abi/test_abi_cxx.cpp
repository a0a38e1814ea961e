// The C headers are usable from C++17 with -pedantic -Werror.
#include <nerve/nerve.h>

#include <cstdio>
#include <type_traits>

static_assert(std::is_trivially_copyable<nerve_get_info>::value, "POD");
static_assert(NERVE_EAGAIN == -EAGAIN, "errno-backed codes");

int main()
{
    nerve_chan_opts o = NERVE_CHAN_OPTS_INIT;
    nerve_chan *c = nullptr;
    int r = nerve_chan_open("nt-abi-does-not-exist", NERVE_O_READ, &c);
    if (o.size != sizeof o || r != NERVE_ENOENT || c != nullptr) {
        std::printf("FAIL\n");
        return 1;
    }
    std::printf("ok\n");
    return 0;
}
