/* Files in the shared-memory directory: opening, creating (unnamed, then
 * linked), removing, chmod and listing channel and bell files (mapping
 * them is mmap.c's). Every system call goes through nerve__file
 * (fileops.c), so tests can make any of them fail. */
#include <errno.h>
#include <sys/mman.h>
#include <unistd.h>

#include "../../platform.h"

/* ---- files in /dev/shm ---------------------------------------------------
 *
 * /dev/shm is world-writable and sticky: any local user can place a file,
 * a FIFO, a socket, a directory or a symlink under any name that is not yet
 * taken, and can create files under names a creator will use next. These
 * helpers are the only code that opens or creates files there, so that
 * nothing found there can block an open (O_NONBLOCK, and the type is
 * checked before the open with lstat and after it with fstat), redirect it
 * (O_NOFOLLOW), or be adopted by a creator (files are made unnamed with
 * O_TMPFILE, filled, and linked under their name with no-replace
 * semantics, so a creator killed at any point leaves nothing behind). */

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>

#include "nerve/errors.h"

#define TMP_PREFIX ".nerve-tmp-"
/* A named temporary file older than this whose creator is gone is stale. */
#define TMP_STALE_S 60

#ifdef NERVE_CRASHPOINTS
int nerve__shm_force_named_tmp; /* test builds only: see platform.h */
#define FORCE_NAMED_TMP nerve__shm_force_named_tmp
#else
#define FORCE_NAMED_TMP 0
#endif

int nerve__shm_open(const char *path, int writable, struct stat *st)
{
    struct stat ls;
    /* Refuse a FIFO, socket, device or directory before opening it: an
     * open may block (FIFO) or have side effects (devices). */
    if (nerve__file->lstat(path, &ls) != 0)
        return nerve__err_from_errno(errno);
    if (!S_ISREG(ls.st_mode))
        return NERVE_ENOTCHAN;
    /* The name may have been replaced since: O_NONBLOCK and O_NOFOLLOW make
     * whatever is there now unable to block or redirect the open, and fstat
     * judges the file actually opened. */
    int fd = nerve__file->open(path,
                               (writable ? O_RDWR : O_RDONLY) | O_NONBLOCK |
                                   O_NOFOLLOW | O_CLOEXEC | O_NOCTTY,
                               0);
    if (fd < 0)
        return nerve__err_from_errno(errno);
    if (nerve__file->fstat(fd, st) != 0) {
        int r = nerve__err_from_errno(errno);
        nerve__file->close(fd);
        return r;
    }
    if (!S_ISREG(st->st_mode)) {
        nerve__file->close(fd);
        return NERVE_ENOTCHAN;
    }
    return fd;
}

/* Remove named temporaries of this user that a creator killed mid-create
 * left behind (only made where O_TMPFILE or /proc is unavailable, or by
 * older versions of nerve): `.nerve-tmp-[KIND-]PID-...` whose PID no
 * longer exists and which nobody touched for TMP_STALE_S seconds. */
void nerve__shm_tmp_sweep(const char *dir)
{
    DIR *d = nerve__file->opendir(dir);
    if (!d)
        return;
    int dfd = dirfd(d);
    time_t now = time(NULL);
    struct dirent *e;
    while ((e = nerve__file->readdir(d)) != NULL) {
        if (strncmp(e->d_name, TMP_PREFIX, sizeof TMP_PREFIX - 1) != 0)
            continue;
        const char *p = e->d_name + sizeof TMP_PREFIX - 1;
        if (strncmp(p, "chan-", 5) == 0 || strncmp(p, "bell-", 5) == 0 ||
            strncmp(p, "grow-", 5) == 0)
            p += 5;
        char *end;
        long pid = strtol(p, &end, 10);
        if (end == p || *end != '-' || pid <= 0 || pid > INT_MAX)
            continue;
        struct stat st;
        if (nerve__file->fstatat(dfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) !=
                0 ||
            !S_ISREG(st.st_mode) || st.st_uid != geteuid() ||
            now - st.st_mtime < TMP_STALE_S)
            continue;
        if (kill((pid_t)pid, 0) == 0 || errno != ESRCH)
            continue; /* alive, or not ours to judge */
        (void)nerve__file->unlinkat(dfd, e->d_name, 0);
    }
    nerve__file->closedir(d);
}

int nerve__shm_tmp_create(const char *dir, uint64_t size,
                          struct nerve__shm_tmp *t)
{
    t->fd = -1;
    t->path[0] = 0;
    if (size > (uint64_t)INT64_MAX)
        return NERVE_ENOSPC;
    if (!FORCE_NAMED_TMP) {
        /* An unnamed file: nobody can open, replace or pre-plant it, and
         * it vanishes with the last descriptor if the creator dies. */
        t->fd = nerve__file->open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
        char proc[64];
        snprintf(proc, sizeof proc, "/proc/self/fd/%d", t->fd);
        if (t->fd >= 0 && nerve__file->access(proc, F_OK) != 0) {
            /* No /proc to link it through (a bare container): named. */
            nerve__file->close(t->fd);
            t->fd = -1;
        }
    }
    if (t->fd < 0) {
        /* No O_TMPFILE here: a named file with an unpredictable name,
         * created exclusively (a planted file at one name costs a retry,
         * never an error). */
        pid_t pid = getpid();
        for (int attempt = 0; attempt < 16 && t->fd < 0; attempt++) {
            uint64_t rnd;
            if (getrandom(&rnd, sizeof rnd, GRND_NONBLOCK) != sizeof rnd) {
                struct timespec ts;
                clock_gettime(CLOCK_MONOTONIC, &ts);
                rnd = (uint64_t)ts.tv_nsec * 0x9e3779b97f4a7c15ull ^
                      (uint64_t)ts.tv_sec ^ ((uint64_t)attempt << 56);
            }
            snprintf(t->path, sizeof t->path, "%s" TMP_PREFIX "%d-%016llx", dir,
                     (int)pid, (unsigned long long)rnd);
            t->fd = nerve__file->open(
                t->path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                0600);
            if (t->fd < 0 && errno != EEXIST) {
                int r = nerve__err_from_errno(errno);
                t->path[0] = 0;
                return r;
            }
        }
        if (t->fd < 0) {
            t->path[0] = 0;
            return NERVE_EEXIST;
        }
    }
    /* Reserve every page now, so that a full /dev/shm fails here with
     * NERVE_ENOSPC and never later with SIGBUS. */
    if (nerve__file->fallocate(t->fd, 0, (off_t)size) != 0) {
        int r = nerve__err_from_errno(errno);
        nerve__shm_tmp_discard(t);
        return r;
    }
    return 0;
}

