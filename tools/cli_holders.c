/* Which processes have a channel open, from /proc, for `nerve rm`.
 *
 * A handle maps its channel file: /proc/PID/maps shows the mapping with
 * its permissions, `rw-s` for a handle that may write and `r--s` for a
 * read-only one (as `nerve who`, python-tools/src/nerve_tools/monitor/who.py,
 * reads them). A line is matched to the channel by the file's device and
 * inode, not by its name, so a process that still maps an earlier file of
 * the same name (removed, then re-created) is not counted as holding this
 * one. Processes whose maps cannot be read (other users' without
 * CAP_SYS_PTRACE) are counted as uninspectable. Nothing is written. */
#include "cli.h"

#include <ctype.h>
#include <limits.h>
#include <dirent.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

/* The command line of pid, NULs as spaces, cut to fit out. */
static void read_cmdline(long pid, char *out, size_t len)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%ld/cmdline", pid);
    out[0] = '\0';
    FILE *f = fopen(path, "re");
    if (f == NULL) {
        return;
    }
    size_t n = fread(out, 1, len - 1, f);
    fclose(f);
    while (n > 0 && out[n - 1] == '\0') {
        n--;
    }
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)out[i];
        out[i] =
            ch == '\0' || isspace(ch) ? ' ' : (isprint(ch) ? (char)ch : '?');
    }
    out[n] = '\0';
}

/* 1 if a maps line maps the file (dev, ino), with *writable set. */
static int maps_line(const char *line, dev_t dev, ino_t ino, int *writable)
{
    char perms[8];
    unsigned maj, min;
    unsigned long long inode;
    if (sscanf(line, "%*s %7s %*s %x:%x %llu", perms, &maj, &min, &inode) !=
        4) {
        return 0;
    }
    if (inode != (unsigned long long)ino || makedev(maj, min) != dev) {
        return 0;
    }
    *writable = perms[1] == 'w';
    return 1;
}

int cli_holders(const char *name, struct cli_holder *out, size_t max, size_t *n,
                size_t *uninspectable)
{
    char path[PATH_MAX];
    struct stat st;
    *n = 0;
    *uninspectable = 0;
    if (nerve_chan_path(name, 0, path, sizeof path) != 0 ||
        stat(path, &st) != 0) {
        return -1;
    }
    DIR *d = opendir("/proc");
    if (d == NULL) {
        return -1;
    }
    const long self = (long)getpid();
    struct dirent *e;
    char line[PATH_MAX + 128];
    while ((e = readdir(d)) != NULL && *n < max) {
        char *end;
        long pid = strtol(e->d_name, &end, 10);
        if (*end != '\0' || pid <= 0 || pid == self) {
            continue;
        }
        char maps[64];
        snprintf(maps, sizeof maps, "/proc/%ld/maps", pid);
        FILE *f = fopen(maps, "re");
        if (f == NULL) {
            (*uninspectable)++;
            continue;
        }
        int found = 0, writer = 0;
        while (fgets(line, sizeof line, f) != NULL) {
            int w = 0;
            if (maps_line(line, st.st_dev, st.st_ino, &w)) {
                found = 1;
                writer |= w;
            }
        }
        fclose(f);
        if (found) {
            out[*n].pid = pid;
            out[*n].writer = writer;
            read_cmdline(pid, out[*n].command, sizeof out[*n].command);
            (*n)++;
        }
    }
    closedir(d);
    return 0;
}
