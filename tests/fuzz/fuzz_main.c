/* libFuzzer entry point (clang -fsanitize=fuzzer,address,undefined):
 * every input is a channel file. See fuzz_chan.h. */
#include <stddef.h>
#include <stdint.h>

#include "fuzz_chan.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    (void)nerve_fuzz_one(data, size);
    return 0;
}