int nerve__shm_tmp_link(struct nerve__shm_tmp *t, const char *path)
{
    int r;
    if (t->path[0]) {
        r = nerve__file->link(t->path, path);
    } else {
        /* AT_EMPTY_PATH needs CAP_DAC_READ_SEARCH; /proc/self/fd does
         * not. Both refuse to replace an existing name (EEXIST). */
        r = nerve__file->linkat(t->fd, "", AT_FDCWD, path, AT_EMPTY_PATH);
        if (r != 0 && errno != EEXIST) {
            char proc[64];
            snprintf(proc, sizeof proc, "/proc/self/fd/%d", t->fd);
            r = nerve__file->linkat(AT_FDCWD, proc, AT_FDCWD, path,
                                    AT_SYMLINK_FOLLOW);
        }
    }
    return r == 0 ? 0 : nerve__err_from_errno(errno);
}

int nerve__shm_tmp_replace(struct nerve__shm_tmp *t, const char *path)
{
    if (!t->path[0]) {
        /* Unnamed: a named temporary first, in the same directory. */
        char tmp[sizeof t->path];
        const char *slash = strrchr(path, '/');
        int dirlen = slash ? (int)(slash - path + 1) : 0;
        int r = NERVE_EEXIST;
        for (int attempt = 0; attempt < 16 && r == NERVE_EEXIST; attempt++) {
            uint64_t rnd = 0;
            if (getrandom(&rnd, sizeof rnd, GRND_NONBLOCK) != sizeof rnd) {
                struct timespec ts;
                clock_gettime(CLOCK_MONOTONIC, &ts);
                rnd = (uint64_t)ts.tv_nsec ^ ((uint64_t)attempt << 56);
            }
            snprintf(tmp, sizeof tmp, "%.*s" TMP_PREFIX "grow-%d-%016llx",
                     dirlen, path, (int)getpid(), (unsigned long long)rnd);
            r = nerve__shm_tmp_link(t, tmp);
        }
        if (r)
            return r;
        memcpy(t->path, tmp, sizeof tmp);
    }
    if (nerve__file->rename(t->path, path) != 0)
        return nerve__err_from_errno(errno);
    t->path[0] = 0; /* the name is now `path`: not ours to remove */
    return 0;
}

void nerve__shm_tmp_discard(struct nerve__shm_tmp *t)
{
    if (t->fd >= 0)
        nerve__file->close(t->fd);
    if (t->path[0])
        (void)nerve__file->unlink(t->path);
    t->fd = -1;
    t->path[0] = 0;
}

int nerve__shm_unlink(const char *path)
{
    struct stat st;
    /* Only a regular file is a channel (or the remains of one): a
     * directory, FIFO, socket or symlink under the name is not removed. */
    if (nerve__file->lstat(path, &st) != 0)
        return nerve__err_from_errno(errno);
    if (!S_ISREG(st.st_mode))
        return NERVE_ENOTCHAN;
    if (nerve__file->unlink(path) != 0)
        return nerve__err_from_errno(errno);
    return 0;
}

/* chmod(2) would follow a symlink planted under the name to another of
 * the caller's files: through a descriptor instead. */
int nerve__shm_chmod(const char *path, uint32_t mode)
{
    struct stat st;
    int fd = nerve__shm_open(path, 0, &st);
    if (fd == NERVE_EACCES) {
        /* No read permission (mode 0200, say): O_PATH needs none. */
        fd = nerve__file->open(path, O_PATH | O_NOFOLLOW | O_CLOEXEC, 0);
        if (fd < 0)
            return nerve__err_from_errno(errno);
        if (nerve__file->fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
            nerve__file->close(fd);
            return NERVE_ENOTCHAN;
        }
        char proc[64];
        snprintf(proc, sizeof proc, "/proc/self/fd/%d", fd);
        int r = nerve__file->chmod(proc, mode) == 0
                    ? 0
                    : nerve__err_from_errno(errno);
        nerve__file->close(fd);
        return r;
    }
    if (fd < 0)
        return fd;
    int r =
        nerve__file->fchmod(fd, mode) == 0 ? 0 : nerve__err_from_errno(errno);
    nerve__file->close(fd);
    return r;
}

int nerve__shm_each(const char *dir, const char *prefix,
                    int (*fn)(const char *name, void *arg), void *arg)
{
    DIR *d = nerve__file->opendir(dir);
    if (!d)
        return nerve__err_from_errno(errno);
    int r = 0;
    struct dirent *e;
    size_t plen = strlen(prefix);
    while (r == 0 && (e = nerve__file->readdir(d)) != NULL) {
        if (strncmp(e->d_name, prefix, plen) == 0)
            r = fn(e->d_name, arg);
    }
    nerve__file->closedir(d);
    return r;
}
