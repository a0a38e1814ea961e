/* Channel lifetime: channels made with NERVE_C_REMOVE_UNUSED are removed
 * when no process has them open any more, kill -9 included.
 *
 * LIFETIME protocol (Linux open-file-description locks, which the kernel
 * drops when the last descriptor of the description closes, also when its
 * process is killed):
 *   K1  every nerve_chan_open() opens the file and takes a shared OFD lock
 *       (F_RDLCK, never waiting; allowed on a read-only descriptor) on
 *       NERVE__USE_BYTE, held until nerve_chan_close();
 *   K2  then fstat()s its descriptor: st_nlink == 0 means a remover
 *       unlinked the file between K1's open and lock; it closes and opens
 *       the name again (bounded tries; NERVE_ENOENT when nothing is there).
 *   K3  a remover opens the file read-write, checks the header's
 *       NERVE__COMPAT_REMOVE_UNUSED bit (a channel without it, such as one
 *       made by `nerve create`, is never removed) and takes an exclusive
 *       OFD lock on NERVE__USE_BYTE, never waiting: EAGAIN means a handle
 *       is open (NERVE_EBUSY);
 *   K4  holding it, checks that the name still names the inode it locked
 *       (a successor renamed over the name is not its to remove);
 *   K5  unlinks the channel, then its bell, and drops the lock.
 * An opener holding K1's lock blocks K3; an opener whose K1 open came
 * before K5 but whose lock came after sees st_nlink == 0 at K2 and retries,
 * so no handle stays on a removed file. RESIDUAL RACE: between K4's stat
 * and K5's unlink (two system calls) another process can rename a new file
 * over the name; K5 then removes that one. Its open handles keep working
 * (an unlinked file lives until closed) and the next create of the name
 * makes a fresh one; only a process that opens the name in that window
 * finds NERVE_ENOENT. Linux has no "unlink if inode" call to close it.
 * The byte lies in the lock's reserved bytes next to the claim bytes
 * (shm.h); it is never read or written.
 * MODEL: model/life.pml checks K1-K5 with openers, removers and growers
 * killed at every step (K4-K5 atomic there: the residual race above). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "chan_internal.h"
#include "nerve/errors.h"
#include "platform.h"

/* Tries of K1/K2 before giving up: each retry means a remover unlinked
 * the file just opened, which a channel name suffers at most a few times
 * in a row. */
#define USE_OPEN_TRIES 16

static int use_lock(int fd, short type)
{
    struct flock fl;
    memset(&fl, 0, sizeof fl); /* l_pid must be 0 for OFD locks */
    fl.l_type = type;
    fl.l_whence = SEEK_SET;
    fl.l_start = NERVE__USE_BYTE;
    fl.l_len = 1;
    return fcntl(fd, F_OFD_SETLK, &fl);
}

int nerve__use_hold(int fd)
{
    return use_lock(fd, F_RDLCK) == 0 ? 0 : nerve__err_from_errno(errno);
}

int nerve__use_open(const char *name, int writable, struct stat *st,
                    nerve__file_opener open, char *msg, size_t len)
{
    for (int i = 0; i < USE_OPEN_TRIES; i++) {
        int fd = open(name, writable, st, msg, len);
        if (fd < 0)
            return fd;
        /* K1. A kernel without OFD locks (EINVAL) opens without one: its
         * channels are never found unused. A remover's exclusive lock
         * (EAGAIN) is held only while it unlinks: open again. */
        if (use_lock(fd, F_RDLCK) != 0 && errno != EAGAIN) {
            if (errno == EINVAL)
                return fd;
            int r = nerve__err_from_errno(errno);
            nerve__file->close(fd);
            return r;
        }
        /* K2 */
        struct stat now;
        if (errno != EAGAIN && fstat(fd, &now) == 0 && now.st_nlink > 0) {
            *st = now;
            return fd;
        }
        nerve__file->close(fd);
        errno = 0;
    }
    return nerve__say(msg, len, NERVE_ENOENT,
                      "the channel was removed each time it was opened");
}

int nerve_chan_remove_unused(const char *name)
{
    int r = nerve_chan_name_check(name);
    if (r)
        return r;
    char cpath[PATH_MAX], bpath[PATH_MAX];
    nerve__path_of(cpath, sizeof cpath, NERVE__CHAN_PREFIX, name);
    nerve__path_of(bpath, sizeof bpath, NERVE__BELL_PREFIX, name);
    struct stat st;
    int fd = nerve__shm_open(cpath, 1, &st); /* K3 */
    if (fd < 0)
        return fd;
    struct nerve__shm_hdr h;
    memset(&h, 0, sizeof h);
    ssize_t n = nerve__file->pread(fd, &h, sizeof h, 0);
    if (n != (ssize_t)sizeof h || h.magic != NERVE__MAGIC) {
        r = nerve__detail(NERVE_ENOTCHAN, "not a complete nerve channel");
    } else if (!(h.compat_flags & NERVE__COMPAT_REMOVE_UNUSED)) {
        r = nerve__detail(NERVE_EPERM, "the channel was not made with "
                                       "NERVE_C_REMOVE_UNUSED: remove it "
                                       "with nerve_chan_unlink()");
    } else if (use_lock(fd, F_WRLCK) != 0) {
        if (errno == EAGAIN)
            r = nerve__detail(NERVE_EBUSY, "a handle has the channel open");
        else if (errno == EINVAL)
            r = nerve__detail(NERVE_ENOSYS, "no OFD locks on this kernel");
        else
            r = nerve__err_from_errno(errno);
    } else {
        /* K4: still the inode locked, and not already removed? */
        struct stat now;
        if (fstat(fd, &now) != 0 || now.st_nlink == 0 ||
            stat(cpath, &now) != 0 || now.st_ino != st.st_ino ||
            now.st_dev != st.st_dev)
            r = NERVE_ENOENT;
        else
            r = nerve__shm_unlink(cpath); /* K5 */
        if (r == 0)
            (void)nerve__file->unlink(bpath);
    }
    nerve__file->close(fd); /* drops the lock */
    return r;
}

int nerve_chan_sweep_unused(const char *prefix, unsigned *removed)
{
    if (removed)
        *removed = 0;
    if (!prefix)
        return NERVE_EINVAL;
    DIR *d = opendir(NERVE__SHM_DIR);
    if (!d)
        return nerve__err_from_errno(errno);
    size_t cl = strlen(NERVE__CHAN_PREFIX), pl = strlen(prefix);
    struct dirent *e;
    /* Removing entries while reading the directory is allowed (each entry
     * is returned at most once). */
    while ((e = readdir(d)) != NULL) {
        if (strncmp(e->d_name, NERVE__CHAN_PREFIX, cl) != 0 ||
            strncmp(e->d_name + cl, prefix, pl) != 0)
            continue;
        const char *name = e->d_name + cl;
        if (nerve_chan_name_check(name) != 0)
            continue;
        if (nerve_chan_remove_unused(name) == 0 && removed)
            (*removed)++;
    }
    closedir(d);
    nerve__detail_clear();
    return 0;
}
