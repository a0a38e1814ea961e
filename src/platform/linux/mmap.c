/* Mapping channel and bell files: once, or a channel file with its data
 * ring twice, back to back. Every system call goes through nerve__file
 * (fileops.c), so tests can make any of them fail.
 *
 * The double mapping: a contiguous range of address space is reserved
 * first (PROT_NONE, anonymous), then the file is mapped over it with
 * MAP_FIXED, and the data ring's file pages are mapped once more right
 * after it. Reserving first makes the two MAP_FIXED calls unable to
 * clobber another mapping of the process. The result: ring byte i and ring
 * byte i + data_size are the same physical byte, so a message that wraps
 * is still one contiguous range. */
#include <errno.h>
#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

#include "../../platform.h"

uint32_t nerve__page_size(void)
{
    return (uint32_t)sysconf(_SC_PAGESIZE);
}

void *nerve__map_double(int fd, uint64_t file_size, uint64_t data_off,
                        uint64_t data_size, int writable, int populate)
{
    uint64_t total = file_size + data_size;
    if (total < file_size || total > (uint64_t)SIZE_MAX) {
        errno = ENOMEM;
        return NULL;
    }
    int prot = PROT_READ | (writable ? PROT_WRITE : 0);
    unsigned char *base = nerve__file->mmap(NULL, total, PROT_NONE,
                                            MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (base == MAP_FAILED)
        return NULL;
    /* MAP_POPULATE: the pages exist already (creation reserved them), so
     * this only builds the page tables now, at open, instead of taking a
     * minor fault per page on the first put or get that touches it -- a
     * fault is a kernel entry on the hot path (256 per MiB of ring).
     * Without populate (NERVE_O_LAZY) a page is faulted in when touched. */
    int flags = MAP_SHARED | MAP_FIXED | (populate ? MAP_POPULATE : 0);
    if (nerve__file->mmap(base, file_size, prot, flags, fd, 0) == MAP_FAILED ||
        nerve__file->mmap(base + file_size, data_size, prot, flags, fd,
                          (off_t)data_off) == MAP_FAILED) {
        int e = errno;
        nerve__file->munmap(base, total);
        errno = e;
        return NULL;
    }
    return base;
}

void nerve__unmap_double(void *base, uint64_t file_size, uint64_t data_size)
{
    if (base)
        nerve__file->munmap(base, file_size + data_size);
}

void *nerve__shm_map(int fd, uint64_t len, int writable)
{
    if (len > (uint64_t)SIZE_MAX) {
        errno = ENOMEM;
        return NULL;
    }
    void *p = nerve__file->mmap(NULL, (size_t)len,
                                PROT_READ | (writable ? PROT_WRITE : 0),
                                MAP_SHARED, fd, 0);
    return p == MAP_FAILED ? NULL : p;
}

void nerve__shm_unmap(void *p, uint64_t len)
{
    if (p)
        nerve__file->munmap(p, (size_t)len);
}
