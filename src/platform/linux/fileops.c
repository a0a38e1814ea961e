/* The system calls nerve makes on files in the shared-memory directory,
 * as a table (platform.h, struct nerve__file_ops): every open, stat,
 * fallocate, link, unlink, rename, chmod, mmap and directory read of channel and
 * bell files goes through nerve__file, so a test can replace it with a
 * table that fails chosen calls, as it replaces nerve__futex. Each entry
 * has the system call's own contract: -1 (NULL, MAP_FAILED) with errno
 * set on failure. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../platform.h"

static int lx_open(const char *path, int flags, unsigned mode)
{
    return open(path, flags, (mode_t)mode);
}

static int lx_close(int fd)
{
    return close(fd);
}

static int lx_fstat(int fd, struct stat *st)
{
    return fstat(fd, st);
}

static int lx_lstat(const char *path, struct stat *st)
{
    return lstat(path, st);
}

static int lx_fstatat(int dfd, const char *name, struct stat *st, int flags)
{
    return fstatat(dfd, name, st, flags);
}

static ssize_t lx_pread(int fd, void *buf, size_t n, off_t off)
{
    return pread(fd, buf, n, off);
}

/* posix_fallocate() returns the error instead of setting errno. */
static int lx_fallocate(int fd, off_t off, off_t len)
{
    int r = posix_fallocate(fd, off, len);
    if (r == 0)
        return 0;
    errno = r;
    return -1;
}

static int lx_link(const char *from, const char *to)
{
    return link(from, to);
}

static int lx_linkat(int fromfd, const char *from, int tofd, const char *to,
                     int flags)
{
    return linkat(fromfd, from, tofd, to, flags);
}

static int lx_unlink(const char *path)
{
    return unlink(path);
}

static int lx_unlinkat(int dfd, const char *name, int flags)
{
    return unlinkat(dfd, name, flags);
}

static int lx_rename(const char *from, const char *to)
{
    return rename(from, to);
}

static int lx_fchmod(int fd, unsigned mode)
{
    return fchmod(fd, (mode_t)mode);
}

static int lx_chmod(const char *path, unsigned mode)
{
    return chmod(path, (mode_t)mode);
}

static int lx_access(const char *path, int mode)
{
    return access(path, mode);
}

static void *lx_mmap(void *addr, size_t len, int prot, int flags, int fd,
                     off_t off)
{
    return mmap(addr, len, prot, flags, fd, off);
}

static int lx_munmap(void *addr, size_t len)
{
    return munmap(addr, len);
}

static int lx_msync(void *addr, size_t len, int flags)
{
    return msync(addr, len, flags);
}

static DIR *lx_opendir(const char *path)
{
    return opendir(path);
}

static struct dirent *lx_readdir(DIR *d)
{
    return readdir(d);
}

static int lx_closedir(DIR *d)
{
    return closedir(d);
}

const struct nerve__file_ops nerve__file_linux = {
    .open = lx_open,
    .close = lx_close,
    .fstat = lx_fstat,
    .lstat = lx_lstat,
    .fstatat = lx_fstatat,
    .pread = lx_pread,
    .fallocate = lx_fallocate,
    .link = lx_link,
    .linkat = lx_linkat,
    .unlink = lx_unlink,
    .unlinkat = lx_unlinkat,
    .rename = lx_rename,
    .fchmod = lx_fchmod,
    .chmod = lx_chmod,
    .access = lx_access,
    .mmap = lx_mmap,
    .munmap = lx_munmap,
    .msync = lx_msync,
    .opendir = lx_opendir,
    .readdir = lx_readdir,
    .closedir = lx_closedir,
};

const struct nerve__file_ops *nerve__file = &nerve__file_linux;
